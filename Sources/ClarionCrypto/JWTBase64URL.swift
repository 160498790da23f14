/// base64url without padding (RFC 4648 section 5, as JOSE uses it).
public enum Base64URL {
    private static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    private static let decodeTable: [UInt8] = {
        var table = [UInt8](repeating: 0xff, count: 256)
        for (index, symbol) in alphabet.enumerated() { table[Int(symbol)] = UInt8(index) }
        return table
    }()

    public static func encode<D: Collection>(_ bytes: D) -> String where D.Element == UInt8 {
        String(decoding: encodeBytes(bytes), as: UTF8.self)
    }

    /// The encoded text as ASCII bytes.
    public static func encodeBytes<D: Collection>(_ bytes: D) -> [UInt8] where D.Element == UInt8 {
        var out = [UInt8]()
        out.reserveCapacity((bytes.count * 4 + 2) / 3)
        var buffer: UInt32 = 0
        var bits = 0
        for byte in bytes {
            buffer = buffer << 8 | UInt32(byte)
            bits += 8
            while bits >= 6 {
                bits -= 6
                out.append(alphabet[Int((buffer >> UInt32(bits)) & 0x3f)])
            }
        }
        if bits > 0 {
            out.append(alphabet[Int((buffer << UInt32(6 - bits)) & 0x3f)])
        }
        return out
    }

    /// Decodes unpadded base64url; nil on any character outside the alphabet (including `=`, `+`,
    /// `/` and whitespace), on an impossible length, or on non-zero trailing bits, so one token has
    /// exactly one accepted spelling.
    public static func decode<S: StringProtocol>(_ text: S) -> [UInt8]? {
        decode(bytes: Array(text.utf8))
    }

    public static func decode<C: Collection>(bytes text: C) -> [UInt8]? where C.Element == UInt8 {
        guard text.count % 4 != 1 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(text.count * 3 / 4)
        var buffer: UInt32 = 0
        var bits = 0
        for symbol in text {
            let value = decodeTable[Int(symbol)]
            guard value != 0xff else { return nil }
            buffer = buffer << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8((buffer >> UInt32(bits)) & 0xff))
            }
        }
        guard buffer & ((1 << UInt32(bits)) - 1) == 0 else { return nil }
        return out
    }
}
