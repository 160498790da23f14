import ClarionCore
import ClarionCrypto
import Foundation
import Synchronization

/// A token exchange that did not give a token, as the outcome the waiting deliveries get:
/// `credentialsInvalid` when the provider refused the credentials (TokenExchangeClassifier), `retryable` otherwise.
public struct AccessTokenFailure: Error, Sendable, Hashable {
    public let outcome: DeliveryOutcome
}

/// An OAuth access token for FCM (jwt-bearer grant, B.2), ADM or Huawei Push Kit (client-credentials grant, D.1,
/// E.1), cached and
/// refreshed ahead of expiry.
///
/// Sends never wait for a refresh: `cachedToken()` answers from the cache without suspending or locking for long,
/// and once the token passes `refreshAt` it asks the token worker for a new one while sends keep using the old one,
/// still valid for `refreshMargin`. Only when there is no usable token at all (the first send, or after the
/// provider said the token expired) do sends wait, and then all of them wait for one exchange.
///
/// States: *empty* -> (a send asks) -> *fetching* -> *valid(token)* or *failed(outcome, until)*;
/// *valid* -> (past refreshAt, a send asks) -> *valid + fetching* -> *valid(new)*;
/// *valid* -> (`invalidate(token)`, the provider refused it) -> *empty*;
/// *failed* -> (until passes, a send asks) -> *fetching*. A failure is remembered for a while so that a refused
/// credential does not turn every send into a token request. Nothing clears it early: changed credentials get a
/// source of their own (`ProviderRegistry` keys sources by the credential, token URL and CA), and a disabled
/// application's source is released unless another application shares it.
public final class AccessTokenSource: Sendable {
    enum Grant: Sendable {
        case jwtBearer(FCMServiceAccount)
        case clientCredentials(ADMClientCredentials)
        /// Huawei Push Kit (E.1): client credentials without a scope.
        case hmsClientCredentials(HMSCredentials)
    }

    /// FCM scope (B.2).
    public static let fcmScope = "https://www.googleapis.com/auth/firebase.messaging"
    /// ADM scope (D.1).
    public static let admScope = "messaging:push"

    let grant: Grant
    public let tokenURL: String
    let trustedCAPEM: String?
    let worker: TokenWorker
    let clock: @Sendable () -> Date
    /// Refresh this long before expiry (or at half the lifetime for short-lived tokens).
    public let refreshMargin: TimeInterval
    /// How long a refused credential is remembered before the next exchange is tried.
    public let refusalRetention: TimeInterval
    /// How long another failure (network, 5xx) is remembered.
    public let failureRetention: TimeInterval
    let log: Log

    private struct State {
        var token: String?
        var expiresAt = Date.distantPast
        var refreshAt = Date.distantPast
        var fetching = false
        var failure: (outcome: DeliveryOutcome, until: Date)?
        var waiters: [@Sendable (Result<String, AccessTokenFailure>) -> Void] = []
        var exchanges = 0
    }

    private let state = Mutex(State())

    /// Which addresses the token URL may resolve to (nil: any).
    let addressPolicy: OutboundAddressPolicy?

    init(grant: Grant, tokenURL: String, trustedCAPEM: String?, worker: TokenWorker, clock: @escaping @Sendable () -> Date,
         refreshMargin: TimeInterval = 300, refusalRetention: TimeInterval = 60, failureRetention: TimeInterval = 5,
         addressPolicy: OutboundAddressPolicy? = nil, log: Log) {
        self.addressPolicy = addressPolicy
        self.grant = grant
        self.tokenURL = tokenURL
        self.trustedCAPEM = trustedCAPEM
        self.worker = worker
        self.clock = clock
        self.refreshMargin = refreshMargin
        self.refusalRetention = refusalRetention
        self.failureRetention = failureRetention
        self.log = log
    }

