
/// Minimal JSON text building for small, fixed-shape documents (errors, health, log lines) where a
/// JSONEncoder round trip would cost more than the request itself.
package enum JSONText {
    /// A JSON string literal, quotes included, escaped per RFC 8259.
    package static func quote(_ string: String) -> String {
        // Fast path: nothing to escape (ids, paths, addresses; every access-log field in practice).
        if string.utf8AllSatisfy(isPlain) {
            return "\"" + string + "\""
        }
        var out = "\""
        out.reserveCapacity(string.utf8.count + 2)
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{2028}": out += "\\u2028"
            case "\u{2029}": out += "\\u2029"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        out += "\""
        return out
    }

    /// Printable ASCII that a JSON string carries as is.
    package static func isPlain(_ byte: UInt8) -> Bool {
        byte >= 0x20 && byte < 0x80 && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\")
    }

    /// `quote(string)` appended to `out` as UTF-8, without an intermediate String when nothing needs escaping.
    package static func appendQuoted(_ string: String, to out: inout [UInt8]) {
        var text = string
        let plain = text.withUTF8 { bytes -> Bool in
            guard bytes.allSatisfy(isPlain) else {
                return false
            }
            out.append(UInt8(ascii: "\""))
            out.append(contentsOf: bytes)
            out.append(UInt8(ascii: "\""))
            return true
        }
        if !plain { out.append(contentsOf: quote(string).utf8) }
    }

    /// A decimal integer appended to `out`.
    package static func appendDecimal(_ value: Int64, to out: inout [UInt8]) {
        if value < 0 { out.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        var divisor: UInt64 = 1
        while magnitude / divisor >= 10 { divisor *= 10 }
        repeat {
            out.append(UInt8(48 + magnitude / divisor))
            magnitude %= divisor
            divisor /= 10
        } while divisor > 0
    }
}
