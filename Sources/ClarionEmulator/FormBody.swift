import Foundation

/// `application/x-www-form-urlencoded` bodies (the OAuth token requests of FCM and ADM).
package enum FormBody {
    /// Name/value pairs, percent- and `+`-decoded; nil when an escape is malformed or a part is not
    /// UTF-8. A repeated name keeps its first value (OAuth forbids repeats; the emulator refuses them).
    package static func parse(_ body: [UInt8]) -> (fields: [String: String], repeated: Bool)? {
        var fields: [String: String] = [:]
        var repeated = false
        for part in body.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
            let pieces = part.split(separator: UInt8(ascii: "="), maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = decode(pieces[0]) else { return nil }
            guard let value = pieces.count > 1 ? decode(pieces[1]) : "" else { return nil }
            if fields[name] != nil {
                repeated = true
            } else {
                fields[name] = value
            }
        }
        return (fields, repeated)
    }

    static func decode(_ bytes: ArraySlice<UInt8>) -> String? {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte == UInt8(ascii: "+") {
                out.append(0x20)
            } else if byte == UInt8(ascii: "%") {
                guard index + 2 < bytes.endIndex,
                      let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2]) else { return nil }
                out.append(high << 4 | low)
                index += 2
            } else {
                out.append(byte)
            }
            index += 1
        }
        return String(validating: out, as: UTF8.self)
    }

    /// Percent-encodes for a form value (unreserved characters stay).
    package static func encode(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case 0x30...0x39, 0x41...0x5a, 0x61...0x7a, UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let digits = Array("0123456789ABCDEF".unicodeScalars)
                out.unicodeScalars.append("%")
                out.unicodeScalars.append(digits[Int(byte >> 4)])
                out.unicodeScalars.append(digits[Int(byte & 0x0f)])
            }
        }
        return out
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: return byte - 0x30
        case 0x61...0x66: return byte - 0x61 + 10
        case 0x41...0x46: return byte - 0x41 + 10
        default: return nil
        }
    }
}

/// The media type of a `content-type` value, lowercased, parameters dropped.
func mediaType(_ contentType: String?) -> String? {
    guard let contentType else { return nil }
    let type = contentType.split(separator: ";", maxSplits: 1).first.map(String.init) ?? contentType
    return type.trimmingCharacters(in: .whitespaces).lowercased()
}
