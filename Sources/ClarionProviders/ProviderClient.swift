import ClarionCore
import ClarionHTTP2
import ClarionMetrics
import Foundation
import Synchronization

/// One delivery of a rendered push: the endpoint's token, and what the request and its classification need.
public struct ProviderDelivery: Sendable {
    /// The device token / FCM registration token / ADM registration id.
    public var token: String
    /// Filled into the payload's delivery-id slot when the rendered body has one.
    public var deliveryID: String?
    /// When the endpoint's token was last set: an APNs 410 older than this does not disable the endpoint.
    public var tokenUpdatedAt: Date?
    /// Opaque to the provider layer; comes back with the outcome on the batch path.
    public var tag: UInt64

    public init(token: String, deliveryID: String? = nil, tokenUpdatedAt: Date? = nil, tag: UInt64 = 0) {
        self.token = token
        self.deliveryID = deliveryID
        self.tokenUpdatedAt = tokenUpdatedAt
        self.tag = tag
    }
}

/// The outcome of one delivery on the batch path.
public struct ProviderDeliveryResult: Sendable {
    public var tag: UInt64
    public var outcome: DeliveryOutcome
    /// The provider's HTTP status when it answered (nil for a failure without an answer: a connection refused, a
    /// timeout, a token exchange that failed, a delivery refused before sending). For delivery logs and warnings.
    public var providerStatus: Int?

    public init(tag: UInt64, outcome: DeliveryOutcome, providerStatus: Int? = nil) {
        self.tag = tag
        self.outcome = outcome
        self.providerStatus = providerStatus
    }
}

/// Receives batch-path outcomes, several at a time. Called on an HTTP/2 event-loop thread, on the token worker's
/// thread (deliveries that waited for an access token), or on the submitting thread before `submit` returns
/// (deliveries that fail without a round trip). Keep it short and non-blocking.
public protocol ProviderResultSink: AnyObject, Sendable {
    func receive(_ results: [ProviderDeliveryResult])
}

/// Sends rendered pushes for one platform application and turns every answer into a `DeliveryOutcome`.
///
/// Built by `ProviderRegistry`, which shares the expensive parts: the HTTP/2 pool (APNs keyed by team + key +
/// environment, FCM by project + service account, ADM and HMS by client id), the APNs token signer (per team + key)
/// and the OAuth token source (per service account / ADM or HMS client).
///
/// Auth side effects happen here, before the outcome is handed on: after APNs `ExpiredProviderToken` the signer
/// renews the token and the pool's connections are recycled; after FCM `UNAUTHENTICATED` or ADM
/// `AccessTokenExpired` the access token is dropped. The delivery itself is not retried here: its outcome is
/// `authTokenExpired`, which `RetryPolicy` retries at once, with the new token.
public final class ProviderClient: Sendable {
    enum Auth: Sendable {
        /// APNs token auth: a provider JWT in `authorization` (A.5).
        case apns(APNsTokenSigner)
        /// FCM / ADM / Huawei Push Kit: an OAuth access token in `authorization`.
        case oauth(AccessTokenSource)
        /// APNs certificate auth: the pool's TLS client certificate authenticates; no `authorization` header.
        case certificate
        /// Web Push: a VAPID token per push-service origin, and a pool per origin (`WebPushSender`).
        case vapid(WebPushSender)
    }

    public let application: ProviderApplication
    let pool: HTTP2ClientPool
    let auth: Auth
    let clock: @Sendable () -> Date
    let goAway: GoAwayMemo
    let log: Log
    private let logLimiter = ProviderLogLimiter()
    /// Provider response time of this client's platform (nil when metrics are off).
    let responseTime: Histogram?
    /// `/v1/projects/<project>/messages:send` for FCM, `/v1/<app id>/messages:send` for Huawei Push Kit (E.1).
    private let fcmPath: String?
    /// Huawei Push Kit: when an access token was last refused with 80200001 (authentication failed), and which.
    let hmsAuthRefusal = Mutex<(token: String, at: Date)?>(nil)
    /// Huawei Push Kit: tokens per request on the batch path (E.1: at most 1000); 1 sends one request per token.
    let hmsTokensPerRequest: Int

