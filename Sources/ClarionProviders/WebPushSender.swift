import ClarionCore
import ClarionCrypto
import ClarionHTTP2
import Foundation
import Synchronization

/// What a `WEBPUSH` application's client needs beyond the other platforms': its VAPID signer and the HTTP/2 pools of
/// the push services its subscriptions name.
///
/// Every browser vendor runs its own push service (FCM for Chrome, Mozilla's autopush, Apple's, Microsoft's), and a
/// subscription names the service in its URL, so pools are made per push-service origin on first use, keyed by
/// origin + VAPID key (`HTTP2Client` keys pools by origin and identity), shared by every application of the same key,
/// bounded in number (`maximumOrigins`: beyond it a new origin is refused with a reason, rather than growing without
/// limit on URLs browsers supply) and idle-closed by the pool's `idleTimeout`. Every pool carries the registry's
/// `OutboundAddressPolicy`: the URL comes from a browser, so https only (checked at endpoint creation), and no
/// loopback, private or link-local address after DNS resolution.
///
/// A push service need not speak HTTP/2 (RFC 8030 section 1: HTTP/2 is recommended for efficiency, not required).
/// The HTTP/2 pools offer ALPN "h2" and "http/1.1"; when an origin's server selects http/1.1 (or answers no ALPN) the
/// pool reports `.http2NotNegotiated` before anything is sent, the origin is remembered as HTTP/1.1, and its
/// requests go (again, and from then on) to an `HTTP1ClientPool` of the same key: keep-alive connections, one
/// request at a time each, the same address policy, the same outcome classification.
public final class WebPushSender: Sendable {
    public let signer: VAPIDSigner
    let http: HTTP2Client
    let identity: String
    let template: HTTP2PoolConfiguration
    public let maximumOrigins: Int
    /// Connections an HTTP/1.1 origin may have: one request at a time each, so a fan-out needs several where one
    /// HTTP/2 connection multiplexes (RFC 9112 section 9.4 asks clients to limit them; browsers use six per origin).
    public static let http1ConnectionsPerOrigin = 6
    private let pools = Mutex<[String: HTTP2ClientPool]>([:])
    /// Origins whose push service did not negotiate h2, with their HTTP/1.1 pool.
    private let http1Pools = Mutex<[String: HTTP1ClientPool]>([:])
    private static let log = Log("clarion.webpush")

    /// Where one origin's requests go.
    enum Route {
        case http2(HTTP2ClientPool)
        case http1(HTTP1ClientPool)
    }

    init(signer: VAPIDSigner, http: HTTP2Client, identity: String, template: HTTP2PoolConfiguration, maximumOrigins: Int) {
        self.signer = signer
        self.http = http
        self.identity = identity
        self.template = template
        self.maximumOrigins = maximumOrigins
    }

    /// The pool `subscription`'s push service is reached through: HTTP/1.1 once the origin showed it does not
    /// negotiate h2, HTTP/2 otherwise (made on first use).
    func route(for subscription: WebPushSubscription) throws(ProviderError) -> Route {
        if let http1 = http1Pools.withLock({ $0[subscription.origin] }) { return .http1(http1) }
        return .http2(try pool(for: subscription))
    }

    /// The HTTP/1.1 pool for the origin `http2`'s server refused h2 on, made (and the origin remembered) the first
    /// time.
    func http1Pool(replacing http2: HTTP2ClientPool) throws(ProviderError) -> HTTP1ClientPool {
        let origin = http2.configuration.origin.description
        if let existing = http1Pools.withLock({ $0[origin] }) { return existing }
        let created: HTTP1ClientPool
        var configuration = http2.configuration
        configuration.connectionCount = Self.http1ConnectionsPerOrigin
        do {
            created = try http.http1Pool(for: configuration)
        } catch {
            throw ProviderError(.invalidAttribute, attribute: ProviderAttribute.providerCACertificate, "\(error)")
        }
        let first = http1Pools.withLock { pools -> Bool in
            if pools[origin] != nil { return false }
            pools[origin] = created
            return true
        }
        if first { Self.log.info("push service does not negotiate h2; sending over HTTP/1.1", ["origin": origin]) }
        return created
    }

    /// Push-service origins sent to over HTTP/1.1.
    public var http1Origins: [String] { http1Pools.withLock { Array($0.keys).sorted() } }

