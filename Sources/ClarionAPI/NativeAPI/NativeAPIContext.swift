import ClarionCore
import ClarionCrypto
import ClarionHTTP1
import ClarionStore
import Foundation

/// What the native JSON API under `/v1` stands on: the node's `APIResources`, the same value the SNS actions hold (so
/// a resource made through one API is the other's too; its members read as the context's own), and the API-key
/// authenticator.
@dynamicMemberLookup
public struct NativeAPIContext: Sendable {
    public let resources: APIResources
    public let authenticator: BearerAuthenticator
    /// What never changes about an endpoint (its platform and application), by account and id: a publish to
    /// an endpoint id it has seen skips the lookup; the statement that stores the message still checks that the
    /// endpoint exists in the account and that it and its application are enabled.
    let endpointIdentities = ExpiringCache<EndpointIdentityKey, EndpointIdentity>(lifetime: .seconds(300), capacity: 100_000)

    /// API keys checked against the accounts' stored hashes unless `authenticator` is given, remembered for a few
    /// seconds (`CachingAPIKeyResolver`).
    public init(resources: APIResources, authenticator: BearerAuthenticator? = nil) {
        self.resources = resources
        self.authenticator = authenticator
            ?? BearerAuthenticator(resolver: CachingAPIKeyResolver(base: StoreAPIKeyResolver(accounts: resources.accounts)))
    }

    /// Resources of their own over one pool and master key.
    public init(pool: PGPool, masterKey: AESGCMKey, batcher: PublishBatcher, region: String,
                settingsCheck: any PlatformSettingsCheck, clock: @escaping @Sendable () -> Date = { Date() },
                makeID: @escaping @Sendable () -> UUID = { UUID.timeOrdered() }) {
        self.init(resources: APIResources(pool: pool, masterKey: masterKey, batcher: batcher, region: region,
                                          settingsCheck: settingsCheck, clock: clock, makeID: makeID))
    }

    public subscript<Member>(dynamicMember member: KeyPath<APIResources, Member>) -> Member {
        resources[keyPath: member]
    }

    /// Authenticates the request and finds the account it acts for.
    func caller(_ request: HTTPRequest) async throws(JSONAPIError) -> NativeCaller {
        let principal = try await authenticator.authenticate(request)
        do throws(StoreError) {
            // An API key exists only for an existing account.
            let key = try await resources.accountKeys.key(principal.accountID) { () async throws(StoreError) in
                try await resources.accounts.account(accountID: principal.accountID).key
            }
            return NativeCaller(accountID: principal.accountID, accountKey: key, region: resources.region)
        } catch {
            throw error.code == .notFound ? JSONAPIError.invalidAPIKey : JSONAPIError.store(error)
        }
    }
}

/// The authenticated account of one request.
package struct NativeCaller: Sendable {
    let accountID: String
    let accountKey: Int64
    let region: String

    package init(accountID: String, accountKey: Int64, region: String) {
        self.accountID = accountID
        self.accountKey = accountKey
        self.region = region
    }
}

struct EndpointIdentityKey: Hashable, Sendable {
    let accountKey: Int64
    let id: UUID
}

struct EndpointIdentity: Sendable {
    let platform: String
    let applicationName: String
    /// The application's SNS region (endpoint ids are global: the endpoint may live outside the node's region).
    let region: String
}
