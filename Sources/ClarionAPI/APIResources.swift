import ClarionCore
import ClarionCrypto
import ClarionStore
import Foundation

/// What every API family stands on, made once per node: the repositories over one pool, the publish batcher, the
/// region for ARNs, the provider layer's settings check, the account-key cache, and the injected clock and id source
/// (tests make them deterministic).
///
/// The SNS actions and the native API hold this one value (`SNSActionContext`, `NativeAPIContext` read its members
/// as their own), so a resource made through one API is the other's too; the registration and campaign routes share
/// its account-key cache.
public struct APIResources: Sendable {
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
    /// Internal account keys by account id, for every family's authenticated requests.
    public let accountKeys: AccountKeyCache
    public let clock: @Sendable () -> Date
    public let makeID: @Sendable () -> UUID

    /// Every repository over one pool and master key.
    public init(pool: PGPool, masterKey: AESGCMKey, batcher: PublishBatcher, region: String,
                settingsCheck: any PlatformSettingsCheck, clock: @escaping @Sendable () -> Date = { Date() },
                makeID: @escaping @Sendable () -> UUID = { UUID.timeOrdered() }) {
        self.accounts = AccountRepository(pool: pool, masterKey: masterKey)
        self.applications = PlatformApplicationRepository(pool: pool, masterKey: masterKey)
        self.endpoints = EndpointRepository(pool: pool)
        self.topics = TopicRepository(pool: pool)
        self.subscriptions = SubscriptionRepository(pool: pool)
        self.tags = TagRepository(pool: pool)
        self.messages = MessageRepository(pool: pool)
        self.jobs = FanOutJobs(pool: pool)
        self.batcher = batcher
        self.region = region
        self.settingsCheck = settingsCheck
        self.accountKeys = AccountKeyCache()
        self.clock = clock
        self.makeID = makeID
    }
}
