/// Reusable per-stream records behind a raw pointer: a stream's state is reached by index (stored as nghttp2
/// stream user data) without array copy-on-write or dynamic exclusivity checks on the hot path. Freed slots are
/// reused, so a steady load allocates nothing here. Confined to one thread.
/// Slab: its stored properties skip dynamic exclusivity checks (`@exclusivity(unchecked)`): they are touched by one
/// thread, and no method here calls out while mutating them, so the checks (tens per request) buy nothing.
package final class Slab<Element> {
    @exclusivity(unchecked) package private(set) var storage: UnsafeMutablePointer<Element>
    @exclusivity(unchecked) private var capacity: Int
    /// Slots ever handed out (all initialized).
    @exclusivity(unchecked) package private(set) var count = 0
    @exclusivity(unchecked) private var free: [Int] = []
    private let empty: Element

    package init(empty: Element, capacity: Int = 64) {
        self.empty = empty
        self.capacity = capacity
        storage = .allocate(capacity: capacity)
    }

    deinit {
        storage.deinitialize(count: count)
        storage.deallocate()
    }

    /// Slots in use.
    package var liveCount: Int { count - free.count }

    /// A slot holding `empty` (or whatever `release` left there, which callers reset).
    package func allocate() -> Int {
        if let index = free.popLast() { return index }
        if count == capacity {
            let bigger = UnsafeMutablePointer<Element>.allocate(capacity: capacity * 2)
            bigger.moveInitialize(from: storage, count: count)
            storage.deallocate()
            storage = bigger
            capacity *= 2
        }
        (storage + count).initialize(to: empty)
        count += 1
        return count - 1
    }

    /// Puts the slot back; its contents are replaced by `empty` (dropping references).
    package func release(_ index: Int) {
        storage[index] = empty
        free.append(index)
    }

    /// Puts the slot back as it is: the caller has reset what matters and keeps, say, array capacity for reuse.
    package func recycle(_ index: Int) {
        free.append(index)
    }

    /// Drops every slot.
    package func removeAll() {
        storage.deinitialize(count: count)
        count = 0
        free.removeAll()
    }
}
