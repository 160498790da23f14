
/// Minimal JSON text building for small, fixed-shape documents (errors, health, log lines) where a
/// JSONEncoder round trip would cost more than the request itself.
package enum JSONText {
    /// A JSON string literal, quotes included, escaped by the JSON writer's one escaper.
    package static func quote(_ string: String) -> String {
        // Fast path: nothing to escape (ids, paths, addresses; every access-log field in practice).
        if string.utf8AllSatisfy(isPlain) { return "\"" + string + "\"" }
        var out: [UInt8] = []
        out.reserveCapacity(string.utf8.count + 8)
        JSONWriter.writeString(string, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Printable ASCII that a JSON string carries as is.
    package static func isPlain(_ byte: UInt8) -> Bool {
        byte >= 0x20 && byte < 0x80 && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\")
    }

    /// `quote(string)` appended to `out` as UTF-8, without an intermediate String.
    package static func appendQuoted(_ string: String, to out: inout [UInt8]) {
        JSONWriter.writeString(string, to: &out)
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
