import ClarionStore

/// SigV4 key lookup against the accounts' stored access keys.
public struct StoreAccessKeyResolver: AccessKeyResolver {
    private let accounts: AccountRepository

    public init(accounts: AccountRepository) { self.accounts = accounts }

    public func credentials(forAccessKeyID accessKeyID: String) async throws -> AccessKeyCredentials? {
        guard let key = try await accounts.accessKey(accessKeyID: accessKeyID) else { return nil }
        return AccessKeyCredentials(accessKeyID: key.accessKeyID, secretAccessKey: key.secretAccessKey,
                                    accountID: key.accountID)
    }
}

/// Remembers verified SigV4 access keys for a few seconds, so a client signing thousands of requests a second
/// costs one key lookup (a query and an AES-GCM open) per `lifetime`, not one per request. A disabled key keeps
/// working for at most `lifetime` on a node that saw it; unknown keys are not remembered.
public final class CachingAccessKeyResolver: AccessKeyResolver {
    private let base: any AccessKeyResolver
    private let cache: ExpiringCache<String, AccessKeyCredentials>

    public init(base: any AccessKeyResolver, lifetime: Duration = .seconds(10), capacity: Int = 10_000) {
        self.base = base
        self.cache = ExpiringCache(lifetime: lifetime, capacity: capacity)
    }

    public func credentials(forAccessKeyID accessKeyID: String) async throws -> AccessKeyCredentials? {
        try await cache.value(for: accessKeyID) { try await base.credentials(forAccessKeyID: accessKeyID) }
    }
}

/// Native-API bearer keys, compared by SHA-256 hash in the store.
public struct StoreAPIKeyResolver: APIKeyResolver {
    private let accounts: AccountRepository

    public init(accounts: AccountRepository) { self.accounts = accounts }

    public func principal(forAPIKey key: String) async throws -> APIPrincipal? {
        guard let record = try await accounts.apiKey(matching: key) else { return nil }
        return APIPrincipal(accountID: record.accountID, keyID: String(record.id))
    }
}
