import Foundation
import Glibc

extension UUID {
    /// A random (version 4) UUID from glibc's `arc4random_buf` (the kernel's CSPRNG through `getrandom`).
    /// Foundation's `UUID()` on Linux opens /dev/urandom on every call, which showed in the publish profile.
    public static func random() -> UUID {
        var bytes: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &bytes) { raw in
            arc4random_buf(raw.baseAddress!, 16)
            raw[6] = raw[6] & 0x0f | 0x40  // version 4
            raw[8] = raw[8] & 0x3f | 0x80  // RFC 4122 variant
        }
        return UUID(uuid: bytes)
    }
}