    /// The cached token if it is usable now, starting a background refresh when it is due. Never blocks.
    public func cachedToken() -> String? {
        let now = clock()
        let (token, startRefresh) = state.withLock { state -> (String?, Bool) in
            guard let token = state.token, now < state.expiresAt else { return (nil, false) }
            if now >= state.refreshAt, !state.fetching {
                state.fetching = true
                return (token, true)
            }
            return (token, false)
        }
        if startRefresh { startExchange() }
        return token
    }

    /// Calls `completion` with a token: at once when one is cached, else on the token worker's thread after the
    /// exchange. The batch path uses this (no Task per push); keep `completion` short.
    public func withToken(_ completion: @escaping @Sendable (Result<String, AccessTokenFailure>) -> Void) {
        if let token = cachedToken() {
            completion(.success(token))
            return
        }
        let now = clock()
        enum Next { case fail(DeliveryOutcome), wait(startExchange: Bool) }
        let next = state.withLock { state -> Next in
            if let failure = state.failure, now < failure.until { return .fail(failure.outcome) }
            state.waiters.append(completion)
            if state.fetching { return .wait(startExchange: false) }
            state.fetching = true
            return .wait(startExchange: true)
        }
        switch next {
        case .fail(let outcome): completion(.failure(AccessTokenFailure(outcome: outcome)))
        case .wait(let start): if start { startExchange() }
        }
    }

    /// A token, waiting for an exchange when none is cached.
    public func token() async -> Result<String, AccessTokenFailure> {
        if let token = cachedToken() { return .success(token) }
        return await withCheckedContinuation { continuation in
            withToken { continuation.resume(returning: $0) }
        }
    }

    /// The provider refused `token` (FCM 401 UNAUTHENTICATED, ADM AccessTokenExpired): forget it so the next send
    /// fetches a new one. A token already replaced is left alone.
    public func invalidate(token: String) {
        state.withLock { state in
            if state.token == token {
                state.token = nil
                state.expiresAt = .distantPast
            }
        }
    }

    /// Starts a background refresh when the cached token is due for one (the worker's timer calls this).
    func refreshIfDue() {
        let now = clock()
        let start = state.withLock { state -> Bool in
            guard state.token != nil, now >= state.refreshAt, !state.fetching else { return false }
            state.fetching = true
            return true
        }
        if start { startExchange() }
    }

    /// Exchanges made so far (tests and metrics).
    public var exchangeCount: Int { state.withLock { $0.exchanges } }

    // MARK: - Exchange

    private func startExchange() {
        let accepted = worker.execute { [self] in
            let result = exchange()
            finish(result)
        }
        if !accepted {
            finish(.failure(AccessTokenFailure(outcome: .retryable(reason: "provider token worker stopped", retryAfter: nil))))
        }
    }

