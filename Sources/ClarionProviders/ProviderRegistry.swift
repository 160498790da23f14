import ClarionCore
import ClarionCrypto
import ClarionHTTP2
import ClarionTransport
import Foundation
import Synchronization

/// Tunables for the provider connections.
public struct ProviderOptions: Sendable {
    /// HTTP/2 event-loop threads shared by every pool.
    public var eventLoopThreads: Int
    /// Connections per APNs or ADM pool (per APNs team + key + environment, ADM client).
    public var connectionsPerPool: Int
    /// Connections per FCM pool (project + service account). FCM grants 100 streams a connection where APNs
    /// grants 1000, so an FCM pool needs several times the connections for the same concurrency; too few cap a
    /// large fan-out's FCM half whatever the client (docs/benchmarks.md, fan-out).
    public var fcmConnectionsPerPool: Int
    /// Our ceiling on streams per connection, below the server's SETTINGS (FCM advertises 100, APNs more).
    public var maxConcurrentStreamsPerConnection: Int
    /// Requests waiting for a stream per pool; beyond it `submit` admits fewer (backpressure).
    public var maxQueuedRequestsPerPool: Int
    public var requestTimeout: Duration
    public var connectTimeout: Duration
    /// HTTP/2 PING after this long without traffic (Apple: about an hour of inactivity for APNs; we check sooner).
    public var pingInterval: Duration?
    /// APNs provider-token cadence (A.5).
    public var apnsTokenRenewalAge: TimeInterval
    public var apnsTokenMinimumAge: TimeInterval
    /// Refresh FCM/ADM access tokens this long before they expire.
    public var accessTokenRefreshMargin: TimeInterval
    /// Which addresses provider endpoints may resolve to (SSRF guard); nil allows any (tests, the load tests).
    /// `clarion serve` sets public addresses plus `CLARION_PROVIDER_ALLOW_HOSTS`.
    public var addressPolicy: OutboundAddressPolicy?
    /// Web Push: push-service origins one VAPID key may have pools for (each browser vendor has its own origin).
    public var webPushMaximumOrigins: Int = 64
    /// Web Push: a push-service connection idle this long is closed.
    public var webPushIdleTimeout: Duration = .seconds(120)
    /// Huawei Push Kit: tokens per request when a fan-out sends one body to many tokens (E.1: at most 1000; 1
    /// sends one request per token, for comparison in loadtest/hms).
    public var hmsTokensPerRequest: Int = 1000
    /// Provider response-time histograms (nil: none).
    public var metrics: ProviderMetrics? = nil
    /// Provider connections the node may hold open at once, over every pool (`CLARION_PROVIDER_MAX_CONNECTIONS`);
    /// nil: each pool opens up to its own size, so the total grows with the number of applications.
    public var maxProviderConnections: Int? = nil
    /// An application with no request for this long has its client released, and with it the pools, signers and
    /// token sources only it used; the next request builds them again (`CLARION_PROVIDER_IDLE_RELEASE`). nil: kept.
    public var idleClientRelease: Duration? = nil

    public init(eventLoopThreads: Int = 1, connectionsPerPool: Int = 2, fcmConnectionsPerPool: Int = 8,
                maxConcurrentStreamsPerConnection: Int = 1000,
                maxQueuedRequestsPerPool: Int = 10_000, requestTimeout: Duration = .seconds(30),
                connectTimeout: Duration = .seconds(10), pingInterval: Duration? = .seconds(60),
                apnsTokenRenewalAge: TimeInterval = 50 * 60, apnsTokenMinimumAge: TimeInterval = 20 * 60,
                accessTokenRefreshMargin: TimeInterval = 300) {
        self.eventLoopThreads = eventLoopThreads
        self.connectionsPerPool = connectionsPerPool
        self.fcmConnectionsPerPool = fcmConnectionsPerPool
        self.maxConcurrentStreamsPerConnection = maxConcurrentStreamsPerConnection
        self.maxQueuedRequestsPerPool = maxQueuedRequestsPerPool
        self.requestTimeout = requestTimeout
        self.connectTimeout = connectTimeout
        self.pingInterval = pingInterval
        self.apnsTokenRenewalAge = apnsTokenRenewalAge
        self.apnsTokenMinimumAge = apnsTokenMinimumAge
        self.accessTokenRefreshMargin = accessTokenRefreshMargin
        self.addressPolicy = nil
    }
}