    init(application: ProviderApplication, pool: HTTP2ClientPool, auth: Auth, goAway: GoAwayMemo,
         clock: @escaping @Sendable () -> Date, log: Log, responseTime: Histogram? = nil, hmsTokensPerRequest: Int = 1000) {
        self.hmsTokensPerRequest = min(1000, max(1, hmsTokensPerRequest))
        self.application = application
        self.responseTime = responseTime
        self.pool = pool
        self.auth = auth
        self.goAway = goAway
        self.clock = clock
        self.log = log
        switch application.credentials {
        case .fcm(let account): fcmPath = "/v1/projects/\(account.projectID)/messages:send"
        case .hms(let hms): fcmPath = "/v1/\(hms.appID)/messages:send"
        default: fcmPath = nil
        }
    }

    public var applicationID: String { application.id }
    public var platform: Platform { application.platform }

    // MARK: - Single send

    /// Sends one push and waits for its outcome. For ordinary callers (tests, the API's direct publish); the
    /// dispatcher uses `submit`.
    public func send(_ push: RenderedPush, to delivery: ProviderDelivery) async -> DeliveryOutcome {
        if let refusal = precheck(push) { return refusal }
        if let refusal = Self.checkToken(delivery.token) { return refusal }
        let authorization: String?
        switch auth {
        case .vapid(let sender):
            return await webPushSend(push, to: delivery, sender: sender)
        case .certificate:
            authorization = nil
        case .apns(let signer):
            do {
                authorization = try signer.authorization()
            } catch {
                return .credentialsInvalid(reason: error.message)
            }
        case .oauth(let source):
            switch await source.token() {
            case .success(let token): authorization = "Bearer " + token
            case .failure(let failure): return failure.outcome
            }
        }
        let shape = RequestShape(push: push, client: self, authorization: authorization)
        let request = shape.request(for: delivery, tag: 0)
        let result = await pool.send(request)
        return classify(result, delivery: delivery, authorization: authorization)
    }

    /// The request `send` and `submit` would put on the wire for this delivery, with the current credentials
    /// (the JWT or access token fetched if needed); nil when the push would be refused without a round trip.
    /// For load tests that replay the gateway's exact requests with another client (h2load).
    public func sampleRequest(_ push: RenderedPush, delivery: ProviderDelivery) async -> HTTP2Request? {
        if precheck(push) != nil || Self.checkToken(delivery.token) != nil { return nil }
        let authorization: String?
        switch auth {
        case .vapid(let sender):
            guard case .webPush(let headers) = push.request, let subscription = try? WebPushSubscription.parse(delivery.token) else { return nil }
            return try? sender.request(push, headers: headers, subscription: subscription, deliveryID: delivery.deliveryID, now: clock(), tag: 0)
        case .certificate:
            authorization = nil
        case .apns(let signer):
            guard let value = try? signer.authorization() else { return nil }
            authorization = value
        case .oauth(let source):
            guard case .success(let token) = await source.token() else { return nil }
            authorization = "Bearer " + token
        }
        return RequestShape(push: push, client: self, authorization: authorization).request(for: delivery, tag: 0)
    }

    /// `send(_:to:)` for one token.
    public func send(_ push: RenderedPush, token: String, deliveryID: String? = nil, tokenUpdatedAt: Date? = nil) async -> DeliveryOutcome {
        await send(push, to: ProviderDelivery(token: token, deliveryID: deliveryID, tokenUpdatedAt: tokenUpdatedAt))
    }

    // MARK: - Batch path

    /// Submits deliveries of one rendered push without a Task or a continuation per push. Returns how many were
    /// admitted: a prefix of `deliveries` (fewer than all when the pool's wait queue is nearly full: keep the rest
    /// and slow down). Every admitted delivery's outcome reaches `sink` exactly once, carrying its `tag`.
    ///
    /// With no access token cached yet (FCM/ADM), all deliveries are admitted and sent when the token arrives;
    /// any the pool then cannot take come back as `retryable`.
    @discardableResult
    public func submit(_ push: RenderedPush, deliveries: [ProviderDelivery], sink: any ProviderResultSink) -> Int {
        guard !deliveries.isEmpty else { return 0 }
        if let refusal = precheck(push) {
            sink.receive(deliveries.map { ProviderDeliveryResult(tag: $0.tag, outcome: refusal) })
            return deliveries.count
        }
        switch auth {
        case .vapid(let sender):
            return webPushSubmit(push, deliveries: deliveries, sink: sink, sender: sender)
        case .certificate:
            return submitRequests(push, deliveries, authorization: nil, sink: sink)
        case .apns(let signer):
            do {
                let authorization = try signer.authorization()
                return submitRequests(push, deliveries, authorization: authorization, sink: sink)
            } catch {
                let outcome = DeliveryOutcome.credentialsInvalid(reason: error.message)
                sink.receive(deliveries.map { ProviderDeliveryResult(tag: $0.tag, outcome: outcome) })
                return deliveries.count
            }
        case .oauth(let source):
            if let token = source.cachedToken() {
                return submitRequests(push, deliveries, authorization: "Bearer " + token, sink: sink)
            }
            source.withToken { [self] result in
                switch result {
                case .success(let token):
                    let admitted = submitRequests(push, deliveries, authorization: "Bearer " + token, sink: sink)
                    if admitted < deliveries.count {
                        let outcome = DeliveryOutcome.retryable(reason: "provider connection queue full", retryAfter: nil)
                        sink.receive(deliveries[admitted...].map { ProviderDeliveryResult(tag: $0.tag, outcome: outcome) })
                    }
                case .failure(let failure):
                    sink.receive(deliveries.map { ProviderDeliveryResult(tag: $0.tag, outcome: failure.outcome) })
                }
            }
            return deliveries.count
        }
    }

