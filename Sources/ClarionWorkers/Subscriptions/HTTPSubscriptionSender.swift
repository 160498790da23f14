import ClarionCore
import ClarionCrypto
import ClarionProviders
import ClarionStore
import Foundation
import Synchronization

/// Tuning and identity of an `HTTPSubscriptionSender`.
public struct HTTPSubscriptionSenderConfiguration: Sendable {
    /// Threads, each making one POST at a time: the bound on concurrent outbound connections.
    public var workers: Int
    /// Sleep between polls when nothing is due (each worker polls: 4 workers at 0.5 s are 8 cheap indexed queries a
    /// second on an idle node, as the webhook sender's 2).
    public var pollInterval: Double
    /// A claim not finished within this long is taken again (a crash loses nothing).
    public var leaseSeconds: Double
    /// One POST's whole time budget, connect included. SNS waits 15 seconds for an answer.
    public var timeout: Double
    /// Which addresses subscription URLs may reach (the registration webhooks' policy).
    public var outboundPolicy: OutboundAddressPolicy
    /// Certificates trusted for https URLs beside the system store (CLARION_PROVIDER_CA_FILE), PEM.
    public var extraTrustedCAPEM: String?
    /// Where receivers reach this node's API: the base of SubscribeURL, UnsubscribeURL and SigningCertURL.
    public var publicBaseURL: String
    /// The node's region: the ARNs of a delivery carry its topic's own region, this only for a claim without one.
    public var region: String

    public init(workers: Int = 4, pollInterval: Double = 0.5, leaseSeconds: Double = 60, timeout: Double = 15,
                outboundPolicy: OutboundAddressPolicy = .publicOnly, extraTrustedCAPEM: String? = nil,
                publicBaseURL: String, region: String) {
        self.workers = max(1, workers)
        self.pollInterval = max(0.01, pollInterval)
        self.leaseSeconds = max(1, leaseSeconds)
        self.timeout = max(0.1, timeout)
        self.outboundPolicy = outboundPolicy
        self.extraTrustedCAPEM = extraTrustedCAPEM
        self.publicBaseURL = publicBaseURL.hasSuffix("/") ? String(publicBaseURL.dropLast()) : publicBaseURL
        self.region = region
    }
}

/// Sends the SubscriptionConfirmation and Notification POSTs of HTTP/S subscriptions from the durable queue
/// (`HTTPDeliveryQueue`), never on an API thread: `workers` threads of its own each claim a due row, build and sign
/// its document as SNS does (docs/providers.md C.11), check the URL against the outbound
/// address policy, POST it (`OutboundPost`, as the registration webhooks are sent) and record the result:
/// delivered on a 2xx, another attempt on the subscription's DeliveryPolicy schedule otherwise, failed when the
/// schedule is used up or the policy refuses the address. Every failure is logged with its reason and kept in the
/// row (`last_error`), and a message's HTTP deliveries count in its status.
///
/// Owner: `run()` until `shutdown()`.
public final class HTTPSubscriptionSender: Sendable {
    public let configuration: HTTPSubscriptionSenderConfiguration
    let queue: HTTPDeliveryQueue
    let pool: PGPool
    let signingKey: SigningKey
    let clock: @Sendable () -> Date
    let log = Log("clarion.subscriptions")

    private struct State {
        var stopped = false
        var running = 0
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())
    private let condition = NSCondition()
    /// Filter policies compiled once per distinct text and scope (never per delivery), shared by the workers; a
    /// policy that does not compile (stored before policies were checked) is kept as nil: the subscriber gets the
    /// message, as the shard workers do. Bounded: starts over past `policyCacheCapacity` entries.
    private let policies = Mutex([PolicyKey: FilterPolicy?]())
    private struct PolicyKey: Hashable {
        var text: String
        var scope: FilterPolicyScope
    }
    static let policyCacheCapacity = 4096

    /// - Parameter signingKeyPEM: the RSA key of the certificate served at the SigningCertURL.
    public init(pool: PGPool, signingKeyPEM: String, configuration: HTTPSubscriptionSenderConfiguration,
                clock: @escaping @Sendable () -> Date = { Date() }) throws(CryptoError) {
        self.pool = pool
        self.queue = HTTPDeliveryQueue(pool: pool)
        self.signingKey = try SigningKey(pem: signingKeyPEM)
        self.configuration = configuration
        self.clock = clock
    }

    /// The URL receivers fetch the signing certificate from.
    public var signingCertURL: String { configuration.publicBaseURL + SNSHTTPDocument.certificatePath }

    /// Sends until `shutdown()`; returns when every worker has stopped.
    public func run() async {
        state.withLock { $0.running = configuration.workers }
        for index in 0..<configuration.workers {
            let thread = Thread { [self] in
                self.loop()
                let waiter = self.state.withLock { state -> CheckedContinuation<Void, Never>? in
                    state.running -= 1
                    guard state.running == 0 else { return nil }
                    defer { state.waiter = nil }
                    return state.waiter
                }
                waiter?.resume()
            }
            thread.name = "clarion-http-subs-\(index)"
            thread.start()
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let running = state.withLock { state -> Bool in
                guard state.running > 0 else { return false }
                state.waiter = continuation
                return true
            }
            if !running { continuation.resume() }
        }
    }

