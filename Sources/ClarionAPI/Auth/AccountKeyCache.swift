import ClarionStore
import Synchronization

/// Internal account keys by account id (`123456789012` → the `accounts.id` every repository call takes), remembered
/// after the first lookup: an account never changes key, and every authenticated request needs it. Only accounts
/// that authenticated are remembered, so the table is as large as the accounts that use the node.
/// One cache serves the SNS actions, the native API, the registration routes and the campaign reports.
public final class AccountKeyCache: Sendable {
    private let keys = Mutex<[String: Int64]>([:])

    public init() {}

    /// The cached key, or `lookup`'s answer (then remembered); a failed lookup is not remembered.
    func key(_ accountID: String, lookup: () async throws(StoreError) -> Int64) async throws(StoreError) -> Int64 {
        if let key = keys.withLock({ $0[accountID] }) { return key }
        let key = try await lookup()
        keys.withLock { $0[accountID] = key }
        return key
    }
}
