import ClarionProviders
import ClarionCore
import ClarionCrypto
import ClarionStore
import Foundation
import Synchronization

/// Tuning of a `RegistrationProcessor`.
public struct RegistrationProcessorConfiguration: Sendable {
    /// Sleep between polls when nothing is pending (queued webhooks also wake the sender at once in-process).
    public var pollInterval: Double
    /// Registrations claimed per round.
    public var batchSize: Int
    /// A claim not finished within this long is taken again by any processor (a crash loses nothing).
    public var leaseSeconds: Double
    /// The one webhook attempt's whole time budget (connect included).
    public var webhookTimeout: Double
    /// Which addresses webhooks may reach.
    public var outboundPolicy: OutboundAddressPolicy
    /// Longest device token accepted per platform; longer ones fail with DeviceTokenTooLong. APNs tokens are at
    /// most 100 bytes (200 hex digits); FCM registration tokens are kept under the endpoint column's 4096.
    public var apnsTokenLimit: Int
    public var fcmTokenLimit: Int

    public init(pollInterval: Double = 0.5, batchSize: Int = 50, leaseSeconds: Double = 30, webhookTimeout: Double = 5,
                outboundPolicy: OutboundAddressPolicy = .publicOnly, apnsTokenLimit: Int = 200, fcmTokenLimit: Int = 4096) {
        self.pollInterval = max(0.01, pollInterval)
        self.batchSize = max(1, batchSize)
        self.leaseSeconds = max(1, leaseSeconds)
        self.webhookTimeout = max(0.1, webhookTimeout)
        self.outboundPolicy = outboundPolicy
        self.apnsTokenLimit = apnsTokenLimit
        self.fcmTokenLimit = fcmTokenLimit
    }
}

/// Processes accepted registrations and sends their webhooks, off the request path.
///
/// Registrations: claimed under a lease (durable: a crash or restart leaves them Pending, and the next claim after
/// the lease takes them), checked (API token still valid, platform configured, token length), validated with a
/// dry run when the app asks for it, stored through `EndpointRepository`'s creation rule, and finished with their
/// webhook queued in the same transaction. A store outage leaves the request Pending for a later round.
///
/// Webhooks: a thread of its own claims `webhook_outbox` rows and makes one attempt each with libcurl (blocking
/// calls never run on the cooperative pool), through the outbound address policy.
///
/// Owner: `run()` until `shutdown()`.
public final class RegistrationProcessor: Sendable {
    public let configuration: RegistrationProcessorConfiguration
    let pool: PGPool
    let registrations: RegistrationRepository
    let endpoints: EndpointRepository
    let outbox: WebhookOutbox
    let validator: (any DryRunValidator)?
    /// The time of a webhook attempt, which its `x-clarion-signature` signs.
    let clock: @Sendable () -> Date
    let log = Log("clarion.registration")

    private struct State {
        var stopped = false
        var webhookThreadRunning = false
        var webhookWaiter: CheckedContinuation<Void, Never>?
        var wakeWebhooks = false
    }

    private let state = Mutex(State())
    private let webhookCondition = NSCondition()

    public init(pool: PGPool, masterKey: AESGCMKey, validator: (any DryRunValidator)?,
                configuration: RegistrationProcessorConfiguration = RegistrationProcessorConfiguration(),
                clock: @escaping @Sendable () -> Date = { Date() }) {
        self.configuration = configuration
        self.pool = pool
        self.registrations = RegistrationRepository(pool: pool, masterKey: masterKey)
        self.endpoints = EndpointRepository(pool: pool)
        self.outbox = WebhookOutbox(pool: pool, masterKey: masterKey)
        self.validator = validator
        self.clock = clock
    }

    /// Processes registrations and sends webhooks until `shutdown()`; returns when both have stopped.
    public func run() async {
        startWebhookThread()
        while !isStopped {
            let processed = await processPending()
            if processed == 0 { try? await Task.sleep(for: .milliseconds(Int(configuration.pollInterval * 1000))) }
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let running = state.withLock { state -> Bool in
                guard state.webhookThreadRunning else { return false }
                state.webhookWaiter = continuation
                return true
            }
            if !running { continuation.resume() }
        }
    }

    /// Stops claiming; the current round and webhook attempt finish.
    public func shutdown() {
        state.withLock { $0.stopped = true }
        webhookCondition.lock()
        webhookCondition.broadcast()
        webhookCondition.unlock()
    }

    private var isStopped: Bool { state.withLock { $0.stopped } }

    // MARK: Registrations

