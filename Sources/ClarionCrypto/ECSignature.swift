/// Conversion between the two encodings of an ECDSA signature.
///
/// OpenSSL produces and expects DER (`SEQUENCE { INTEGER r, INTEGER s }`, each integer minimal and
/// sign-padded); JOSE (RFC 7518 section 3.4) uses the fixed-width `R || S`, each left-padded to the
/// curve size (32 bytes for P-256). Done in Swift: the format is tiny and strict parsing here means a
/// malformed signature is rejected before OpenSSL sees it.
enum ECSignature {
    static let p256ComponentLength = 32

    /// `R || S` from DER; nil when the DER is malformed or an integer does not fit `componentLength`.
    static func rawFromDER(_ der: [UInt8], componentLength: Int) -> [UInt8]? {
        var reader = DERReader(bytes: der)
        guard let sequence = reader.read(tag: 0x30), reader.isAtEnd else { return nil }
        var inner = DERReader(bytes: sequence)
        guard let r = inner.read(tag: 0x02), let s = inner.read(tag: 0x02), inner.isAtEnd,
              let rFixed = fixedWidth(integer: r, length: componentLength),
              let sFixed = fixedWidth(integer: s, length: componentLength)
        else { return nil }
        return rFixed + sFixed
    }

    /// DER from `R || S` (an even number of bytes, split in half).
    static func derFromRaw(_ raw: [UInt8]) -> [UInt8]? {
        guard !raw.isEmpty, raw.count % 2 == 0 else { return nil }
        let half = raw.count / 2
        let r = derInteger(raw[0..<half])
        let s = derInteger(raw[half...])
        return [0x30] + derLength(r.count + s.count) + r + s
    }

    /// A DER INTEGER's content (big-endian two's complement) as an unsigned fixed-width value.
    private static func fixedWidth(integer: [UInt8], length: Int) -> [UInt8]? {
        guard !integer.isEmpty, integer[0] & 0x80 == 0 else { return nil }  // ECDSA r, s are positive
        var digits = integer[...]
        while digits.count > 1, digits.first == 0 { digits = digits.dropFirst() }
        guard digits.count <= length else { return nil }
        return [UInt8](repeating: 0, count: length - digits.count) + digits
    }

    private static func derInteger(_ unsigned: ArraySlice<UInt8>) -> [UInt8] {
        var digits = unsigned
        while digits.count > 1, digits.first == 0 { digits = digits.dropFirst() }
        var content = [UInt8](digits)
        if content.isEmpty { content = [0] }
        if content[0] & 0x80 != 0 { content.insert(0, at: 0) }
        return [0x02] + derLength(content.count) + content
    }

    private static func derLength(_ length: Int) -> [UInt8] {
        if length < 0x80 { return [UInt8(length)] }
        var bytes: [UInt8] = []
        var remaining = length
        while remaining > 0 {
            bytes.insert(UInt8(remaining & 0xff), at: 0)
            remaining >>= 8
        }
        return [0x80 | UInt8(bytes.count)] + bytes
    }
}

/// A minimal DER TLV reader: definite lengths only, as DER requires.
struct DERReader {
    let bytes: [UInt8]
    var offset = 0

    init(bytes: [UInt8]) { self.bytes = bytes }

    var isAtEnd: Bool { offset == bytes.count }

    /// The content of the next element if it has `tag`; nil (and no progress) otherwise.
    mutating func read(tag: UInt8) -> [UInt8]? {
        var position = offset
        guard position < bytes.count, bytes[position] == tag else { return nil }
        position += 1
        guard position < bytes.count else { return nil }
        var length = Int(bytes[position])
        position += 1
        if length & 0x80 != 0 {
            let count = length & 0x7f
            guard count > 0, count <= 4, position + count <= bytes.count else { return nil }
            length = 0
            for _ in 0..<count {
                length = length << 8 | Int(bytes[position])
                position += 1
            }
            guard length >= 0x80 else { return nil }  // DER: the short form was required
        }
        guard length <= bytes.count - position else { return nil }
        offset = position + length
        return Array(bytes[position..<(position + length)])
    }
}