    private func submitRequests(_ push: RenderedPush, _ deliveries: [ProviderDelivery], authorization: String?,
                                sink: any ProviderResultSink) -> Int {
        if case .hms = push.request, hmsTokensPerRequest > 1, !push.body.contains(.deliveryID) {
            return submitHMSBatches(push, deliveries, authorization: authorization, sink: sink)
        }
        let shape = RequestShape(push: push, client: self, authorization: authorization)
        var requests: [HTTP2Request] = []
        requests.reserveCapacity(deliveries.count)
        var sent: [ProviderDelivery] = []
        sent.reserveCapacity(deliveries.count)
        /// Index in `deliveries` of each request.
        var positions: [Int] = []
        positions.reserveCapacity(deliveries.count)
        var refused: [(position: Int, result: ProviderDeliveryResult)] = []
        for (position, delivery) in deliveries.enumerated() {
            if let refusal = Self.checkToken(delivery.token) {
                refused.append((position, ProviderDeliveryResult(tag: delivery.tag, outcome: refusal)))
                continue
            }
            requests.append(shape.request(for: delivery, tag: UInt64(sent.count)))
            sent.append(delivery)
            positions.append(position)
        }
        let batch = BatchContext(client: self, deliveries: sent, authorization: authorization, sink: sink)
        let admittedRequests = requests.isEmpty ? 0 : pool.submit(requests, sink: batch)
        // What was admitted is a prefix of `deliveries`, cut at the first request the pool did not take.
        let admitted = admittedRequests < positions.count ? positions[admittedRequests] : deliveries.count
        let answeredNow = refused.filter { $0.position < admitted }.map(\.result)
        if !answeredNow.isEmpty { sink.receive(answeredNow) }
        return admitted
    }

    /// Deliveries of `push` that fill one Push Kit request (E.1: up to 1000 tokens of one body), for a caller that
    /// would otherwise hand over fewer at a time; nil for every other platform, and for a body with a delivery id
    /// (one request per token then).
    public func preferredSubmitSize(for push: RenderedPush) -> Int? {
        if case .hms = push.request, hmsTokensPerRequest > 1, !push.body.contains(.deliveryID) { return hmsTokensPerRequest }
        return nil
    }

    /// Huawei Push Kit takes up to 1000 tokens for one body (E.1): deliveries of a push whose body has no per-delivery
    /// part (no delivery id) go `hmsTokensPerRequest` to a request. The outcome of each token comes from the one answer
    /// (`HMSBatchContext`): a partial success (80100000) accepts some and disables the endpoints it lists.
    /// What was admitted is a prefix of `deliveries`, cut after the last whole request the pool took.
    private func submitHMSBatches(_ push: RenderedPush, _ deliveries: [ProviderDelivery], authorization: String?,
                                  sink: any ProviderResultSink) -> Int {
        let shape = RequestShape(push: push, client: self, authorization: authorization)
        var chunks: [[ProviderDelivery]] = []
        /// Index in `deliveries` just past each chunk's last delivery.
        var ends: [Int] = []
        var refused: [(position: Int, result: ProviderDeliveryResult)] = []
        var current: [ProviderDelivery] = []
        for (position, delivery) in deliveries.enumerated() {
            if let refusal = Self.checkToken(delivery.token) {
                refused.append((position, ProviderDeliveryResult(tag: delivery.tag, outcome: refusal)))
                continue
            }
            current.append(delivery)
            if current.count == hmsTokensPerRequest {
                chunks.append(current)
                ends.append(position + 1)
                current = []
            }
        }
        if !current.isEmpty {
            chunks.append(current)
            ends.append(deliveries.count)
        }
        let requests = chunks.enumerated().map { index, chunk in
            HTTP2Request(method: "POST", path: shape.fixedPath ?? "/", headers: shape.headers,
                         body: push.body.fill(tokens: chunk.map(\.token)), tag: UInt64(index))
        }
        let batch = HMSBatchContext(client: self, chunks: chunks, authorization: authorization, sink: sink)
        let admittedRequests = requests.isEmpty ? 0 : pool.submit(requests, sink: batch)
        let admitted = requests.isEmpty ? deliveries.count : admittedRequests == 0 ? 0 : admittedRequests < chunks.count
            ? ends[admittedRequests - 1] : deliveries.count
        let answeredNow = refused.filter { $0.position < admitted }.map(\.result)
        if !answeredNow.isEmpty { sink.receive(answeredNow) }
        return admitted
    }

