import ClarionCore
import ClarionCrypto
import Foundation
import Synchronization

/// The APNs provider token (A.5) of one (team, key): one ES256 JWT shared by every connection that
/// authenticates with that key, renewed about every 50 minutes and never more often than every 20.
///
/// Why shared: APNs refuses a new token on a connection more than once per 20 minutes
/// (`TooManyProviderTokenUpdates`) and a token older than an hour (`ExpiredProviderToken`). Minting per
/// connection or per request would trip the first rule; one token for all, renewed on a fixed cadence, keeps
/// every connection on the same token, and a connection opened late in a token's life simply takes the next
/// one with everybody else.
///
/// States: *empty* -> (first `authorization()`) -> *current(token, issuedAt)*;
/// *current* -> (age >= `renewalAge` at `authorization()`) -> *current(new)*;
/// *current* -> (`providerTokenExpired(rejected:)` for this token, age >= `minimumAge`) -> *current(new)*.
/// Nothing else changes the token.
public final class APNsTokenSigner: Sendable {
    public let keyID: String
    public let teamID: String
    /// Age at which the next `authorization()` mints a new token (A.5 practice: 50 minutes).
    public let renewalAge: TimeInterval
    /// A token younger than this is never replaced (A.5: at most one new token per 20 minutes).
    public let minimumAge: TimeInterval

    private let key: SigningKey
    private let clock: @Sendable () -> Date

    private struct Current {
        var authorization: String
        var issuedAt: Int64
    }

    private struct State {
        var current: Current?
        var minted = 0
    }

    private let state = Mutex(State())

    public init(credentials: APNsTokenCredentials, renewalAge: TimeInterval = 50 * 60, minimumAge: TimeInterval = 20 * 60,
                clock: @escaping @Sendable () -> Date = { Date() }) {
        precondition(minimumAge <= renewalAge && renewalAge < 60 * 60, "APNs tokens live one hour at most")
        keyID = credentials.keyID
        teamID = credentials.teamID
        key = credentials.signingKey
        self.renewalAge = renewalAge
        self.minimumAge = minimumAge
        self.clock = clock
    }

    /// The `authorization` header value, `bearer <jwt>`: the cached token, or a new one when it is due.
    ///
    /// Signing happens under the lock: it is CPU only (one ECDSA signature, tens of microseconds, about once
    /// every 50 minutes) and holding the lock is what guarantees a single token for all callers.
    public func authorization() throws(ProviderError) -> String {
        let now = Int64(clock().timeIntervalSince1970.rounded(.down))
        return try state.withLock { state throws(ProviderError) -> String in
            if let current = state.current, Double(now - current.issuedAt) < renewalAge {
                return current.authorization
            }
            let minted = try mint(issuedAt: now)
            state.current = minted
            state.minted += 1
            return minted.authorization
        }
    }

    /// APNs answered `ExpiredProviderToken` to a request that carried `rejected`. Replaces the token when
    /// `rejected` is still the current one and it is at least `minimumAge` old; returns true when this call
    /// replaced it (the caller then recycles the pool's connections: A.7, pushy closes a connection after
    /// this error). Many in-flight requests can fail with the same token: only the first one renews.
    @discardableResult
    public func providerTokenExpired(rejected: String) -> Bool {
        let now = Int64(clock().timeIntervalSince1970.rounded(.down))
        return state.withLock { state -> Bool in
            guard let current = state.current, current.authorization == rejected else { return false }
            guard Double(now - current.issuedAt) >= minimumAge else { return false }
            guard let minted = try? mint(issuedAt: now) else {
                state.current = nil  // the next authorization() retries and reports the error
                return true
            }
            state.current = minted
            state.minted += 1
            return true
        }
    }

    /// Tokens minted so far (tests and metrics).
    public var tokensMinted: Int { state.withLock { $0.minted } }

    /// `iat` of the current token, Unix seconds; nil before the first one.
    public var currentIssuedAt: Int64? { state.withLock { $0.current?.issuedAt } }

    private func mint(issuedAt: Int64) throws(ProviderError) -> Current {
        do {
            let jwt = try JWT.sign(header: ["kid": .string(keyID)],
                                   claims: ["iss": .string(teamID), "iat": .number(JSONNumber(issuedAt))], key: key)
            return Current(authorization: "bearer " + jwt, issuedAt: issuedAt)
        } catch {
            throw ProviderError(.invalidAttribute, attribute: ProviderAttribute.platformCredential,
                                "cannot sign the APNs provider token: \(error.message)")
        }
    }
}