    /// Stops claiming; attempts in flight finish.
    public func shutdown() {
        state.withLock { $0.stopped = true }
        condition.lock()
        condition.broadcast()
        condition.unlock()
    }

    private var isStopped: Bool { state.withLock { $0.stopped } }

    private func loop() {
        while !isStopped {
            if sendDueBlocking(limit: 1) > 0 { continue }
            condition.lock()
            if !isStopped { _ = condition.wait(until: Date().addingTimeInterval(configuration.pollInterval)) }
            condition.unlock()
        }
    }

    /// Claims up to `limit` due deliveries and makes one attempt each. Blocking: only on a thread of its own.
    /// Returns how many were claimed.
    @discardableResult
    public func sendDueBlocking(limit: Int) -> Int {
        let claimed: [HTTPDeliveryClaim]
        do {
            claimed = try queue.claimBlocking(limit: limit, leaseSeconds: max(configuration.leaseSeconds, configuration.timeout * 2))
        } catch {
            if !pool.reportsOutage(error) { log.warning("http subscription claim failed", ["error": error.code.rawValue]) }
            return 0
        }
        for delivery in claimed {
            let result = attempt(delivery)
            do {
                try queue.finishBlocking(id: delivery.id, messageKey: delivery.messageKey, result: result)
            } catch {
                log.warning("http subscription delivery state not recorded", ["error": error.code.rawValue])
            }
        }
        return claimed.count
    }

    // MARK: One attempt

    func attempt(_ d: HTTPDeliveryClaim) -> HTTPDeliveryResult {
        let fields = ["subscription": d.subscriptionID.lowercasedText, "kind": d.kind.rawValue,
                      "attempt": String(d.attempts + 1)]
        if d.kind == .notification, let policy = d.filterPolicy, !passes(policy, d) { return .filtered }
        let request: (headers: [String: String], body: String)
        do { request = try build(d) } catch {
            log.warning("http subscription document not signed", fields.merging(["reason": error.message]) { $1 })
            return .failed(reason: "signing failed: \(error.message)", status: nil)
        }
        guard let url = OutboundURL(d.url) else {
            log.warning("http subscription URL not valid", fields)
            return .failed(reason: "the subscription URL is not valid", status: nil)
        }
        let address: String
        switch configuration.outboundPolicy.resolve(url) {
        case .success(let resolved): address = resolved
        case .failure(let refusal):
            // Not retried: the address will not become allowed by waiting (docs/security.md, SSRF).
            log.warning("http subscription refused by the outbound address policy",
                        fields.merging(["host": url.host, "reason": refusal.rawValue]) { $1 })
            return .failed(reason: "refused by the outbound address policy: \(refusal.rawValue)", status: nil)
        }
        let status: Int?
        let reason: String
        switch OutboundPost.send(url, address: address, headers: request.headers, body: request.body,
                                 timeoutSeconds: configuration.timeout, extraTrustedCAPEM: configuration.extraTrustedCAPEM) {
        case .success(let answer) where (200..<300).contains(answer):
            return .delivered(status: answer)
        case .success(let answer):
            (status, reason) = (answer, "HTTP \(answer)")
        case .failure(let failure):
            (status, reason) = (nil, failure.text)
        }
        let policy = d.subscriptionAttributes["DeliveryPolicy"].flatMap { try? HTTPDeliveryPolicy.parse($0) }
            ?? d.topicAttributes["DeliveryPolicy"].flatMap { try? HTTPDeliveryPolicy.parse($0) } ?? .snsDefault
        let logFields = fields.merging(["host": url.host, "reason": reason]) { $1 }
        guard let delay = policy.delay(beforeRetry: d.attempts + 1) else {
            log.warning("http subscription delivery failed for good", logFields)
            return .failed(reason: reason, status: status)
        }
        log.info("http subscription delivery failed, will retry",
                 logFields.merging(["retry_in_seconds": String(format: "%.0f", delay)]) { $1 })
        return .retry(at: clock().addingTimeInterval(delay), reason: reason, status: status)
    }

    func passes(_ policyText: String, _ d: HTTPDeliveryClaim) -> Bool {
        let scope = d.subscriptionAttributes["FilterPolicyScope"].flatMap(FilterPolicyScope.init(rawValue:)) ?? .messageAttributes
        let key = PolicyKey(text: policyText, scope: scope)
        let cached = policies.withLock { $0[key] }
        let compiled: FilterPolicy?
        if let cached {
            compiled = cached
        } else {
            compiled = try? FilterPolicy.compile(policyText, scope: scope)
            policies.withLock { cache in
                if cache.count >= Self.policyCacheCapacity { cache.removeAll(keepingCapacity: true) }
                cache[key] = .some(compiled)
            }
        }
        guard let policy = compiled else { return true }
        let attributes = Self.attributes(json: d.messageAttributesJSON ?? "{}")
        return policy.matches(FilterMessage(attributes: attributes, body: scope == .messageBody ? d.message : nil))
    }