    /// The outcomes of one Push Kit answer for the tokens its request carried, with the client's auth side effects.
    func classifyHMS(_ result: HTTP2Result, chunk: [ProviderDelivery], authorization: String?) -> [DeliveryOutcome] {
        guard case .success(let response) = result else {
            let outcome = classify(result, delivery: chunk[0], authorization: authorization)
            return Array(repeating: outcome, count: chunk.count)
        }
        var headers: [(String, String)] = []
        if let retryAfter = response.header("retry-after") { headers.append(("retry-after", retryAfter)) }
        let now = clock()
        let outcomes = HMSResponseClassifier.classify(ProviderResponse(status: response.status, headers: headers, body: response.body),
                                                      tokens: chunk.map(\.token), now: now)
        guard let first = outcomes.first else { return [] }
        // One answer for the request: auth and credential side effects once, not per token.
        let checked = hmsAuthCheck(first, authorization: authorization, now: now)
        if case .authTokenExpired = checked { authTokenRefused(authorization) }
        if case .credentialsInvalid(let reason) = checked {
            credentialsRefused(reason, status: response.status)
            return Array(repeating: checked, count: chunk.count)
        }
        return outcomes
    }

    // MARK: - Checks without a round trip

    /// A push this client cannot send as it is, answered without contacting the provider.
    func precheck(_ push: RenderedPush) -> DeliveryOutcome? {
        guard push.platform.provider == application.platform.provider else {
            return .messageInvalid(reason: "rendered for \(push.platform.rawValue), sent to a \(application.platform.rawValue) application")
        }
        switch push.request {
        case .apns(let headers):
            let size = push.body.fixedByteCount
            if size > headers.pushType.payloadLimit {
                return .messageInvalid(reason: "APNs payload is \(size) bytes, larger than the \(headers.pushType.payloadLimit)-byte limit")
            }
            if headers.topic == nil, application.apnsBundleID == nil {
                // Certificate auth falls back to the certificate's UID; this one has none.
                return .messageInvalid(reason: "no apns-topic: set AWS.SNS.MOBILE.APNS.TOPIC or ApplePlatformBundleID")
            }
        case .adm:
            if push.body.fixedByteCount > PushProvider.adm.payloadLimit {
                return .messageInvalid(reason: "ADM payload is \(push.body.fixedByteCount) bytes, larger than the \(PushProvider.adm.payloadLimit)-byte limit")
            }
        case .fcm:
            break  // FCM counts keys and values, which the renderer checked (B.3)
        case .hms:
            // E.1: 4096 bytes of body, tokens not counted (the template's token slot is not in fixedByteCount).
            let size = push.body.fixedByteCount
            if size > PushProvider.hms.payloadLimit {
                return .messageInvalid(reason: "HMS payload is \(size) bytes without its tokens, larger than the \(PushProvider.hms.payloadLimit)-byte limit")
            }
        case .webPush:
            // The renderer counted the delivery ids; a payload this large without them cannot be sent either.
            let size = push.body.fixedByteCount
            if size > PushProvider.webPush.payloadLimit {
                return .messageInvalid(reason: "Web Push payload is \(size) bytes, larger than the \(PushProvider.webPush.payloadLimit)-byte limit")
            }
        }
        return nil
    }

