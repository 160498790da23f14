/// A FIFO with cheap push at both ends (requests refused by GOAWAY go back to the front).
package struct RingBuffer<Element> {
    private var storage: [Element?]
    private var head = 0
    package private(set) var count = 0

    package init(initialCapacity: Int = 16) {
        storage = Array(repeating: nil, count: max(4, initialCapacity))
    }

    package var isEmpty: Bool { count == 0 }

    package mutating func append(_ element: Element) {
        if count == storage.count { grow() }
        storage[(head + count) % storage.count] = element
        count += 1
    }

    package mutating func prepend(_ element: Element) {
        if count == storage.count { grow() }
        head = (head - 1 + storage.count) % storage.count
        storage[head] = element
        count += 1
    }

    package mutating func popFirst() -> Element? {
        guard count > 0 else { return nil }
        let element = storage[head].take()
        head = (head + 1) % storage.count
        count -= 1
        return element
    }

    var first: Element? { count > 0 ? storage[head] : nil }

    /// Removes and returns the elements for which `shouldRemove` is true, keeping the others in order.
    package mutating func removeAll(where shouldRemove: (Element) -> Bool) -> [Element] {
        var removed: [Element] = []
        var kept = RingBuffer(initialCapacity: storage.count)
        while let element = popFirst() {
            if shouldRemove(element) { removed.append(element) } else { kept.append(element) }
        }
        self = kept
        return removed
    }

    package mutating func removeAll() -> [Element] {
        var all: [Element] = []
        all.reserveCapacity(count)
        while let element = popFirst() { all.append(element) }
        return all
    }

    private mutating func grow() {
        var bigger = [Element?](repeating: nil, count: storage.count * 2)
        for i in 0..<count { bigger[i] = storage[(head + i) % storage.count].take() }
        storage = bigger
        head = 0
    }
}
