internal import CNghttp2

#if canImport(Glibc)
import Glibc
#endif

/// The memory functions (`nghttp2_mem`) of one nghttp2 session: small blocks are kept on free lists by size class
/// and handed out again, instead of going back to `malloc`.
///
/// Why: nghttp2 allocates about five blocks per client stream and six per server stream (stream, outbound item,
/// copied header fields, header buffers) and frees them when the stream closes. With 100 or more streams finishing
/// together, glibc's per-thread cache (7 blocks per size) overflows and most of those calls take its slow path,
/// on either side. A free list costs a few loads and stores.
///
/// One per session, owned by the connection that owns the session and used only from its thread; freed after
/// `nghttp2_session_del`. Bounded: each size class keeps at most `cachedBytesPerClass` bytes of free blocks (the
/// rest go back to `malloc`), so an idle connection holds at most 8 x 64 KiB.
final class NGHTTP2Allocator {
    /// Payload sizes of the classes: 32, 64, ... 4096 bytes. Larger requests go to `malloc` directly.
    private static let classCount = 8
    private static let largestClassSize = 32 << (classCount - 1)
    static let cachedBytesPerClass = 64 * 1024
    /// Each block starts with a header: its payload capacity, then (while free) the next free block.
    private static let headerSize = 16

    @exclusivity(unchecked) private var heads: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    @exclusivity(unchecked) private var freeCounts: UnsafeMutablePointer<Int>

    init() {
        heads = .allocate(capacity: Self.classCount)
        heads.initialize(repeating: nil, count: Self.classCount)
        freeCounts = .allocate(capacity: Self.classCount)
        freeCounts.initialize(repeating: 0, count: Self.classCount)
    }

    deinit {
        for c in 0..<Self.classCount {
            var block = heads[c]
            while let current = block {
                block = current.load(fromByteOffset: 8, as: UnsafeMutableRawPointer?.self)
                Glibc.free(current)
            }
        }
        heads.deallocate()
        freeCounts.deallocate()
    }

    /// The class whose blocks hold `size` bytes (0 for 32 or less); `classCount` or more when too large.
    @inline(__always)
    private static func sizeClass(_ size: Int) -> Int {
        size <= 32 ? 0 : Int.bitWidth - (size - 1).leadingZeroBitCount - 5
    }

    func allocate(_ size: Int) -> UnsafeMutableRawPointer? {
        let c = Self.sizeClass(size)
        if c < Self.classCount {
            if let block = heads[c] {
                heads[c] = block.load(fromByteOffset: 8, as: UnsafeMutableRawPointer?.self)
                freeCounts[c] -= 1
                return block + Self.headerSize
            }
            let capacity = 32 << c
            guard let block = Glibc.malloc(Self.headerSize + capacity) else { return nil }
            block.storeBytes(of: capacity, as: Int.self)
            return block + Self.headerSize
        }
        guard let block = Glibc.malloc(Self.headerSize + size) else { return nil }
        block.storeBytes(of: size, as: Int.self)
        return block + Self.headerSize
    }

    func release(_ pointer: UnsafeMutableRawPointer?) {
        guard let pointer else { return }
        let block = pointer - Self.headerSize
        let capacity = block.load(as: Int.self)
        if capacity <= Self.largestClassSize {
            let c = Self.sizeClass(capacity)
            if freeCounts[c] < Self.cachedBytesPerClass / capacity {
                block.storeBytes(of: heads[c], toByteOffset: 8, as: UnsafeMutableRawPointer?.self)
                heads[c] = block
                freeCounts[c] += 1
                return
            }
        }
        Glibc.free(block)
    }

    func allocateZeroed(_ count: Int, _ size: Int) -> UnsafeMutableRawPointer? {
        let (total, overflow) = count.multipliedReportingOverflow(by: size)
        guard !overflow, let pointer = allocate(total) else { return nil }
        memset(pointer, 0, total)
        return pointer
    }

    func reallocate(_ pointer: UnsafeMutableRawPointer?, _ size: Int) -> UnsafeMutableRawPointer? {
        guard let pointer else { return allocate(size) }
        let capacity = (pointer - Self.headerSize).load(as: Int.self)
        if size <= capacity { return pointer }
        guard let bigger = allocate(size) else { return nil }  // C realloc: the old block stays valid on failure
        bigger.copyMemory(from: pointer, byteCount: capacity)
        release(pointer)
        return bigger
    }

    /// The `nghttp2_mem` to create a session with (nghttp2 copies it). The allocator must outlive the session.
    var memoryFunctions: nghttp2_mem {
        nghttp2_mem(
            mem_user_data: Unmanaged.passUnretained(self).toOpaque(),
            malloc: { size, me in
                Unmanaged<NGHTTP2Allocator>.fromOpaque(me!)._withUnsafeGuaranteedRef { $0.allocate(size) }
            },
            free: { pointer, me in
                Unmanaged<NGHTTP2Allocator>.fromOpaque(me!)._withUnsafeGuaranteedRef { $0.release(pointer) }
            },
            calloc: { count, size, me in
                Unmanaged<NGHTTP2Allocator>.fromOpaque(me!)._withUnsafeGuaranteedRef { $0.allocateZeroed(count, size) }
            },
            realloc: { pointer, size, me in
                Unmanaged<NGHTTP2Allocator>.fromOpaque(me!)._withUnsafeGuaranteedRef { $0.reallocate(pointer, size) }
            })
    }

    /// Free blocks kept, per class (tests).
    var cachedBlockCounts: [Int] { (0..<Self.classCount).map { freeCounts[$0] } }
}
