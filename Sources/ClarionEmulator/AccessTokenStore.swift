import ClarionCrypto
import Synchronization

/// An OAuth access token the emulator issued (FCM's `/token`, ADM's `/auth/o2/token`).
struct IssuedAccessToken: Sendable {
    /// The service account's `client_email` or the ADM `client_id`.
    let principal: String
    /// FCM: the service account's project.
    let projectID: String?
    /// FCM: the grant included `firebase.messaging` or `cloud-platform` (B.2).
    let allowsMessaging: Bool
    /// Unix seconds.
    let expiresAt: Double
}

/// Issued access tokens, shared by every connection (a token from one connection is used on others).
/// Bounded: expired tokens are pruned when the table grows, and past `capacity` the oldest go first.
final class AccessTokenStore: Sendable {
    private let tokens = Mutex<[String: IssuedAccessToken]>([:])
    private let prefix: String
    private let capacity: Int

    init(prefix: String, capacity: Int = 100_000) {
        self.prefix = prefix
        self.capacity = capacity
    }

    /// A new random token for `grant`.
    func issue(_ grant: IssuedAccessToken, now: Double) -> String {
        let token = prefix + Base64URL.encode(SecureRandom.bytes(24))
        tokens.withLock { table in
            if table.count >= capacity {
                table = table.filter { $0.value.expiresAt > now }
                if table.count >= capacity {
                    let oldest = table.sorted { $0.value.expiresAt < $1.value.expiresAt }.prefix(table.count - capacity + 1)
                    for (key, _) in oldest { table[key] = nil }
                }
            }
            table[token] = grant
        }
        return token
    }

    func lookup(_ token: String) -> IssuedAccessToken? {
        tokens.withLock { $0[token] }
    }

    func removeAll() {
        tokens.withLock { $0.removeAll() }
    }
}
