/// An access key pair and the account it acts for.
public struct AccessKeyCredentials: Sendable, Equatable {
    public let accessKeyID: String
    public let secretAccessKey: String
    public let accountID: String

    public init(accessKeyID: String, secretAccessKey: String, accountID: String) {
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.accountID = accountID
    }
}

/// Looks up the secret for an access key id (the store implements it against the accounts' keys).
/// Return nil for an unknown or disabled key; throw only when the lookup itself failed (the request then
/// gets InternalError, not an authentication error).
public protocol AccessKeyResolver: Sendable {
    func credentials(forAccessKeyID accessKeyID: String) async throws -> AccessKeyCredentials?
}

/// A lookup failure that may pass (the store is down, restarting or full): the request is answered 503, which
/// clients retry, instead of 500. The store's errors conform (StoreKeyResolvers.swift).
public protocol TemporaryFailure: Error {
    var isTemporary: Bool { get }
}

/// A fixed set of keys: configuration-file keys, tests, the demo.
public struct StaticAccessKeyResolver: AccessKeyResolver {
    private let keys: [String: AccessKeyCredentials]

    public init(_ credentials: [AccessKeyCredentials]) {
        var keys: [String: AccessKeyCredentials] = [:]
        for credential in credentials { keys[credential.accessKeyID] = credential }
        self.keys = keys
    }

    public func credentials(forAccessKeyID accessKeyID: String) async throws -> AccessKeyCredentials? {
        keys[accessKeyID]
    }
}
