import ClarionCore
import ClarionCrypto
import ClarionStore
import Foundation

/// What the SNS actions stand on: the repositories, the publish batcher, the region for ARNs, and the
/// injected clock and id source (tests make them deterministic).
public struct SNSActionContext: Sendable {
    public let accounts: AccountRepository
    public let applications: PlatformApplicationRepository
    public let endpoints: EndpointRepository
    public let topics: TopicRepository
    public let subscriptions: SubscriptionRepository
    public let tags: TagRepository
    public let batcher: PublishBatcher
    public let region: String
    /// The provider layer's check of platform-application settings (`ProviderSettingsCheck` in a node).
    public let settingsCheck: any PlatformSettingsCheck
    public let clock: @Sendable () -> Date
    public let makeID: @Sendable () -> UUID
    let accountKeys = AccountKeyCache()

    public init(accounts: AccountRepository, applications: PlatformApplicationRepository, endpoints: EndpointRepository,
                topics: TopicRepository, subscriptions: SubscriptionRepository, tags: TagRepository, batcher: PublishBatcher,
                region: String, settingsCheck: any PlatformSettingsCheck, clock: @escaping @Sendable () -> Date = { Date() },
                makeID: @escaping @Sendable () -> UUID = { UUID.timeOrdered() }) {
        self.accounts = accounts
        self.applications = applications
        self.endpoints = endpoints
        self.topics = topics
        self.subscriptions = subscriptions
        self.tags = tags
        self.batcher = batcher
        self.region = region
        self.settingsCheck = settingsCheck
        self.clock = clock
        self.makeID = makeID
    }

    /// Every repository over one pool and master key.
    public init(pool: PGPool, masterKey: AESGCMKey, batcher: PublishBatcher, region: String,
                settingsCheck: any PlatformSettingsCheck, clock: @escaping @Sendable () -> Date = { Date() }, makeID: @escaping @Sendable () -> UUID = { UUID.timeOrdered() }) {
        self.init(accounts: AccountRepository(pool: pool, masterKey: masterKey),
                  applications: PlatformApplicationRepository(pool: pool, masterKey: masterKey),
                  endpoints: EndpointRepository(pool: pool), topics: TopicRepository(pool: pool),
                  subscriptions: SubscriptionRepository(pool: pool), tags: TagRepository(pool: pool),
                  batcher: batcher, region: region, settingsCheck: settingsCheck, clock: clock, makeID: makeID)
    }

    /// The caller's internal account key. Accounts never change key, so it is cached after the first lookup
    /// (which creates the account when authentication is disabled and it does not exist yet).
    func accountKey(_ caller: SNSCaller) async throws(SNSError) -> Int64 {
        do throws(StoreError) {
            return try await accountKeys.key(caller.accountID) { () async throws(StoreError) in
                try await accounts.ensureAccount(accountID: caller.accountID).key
            }
        } catch {
            throw error.isTransient ? SNSError.serviceUnavailable(cause: error.logText) : SNSError.internalError(cause: error.logText)
        }
    }
}