    /// One round: claims up to `batchSize` pending registrations and processes them. Returns how many were claimed.
    @discardableResult
    public func processPending() async -> Int {
        let claimed: [ClaimedRegistration]
        do {
            claimed = try await registrations.claimPending(limit: configuration.batchSize, leaseSeconds: configuration.leaseSeconds)
        } catch {
            // An outage is one line from the pool's DatabaseHealth, not one per poll.
            if !pool.reportsOutage(error) { log.warning("registration claim failed", ["error": error.code.rawValue]) }
            return 0
        }
        var queuedWebhook = false
        for registration in claimed {
            let decision = await decide(registration)
            guard let (status, failure) = decision else {
                try? await registrations.release(registration.id)
                continue
            }
            let webhook = Self.webhook(for: registration, status: status, failure: failure)
            do {
                try await registrations.finish(registration.id, status: status, failure: failure, webhook: webhook)
                if webhook != nil { queuedWebhook = true }
                log.info("registration processed", ["status": status.rawValue, "reason": failure?.rawValue ?? "",
                                                    "token": Log.tokenPrefix(registration.deviceToken)])
            } catch {
                log.warning("registration finish failed", ["error": error.code.rawValue])
            }
        }
        if queuedWebhook { wakeWebhookSender() }
        return claimed.count
    }

    /// The final state, or nil to leave the request Pending (a transient failure; retried after its release).
    func decide(_ r: ClaimedRegistration) async -> (RegistrationStatus, RegistrationFailure?)? {
        guard r.tokenValid else { return (.failed, .apiTokenNotValid) }
        let application: Int64?
        let limit: Int
        switch r.platform {
        case .apns?: (application, limit) = (r.apnsApplication, configuration.apnsTokenLimit)
        case .fcm?: (application, limit) = (r.fcmApplication, configuration.fcmTokenLimit)
        // Checked and made canonical when accepted (DeviceRegistrationRoutes.webPushSubscription); its endpoint URL is
        // bounded there (WebPushSubscription.maximumEndpointLength).
        case .webPush?: (application, limit) = (r.webPushApplication, Int.max)
        case nil: return (.failed, .failedToStoreDevice)
        }
        guard r.deviceToken.utf8.count <= limit else { return (.failed, .deviceTokenTooLong) }
        guard let application else { return (.failed, .failedToStoreDevice) }
        do {
            let zone = r.timeZone.map { [EndpointAttribute.timeZone: $0] } ?? [:]
            if let existing = try await endpoints.find(applicationKey: application, token: r.deviceToken) {
                // The same device registering again for its user is a success; another user's device is not taken over.
                guard existing.userID == r.userID else { return (.failed, .duplicateExists) }
                if let zone = r.timeZone, existing.attributes[EndpointAttribute.timeZone] != zone {
                    _ = try await endpoints.update(externalID: existing.externalID, EndpointChanges(attributes: [EndpointAttribute.timeZone: zone]))
                }
                return (.success, nil)
            }
            // Web Push has no validate-only request (RFC 8030): any push a service accepts reaches the browser, so a
            // subscription is only checked by its rules when accepted.
            if r.dryRunValidation, r.platform != .webPush, let validator {
                let outcome = await validator.validate(applicationKey: application, token: r.deviceToken)
                if !outcome.isDelivered {
                    // Refused credentials (or settings that cannot make a client) are the operator's to fix, not the
                    // device's: a warning, with the reason, as the dispatcher's for a disabled application.
                    let fields = ["outcome": outcome.label, "reason": outcome.reason ?? "", "application_key": String(application),
                                  "token": Log.tokenPrefix(r.deviceToken)]
                    if outcome.disablesApplication {
                        log.warning("registration dry run refused", fields)
                    } else {
                        log.info("registration dry run refused", fields)
                    }
                    return (.failed, .dryRunSendingFailed)
                }
            }
            let creation = try await endpoints.create(
                NewEndpoint(applicationKey: application, token: r.deviceToken, userID: r.userID, attributes: zone), externalID: UUID())
            switch creation {
            case .created, .existing: return (.success, nil)
            case .conflict: return (.failed, .duplicateExists)
            }
        } catch {
            switch error.code {
            case _ where error.isTransient:
                return nil
            default:
                log.warning("registration store failed", ["error": error.code.rawValue])
                return (.failed, .failedToStoreDevice)
            }
        }
    }