    /// The HTTP/2 pool of `subscription`'s push service, made on first use.
    func pool(for subscription: WebPushSubscription) throws(ProviderError) -> HTTP2ClientPool {
        if let existing = pools.withLock({ $0[subscription.origin] }) { return existing }
        var configuration = template
        configuration.origin = HTTP2Origin(scheme: .https, host: subscription.host, port: subscription.port)
        configuration.identity = identity
        configuration.offersHTTP1 = true
        let created: HTTP2ClientPool
        do {
            created = try http.pool(for: configuration)
        } catch {
            throw ProviderError(.invalidAttribute, attribute: ProviderAttribute.providerCACertificate, "\(error)")
        }
        return try pools.withLock { pools throws(ProviderError) -> HTTP2ClientPool in
            if let existing = pools[subscription.origin] { return existing }
            guard pools.count < maximumOrigins else {
                throw ProviderError(.invalidAttribute, attribute: nil,
                                    "more than \(maximumOrigins) push-service origins for one VAPID key; \(subscription.origin) refused")
            }
            pools[subscription.origin] = created
            return created
        }
    }

    /// The keys of this sender's pools (the registry keeps them while a client uses the sender).
    var poolKeys: [HTTP2Client.PoolKey] { pools.withLock { $0.values.map(\.key) } }

    /// Push-service origins with a pool.
    public var origins: [String] { pools.withLock { Array($0.keys).sorted() } }

    /// The request for one delivery: the plaintext encrypted to the subscription (a fresh key and salt: RFC 8291
    /// section 3.1), VAPID authorization for its origin, and the RFC 8030 headers.
    func request(_ push: RenderedPush, headers webPush: WebPushRequestHeaders, subscription: WebPushSubscription,
                 deliveryID: String?, now: Date, tag: UInt64) throws(CryptoError) -> HTTP2Request {
        let plaintext = push.body(token: "", deliveryID: deliveryID)
        let body = try WebPushEncryption.encrypt(plaintext: plaintext, subscriberPublicKey: P256PublicKey(uncompressed: subscription.p256dh),
                                                 authSecret: subscription.auth)
        let authorization = try signer.authorization(origin: subscription.origin, now: Int64(now.timeIntervalSince1970.rounded(.down)))
        var headers: [(String, String)] = [("authorization", authorization)]
        for field in webPush.fields { headers.append((field.name, field.value)) }
        headers.append(("content-encoding", "aes128gcm"))
        headers.append(("content-type", "application/octet-stream"))
        return HTTP2Request(method: "POST", path: subscription.path, headers: headers, body: body, tag: tag)
    }
}

extension ProviderClient {
    /// One Web Push delivery, waited for.
    func webPushSend(_ push: RenderedPush, to delivery: ProviderDelivery, sender: WebPushSender) async -> DeliveryOutcome {
        switch prepareWebPush(push, delivery, sender: sender, tag: 0) {
        case .failure(let failure):
            return failure.outcome
        case .success(let (.http1(pool), request)):
            return classify(await pool.send(request), delivery: delivery, authorization: nil)
        case .success(let (.http2(pool), request)):
            let result = await pool.send(request)
            guard case .failure(.http2NotNegotiated) = result else {
                return classify(result, delivery: delivery, authorization: nil)
            }
            do {
                let http1 = try sender.http1Pool(replacing: pool)
                return classify(await http1.send(request), delivery: delivery, authorization: nil)
            } catch {
                return .rejected(reason: error.message)
            }
        }
    }

    /// Web Push deliveries on the batch path: each is encrypted to its subscription and submitted to its push
    /// service's pool. All are admitted; one a pool cannot take comes back as `retryable`.
    func webPushSubmit(_ push: RenderedPush, deliveries: [ProviderDelivery], sink: any ProviderResultSink, sender: WebPushSender) -> Int {
        var refused: [ProviderDeliveryResult] = []
        var byPool: [ObjectIdentifier: (route: WebPushSender.Route, requests: [HTTP2Request], deliveries: [ProviderDelivery])] = [:]
        for delivery in deliveries {
            let key: ObjectIdentifier
            switch prepareWebPush(push, delivery, sender: sender, tag: 0) {
            case .failure(let failure):
                refused.append(ProviderDeliveryResult(tag: delivery.tag, outcome: failure.outcome))
                continue
            case .success(let (route, request)):
                switch route {
                case .http2(let pool): key = ObjectIdentifier(pool)
                case .http1(let pool): key = ObjectIdentifier(pool)
                }
                var entry = byPool[key] ?? (route, [], [])
                var tagged = request
                tagged.tag = UInt64(entry.requests.count)
                entry.requests.append(tagged)
                entry.deliveries.append(delivery)
                byPool[key] = entry
            }
        }
        for entry in byPool.values {
            let batch = BatchContext(client: self, deliveries: entry.deliveries, authorization: nil, sink: sink)
            let admitted = switch entry.route {
            case .http1(let pool):
                pool.submit(entry.requests, sink: batch)
            case .http2(let pool):
                pool.submit(entry.requests, sink: WebPushHTTP2Sink(requests: entry.requests, pool: pool, sender: sender, next: batch))
            }
            if admitted < entry.deliveries.count {
                let outcome = DeliveryOutcome.retryable(reason: "push service connection queue full", retryAfter: nil)
                refused.append(contentsOf: entry.deliveries[admitted...].map { ProviderDeliveryResult(tag: $0.tag, outcome: outcome) })
            }
        }
        if !refused.isEmpty { sink.receive(refused) }
        return deliveries.count
    }

