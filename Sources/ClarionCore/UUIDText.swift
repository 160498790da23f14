import Foundation

/// UUID text without Foundation's slow paths. On Linux, `UUID(text:)` goes through `sscanf` and
/// `uuidString` through `sprintf` plus an upper-case copy that callers then lower-case again; the publish path
/// parses an ARN's UUID and formats a message id for every request, so both showed in its profile.
extension UUID {
    /// Parses the canonical 8-4-4-4-12 hex form, either case (what `UUID(text:)` accepts).
    public init?(text: some StringProtocol) {
        var bytes: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        let ok = withUnsafeMutableBytes(of: &bytes) { out -> Bool in
            var utf8 = text.utf8.makeIterator()
            var index = 0
            var position = 0
            var high: UInt8?
            while let c = utf8.next() {
                defer { position += 1 }
                if position == 8 || position == 13 || position == 18 || position == 23 {
                    guard c == UInt8(ascii: "-") else { return false }
                    continue
                }
                let nibble: UInt8
                switch c {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = c - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = c - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): nibble = c - UInt8(ascii: "A") + 10
                default: return false
                }
                guard index < 16 else { return false }
                if let h = high {
                    out[index] = h << 4 | nibble
                    index += 1
                    high = nil
                } else {
                    high = nibble
                }
            }
            return position == 36 && index == 16
        }
        guard ok else { return nil }
        self.init(uuid: bytes)
    }

    /// The canonical form in lower case (as AWS and PostgreSQL write UUIDs).
    public var lowercasedText: String {
        withUnsafeBytes(of: uuid) { raw in
            String(unsafeUninitializedCapacity: 36) { out in
                let digits: StaticString = "0123456789abcdef"
                var o = 0
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
}
