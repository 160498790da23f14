import Synchronization

/// A small bounded map whose entries expire after `lifetime`: credential lookups (SigV4 access keys, API keys)
/// cost one store round trip per key per lifetime instead of one per request. When full it starts over rather
/// than growing with garbage keys; misses are never stored, so a key created a moment ago works at once.
final class ExpiringCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private struct Entry: Sendable {
        let value: Value
        let expires: ContinuousClock.Instant
    }

    private let lifetime: Duration
    private let capacity: Int
    private let now: @Sendable () -> ContinuousClock.Instant
    private let entries = Mutex<[Key: Entry]>([:])

    init(lifetime: Duration, capacity: Int, now: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }) {
        self.lifetime = lifetime
        self.capacity = max(1, capacity)
        self.now = now
    }

    /// The cached value, or `load()`'s result (remembered when not nil).
    func value(for key: Key, load: () async throws -> Value?) async rethrows -> Value? {
        if let value = cached(key) { return value }
        guard let value = try await load() else {
            entries.withLock { _ = $0.removeValue(forKey: key) }
            return nil
        }
        remember(key, value)
        return value
    }

    /// The cached value when present and fresh; no load.
    func cached(_ key: Key) -> Value? {
        let instant = now()
        guard let entry = entries.withLock({ $0[key] }), entry.expires > instant else { return nil }
        return entry.value
    }

    /// Stores a value learned elsewhere.
    func remember(_ key: Key, _ value: Value) {
        let entry = Entry(value: value, expires: now() + lifetime)
        entries.withLock { table in
            if table.count >= capacity { table.removeAll(keepingCapacity: true) }
            table[key] = entry
        }
    }
}
