@testable import ClarionHTTP2
import Testing

/// The nghttp2 sessions' allocator: blocks come back from its free lists, realloc keeps the bytes, calloc zeroes,
/// and the free lists stay bounded. (Every client and server test runs its sessions on it as well.)
@Suite struct NGHTTP2AllocatorTests {
    @Test func aFreedBlockIsHandedOutAgainForASizeOfTheSameClass() {
        let allocator = NGHTTP2Allocator()
        let first = allocator.allocate(100)!
        #expect(Int(bitPattern: first) % 16 == 0)
        allocator.release(first)
        #expect(allocator.cachedBlockCounts[2] == 1)  // 100 bytes: the 128-byte class
        let second = allocator.allocate(120)!
        #expect(second == first)
        #expect(allocator.cachedBlockCounts[2] == 0)
        let other = allocator.allocate(20)!  // another class: a new block
        #expect(other != first)
        allocator.release(second)
        allocator.release(other)
        allocator.release(nil)
    }

    @Test func reallocKeepsTheBytesAndCallocZeroes() {
        let allocator = NGHTTP2Allocator()
        let zeroed = allocator.allocateZeroed(10, 30)!.assumingMemoryBound(to: UInt8.self)
        #expect((0..<300).allSatisfy { zeroed[$0] == 0 })
        for i in 0..<300 { zeroed[i] = UInt8(truncatingIfNeeded: i) }
        let same = allocator.reallocate(zeroed, 500)!  // still within the 512-byte class
        #expect(same == UnsafeMutableRawPointer(zeroed))
        let grown = allocator.reallocate(same, 10_000)!.assumingMemoryBound(to: UInt8.self)  // beyond the classes
        #expect((0..<300).allSatisfy { grown[$0] == UInt8(truncatingIfNeeded: $0) })
        let regrown = allocator.reallocate(grown, 20_000)!.assumingMemoryBound(to: UInt8.self)
        #expect((0..<300).allSatisfy { regrown[$0] == UInt8(truncatingIfNeeded: $0) })
        allocator.release(regrown)
        #expect(allocator.allocateZeroed(Int.max, 2) == nil)
    }

    @Test func theFreeListsAreBounded() {
        let allocator = NGHTTP2Allocator()
        let blocks = (0..<5_000).map { _ in allocator.allocate(64)! }
        for block in blocks { allocator.release(block) }
        #expect(allocator.cachedBlockCounts[1] == NGHTTP2Allocator.cachedBytesPerClass / 64)
        let large = (0..<100).map { _ in allocator.allocate(4096)! }
        for block in large { allocator.release(block) }
        #expect(allocator.cachedBlockCounts[7] == NGHTTP2Allocator.cachedBytesPerClass / 4096)
    }
}