/// The provider clients of every enabled platform application, and what they share: HTTP/2 pools, APNs token
/// signers (one per team + key), OAuth token sources (one per service account / ADM client) and the token thread.
///
/// One owner (the dispatcher's wiring) creates it, tells it when an application changes or is disabled, and shuts
/// it down. Shared pieces are released when the last application using them goes.
public final class ProviderRegistry: Sendable {
    public let options: ProviderOptions
    let http: HTTP2Client
    let group: EventLoopGroup
    /// False when the caller lent the group: `shutdown()` then leaves its loops running.
    let ownsGroup: Bool
    let worker: TokenWorker
    let clock: @Sendable () -> Date
    let log: Log
    /// Shared by every pool of this registry when `options.maxProviderConnections` is set.
    public let connectionBudget: HTTP2ConnectionBudget?

    private struct State {
        var clients: [String: ProviderClient] = [:]
        /// When each client was last asked for (`client(for:)`, `existingClient`): the idle sweep's clock.
        var lastUsed: [String: Date] = [:]
        var idleSweep: Task<Void, Never>?
        var signers: [String: APNsTokenSigner] = [:]
        var sources: [String: AccessTokenSource] = [:]
        /// Web Push senders (VAPID signer + per-origin pools) by key fingerprint + subject + CA.
        var webPushSenders: [String: WebPushSender] = [:]
        var goAways: [HTTP2Client.PoolKey: GoAwayMemo] = [:]
        var stopped = false
    }

    private let state = Mutex(State())

    /// Starts the event loops (unless `group` is given) and the token thread.
    /// - Parameters:
    ///   - group: event loops to run the pools on; nil starts `options.eventLoopThreads` loops owned by the registry.
    ///   - clock: wall clock for token ages and Retry-After dates (tests inject one).
    public init(options: ProviderOptions = ProviderOptions(), group: EventLoopGroup? = nil,
                clock: @escaping @Sendable () -> Date = { Date() }, log: Log = .silent) throws {
        self.options = options
        self.clock = clock
        self.log = log
        ownsGroup = group == nil
        self.group = try group ?? EventLoopGroup(threadCount: max(1, options.eventLoopThreads))
        http = HTTP2Client(group: self.group)
        worker = TokenWorker()
        connectionBudget = options.maxProviderConnections.map { HTTP2ConnectionBudget(capacity: $0) }
    }

    /// The client of `application`: the existing one when nothing changed, else a new one (the old one keeps
    /// working for requests already submitted; its shared pieces go at the next `releaseUnused()`).
    ///
    /// Throws when the pool cannot be configured (a bad `ProviderCACertificate`; for APNs certificate auth a
    /// certificate or key the TLS layer refuses), which the API has normally refused already: its
    /// `ProviderApplication.checkSettings` checks this very configuration (`poolConfiguration`) the same way.
    public func client(for application: ProviderApplication) throws(ProviderError) -> ProviderClient {
        let usedAt = clock()
        if let existing = state.withLock({ state -> ProviderClient? in
            state.lastUsed[application.id] = usedAt
            return state.clients[application.id]
        }), existing.application.fingerprint == application.fingerprint {
            return existing
        }
        let now = clock
        // Pieces are created outside the lock where they can be (pool creation loads a CA PEM), then published
        // under it; a racing creator of the same key gets the first one's pieces.
        let auth: ProviderClient.Auth
        switch application.credentials {
        case .apnsCertificate:
            // The certificate authenticates every connection of the pool (`poolConfiguration` presents it): no JWT,
            // no `authorization` header.
            auth = .certificate
        case .apnsToken(let credentials):
            let key = "\(credentials.teamID):\(credentials.keyID):\(credentials.keyFingerprint)"
            let fresh = APNsTokenSigner(credentials: credentials, renewalAge: options.apnsTokenRenewalAge,
                                        minimumAge: options.apnsTokenMinimumAge, clock: now)
            auth = .apns(state.withLock { state in
                if let existing = state.signers[key] { return existing }
                state.signers[key] = fresh
                return fresh
            })
        case .fcm(let account):
            let url = application.authURL ?? account.tokenURI
            let key = "fcm:\(account.clientEmail):\(account.keyFingerprint):\(url):\(Self.digest(application.trustedCAPEM))"
            auth = .oauth(source(key: key, grant: .jwtBearer(account), url: url, ca: application.trustedCAPEM))
        case .adm(let client):
            let url = application.authURL ?? ProviderApplication.admTokenURL
            let key = "adm:\(client.clientID):\(Self.digest(client.clientSecret)):\(url):\(Self.digest(application.trustedCAPEM))"
            auth = .oauth(source(key: key, grant: .clientCredentials(client), url: url, ca: application.trustedCAPEM))
        case .webPush(let vapid):
            auth = .vapid(try webPushSender(vapid, application: application))
        case .hms(let client):
            let url = application.authURL ?? ProviderApplication.hmsTokenURL
            let key = "hms:\(client.clientID):\(Self.digest(client.clientSecret)):\(url):\(Self.digest(application.trustedCAPEM))"
            auth = .oauth(source(key: key, grant: .hmsClientCredentials(client), url: url, ca: application.trustedCAPEM))
        }

        var configuration = Self.poolConfiguration(for: application, options: options)
        configuration.connectionBudget = connectionBudget
        let poolKey = HTTP2Client.PoolKey(configuration: configuration)
        let memo = state.withLock { state in
            if let existing = state.goAways[poolKey] { return existing }
            let memo = GoAwayMemo(clock: now)
            state.goAways[poolKey] = memo
            return memo
        }
        configuration.onGoAway = { memo.record($0) }
        let pool: HTTP2ClientPool
        do {
            // Pool creation runs `configuration.validateTLS()` first: the check `checkPoolConfiguration` runs.
            pool = try http.pool(for: configuration)
        } catch {
            throw Self.poolError(error)
        }
        let client = ProviderClient(application: application, pool: pool, auth: auth, goAway: memo, clock: now, log: log,
                                    responseTime: options.metrics?.responseTime(application.platform),
                                    hmsTokensPerRequest: options.hmsTokensPerRequest)
        return state.withLock { state in
            if let existing = state.clients[application.id], existing.application.fingerprint == application.fingerprint {
                return existing
            }
            state.clients[application.id] = client
            return client
        }
    }