    /// The webhook of a finished registration: `{"Status", "Signature", "FailureReason"}` with
    /// Signature = Base64(HMAC-SHA256(key = the API token, message = the callback URL)). Each attempt also carries
    /// `x-clarion-signature` over its body and time (`WebhookSignature`), keyed by the same token, found at send
    /// time by `signingTokenID`.
    static func webhook(for r: ClaimedRegistration, status: RegistrationStatus, failure: RegistrationFailure?) -> WebhookEnvelope? {
        guard let url = r.callbackURL else { return nil }
        let signature: JSONValue = r.apiToken.map {
            .string(Data(Digest.hmacSHA256(key: Array($0.utf8), data: Array(url.utf8))).base64EncodedString())
        } ?? .null
        let body = JSONObject([("Status", .string(status.rawValue)), ("Signature", signature),
                               ("FailureReason", failure.map { .string($0.rawValue) } ?? .null)])
        return WebhookEnvelope(url: url, headers: r.callbackHeaders, body: body.jsonText, signingTokenID: r.tokenID)
    }

    // MARK: Webhooks

    private func startWebhookThread() {
        state.withLock { $0.webhookThreadRunning = true }
        let thread = Thread { [self] in
            self.webhookLoop()
            let waiter = self.state.withLock { state -> CheckedContinuation<Void, Never>? in
                state.webhookThreadRunning = false
                defer { state.webhookWaiter = nil }
                return state.webhookWaiter
            }
            waiter?.resume()
        }
        thread.name = "clarion-webhooks"
        thread.start()
    }

    private func wakeWebhookSender() {
        state.withLock { $0.wakeWebhooks = true }
        webhookCondition.lock()
        webhookCondition.broadcast()
        webhookCondition.unlock()
    }

    private func webhookLoop() {
        while !isStopped {
            let sent = sendPendingWebhooksBlocking()
            if sent > 0 { continue }
            webhookCondition.lock()
            let wake = state.withLock { state -> Bool in
                defer { state.wakeWebhooks = false }
                return state.wakeWebhooks || state.stopped
            }
            if !wake { _ = webhookCondition.wait(until: Date().addingTimeInterval(configuration.pollInterval)) }
            webhookCondition.unlock()
        }
    }

    /// Claims queued webhooks and makes one attempt each. Blocking: only on a thread of its own (the sender's, or
    /// a test's detached thread). Returns how many were attempted.
    @discardableResult
    public func sendPendingWebhooksBlocking(limit: Int = 20) -> Int {
        let claimed: [OutboxWebhook]
        do {
            claimed = try outbox.claimBlocking(limit: limit, leaseSeconds: max(configuration.leaseSeconds, configuration.webhookTimeout * 2))
        } catch {
            // An outage is one line from the pool's DatabaseHealth, not one per poll.
            if !pool.reportsOutage(error) { log.warning("webhook claim failed", ["error": error.code.rawValue]) }
            return 0
        }
        for webhook in claimed {
            let result = deliver(webhook)
            do {
                switch result {
                case .success: try outbox.finishBlocking(id: webhook.id, sent: true, error: nil)
                case .failure(let error): try outbox.finishBlocking(id: webhook.id, sent: false, error: error.text)
                }
            } catch {
                log.warning("webhook state not recorded", ["error": error.code.rawValue])
            }
        }
        return claimed.count
    }

    /// One attempt: the policy first, then the POST. Any 2xx is delivered.
    func deliver(_ webhook: OutboxWebhook) -> Result<Void, WebhookError> {
        guard let url = OutboundURL(webhook.url) else { return .failure(WebhookError("the callback URL is not valid")) }
        let address: String
        switch configuration.outboundPolicy.resolve(url) {
        case .success(let resolved): address = resolved
        case .failure(let refusal):
            log.warning("webhook refused", ["host": url.host, "reason": refusal.rawValue])
            return .failure(WebhookError(refusal.rawValue))
        }
        let headers = WebhookSignature.signed(webhook.headers, key: webhook.signingKey, body: webhook.body, time: clock())
        // Content-Type is the sender's own: a registration may not set it among its callback headers.
        switch OutboundPost.send(url, address: address, headers: headers.merging(["Content-Type": "application/json"]) { $1 },
                                 body: webhook.body, timeoutSeconds: configuration.webhookTimeout) {
        case .success(let status) where (200..<300).contains(status):
            return .success(())
        case .success(let status):
            log.info("webhook answered with an error", ["host": url.host, "status": String(status)])
            return .failure(WebhookError("HTTP \(status)"))
        case .failure(let failure):
            log.info("webhook failed", ["host": url.host, "reason": failure.text])
            return .failure(WebhookError(failure.text))
        }
    }
}

struct WebhookError: Error, Sendable {
    let text: String
    init(_ text: String) { self.text = text }
}