    private func finish(_ result: Result<(token: String, lifetime: TimeInterval), AccessTokenFailure>) {
        let now = clock()
        let waiters = state.withLock { state -> [@Sendable (Result<String, AccessTokenFailure>) -> Void] in
            state.fetching = false
            state.exchanges += 1
            switch result {
            case .success(let fresh):
                state.token = fresh.token
                state.expiresAt = now.addingTimeInterval(fresh.lifetime)
                let margin = min(refreshMargin, fresh.lifetime / 2)
                state.refreshAt = now.addingTimeInterval(fresh.lifetime - margin)
                state.failure = nil
            case .failure(let failure):
                // A still-valid token is kept: a failed background refresh must not stall sends.
                let retention = failure.outcome.disablesApplication ? refusalRetention : failureRetention
                state.failure = (failure.outcome, now.addingTimeInterval(retention))
                if state.token != nil { state.refreshAt = now.addingTimeInterval(retention) }
            }
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        switch result {
        case .success(let fresh):
            // The owner refreshes ahead of expiry even when no send asks (sends asking past refreshAt start it
            // sooner). Weak: a source the registry released is not kept alive by its timer.
            let margin = min(refreshMargin, fresh.lifetime / 2)
            worker.schedule(after: fresh.lifetime - margin) { [weak self] in self?.refreshIfDue() }
            log.info("access token obtained", ["token_url": tokenURL, "expires_in": String(Int(fresh.lifetime))])
            for waiter in waiters { waiter(.success(fresh.token)) }
        case .failure(let failure):
            log.warning("access token exchange failed", ["token_url": tokenURL, "outcome": failure.outcome.label,
                                                       "reason": failure.outcome.reason ?? ""])
            for waiter in waiters { waiter(.failure(failure)) }
        }
    }

    /// One exchange, on the worker thread.
    private func exchange() -> Result<(token: String, lifetime: TimeInterval), AccessTokenFailure> {
        let form: String
        switch grant {
        case .jwtBearer(let account):
            let now = Int64(clock().timeIntervalSince1970.rounded(.down))
            var header: JSONObject = ["typ": "JWT"]
            if let kid = account.privateKeyID { header["kid"] = .string(kid) }
            let claims: JSONObject = [
                "iss": .string(account.clientEmail), "scope": .string(Self.fcmScope), "aud": .string(tokenURL),
                "iat": .number(JSONNumber(now)), "exp": .number(JSONNumber(now + 3600)),
            ]
            guard let assertion = try? JWT.sign(header: header, claims: claims, key: account.signingKey) else {
                return .failure(AccessTokenFailure(outcome: .credentialsInvalid(reason: "cannot sign the service-account assertion")))
            }
            form = "grant_type=" + Self.formEncode("urn:ietf:params:oauth:grant-type:jwt-bearer") + "&assertion=" + assertion
        case .clientCredentials(let client):
            form = "grant_type=client_credentials&scope=" + Self.formEncode(Self.admScope)
                + "&client_id=" + Self.formEncode(client.clientID) + "&client_secret=" + Self.formEncode(client.clientSecret)
        case .hmsClientCredentials(let client):
            form = "grant_type=client_credentials&client_id=" + Self.formEncode(client.clientID)
                + "&client_secret=" + Self.formEncode(client.clientSecret)
        }
        switch CurlTokenTransport.postForm(url: tokenURL, form: form, trustedCAPEM: trustedCAPEM, timeoutSeconds: 20,
                                                   addressPolicy: addressPolicy) {
        case .failed(let failure):
            return .failure(AccessTokenFailure(outcome: TokenExchangeClassifier.classify(failure)))
        case .response(let response):
            guard response.status == 200 else {
                return .failure(AccessTokenFailure(outcome: TokenExchangeClassifier.classify(response, now: clock())))
            }
            let json = (try? JSONValue.parse(bytes: response.body))?.objectValue
            guard let token = json?["access_token"]?.stringValue, !token.isEmpty else {
                return .failure(AccessTokenFailure(outcome: .retryable(reason: "token exchange: no access_token in the answer", retryAfter: nil)))
            }
            let lifetime = json?["expires_in"]?.numberValue?.doubleValue ?? 3600
            return .success((token, max(60, lifetime)))
        }
    }

    /// `application/x-www-form-urlencoded` value encoding: unreserved characters kept, everything else %XX.
    static func formEncode(_ value: String) -> String {
        var out = ""
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                out += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return out
    }
}

extension String {
    func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}

/// At most one line a minute for each event and reason: a provider that refuses every delivery, or a host that
/// cannot be reached, would otherwise write a line per delivery. The first occurrence is written at once; the
/// next line says how many were left out since.
final class ProviderLogLimiter: Sendable {
    private let state = Mutex<[String: (last: Date, suppressed: Int)]>([:])
    private let interval: TimeInterval

    init(interval: TimeInterval = 60) { self.interval = interval }

    /// The count of lines left out since the last one written, or nil when this one is left out too.
    func admit(_ key: String, now: Date) -> Int? {
        state.withLock { entries -> Int? in
            if let entry = entries[key], now.timeIntervalSince(entry.last) < interval {
                entries[key]!.suppressed += 1
                return nil
            }
            if entries.count >= 256 { entries.removeAll() }  // distinct reasons are few; bound them anyway
            let suppressed = entries[key]?.suppressed ?? 0
            entries[key] = (now, 0)
            return suppressed
        }
    }
}