    /// The Web Push sender of a VAPID key (and subject, and trusted CA), shared by the applications that use them.
    private func webPushSender(_ vapid: VAPIDCredentials, application: ProviderApplication) throws(ProviderError) -> WebPushSender {
        let key = "\(vapid.keyFingerprint):\(vapid.subject):\(Self.digest(application.trustedCAPEM))"
        if let existing = state.withLock({ $0.webPushSenders[key] }) { return existing }
        let signer: VAPIDSigner
        do {
            signer = try VAPIDSigner(key: vapid.signingKey, subject: vapid.subject)
        } catch {
            throw ProviderError(.invalidAttribute, attribute: ProviderAttribute.platformCredential, error.message)
        }
        var template = Self.poolConfiguration(for: application, options: options)
        template.connectionCount = 1
        template.connectionBudget = connectionBudget
        template.idleTimeout = options.webPushIdleTimeout
        let fresh = WebPushSender(signer: signer, http: http, identity: template.identity, template: template,
                                  maximumOrigins: options.webPushMaximumOrigins)
        return state.withLock { state in
            if let existing = state.webPushSenders[key] { return existing }
            state.webPushSenders[key] = fresh
            return fresh
        }
    }

    /// The HTTP/2 pool configuration of `application`'s sends: origin, identity (part of the pool key), sizes from
    /// `options`, the extra trusted CA and, for APNs certificate auth, the TLS client certificate. Pure: it opens and
    /// loads nothing. `client(for:)` makes its pool from it; the API checks it with `checkPoolConfiguration`
    /// (`ProviderApplication.checkSettings`), so both judge the same configuration.
    public static func poolConfiguration(for application: ProviderApplication, options: ProviderOptions) -> HTTP2PoolConfiguration {
        poolConfiguration(platform: application.platform, origin: application.origin, trustedCAPEM: application.trustedCAPEM,
                          credentials: application.credentials, options: options)
    }

