internal import COpenSSL
import Foundation

extension UUID {
    /// A random (version 4) UUID from OpenSSL's CSPRNG (`RAND_bytes`: a per-thread DRBG seeded from the kernel).
    /// Foundation's `UUID()` on Linux opens /dev/urandom on every call, and glibc 2.36's `arc4random_buf` makes a
    /// `getrandom` system call per call; a publish makes two ids (message and request), which strace counted as
    /// two system calls per request.
    public static func random() -> UUID {
        var bytes: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &bytes) { raw in
            precondition(RAND_bytes(raw.baseAddress!.assumingMemoryBound(to: UInt8.self), 16) == 1, "RAND_bytes failed")
            raw[6] = raw[6] & 0x0f | 0x40  // version 4
            raw[8] = raw[8] & 0x3f | 0x80  // RFC 4122 variant
        }
        return UUID(uuid: bytes)
    }
}
