import ClarionCore
import ClarionStore
import Foundation

/// One delivery as the accounting needs it.
struct DeliveryFacts: Sendable, Hashable {
    var endpoint: Int64
    var application: Int64
    var token: String
    /// This attempt's number (1 for the first send).
    var attempt: Int
    /// Retries stop here: the earlier of the rendered push's expiry and the message's.
    var expiresAt: Date?
    var publishedAt: Date
    /// `SuccessFeedbackSampleRate` of the application, 0...100.
    var successSampleRate: Int
    /// The application's metrics (nil when metrics are off, or for a delivery without an application).
    var counters: ApplicationDeliveryCounters? = nil
}

/// Turns outcomes into the writes of the next checkpoint: counters, failures by reason, delivery-log rows,
/// endpoints to disable, tokens to replace, retries, applications to disable. Pure: time and randomness come in.
struct DeliveryAccounting {
    /// What became of a delivery.
    enum Disposition: Equatable {
        /// Final: delivered, failed, skipped or expired.
        case final
        /// Another attempt is scheduled.
        case retry
    }

    var policy: RetryPolicy
    /// Outcomes are also counted per application (`OutcomeEffects.applications`, `application_delivery_counts`).
    let countsApplications: Bool
    private(set) var effects = OutcomeEffects()
    private var disabledApplications: Set<Int64> = []

    /// The application whose counts are being added to, and its counts so far: a shard's deliveries come in runs of
    /// one application, so most deliveries add to this without hashing (folded into `effects.applications` when the
    /// application changes and on `take`).
    private var current: (application: Int64, counts: ApplicationOutcomeCounts)?

    init(policy: RetryPolicy, countsApplications: Bool = true) {
        self.policy = policy
        self.countsApplications = countsApplications
    }

    /// The dispatcher's retry policy and whether it counts per application.
    init(_ configuration: DispatcherConfiguration) {
        self.init(policy: configuration.retryPolicy, countsApplications: configuration.applicationCounts)
    }

    /// The outcome classes of `ApplicationOutcomeCounts`.
    enum OutcomeClass {
        case sent, accepted, tokenInvalid, messageInvalid, credentialsInvalid, rejected, retryExhausted, retried, expired
        case skipped, filtered, heldOut
    }

    /// Adds one to an application's count of a class.
    private mutating func count(_ application: Int64, _ outcomeClass: OutcomeClass) {
        guard countsApplications else { return }
        if current?.application != application {
            foldCurrent()
            current = (application, ApplicationOutcomeCounts())
        }
        switch outcomeClass {
        case .sent: current!.counts.sent += 1
        case .accepted: current!.counts.accepted += 1
        case .tokenInvalid: current!.counts.tokenInvalid += 1
        case .messageInvalid: current!.counts.messageInvalid += 1
        case .credentialsInvalid: current!.counts.credentialsInvalid += 1
        case .rejected: current!.counts.rejected += 1
        case .retryExhausted: current!.counts.retryExhausted += 1
        case .retried: current!.counts.retried += 1
        case .expired: current!.counts.expired += 1
        case .skipped: current!.counts.skipped += 1
        case .filtered: current!.counts.filtered += 1
        case .heldOut: current!.counts.heldOut += 1
        }
    }

    private mutating func foldCurrent() {
        guard let (application, counts) = current else { return }
        current = nil
        if let earlier = effects.applications[application] {
            var sum = earlier
            sum += counts
            effects.applications[application] = sum
        } else {
            effects.applications[application] = counts
        }
    }

    /// Moves the accumulated writes out.
    mutating func take() -> OutcomeEffects {
        foldCurrent()
        defer { effects = OutcomeEffects() }
        return effects
    }

    /// A subscriber whose filter policy did not match the message: a target of the topic, never sent, never a
    /// failure. The one place a delivery is counted filtered (a metrics counter belongs here).
    mutating func recordFiltered(application: Int64) {
        effects.counters.targeted += 1
        effects.counters.filtered += 1
        count(application, .filtered)
    }

    /// An endpoint of a campaign variant's holdout (`VariantSplit`): a target, counted `held_out`, never sent.
    mutating func recordHeldOut(application: Int64) {
        effects.counters.targeted += 1
        effects.counters.heldOut += 1
        count(application, .heldOut)
    }

    /// Over its app's frequency cap (schema v22): a target, counted `capped`, never sent.
    mutating func recordCapped(_ facts: DeliveryFacts) {
        effects.counters.targeted += 1
        effects.counters.capped += 1
        facts.counters?.capped.increment()
    }

    /// In its app's quiet hours with a `skip` campaign: a target, counted `quiet_skipped`, never sent.
    mutating func recordQuietSkipped(_ facts: DeliveryFacts) {
        effects.counters.targeted += 1
        effects.counters.quietSkipped += 1
        facts.counters?.quietSkipped.increment()
    }

    /// In its app's quiet hours with a `defer` campaign (or a direct `send_at_local` push whose endpoint moved to a
    /// zone where the local time is still ahead): a target, counted `deferred`, handed to the retry queue
    /// due at the end of the quiet hours (or at that local time) with no attempt used (the retry worker sends it as attempt 1 and counts
    /// its outcome then; a TTL ending before that expires it).
    mutating func recordDeferred(_ facts: DeliveryFacts, until: Date, reason: String) {
        effects.counters.targeted += 1
        effects.counters.deferred += 1
        effects.retries.append(RetrySchedule(endpoint: facts.endpoint, attempt: facts.attempt - 1, notBefore: until,
                                             reason: reason))
    }