    /// `poolConfiguration(for:options:)` from its parts; `credentials` nil when they are not known (API validation
    /// of settings whose credentials only the provider can judge).
    static func poolConfiguration(platform: Platform, origin: HTTP2Origin, trustedCAPEM: String?, credentials: ProviderCredentials?,
                                  options: ProviderOptions) -> HTTP2PoolConfiguration {
        var clientIdentity: TLSIdentity?
        if case .apnsCertificate(let certificate)? = credentials { clientIdentity = certificate.tlsIdentity }
        // APNs token auth: team + key + environment; certificate auth: the certificate's SHA-256 + environment (a
        // ProviderEndpoint may name one host for both environments). The HTTP/2 layer adds the client
        // certificate's hash to the key on its own, so certificates never share a pool whatever this says.
        let environment = platform.apnsEnvironment.map { ":" + $0.rawValue } ?? ""
        let identity = (credentials?.identity ?? "unparsed-credentials") + environment
            + (trustedCAPEM.map { ":ca-" + digest($0) } ?? "")
        let connections = platform.provider == .fcm ? options.fcmConnectionsPerPool : options.connectionsPerPool
        var configuration = HTTP2PoolConfiguration(
            origin: origin, identity: identity, connectionCount: max(1, connections),
            maxConcurrentStreamsPerConnection: options.maxConcurrentStreamsPerConnection,
            // APNs: one stream until the provider token is accepted (A.7); the others follow SETTINGS too.
            initialConcurrentStreams: 1, maxQueuedRequests: options.maxQueuedRequestsPerPool,
            requestTimeout: options.requestTimeout, connectTimeout: options.connectTimeout,
            trustedCAPEM: trustedCAPEM, clientIdentity: clientIdentity, pingInterval: options.pingInterval)
        configuration.addressPolicy = options.addressPolicy
        return configuration
    }

    /// Checks that a pool with `configuration` can be made, without making it (no connection, no event loop): the
    /// in-memory TLS loads pool creation runs (`HTTP2PoolConfiguration.validateTLS`), failing with the error
    /// `client(for:)` throws for the same configuration.
    public static func checkPoolConfiguration(_ configuration: HTTP2PoolConfiguration) throws(ProviderError) {
        do {
            try configuration.validateTLS()
        } catch {
            throw poolError(error)
        }
    }

    /// A pool that cannot be configured, as the attribute at fault.
    static func poolError(_ error: TLSConfigurationError) -> ProviderError {
        let attribute = switch error.code {
        case .certificate: ProviderAttribute.platformPrincipal
        case .privateKey, .keyMismatch: ProviderAttribute.platformCredential
        case .trustedCA, .openSSL: ProviderAttribute.providerCACertificate
        }
        return ProviderError(.transportConfiguration, attribute: attribute, error.description)
    }

    /// Parses the attributes and returns the application's client (see `client(for:)`).
    public func client(applicationID: String, platform: Platform, attributes: [String: String],
                       serverTrustedCAPEM: String? = nil) throws(ProviderError) -> ProviderClient {
        try client(for: ProviderApplication(id: applicationID, platform: platform, attributes: attributes,
                                            serverTrustedCAPEM: serverTrustedCAPEM))
    }

    /// The current client of an application, if one was built.
    /// Counts as a use for the idle sweep (the dispatcher asks for it before each shard of the application).
    public func existingClient(applicationID: String) -> ProviderClient? {
        let usedAt = clock()
        return state.withLock { state in
            guard let client = state.clients[applicationID] else { return nil }
            state.lastUsed[applicationID] = usedAt
            return client
        }
    }

    /// Releases the clients of applications not asked for in `idleFor` whose pools have nothing queued or in
    /// flight, then the pools, signers and token sources no remaining client uses. Returns the clients released.
    /// A released application gets a new client on its next request (`client(for:)`).
    @discardableResult
    public func releaseIdleClients(idleFor: Duration) async -> Int {
        let cutoff = clock().addingTimeInterval(-Double(idleFor.components.seconds)
            - Double(idleFor.components.attoseconds) / 1e18)
        let candidates = state.withLock { state in
            state.clients.filter { id, _ in (state.lastUsed[id] ?? .distantPast) <= cutoff }
        }
        guard !candidates.isEmpty else { return 0 }
        var idle: [String: ProviderClient] = [:]
        for (id, client) in candidates {
            guard client.pool.waitingCount == 0 else { continue }
            let statistics = await client.pool.statistics()
            if statistics.inFlightRequests == 0, statistics.queuedRequests == 0 { idle[id] = client }
        }
        let released = state.withLock { state -> Int in
            var count = 0
            for (id, client) in idle where state.clients[id] === client && (state.lastUsed[id] ?? .distantPast) <= cutoff {
                state.clients[id] = nil
                state.lastUsed[id] = nil
                count += 1
            }
            return count
        }
        if released > 0 {
            await releaseUnused()
            log.info("idle provider clients released", ["count": "\(released)"])
        }
        return released
    }

    /// Runs `releaseIdleClients` every `options.idleClientRelease / 4` (at least a second) until `shutdown()`;
    /// does nothing when `idleClientRelease` is nil. The registry owns the task.
    public func startIdleSweep() {
        guard let idle = options.idleClientRelease else { return }
        let period = max(Duration.seconds(1), idle / 4)
        state.withLock { state in
            guard state.idleSweep == nil, !state.stopped else { return }
            state.idleSweep = Task { [weak self] in
                while !Task.isCancelled {
                    try? await Task.sleep(for: period)
                    guard let self, !Task.isCancelled else { return }
                    await self.releaseIdleClients(idleFor: idle)
                }
            }
        }
    }