    static func checkToken(_ token: String) -> DeliveryOutcome? {
        token.isEmpty ? .rejected(reason: "the endpoint has no token") : nil
    }

    // MARK: - Classification

    func classify(_ result: HTTP2Result, delivery: ProviderDelivery, authorization: String?) -> DeliveryOutcome {
        let now = clock()
        switch result {
        case .success(let response):
            // Fast path for acceptances, nearly every answer of a fan-out: no header list, dictionary or JSON tree.
            switch application.platform.provider {
            case .apns where response.status == 200:
                return .accepted(providerID: response.header("apns-id"))
            case .fcm where (200..<300).contains(response.status):
                if let name = FCMAcceptedName.scan(response.body) { return .accepted(providerID: name) }
            case .webPush where response.status == 201:
                return .accepted(providerID: response.header("location"))
            default:
                break
            }
            var headers: [(String, String)] = []
            if let retryAfter = response.header("retry-after") { headers.append(("retry-after", retryAfter)) }
            let outcome: DeliveryOutcome
            switch application.platform.provider {
            case .apns:
                if let id = response.header("apns-id") { headers.append(("apns-id", id)) }
                outcome = APNsResponseClassifier.classify(
                    ProviderResponse(status: response.status, headers: headers, body: response.body),
                    tokenUpdatedAt: delivery.tokenUpdatedAt, now: now)
            case .fcm:
                outcome = FCMResponseClassifier.classify(
                    ProviderResponse(status: response.status, headers: headers, body: response.body), now: now)
            case .adm:
                if let id = response.header("x-amzn-requestid") { headers.append(("x-amzn-requestid", id)) }
                outcome = ADMResponseClassifier.classify(
                    ProviderResponse(status: response.status, headers: headers, body: response.body),
                    sentToken: delivery.token, now: now)
            case .webPush:
                if let location = response.header("location") { headers.append(("location", location)) }
                outcome = WebPushResponseClassifier.classify(
                    ProviderResponse(status: response.status, headers: headers, body: response.body), now: now)
            case .hms:
                outcome = hmsAuthCheck(HMSResponseClassifier.classify(
                    ProviderResponse(status: response.status, headers: headers, body: response.body),
                    token: delivery.token, now: now), authorization: authorization, now: now)
            }
            if case .authTokenExpired = outcome { authTokenRefused(authorization) }
            if case .credentialsInvalid(let reason) = outcome { credentialsRefused(reason, status: nil) }
            return outcome
        case .failure(let error):
            let outcome: DeliveryOutcome
            switch error {
            case .connectFailed(let text), .tlsHandshakeFailed(let text):
                outcome = TransportFailureClassifier.classify(.connectFailed(text))
                connectionFailed(text)
            case .tlsVerificationFailed(let text):
                outcome = TransportFailureClassifier.classify(.connectFailed("TLS verification: \(text)"))
                connectionFailed("the provider's TLS certificate was not verified: \(text)")
            case .tlsClientCertificateRejected(let text):
                outcome = TransportFailureClassifier.classify(.clientCertificateRejected(text))
                connectionFailed("the provider rejected the client certificate: \(text)")
            case .timeout:
                outcome = TransportFailureClassifier.classify(.timeout)
            case .streamReset(let code):
                outcome = TransportFailureClassifier.classify(.streamReset(errorCode: code))
            case .goAwayRetryExhausted, .connectionLost:
                if let last = goAway.recent(now: now) {
                    outcome = TransportFailureClassifier.classify(.goAway(errorCode: last.errorCode, debugData: last.debugData))
                } else {
                    outcome = TransportFailureClassifier.classify(.connectionLost(error.description))
                }
            case .protocolError(let text):
                outcome = TransportFailureClassifier.classify(.connectionLost("HTTP/2 protocol error: \(text)"))
            case .overloaded:
                outcome = .retryable(reason: "provider connection queue full", retryAfter: nil)
            case .shutdown:
                outcome = .retryable(reason: "provider client shut down", retryAfter: nil)
            case .http2NotNegotiated(let selected):
                // Web Push moves such an origin to HTTP/1.1 and resends before classifying (WebPushSender); anything
                // else reaching here is sent again later.
                outcome = .retryable(reason: "the provider does not speak HTTP/2 (ALPN \(selected))", retryAfter: nil)
            case .invalidRequest(let text):
                outcome = .rejected(reason: "request not sendable: \(text)")
            }
            if case .authTokenExpired = outcome { authTokenRefused(authorization) }
            if case .credentialsInvalid(let reason) = outcome { credentialsRefused(reason, status: nil) }
            return outcome
        }
    }

