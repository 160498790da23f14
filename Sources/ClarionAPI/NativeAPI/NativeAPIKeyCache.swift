import ClarionCrypto
import Synchronization

/// Remembers recently verified API keys for a few seconds, so a client publishing thousands of times a second
/// costs one key lookup per `lifetime`, not one per request.
///
/// Keys are held by their SHA-256 only (never the plaintext). A revoked key keeps working for at most
/// `lifetime` on a node that saw it. Unknown keys are not remembered, so a key created a moment ago works at
/// once; the table is bounded (`capacity`) and starts over when full rather than growing with garbage keys.
public final class CachingAPIKeyResolver: APIKeyResolver {
    private struct Entry {
        let principal: APIPrincipal
        let expires: ContinuousClock.Instant
    }

    private let base: any APIKeyResolver
    private let lifetime: Duration
    private let capacity: Int
    private let now: @Sendable () -> ContinuousClock.Instant
    private let entries = Mutex<[[UInt8]: Entry]>([:])

    public init(base: any APIKeyResolver, lifetime: Duration = .seconds(10), capacity: Int = 10_000,
                now: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }) {
        self.base = base
        self.lifetime = lifetime
        self.capacity = max(1, capacity)
        self.now = now
    }

    public func principal(forAPIKey key: String) async throws -> APIPrincipal? {
        let hash = Digest.sha256(key)
        let instant = now()
        if let entry = entries.withLock({ $0[hash] }), entry.expires > instant { return entry.principal }
        guard let principal = try await base.principal(forAPIKey: key) else {
            entries.withLock { _ = $0.removeValue(forKey: hash) }
            return nil
        }
        let entry = Entry(principal: principal, expires: instant + lifetime)
        entries.withLock { table in
            if table.count >= capacity { table.removeAll(keepingCapacity: true) }
            table[hash] = entry
        }
        return principal
    }
}
