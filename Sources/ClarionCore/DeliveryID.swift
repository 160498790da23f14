/// Names one delivery: a message and an endpoint, by their internal keys (docs/architecture.md, "Campaigns and
/// delivery ids").
public struct DeliveryID: Sendable, Hashable {
    public let messageKey: Int64
    public let endpointKey: Int64

    public init(messageKey: Int64, endpointKey: Int64) {
        self.messageKey = messageKey
        self.endpointKey = endpointKey
    }
}

/// Why a delivery-id string was refused.
public struct DeliveryIDError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable {
        /// Wrong length or not canonical unpadded base64url.
        case malformed
        /// Well formed, but the MAC does not match: forged or altered.
        case badMAC
    }

    public let code: Code
    public init(_ code: Code) { self.code = code }
    public var description: String { "delivery id: \(code.rawValue)" }
}

/// Encodes and verifies `base64url(message_key(8) || endpoint_key(8) || HMAC-SHA256(secret, both)[:10])`.
///
/// 26 bytes, 35 characters, unforgeable without the server secret, and it names its message and endpoint
/// without a stored row per delivery. ClarionCore cannot link OpenSSL, so the caller passes the MAC: a
/// closure computing HMAC-SHA256 with the server secret over the given bytes, e.g.
/// `DeliveryIDCodec { Digest.hmacSHA256(key: secret, data: $0) }` with ClarionCrypto.
public struct DeliveryIDCodec: Sendable {
    /// Characters in an encoded id.
    public static let encodedLength = 35
    static let macLength = 10
    static let rawLength = 8 + 8 + macLength

    private let mac: @Sendable ([UInt8]) -> [UInt8]

    /// - Parameter mac: HMAC-SHA256 keyed with the server secret; must return at least 10 bytes.
    public init(mac: @escaping @Sendable ([UInt8]) -> [UInt8]) {
        self.mac = mac
    }

    public func encode(_ id: DeliveryID) -> String {
        var raw = Self.keyBytes(id)
        raw.append(contentsOf: tag(for: raw))
        return Base64URLNoPadding.encode(raw)
    }

    /// Decodes and verifies an id; the MAC is compared in constant time.
    public func decode(_ text: String) throws(DeliveryIDError) -> DeliveryID {
        guard text.utf8.count == Self.encodedLength, let raw = Base64URLNoPadding.decode(text),
            raw.count == Self.rawLength
        else { throw DeliveryIDError(.malformed) }
        let keys = Array(raw[0..<16])
        let expected = tag(for: keys)
        var difference: UInt8 = 0
        for i in 0..<Self.macLength { difference |= expected[i] ^ raw[16 + i] }
        guard difference == 0 else { throw DeliveryIDError(.badMAC) }
        return DeliveryID(messageKey: Self.int64(keys, at: 0), endpointKey: Self.int64(keys, at: 8))
    }

    private func tag(for keys: [UInt8]) -> [UInt8] {
        let full = mac(keys)
        precondition(full.count >= Self.macLength, "DeliveryIDCodec: the MAC function returned too few bytes")
        return Array(full.prefix(Self.macLength))
    }

    static func keyBytes(_ id: DeliveryID) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(rawLength)
        for key in [id.messageKey, id.endpointKey] {
            let bits = UInt64(bitPattern: key)
            for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: bits >> UInt64(shift))) }
        }
        return out
    }

    static func int64(_ bytes: [UInt8], at offset: Int) -> Int64 {
        var bits: UInt64 = 0
        for i in 0..<8 { bits = bits << 8 | UInt64(bytes[offset + i]) }
        return Int64(bitPattern: bits)
    }
}

/// RFC 4648 §5 base64url without padding. Decoding accepts only the canonical form (unused trailing bits
/// zero), so each id has exactly one spelling.
enum Base64URLNoPadding {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count * 4 + 2) / 3)
        var i = 0
        while i + 3 <= bytes.count {
            let n = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
            out.append(alphabet[Int(n >> 6 & 63)])
            out.append(alphabet[Int(n & 63)])
            i += 3
        }
        switch bytes.count - i {
        case 1:
            let n = UInt32(bytes[i]) << 16
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
        case 2:
            let n = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
            out.append(alphabet[Int(n >> 6 & 63)])
        default:
            break
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func decode(_ text: String) -> [UInt8]? {
        let chars = Array(text.utf8)
        guard chars.count % 4 != 1 else { return nil }
        var values: [UInt32] = []
        values.reserveCapacity(chars.count)
        for c in chars {
            switch c {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): values.append(UInt32(c - UInt8(ascii: "A")))
            case UInt8(ascii: "a")...UInt8(ascii: "z"): values.append(UInt32(c - UInt8(ascii: "a") + 26))
            case UInt8(ascii: "0")...UInt8(ascii: "9"): values.append(UInt32(c - UInt8(ascii: "0") + 52))
            case UInt8(ascii: "-"): values.append(62)
            case UInt8(ascii: "_"): values.append(63)
            default: return nil
            }
        }
        var out: [UInt8] = []
        out.reserveCapacity(values.count * 3 / 4)
        var i = 0
        while i + 4 <= values.count {
            let n = values[i] << 18 | values[i + 1] << 12 | values[i + 2] << 6 | values[i + 3]
            out.append(UInt8(n >> 16 & 0xFF))
            out.append(UInt8(n >> 8 & 0xFF))
            out.append(UInt8(n & 0xFF))
            i += 4
        }
        switch values.count - i {
        case 2:
            guard values[i + 1] & 0x0F == 0 else { return nil }
            out.append(UInt8((values[i] << 2 | values[i + 1] >> 4) & 0xFF))
        case 3:
            guard values[i + 2] & 0x03 == 0 else { return nil }
            let n = values[i] << 18 | values[i + 1] << 12 | values[i + 2] << 6
            out.append(UInt8(n >> 16 & 0xFF))
            out.append(UInt8(n >> 8 & 0xFF))
        default:
            break
        }
        return out
    }
}
