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
public final class WebPushSender: Sendable {
    public let signer: VAPIDSigner
    let http: HTTP2Client
    let identity: String
    let template: HTTP2PoolConfiguration
    public let maximumOrigins: Int
    private let pools = Mutex<[String: HTTP2ClientPool]>([:])

    init(signer: VAPIDSigner, http: HTTP2Client, identity: String, template: HTTP2PoolConfiguration, maximumOrigins: Int) {
        self.signer = signer
        self.http = http
        self.identity = identity
        self.template = template
        self.maximumOrigins = maximumOrigins
    }

    /// The pool of `subscription`'s push service, made on first use.
    func pool(for subscription: WebPushSubscription) throws(ProviderError) -> HTTP2ClientPool {
        if let existing = pools.withLock({ $0[subscription.origin] }) { return existing }
        var configuration = template
        configuration.origin = HTTP2Origin(scheme: .https, host: subscription.host, port: subscription.port)
        configuration.identity = identity
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
        case .success(let (pool, request)):
            return classify(await pool.send(request), delivery: delivery, authorization: nil)
        }
    }

    /// Web Push deliveries on the batch path: each is encrypted to its subscription and submitted to its push
    /// service's pool. All are admitted; one a pool cannot take comes back as `retryable`.
    func webPushSubmit(_ push: RenderedPush, deliveries: [ProviderDelivery], sink: any ProviderResultSink, sender: WebPushSender) -> Int {
        var refused: [ProviderDeliveryResult] = []
        var byPool: [ObjectIdentifier: (pool: HTTP2ClientPool, requests: [HTTP2Request], deliveries: [ProviderDelivery])] = [:]
        for delivery in deliveries {
            let key: ObjectIdentifier
            switch prepareWebPush(push, delivery, sender: sender, tag: 0) {
            case .failure(let failure):
                refused.append(ProviderDeliveryResult(tag: delivery.tag, outcome: failure.outcome))
                continue
            case .success(let (pool, request)):
                key = ObjectIdentifier(pool)
                var entry = byPool[key] ?? (pool, [], [])
                var tagged = request
                tagged.tag = UInt64(entry.requests.count)
                entry.requests.append(tagged)
                entry.deliveries.append(delivery)
                byPool[key] = entry
            }
        }
        for entry in byPool.values {
            let batch = BatchContext(client: self, deliveries: entry.deliveries, authorization: nil, sink: sink)
            let admitted = entry.pool.submit(entry.requests, sink: batch)
            if admitted < entry.deliveries.count {
                let outcome = DeliveryOutcome.retryable(reason: "push service connection queue full", retryAfter: nil)
                refused.append(contentsOf: entry.deliveries[admitted...].map { ProviderDeliveryResult(tag: $0.tag, outcome: outcome) })
            }
        }
        if !refused.isEmpty { sink.receive(refused) }
        return deliveries.count
    }

    private func prepareWebPush(_ push: RenderedPush, _ delivery: ProviderDelivery, sender: WebPushSender,
                                tag: UInt64) -> Result<(HTTP2ClientPool, HTTP2Request), DeliveryOutcomeFailure> {
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
        let pool: HTTP2ClientPool
        do {
            pool = try sender.pool(for: subscription)
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