    /// Push Kit's 80200001 (OAuth authentication failed) is answered `authTokenExpired` (the token is renewed and
    /// the delivery retried at once); when a second, different token is refused the same way within ten minutes, the
    /// renewal did not help and the credentials are at fault: the application is disabled with the reason.
    func hmsAuthCheck(_ outcome: DeliveryOutcome, authorization: String?, now: Date) -> DeliveryOutcome {
        guard case .authTokenExpired(let reason) = outcome, reason.hasPrefix("Push Kit \(HMSResponseClassifier.authFailed)"),
              let authorization else { return outcome }
        let persistent = hmsAuthRefusal.withLock { last -> Bool in
            defer { last = (authorization, now) }
            guard let last else { return false }
            return last.token != authorization && now.timeIntervalSince(last.at) < 600
        }
        return persistent ? .credentialsInvalid(reason: reason + " (again with a renewed access token)") : outcome
    }

    /// A connection to the provider could not be made: retried with backoff, so the deliveries wait, and the log
    /// says why (at most once a minute for each reason).
    private func connectionFailed(_ reason: String) {
        guard let suppressed = logLimiter.admit("connect " + reason, now: clock()) else { return }
        // Web Push has no endpoint of its own (each subscription names its push service; the reason names the host).
        let endpoint = application.platform == .webPush ? "per subscription" : application.endpointURL
        var fields = ["application": application.id, "platform": application.platform.rawValue,
                      "endpoint": endpoint, "reason": reason]
        if suppressed > 0 { fields["left_out_since_last"] = String(suppressed) }
        log.warning("provider connection failed", fields)
    }

    func credentialsRefused(_ reason: String, status: Int?) {
        guard let suppressed = logLimiter.admit("credentials " + reason, now: clock()) else { return }
        var fields = ["application": application.id, "platform": application.platform.rawValue, "reason": reason]
        if suppressed > 0 { fields["left_out_since_last"] = String(suppressed) }
        log.warning("provider refused the credentials", fields)
    }

    /// The provider called the token in `authorization` expired or unknown.
    func authTokenRefused(_ authorization: String?) {
        guard let authorization else { return }  // certificate auth: no token to renew
        switch auth {
        case .certificate, .vapid:
            break
        case .apns(let signer):
            if signer.providerTokenExpired(rejected: authorization) {
                log.info("APNs provider token renewed after ExpiredProviderToken; recycling connections", ["application": application.id])
                pool.recycleConnections()
            }
        case .oauth(let source):
            source.invalidate(token: String(authorization.dropFirst("Bearer ".count)))
        }
    }

    /// Connections this client's pool keeps open (load tests give a replaying client the same number).
    public var poolConnectionCount: Int { pool.configuration.connectionCount }

    /// The pool's counters (connections opened, in flight...), for tests and metrics.
    public func poolStatistics() async -> ProviderPoolStatistics {
        let stats = await pool.statistics()
        return ProviderPoolStatistics(activeConnections: stats.activeConnections, connectionsOpened: stats.connectionsOpened,
                                           queuedRequests: stats.queuedRequests, inFlightRequests: stats.inFlightRequests)
    }
}

/// A snapshot of a client's connection pool.
public struct ProviderPoolStatistics: Sendable, Hashable {
    public var activeConnections: Int
    public var connectionsOpened: Int
    public var queuedRequests: Int
    public var inFlightRequests: Int
}

/// Everything about a push's requests that does not depend on the delivery, computed once per push and batch:
/// the path prefix and the header list (shared by every request, so no per-request header copy).
struct RequestShape {
    let pathPrefix: String
    let pathSuffix: String
    let headers: [(String, String)]
    let push: RenderedPush
    let fixedPath: String?

