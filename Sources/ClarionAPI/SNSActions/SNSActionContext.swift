import ClarionCore
import ClarionCrypto
import ClarionStore
import Foundation

/// What the SNS actions stand on: the node's `APIResources` (repositories, publish batcher, region, settings check,
/// clock and id source), whose members read as the context's own (`context.topics`).
@dynamicMemberLookup
public struct SNSActionContext: Sendable {
    public let resources: APIResources

    public init(resources: APIResources) {
        self.resources = resources
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

    /// The caller's internal account key. Accounts never change key, so it is cached after the first lookup
    /// (which creates the account when authentication is disabled and it does not exist yet).
    func accountKey(_ caller: SNSCaller) async throws(SNSError) -> Int64 {
        do throws(StoreError) {
            return try await resources.accountKeys.key(caller.accountID) { () async throws(StoreError) in
                try await resources.accounts.ensureAccount(accountID: caller.accountID).key
            }
        } catch {
            throw error.isTransient ? SNSError.serviceUnavailable(cause: error.logText) : SNSError.internalError(cause: error.logText)
        }
    }
}