    /// A disabled or stale endpoint, not sent. `application`: its application (0 when not known: counted against
    /// none in `application_delivery_counts`).
    mutating func recordSkipped(targeted: Bool, application: Int64) {
        if targeted { effects.counters.targeted += 1 }
        effects.counters.skipped += 1
        count(application, .skipped)
    }

    /// Records one outcome. `targeted`: count the delivery as a target (first attempt from a shard; retries
    /// were counted when first streamed). `sent`: a provider got the push. `providerStatus`: its HTTP status when
    /// it answered (kept in delivery-log rows and on disables, for the warnings).
    @discardableResult
    mutating func record(
        _ outcome: DeliveryOutcome, facts: DeliveryFacts, sent: Bool, targeted: Bool, now: Date, providerStatus: Int? = nil,
        unitRandom: @autoclosure () -> Double
    ) -> Disposition {
        // `unitRandom` is drawn only when a success is sampled or a retry jittered: the system generator is a
        // getrandom(2) call, which per delivery was a visible share of the gateway's CPU.
        if targeted { effects.counters.targeted += 1 }
        let application = facts.application
        if sent {
            effects.counters.sent += 1
            count(application, .sent)
            facts.counters?.sent.increment()
        }
        let dwell = Self.milliseconds(now.timeIntervalSince(facts.publishedAt))
        switch outcome {
        case .accepted:
            if effects.firstAcceptedAt == nil { effects.firstAcceptedAt = now }
            effects.counters.accepted += 1
            count(application, .accepted)
            facts.counters?.accepted.increment()
            sampleSuccess(facts, dwell: dwell, status: providerStatus, unitRandom: unitRandom)
            return .final
        case .tokenReplaced(let newToken, _):
            if effects.firstAcceptedAt == nil { effects.firstAcceptedAt = now }
            effects.counters.accepted += 1
            count(application, .accepted)
            facts.counters?.accepted.increment()
            effects.replace.append(TokenReplacement(endpoint: facts.endpoint, oldToken: facts.token, newToken: newToken))
            sampleSuccess(facts, dwell: dwell, status: providerStatus, unitRandom: unitRandom)
            return .final
        case .expired:
            effects.counters.expired += 1
            count(application, .expired)
            facts.counters?.expired.increment()
            return .final
        case .tokenInvalid(let reason, let at):
            fail(outcome, reason: reason, facts: facts, dwell: dwell, status: providerStatus)
            effects.disable.append(EndpointDisable(endpoint: facts.endpoint, token: facts.token, reason: reason, at: at ?? now,
                                                   providerStatus: providerStatus))
            return .final
        case .credentialsInvalid(let reason):
            fail(outcome, reason: reason, facts: facts, dwell: dwell, status: providerStatus)
            if disabledApplications.insert(facts.application).inserted {
                effects.disableApplications.append(ApplicationDisable(application: facts.application, reason: reason, at: now,
                                                                      providerStatus: providerStatus))
            }
            return .final
        case .messageInvalid(let reason), .rejected(let reason):
            fail(outcome, reason: reason, facts: facts, dwell: dwell, status: providerStatus)
            return .final
        case .retryable(let reason, _), .authTokenExpired(let reason):
            switch policy.next(attempt: facts.attempt, outcome: outcome, now: now, expiresAt: facts.expiresAt,
                               unitRandom: unitRandom()) {
            case .retry(let at):
                effects.counters.retried += 1
                count(application, .retried)
                facts.counters?.retried.increment()
                effects.retries.append(RetrySchedule(endpoint: facts.endpoint, attempt: facts.attempt, notBefore: at, reason: reason))
                return .retry
            case .stop(.expired):
                effects.counters.expired += 1
                count(application, .expired)
                facts.counters?.expired.increment()
                return .final
            case .stop:
                fail(outcome, reason: reason, facts: facts, dwell: dwell, status: providerStatus)
                return .final
            }
        }
    }

    private mutating func fail(_ outcome: DeliveryOutcome, reason: String, facts: DeliveryFacts, dwell: Int, status: Int?) {
        effects.counters.failed += 1
        switch outcome {
        case .tokenInvalid: count(facts.application, .tokenInvalid)
        case .messageInvalid: count(facts.application, .messageInvalid)
        case .credentialsInvalid:
            count(facts.application, .credentialsInvalid)
        case .rejected: count(facts.application, .rejected)
        case .retryable, .authTokenExpired:
            count(facts.application, .retryExhausted)
        case .accepted, .tokenReplaced, .expired: break   // never a failure
        }
        facts.counters?.failed(outcome)
        let key = Self.reasonKey(reason)
        effects.failures[key, default: 0] += 1
        effects.log.append(DeliveryLogEntry(
            endpoint: facts.endpoint, status: "FAILURE", providerStatus: status,
            providerResponse: outcome.label + ": " + String(reason.prefix(500)), attempts: facts.attempt,
            dwellMilliseconds: dwell))
    }

    private mutating func sampleSuccess(_ facts: DeliveryFacts, dwell: Int, status: Int?, unitRandom: () -> Double) {
        guard facts.successSampleRate > 0, unitRandom() * 100 < Double(facts.successSampleRate) else { return }
        effects.log.append(DeliveryLogEntry(
            endpoint: facts.endpoint, status: "SUCCESS", providerStatus: status, providerResponse: nil,
            attempts: facts.attempt, dwellMilliseconds: dwell))
    }

    /// Failure reasons are provider reason codes (a bounded set); anything long is cut so a free-text reason
    /// cannot grow the per-shard table without bound.
    static func reasonKey(_ reason: String) -> String {
        reason.count <= 80 ? reason : String(reason.prefix(80))
    }

    static func milliseconds(_ interval: TimeInterval) -> Int {
        Int(max(0, min(interval * 1000, Double(Int32.max))))
    }
}
