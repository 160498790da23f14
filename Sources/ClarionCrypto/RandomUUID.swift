internal import COpenSSL
import Foundation
import Synchronization

extension UUID {
    /// A random (version 4) UUID from OpenSSL's CSPRNG.
    ///
    /// Foundation's `UUID()` on Linux opens /dev/urandom on every call and glibc 2.36's `arc4random_buf` makes a
    /// `getrandom` system call per call; OpenSSL 3's `RAND_bytes` calls `getpid` on every call (its fork check).
    /// A publish makes two ids (message and request), so each of these was two system calls per request. The ids
    /// are drawn from a reserve that `RAND_bytes` fills 4 KiB at a time (one call per 256 ids). Ids are public
    /// names, not secrets; the process never forks without exec, so no two processes share a reserve.
    public static func random() -> UUID {
        var bytes = identifierReserve.withLock { $0.next() }
        withUnsafeMutableBytes(of: &bytes) { raw in
            raw[6] = raw[6] & 0x0f | 0x40  // version 4
            raw[8] = raw[8] & 0x3f | 0x80  // RFC 4122 variant
        }
        return UUID(uuid: bytes)
    }

    /// A time-ordered (version 7, RFC 9562 section 5.7) UUID: 48 bits of Unix time in milliseconds, then 74 random
    /// bits. Used for ids of rows that are inserted at a high rate and indexed by id (messages, endpoints,
    /// subscriptions): consecutive ids land on the rightmost page of PostgreSQL's unique index, where a random id
    /// touches any page of it. The random part keeps ids unguessable; the time they reveal is their creation time.
    public static func timeOrdered(unixMilliseconds milliseconds: UInt64 = UUID.unixMillisecondsNow()) -> UUID {
        var bytes = identifierReserve.withLock { $0.next() }
        withUnsafeMutableBytes(of: &bytes) { raw in
            for index in 0..<6 { raw[index] = UInt8(truncatingIfNeeded: milliseconds >> (8 * (5 - index))) }
            raw[6] = raw[6] & 0x0f | 0x70  // version 7
            raw[8] = raw[8] & 0x3f | 0x80  // RFC 9562 variant
        }
        return UUID(uuid: bytes)
    }

    /// `CLOCK_REALTIME` in milliseconds (a vDSO call, no system call).
    public static func unixMillisecondsNow() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return UInt64(now.tv_sec) &* 1000 &+ UInt64(now.tv_nsec / 1_000_000)
    }
}

private let identifierReserve = Mutex(RandomReserve())

/// Random 16-byte values drawn from `RAND_bytes` a block at a time; each byte is handed out once.
struct RandomReserve: ~Copyable {
    static let blockSize = 4096
    private let block = UnsafeMutableRawBufferPointer.allocate(byteCount: RandomReserve.blockSize, alignment: 16)
    private var offset = RandomReserve.blockSize

    init() {}

    deinit { block.deallocate() }

    /// The next 16 bytes no other call received, refilling the block when it is used up.
    mutating func next() -> uuid_t {
        if offset == Self.blockSize {
            precondition(RAND_bytes(block.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(Self.blockSize)) == 1,
                         "RAND_bytes failed")
            offset = 0
        }
        defer { offset += MemoryLayout<uuid_t>.size }
        return block.loadUnaligned(fromByteOffset: offset, as: uuid_t.self)
    }
}