    /// The POST's headers and body: SNS's signed JSON document, or the bare message for RawMessageDelivery.
    func build(_ d: HTTPDeliveryClaim) throws(CryptoError) -> (headers: [String: String], body: String) {
        let region = d.topicRegion.isEmpty ? configuration.region : d.topicRegion
        let topicARN = SNSARN.topic(region, d.accountID, name: d.topicName)
        let subscriptionARN = topicARN + ":" + d.subscriptionID.lowercasedText
        var headers = ["x-amz-sns-message-type": d.kind.rawValue, "x-amz-sns-topic-arn": topicARN,
                       "Content-Type": "text/plain; charset=UTF-8",
                       "User-Agent": "Amazon Simple Notification Service Agent"]
        let version = d.topicAttributes["SignatureVersion"] == "2" ? "2" : "1"
        switch d.kind {
        case .subscriptionConfirmation:
            // Each confirmation POST has a MessageId of its own.
            let messageID = UUID().lowercasedText
            headers["x-amz-sns-message-id"] = messageID
            var document = SNSHTTPDocument(
                type: .subscriptionConfirmation, messageID: messageID, topicARN: topicARN, subject: nil,
                message: "You have chosen to subscribe to the topic \(topicARN).\nTo confirm the subscription, visit the SubscribeURL included in this message.",
                timestamp: SNSHTTPDocument.timestamp(clock()), signatureVersion: version, signingCertURL: signingCertURL)
            document.token = d.token
            document.subscribeURL = configuration.publicBaseURL + SNSHTTPDocument.confirmPath
                + "?Action=ConfirmSubscription&TopicArn=\(Self.query(topicARN))&Token=\(Self.query(d.token))"
            document.signature = try sign(document.stringToSign, version: version)
            return (headers, document.jsonText)
        case .notification:
            let messageID = d.messageID?.lowercasedText ?? ""
            headers["x-amz-sns-message-id"] = messageID
            headers["x-amz-sns-subscription-arn"] = subscriptionARN
            let text = Self.text(of: d)
            if d.subscriptionAttributes["RawMessageDelivery"]?.lowercased() == "true" {
                headers["x-amz-sns-rawdelivery"] = "true"
                return (headers, text)
            }
            var document = SNSHTTPDocument(
                type: .notification, messageID: messageID, topicARN: topicARN, subject: d.subject, message: text,
                timestamp: SNSHTTPDocument.timestamp(d.publishedAt ?? clock()), signatureVersion: version,
                signingCertURL: signingCertURL)
            document.unsubscribeURL = configuration.publicBaseURL + SNSHTTPDocument.unsubscribePath
                + "?Action=Unsubscribe&SubscriptionArn=\(Self.query(subscriptionARN))&Token=\(Self.query(d.token))"
            document.messageAttributes = Self.attributes(json: d.messageAttributesJSON ?? "{}").sorted { $0.key < $1.key }
                .compactMap { name, value in
                    if let text = value.stringValue { return (name, value.dataType, text) }
                    if let binary = value.binaryValue { return (name, value.dataType, Data(binary).base64EncodedString()) }
                    return nil
                }
            document.signature = try sign(document.stringToSign, version: version)
            return (headers, document.jsonText)
        }
    }

    func sign(_ text: String, version: String) throws(CryptoError) -> String {
        let signature = try signingKey.rsaPKCS1Signature(Array(text.utf8), digest: version == "2" ? .sha256 : .sha1)
        return Data(signature).base64EncodedString()
    }

    /// The text an HTTP/S subscriber gets: with MessageStructure json, the "http"/"https" key or else "default".
    static func text(of d: HTTPDeliveryClaim) -> String {
        let message = d.message ?? ""
        guard d.structure == "json", case .object(let object)? = try? JSONValue.parse(message) else { return message }
        return object[d.protocol]?.stringValue ?? object["default"]?.stringValue ?? message
    }

    /// Stored message attributes (`{"Name": {"DataType", "StringValue" | "BinaryValue"}}`) as values.
    static func attributes(json: String) -> [String: MessageAttributeValue] {
        guard case .object(let object)? = try? JSONValue.parse(json) else { return [:] }
        var out: [String: MessageAttributeValue] = [:]
        for member in object {
            guard let type = member.value["DataType"]?.stringValue else { continue }
            if let text = member.value["StringValue"]?.stringValue {
                out[member.key] = MessageAttributeValue(dataType: type, stringValue: text)
            } else if let binary = member.value["BinaryValue"]?.stringValue, let data = Data(base64Encoded: binary) {
                out[member.key] = MessageAttributeValue(dataType: type, binaryValue: Array(data))
            }
        }
        return out
    }

    static func query(_ value: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return value.addingPercentEncoding(withAllowedCharacters: allowed) ?? value
    }
}