    init(push: RenderedPush, client: ProviderClient, authorization: String?) {
        self.push = push
        // No `authorization` at all with certificate auth: the TLS client certificate authenticates (A.2).
        var headers: [(String, String)] = authorization.map { [("authorization", $0)] } ?? []
        switch push.request {
        case .apns(let apns):
            pathPrefix = "/3/device/"
            pathSuffix = ""
            fixedPath = nil
            headers.append(("apns-push-type", apns.pushType.rawValue))
            let topic = apns.topic ?? client.application.apnsBundleID.map { apns.pushType.topic(bundleID: $0) }
            if let topic { headers.append(("apns-topic", topic)) }
            headers.append(("apns-priority", String(apns.priority.rawValue)))
            if let expiration = apns.expiration { headers.append(("apns-expiration", String(expiration))) }
            if let collapseID = apns.collapseID { headers.append(("apns-collapse-id", collapseID)) }
        case .fcm:
            pathPrefix = ""
            pathSuffix = ""
            fixedPath = client.fcmPathValue
            headers.append(("content-type", "application/json; charset=utf-8"))
        case .adm:
            pathPrefix = "/messaging/registrations/"
            pathSuffix = "/messages"
            fixedPath = nil
            headers.append(("content-type", "application/json"))
            headers.append(("accept", "application/json"))
            headers.append(("x-amzn-type-version", "com.amazon.device.messaging.ADMMessage@1.0"))
            headers.append(("x-amzn-accept-type", "com.amazon.device.messaging.ADMSendResult@1.0"))
        case .hms:
            pathPrefix = ""
            pathSuffix = ""
            fixedPath = client.fcmPathValue
            headers.append(("content-type", "application/json; charset=utf-8"))
        case .webPush:
            // Web Push requests are built per subscription (`WebPushSender.request`); this shape is never sent.
            pathPrefix = "/"
            pathSuffix = ""
            fixedPath = "/"
        }
        self.headers = headers
    }

    func request(for delivery: ProviderDelivery, tag: UInt64) -> HTTP2Request {
        let body = push.body(token: delivery.token, deliveryID: delivery.deliveryID)
        if let fixedPath {
            return HTTP2Request(method: "POST", path: fixedPath, headers: headers, body: body, tag: tag)
        }
        // The shared prefix and the token travel separately (the header block joins them): no path string per
        // request for APNs, whose tokens need no escaping.
        if pathSuffix.isEmpty {
            return HTTP2Request(method: "POST", path: pathPrefix, pathSuffix: Self.pathSegment(delivery.token),
                                headers: headers, body: body, tag: tag)
        }
        return HTTP2Request(method: "POST", path: pathPrefix + Self.pathSegment(delivery.token), pathSuffix: pathSuffix,
                            headers: headers, body: body, tag: tag)
    }

    /// A token as one path segment: unreserved characters and `:|=+@` kept, anything else (`/`, `%`, `?`, space) %XX.
    static func pathSegment(_ token: String) -> String {
        let safe = token.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: ":"), UInt8(ascii: "|"),
                 UInt8(ascii: "="), UInt8(ascii: "+"), UInt8(ascii: "@"):
                true
            default:
                false
            }
        }
        if safe { return token }
        var out = ""
        for byte in token.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: ":"), UInt8(ascii: "|"),
                 UInt8(ascii: "="), UInt8(ascii: "+"), UInt8(ascii: "@"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                out += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return out
    }
}

/// FCM's acceptance body `{"name": "projects/p/messages/id"}` read without building a JSON tree. Returns nil
/// (the caller parses in full) for anything else: other members, escapes, odd whitespace, an empty body.
enum FCMAcceptedName {
    private static let key: [UInt8] = Array("name\"".utf8)

    static func scan(_ body: [UInt8]) -> String? {
        let key = Self.key
        return body.withUnsafeBufferPointer { bytes -> String? in
            var i = 0
            func skipSpace() { while i < bytes.count, bytes[i] == 0x20 || bytes[i] == 0x0A || bytes[i] == 0x0D || bytes[i] == 0x09 { i += 1 } }
            func expect(_ byte: UInt8) -> Bool {
                skipSpace()
                guard i < bytes.count, bytes[i] == byte else { return false }
                i += 1
                return true
            }
            guard expect(UInt8(ascii: "{")), expect(UInt8(ascii: "\"")) else { return nil }
            guard i + key.count <= bytes.count else { return nil }
            for k in 0..<key.count where bytes[i + k] != key[k] { return nil }
            i += key.count
            guard expect(UInt8(ascii: ":")), expect(UInt8(ascii: "\"")) else { return nil }
            let start = i
            while i < bytes.count, bytes[i] != UInt8(ascii: "\""), bytes[i] != UInt8(ascii: "\\"), bytes[i] >= 0x20 { i += 1 }
            guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { return nil }
            let end = i
            i += 1
            guard expect(UInt8(ascii: "}")) else { return nil }
            skipSpace()
            guard i == bytes.count else { return nil }
            return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
        }
    }
}