    private func prepareWebPush(_ push: RenderedPush, _ delivery: ProviderDelivery, sender: WebPushSender,
                                tag: UInt64) -> Result<(WebPushSender.Route, HTTP2Request), DeliveryOutcomeFailure> {
        if let refusal = precheck(push) { return .failure(DeliveryOutcomeFailure(refusal)) }
        guard case .webPush(let headers) = push.request else {
            return .failure(DeliveryOutcomeFailure(.messageInvalid(reason: "not rendered for Web Push")))
        }
        let subscription: WebPushSubscription
        do {
            subscription = try WebPushSubscription.parse(delivery.token)
        } catch {
            // Subscriptions are checked when the endpoint is made; one that no longer parses can never be sent to.
            return .failure(DeliveryOutcomeFailure(.tokenInvalid(reason: "unusable Web Push subscription: \(error.message)", invalidSince: nil)))
        }
        let pool: WebPushSender.Route
        do {
            pool = try sender.route(for: subscription)
        } catch {
            return .failure(DeliveryOutcomeFailure(.rejected(reason: error.message)))
        }
        do {
            let request = try sender.request(push, headers: headers, subscription: subscription, deliveryID: delivery.deliveryID,
                                             now: clock(), tag: tag)
            return .success((pool, request))
        } catch {
            if error.code == .signingFailed {
                return .failure(DeliveryOutcomeFailure(.credentialsInvalid(reason: "VAPID signing failed: \(error.message)")))
            }
            return .failure(DeliveryOutcomeFailure(.tokenInvalid(reason: "the subscription's keys cannot be encrypted to: \(error.message)", invalidSince: nil)))
        }
    }
}

/// A `DeliveryOutcome` carried as a `Result` failure.
struct DeliveryOutcomeFailure: Error {
    let outcome: DeliveryOutcome
    init(_ outcome: DeliveryOutcome) { self.outcome = outcome }
}

/// Stands between an HTTP/2 pool and a Web Push batch: requests the pool could not send because the push service
/// does not negotiate h2 (`.http2NotNegotiated`: nothing was sent) go to the origin's HTTP/1.1 pool with the same
/// tags and the same next sink; every other result passes through. So the first batch to a new HTTP/1.1-only origin
/// is delivered, not failed and retried later.
final class WebPushHTTP2Sink: HTTP2CompletionSink {
    let requests: [HTTP2Request]
    let pool: HTTP2ClientPool
    let sender: WebPushSender
    let next: any HTTP2CompletionSink

    init(requests: [HTTP2Request], pool: HTTP2ClientPool, sender: WebPushSender, next: any HTTP2CompletionSink) {
        self.requests = requests
        self.pool = pool
        self.sender = sender
        self.next = next
    }

    func receive(_ completions: [HTTP2Completion]) {
        var passed: [HTTP2Completion] = []
        var resend: [HTTP2Request] = []
        for completion in completions {
            if case .failure(.http2NotNegotiated) = completion.result, requests.indices.contains(Int(completion.tag)) {
                resend.append(requests[Int(completion.tag)])
            } else {
                passed.append(completion)
            }
        }
        if !resend.isEmpty {
            do {
                let http1 = try sender.http1Pool(replacing: pool)
                let admitted = http1.submit(resend, sink: next)
                for request in resend[admitted...] { passed.append(HTTP2Completion(tag: request.tag, result: .failure(.overloaded))) }
            } catch {
                for request in resend {
                    passed.append(HTTP2Completion(tag: request.tag, result: .failure(.invalidRequest(error.message))))
                }
            }
        }
        if !passed.isEmpty { next.receive(passed) }
    }
}
