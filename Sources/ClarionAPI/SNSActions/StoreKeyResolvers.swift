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

/// Native-API bearer keys, compared by SHA-256 hash in the store.
public struct StoreAPIKeyResolver: APIKeyResolver {
    private let accounts: AccountRepository

    public init(accounts: AccountRepository) { self.accounts = accounts }

    public func principal(forAPIKey key: String) async throws -> APIPrincipal? {
        guard let record = try await accounts.apiKey(matching: key) else { return nil }
        return APIPrincipal(accountID: record.accountID, keyID: String(record.id))
    }
}
