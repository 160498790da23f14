import ClarionCrypto
import Synchronization

/// Remembers recently verified API keys for a few seconds, so a client publishing thousands of times a second
/// costs one key lookup per `lifetime`, not one per request.
///
/// Keys are held by their SHA-256 only (never the plaintext). A revoked key keeps working for at most
/// `lifetime` on a node that saw it. Unknown keys are not remembered, so a key created a moment ago works at
/// once; the table is bounded (`capacity`) and starts over when full rather than growing with garbage keys.
public final class CachingAPIKeyResolver: APIKeyResolver {
    private let base: any APIKeyResolver
    private let cache: ExpiringCache<[UInt8], APIPrincipal>

    public init(base: any APIKeyResolver, lifetime: Duration = .seconds(10), capacity: Int = 10_000,
                now: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }) {
        self.base = base
        self.cache = ExpiringCache(lifetime: lifetime, capacity: capacity, now: now)
    }

    public func principal(forAPIKey key: String) async throws -> APIPrincipal? {
        try await cache.value(for: Digest.sha256(key)) { try await base.principal(forAPIKey: key) }
    }
}