    /// The application's attributes changed: builds its new client and releases what the old one no longer shares.
    @discardableResult
    public func applicationChanged(_ application: ProviderApplication) async throws(ProviderError) -> ProviderClient {
        let client = try client(for: application)
        await releaseUnused()
        return client
    }

    /// The application was disabled or deleted: its client goes, and the pools and tokens only it used.
    public func applicationDisabled(applicationID: String) async {
        state.withLock { state in
            state.clients[applicationID] = nil
            state.lastUsed[applicationID] = nil
        }
        await releaseUnused()
    }

    /// Shuts down the pools, signers and token sources that no current client uses.
    public func releaseUnused() async {
        let unusedPools = state.withLock { state -> [HTTP2Client.PoolKey] in
            var poolKeys = Set<HTTP2Client.PoolKey>()
            var signers = Set<ObjectIdentifier>()
            var sources = Set<ObjectIdentifier>()
            var senders = Set<ObjectIdentifier>()
            for client in state.clients.values {
                poolKeys.insert(client.pool.key)
                switch client.auth {
                case .apns(let signer): signers.insert(ObjectIdentifier(signer))
                case .oauth(let source): sources.insert(ObjectIdentifier(source))
                case .vapid(let sender):
                    senders.insert(ObjectIdentifier(sender))
                    poolKeys.formUnion(sender.poolKeys)
                case .certificate: break
                }
            }
            state.webPushSenders = state.webPushSenders.filter { senders.contains(ObjectIdentifier($0.value)) }
            state.signers = state.signers.filter { signers.contains(ObjectIdentifier($0.value)) }
            state.sources = state.sources.filter { sources.contains(ObjectIdentifier($0.value)) }
            state.goAways = state.goAways.filter { poolKeys.contains($0.key) }
            return http.poolKeys.filter { !poolKeys.contains($0) }
        }
        for key in unusedPools { await http.removePool(key) }
    }

    /// Each pool in use with its platform's provider (`apns`, `fcm`, `adm`) and its figures, for `/metrics`.
    public func poolStatistics() async -> [(provider: String, statistics: HTTP2PoolStatistics)] {
        let pools = state.withLock { state -> [HTTP2Client.PoolKey: (String, HTTP2ClientPool)] in
            var pools: [HTTP2Client.PoolKey: (String, HTTP2ClientPool)] = [:]
            for client in state.clients.values { pools[client.pool.key] = (client.platform.provider.rawValue, client.pool) }
            return pools
        }
        var out: [(provider: String, statistics: HTTP2PoolStatistics)] = []
        for (provider, pool) in pools.values { out.append((provider, await pool.statistics())) }
        return out
    }

    /// Closes every pool, stops the token thread and the event loops.
    public func shutdown() async {
        let (first, sweep) = state.withLock { state -> (Bool, Task<Void, Never>?) in
            defer {
                state.stopped = true; state.clients.removeAll(); state.signers.removeAll(); state.sources.removeAll()
                state.webPushSenders.removeAll(); state.lastUsed.removeAll(); state.idleSweep = nil
            }
            return (!state.stopped, state.idleSweep)
        }
        guard first else { return }
        sweep?.cancel()
        await http.shutdown()
        await worker.shutdown()
        guard ownsGroup else { return }
        let group = self.group
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                group.shutdown()  // joins the loop threads: off the cooperative pool
                done.resume()
            }
        }
    }

    // MARK: - Helpers

    private func source(key: String, grant: AccessTokenSource.Grant, url: String, ca: String?) -> AccessTokenSource {
        if let existing = state.withLock({ $0.sources[key] }) { return existing }
        let fresh = AccessTokenSource(grant: grant, tokenURL: url, trustedCAPEM: ca, worker: worker, clock: clock,
                                      refreshMargin: options.accessTokenRefreshMargin,
                                      addressPolicy: options.addressPolicy, log: log)
        return state.withLock { state in
            if let existing = state.sources[key] { return existing }
            state.sources[key] = fresh
            return fresh
        }
    }

    static func digest(_ text: String?) -> String {
        guard let text else { return "-" }
        return String(Digest.sha256(text).hexString.prefix(16))
    }
}
