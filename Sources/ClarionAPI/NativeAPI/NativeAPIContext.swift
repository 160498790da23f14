import ClarionCore
import ClarionCrypto
import ClarionHTTP1
import ClarionStore
import Foundation

/// What the native JSON API under `/v1` stands on: the same repositories and publish batcher as the SNS
/// actions (so a resource made through one API is the other's too), the API-key authenticator, the region
/// for ARNs, and an injected clock and id source.
public struct NativeAPIContext: Sendable {
    public let authenticator: BearerAuthenticator
    public let accounts: AccountRepository
    public let applications: PlatformApplicationRepository
    public let endpoints: EndpointRepository
    public let topics: TopicRepository
    public let subscriptions: SubscriptionRepository
    public let tags: TagRepository
    public let messages: MessageRepository
    /// The dispatcher's job queue, for message status.
    public let jobs: FanOutJobs
    public let batcher: PublishBatcher
    public let region: String
    /// The provider layer's check of platform-application settings (`ProviderSettingsCheck` in a node).
    public let settingsCheck: any PlatformSettingsCheck
    public let clock: @Sendable () -> Date
    public let makeID: @Sendable () -> UUID
    let accountKeys: AccountKeyCache
    /// What never changes about an endpoint (its platform and application), by account and id: a publish to
    /// an endpoint id it has seen skips the lookup; the statement that stores the message still checks that the
    /// endpoint exists in the account and that it and its application are enabled.
    let endpointIdentities = ExpiringCache<EndpointIdentityKey, EndpointIdentity>(lifetime: .seconds(300), capacity: 100_000)

    public init(authenticator: BearerAuthenticator, accounts: AccountRepository, applications: PlatformApplicationRepository,
                endpoints: EndpointRepository, topics: TopicRepository, subscriptions: SubscriptionRepository,
                tags: TagRepository, messages: MessageRepository, jobs: FanOutJobs, batcher: PublishBatcher, region: String,
                settingsCheck: any PlatformSettingsCheck, accountKeys: AccountKeyCache = AccountKeyCache(),
                clock: @escaping @Sendable () -> Date = { Date() }, makeID: @escaping @Sendable () -> UUID = { UUID.timeOrdered() }) {
        self.authenticator = authenticator
        self.accountKeys = accountKeys
        self.accounts = accounts
        self.applications = applications
        self.endpoints = endpoints
        self.topics = topics
        self.subscriptions = subscriptions
        self.tags = tags
        self.messages = messages
        self.jobs = jobs
        self.batcher = batcher
        self.region = region
        self.settingsCheck = settingsCheck
        self.clock = clock
        self.makeID = makeID
    }

    /// Every repository over one pool and master key; API keys checked against the accounts' stored hashes,
    /// remembered for a few seconds (`CachingAPIKeyResolver`).
    public init(pool: PGPool, masterKey: AESGCMKey, batcher: PublishBatcher, region: String,
                settingsCheck: any PlatformSettingsCheck, clock: @escaping @Sendable () -> Date = { Date() }, makeID: @escaping @Sendable () -> UUID = { UUID.timeOrdered() }) {
        let accounts = AccountRepository(pool: pool, masterKey: masterKey)
        self.init(authenticator: BearerAuthenticator(resolver: CachingAPIKeyResolver(base: StoreAPIKeyResolver(accounts: accounts))),
                  accounts: accounts,
                  applications: PlatformApplicationRepository(pool: pool, masterKey: masterKey),
                  endpoints: EndpointRepository(pool: pool), topics: TopicRepository(pool: pool),
                  subscriptions: SubscriptionRepository(pool: pool), tags: TagRepository(pool: pool),
                  messages: MessageRepository(pool: pool), jobs: FanOutJobs(pool: pool),
                  batcher: batcher, region: region, settingsCheck: settingsCheck, clock: clock, makeID: makeID)
    }

    /// The SNS actions' repositories, batcher, region, clock and id source, so both APIs share every call.
    public init(sharing sns: SNSActionContext, authenticator: BearerAuthenticator? = nil) {
        let pool = sns.accounts.pool
        let keys = CachingAPIKeyResolver(base: StoreAPIKeyResolver(accounts: sns.accounts))
        self.init(authenticator: authenticator ?? BearerAuthenticator(resolver: keys),
                  accounts: sns.accounts, applications: sns.applications, endpoints: sns.endpoints, topics: sns.topics,
                  subscriptions: sns.subscriptions, tags: sns.tags, messages: MessageRepository(pool: pool),
                  jobs: FanOutJobs(pool: pool), batcher: sns.batcher, region: sns.region, settingsCheck: sns.settingsCheck, accountKeys: sns.accountKeys,
                  clock: sns.clock, makeID: sns.makeID)
    }

    /// Authenticates the request and finds the account it acts for.
    func caller(_ request: HTTPRequest) async throws(JSONAPIError) -> NativeCaller {
        let principal = try await authenticator.authenticate(request)
        do throws(StoreError) {
            // An API key exists only for an existing account.
            let key = try await accountKeys.key(principal.accountID) { () async throws(StoreError) in
                try await accounts.account(accountID: principal.accountID).key
            }
            return NativeCaller(accountID: principal.accountID, accountKey: key, region: region)
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