extension ProviderClient {
    var fcmPathValue: String { fcmPath ?? "/" }
}

/// Receives one batch's HTTP/2 completions (on the pool's loop thread) and hands outcomes to the caller's sink.
/// One per submitted batch: the deliveries are found by request tag (their index), not by a closure per request.
final class BatchContext: HTTP2CompletionSink {
    let client: ProviderClient
    let deliveries: [ProviderDelivery]
    let authorization: String?
    let sink: any ProviderResultSink
    /// When the batch was handed over, for the response-time histogram.
    let started: ContinuousClock.Instant?

    init(client: ProviderClient, deliveries: [ProviderDelivery], authorization: String?, sink: any ProviderResultSink) {
        self.client = client
        started = client.responseTime == nil ? nil : .now
        self.deliveries = deliveries
        self.authorization = authorization
        self.sink = sink
    }

    func receive(_ completions: [HTTP2Completion]) {
        var results: [ProviderDeliveryResult] = []
        results.reserveCapacity(completions.count)
        if let histogram = client.responseTime, let started {
            let elapsed = started.duration(to: .now)
            for _ in completions { histogram.observe(elapsed) }
        }
        for completion in completions {
            let index = Int(completion.tag)
            guard deliveries.indices.contains(index) else { continue }
            let delivery = deliveries[index]
            let status: Int? = if case .success(let response) = completion.result { response.status } else { nil }
            results.append(ProviderDeliveryResult(
                tag: delivery.tag, outcome: client.classify(completion.result, delivery: delivery, authorization: authorization),
                providerStatus: status))
        }
        sink.receive(results)
    }
}

/// Receives the completions of one batch of Push Kit requests, each carrying several tokens (`chunks[tag]`), and
/// hands every token's outcome to the caller's sink.
final class HMSBatchContext: HTTP2CompletionSink {
    let client: ProviderClient
    let chunks: [[ProviderDelivery]]
    let authorization: String?
    let sink: any ProviderResultSink
    let started: ContinuousClock.Instant?

    init(client: ProviderClient, chunks: [[ProviderDelivery]], authorization: String?, sink: any ProviderResultSink) {
        self.client = client
        self.chunks = chunks
        self.authorization = authorization
        self.sink = sink
        started = client.responseTime == nil ? nil : .now
    }

    func receive(_ completions: [HTTP2Completion]) {
        var results: [ProviderDeliveryResult] = []
        if let histogram = client.responseTime, let started {
            let elapsed = started.duration(to: .now)
            for _ in completions { histogram.observe(elapsed) }
        }
        for completion in completions {
            let index = Int(completion.tag)
            guard chunks.indices.contains(index) else { continue }
            let chunk = chunks[index]
            let status: Int? = if case .success(let response) = completion.result { response.status } else { nil }
            let outcomes = client.classifyHMS(completion.result, chunk: chunk, authorization: authorization)
            for (delivery, outcome) in zip(chunk, outcomes) {
                results.append(ProviderDeliveryResult(tag: delivery.tag, outcome: outcome, providerStatus: status))
            }
        }
        sink.receive(results)
    }
}

/// The last GOAWAY a pool's server sent, kept briefly so the requests it failed are classified by its APNs
/// `reason` (A.7: a revoked key closes every connection with a reason in the debug data).
final class GoAwayMemo: Sendable {
    private let last = Mutex<(goAway: HTTP2GoAway, at: Date)?>(nil)
    let clock: @Sendable () -> Date

    init(clock: @escaping @Sendable () -> Date) { self.clock = clock }

    func record(_ goAway: HTTP2GoAway) {
        guard !goAway.debugData.isEmpty else { return }
        let now = clock()
        last.withLock { $0 = (goAway, now) }
    }

    /// The GOAWAY seen in the last 30 seconds, if any.
    func recent(now: Date) -> HTTP2GoAway? {
        last.withLock { entry in
            guard let entry, now.timeIntervalSince(entry.at) < 30 else { return nil }
            return entry.goAway
        }
    }
}

extension ProviderClient {
    /// The APNs provider-token signer this client shares with every client of the same team + key; nil for FCM/ADM.
    public var apnsTokenSigner: APNsTokenSigner? {
        if case .apns(let signer) = auth { return signer }
        return nil
    }

    /// The OAuth access-token source this client shares with every client of the same account; nil for APNs.
    public var accessTokenSource: AccessTokenSource? {
        if case .oauth(let source) = auth { return source }
        return nil
    }
}
