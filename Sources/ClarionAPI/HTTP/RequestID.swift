import Glibc

/// Request ids: random (version 4) UUIDs in lower case, as AWS writes them.
///
/// Foundation's `UUID()` opened /dev/urandom and formatted through `sprintf` on every call (seen in a
/// profile of /health); this takes 16 bytes from glibc's `arc4random_buf` (a user-space ChaCha20 generator,
/// thread-safe, no system call per request) and formats the text directly.
enum RequestID {
    static func make() -> String {
        var bytes: (UInt64, UInt64) = (0, 0)
        withUnsafeMutableBytes(of: &bytes) { arc4random_buf($0.baseAddress!, 16) }
        return withUnsafeMutableBytes(of: &bytes) { raw in
            raw[6] = raw[6] & 0x0f | 0x40  // version 4
            raw[8] = raw[8] & 0x3f | 0x80  // RFC 4122 variant
            let digits: StaticString = "0123456789abcdef"
            return String(unsafeUninitializedCapacity: 36) { out in
                var o = 0
                for i in 0..<16 {
                    if i == 4 || i == 6 || i == 8 || i == 10 {
                        out[o] = UInt8(ascii: "-")
                        o += 1
                    }
                    digits.withUTF8Buffer { hex in
                        out[o] = hex[Int(raw[i] >> 4)]
                        out[o + 1] = hex[Int(raw[i] & 0x0f)]
                    }
                    o += 2
                }
                return o
            }
        }
    }
}
