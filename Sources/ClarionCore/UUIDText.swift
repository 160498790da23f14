import Foundation

/// UUID text without Foundation's slow paths. On Linux, `UUID(text:)` goes through `sscanf` and
/// `uuidString` through `sprintf` plus an upper-case copy that callers then lower-case again; the publish path
/// parses an ARN's UUID and formats a message id for every request, so both showed in its profile.
extension UUID {
    /// Parses the canonical 8-4-4-4-12 hex form, either case (what `UUID(uuidString:)` accepts). The bytes are
    /// read from the string's contiguous UTF-8 storage: iterating a generic `StringProtocol`'s UTF-8 view went
    /// through a witness call per byte, and the publish path parses UUIDs on every request.
    public init?(text: some StringProtocol) {
        let parsed = text.utf8.withContiguousStorageIfAvailable(Self.parse) ?? Array(text.utf8).withUnsafeBufferPointer(Self.parse)
        guard let parsed else { return nil }
        self.init(uuid: parsed)
    }

    private static func parse(_ utf8: UnsafeBufferPointer<UInt8>) -> uuid_t? {
        guard utf8.count == 36 else { return nil }
        var bytes: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        let ok = withUnsafeMutableBytes(of: &bytes) { out -> Bool in
            var position = 0
            for index in 0..<16 {
                if position == 8 || position == 13 || position == 18 || position == 23 {
                    guard utf8[position] == UInt8(ascii: "-") else { return false }
                    position += 1
                }
                guard let high = nibble(utf8[position]), let low = nibble(utf8[position + 1]) else { return false }
                out[index] = high << 4 | low
                position += 2
            }
            return true
        }
        return ok ? bytes : nil
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    /// The canonical form in lower case (as AWS and PostgreSQL write UUIDs).
    public var lowercasedText: String {
        String(unsafeUninitializedCapacity: 36) { writeLowercasedText(into: $0, at: 0) }
    }

    /// Writes the 36-byte lower-case text form into `out` from `offset`; returns the offset after it. For callers
    /// that build a larger text (an ARN) in one allocation.
    public func writeLowercasedText(into out: UnsafeMutableBufferPointer<UInt8>, at offset: Int) -> Int {
        withUnsafeBytes(of: uuid) { raw in
            let digits: StaticString = "0123456789abcdef"
            var o = offset
            digits.withUTF8Buffer { hex in
                for i in 0..<16 {
                    if i == 4 || i == 6 || i == 8 || i == 10 {
                        out[o] = UInt8(ascii: "-")
                        o += 1
                    }
                    out[o] = hex[Int(raw[i] >> 4)]
                    out[o + 1] = hex[Int(raw[i] & 0x0f)]
                    o += 2
                }
            }
            return o
        }
    }
}
