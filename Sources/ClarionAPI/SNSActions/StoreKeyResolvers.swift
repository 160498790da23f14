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

extension StoreError: TemporaryFailure {
    public var isTemporary: Bool { isTransient }
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

/// The demo SNS key pair that `./scripts/run` sets for the README's first push is public knowledge, so it works
/// only on a node whose API listens on loopback: anywhere else this resolver does not know it, whatever the
/// database says (another node sharing the database may have stored it).
public struct DemoKeyGuard: AccessKeyResolver {
    /// The pair `scripts/run` exports when the user sets none.
    public static let demoAccessKeyID = "AKIACLARIONDEMO00001"
    public static let demoSecretAccessKey = "clarion-demo-secret-change-me"

    private let base: any AccessKeyResolver
    private let allowDemo: Bool

    public init(base: any AccessKeyResolver, listensOnLoopbackOnly: Bool) {
        self.base = base
        self.allowDemo = listensOnLoopbackOnly
    }

    public static func isDemo(accessKeyID: String?, secret: String?) -> Bool {
        accessKeyID == demoAccessKeyID || secret == demoSecretAccessKey
    }

    public func credentials(forAccessKeyID accessKeyID: String) async throws -> AccessKeyCredentials? {
        guard let credentials = try await base.credentials(forAccessKeyID: accessKeyID) else { return nil }
        if !allowDemo, Self.isDemo(accessKeyID: credentials.accessKeyID, secret: credentials.secretAccessKey) { return nil }
        return credentials
    }
}
