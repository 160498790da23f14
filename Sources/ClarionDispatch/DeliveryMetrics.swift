import ClarionCore
import ClarionMetrics
import ClarionStore
import Foundation
import Synchronization

/// The dispatcher's delivery counters, per platform and application (its name: a bounded set an operator chose,
/// never an endpoint, token or message id).
///
/// `clarion_deliveries_total{platform,application,outcome}` counts each delivery once, at its final outcome:
/// `accepted`, failures by class (`token_invalid`, `message_invalid`, `credentials_invalid`, `retryable` when the
/// retries ran out, `rejected`), `expired`, `skipped_stale` and `skipped_disabled` (endpoints not sent to), and
/// `filtered` (a subscription's filter policy did not match the message), `capped` (over the mobile app's frequency
/// cap) and `quiet_skipped` (dropped by its quiet hours); a delivery quiet hours defer is counted at its outcome when
/// it is sent. `clarion_deliveries_sent_total` counts pushes handed to a provider (every attempt), and
/// `clarion_delivery_retries_total` each retry scheduled.
///
/// The counters of one application are resolved once per lane (`counters(platform:application:)`, under a lock);
/// the delivery path then only adds to atomics.
public final class DeliveryMetrics: Sendable {
    public static let outcomes = ["accepted", "token_invalid", "message_invalid", "credentials_invalid", "retryable",
                                  "rejected", "expired", "skipped_stale", "skipped_disabled", "filtered", "capped", "quiet_skipped"]

    let deliveries: CounterFamily
    let sent: CounterFamily
    let retried: CounterFamily
    /// Publish to completion per target kind, observed by the worker whose committed checkpoint finished the message.
    private let completion: [MessageJob.TargetKind: Histogram]
    /// Publish to the first provider acceptance per target kind, observed by the worker whose committed checkpoint
    /// recorded it.
    private let firstDelivery: [String: Histogram]
    private let cache = Mutex<[String: ApplicationDeliveryCounters]>([:])

    public init(registry: MetricsRegistry) {
        deliveries = registry.counter(
            "clarion_deliveries_total", help: "Deliveries by final outcome class, per platform and platform application name.",
            labels: ["platform", "application", "outcome"])
        sent = registry.counter(
            "clarion_deliveries_sent_total", help: "Pushes handed to a provider (each attempt), per platform and application.",
            labels: ["platform", "application"])
        retried = registry.counter(
            "clarion_delivery_retries_total", help: "Retries scheduled after a retryable outcome, per platform and application.",
            labels: ["platform", "application"])
        let completionFamily = registry.histogram(
            "clarion_message_completion_seconds",
            help: "Seconds from a message's publish to its final state (Completed, Failed or Expired), per target kind.",
            labels: ["target_kind"], buckets: MetricBuckets.completionSeconds)
        let firstDeliveryFamily = registry.histogram(
            "clarion_message_first_delivery_seconds",
            help: "Seconds from a message's publish to its first delivery a provider accepted, per target kind.",
            labels: ["target_kind"], buckets: MetricBuckets.completionSeconds)
        var completion: [MessageJob.TargetKind: Histogram] = [:]
        var firstDelivery: [String: Histogram] = [:]
        for kind in [MessageJob.TargetKind.endpoint, .topic, .user, .audience] {
            completion[kind] = completionFamily.labels(kind.rawValue)
            firstDelivery[kind.rawValue] = firstDeliveryFamily.labels(kind.rawValue)
        }
        self.completion = completion
        self.firstDelivery = firstDelivery
    }

    /// First deliveries a committed checkpoint recorded (each message's once, on whichever node).
    func observe(_ firsts: [FirstDelivery]) {
        for first in firsts { firstDelivery[first.targetKind]?.observe(first.seconds) }
    }

    /// A message reached its final state in a checkpoint that committed (so it is observed once: exactly one
    /// checkpoint finishes a message).
    func messageFinished(_ kind: MessageJob.TargetKind, publishedAt: Date, now: Date) {
        completion[kind]?.observe(max(0, now.timeIntervalSince(publishedAt)))
    }

    /// The counters of one application; the first call for a pair makes every outcome's child (so a scrape shows
    /// zeros, and rates start from the first delivery).
    public func counters(platform: String, application: String) -> ApplicationDeliveryCounters {
        let key = platform + "\u{0}" + application
        if let known = cache.withLock({ $0[key] }) { return known }
        let made = ApplicationDeliveryCounters(metrics: self, platform: platform, application: application)
        return cache.withLock { cache in
            if let known = cache[key] { return known }
            cache[key] = made
            return made
        }
    }
}

/// One application's delivery counters, resolved once; every update is one relaxed atomic add.
public final class ApplicationDeliveryCounters: Sendable, Hashable {
    let sent: Counter
    let retried: Counter
    let accepted: Counter
    let tokenInvalid: Counter
    let messageInvalid: Counter
    let credentialsInvalid: Counter
    let retryable: Counter
    let rejected: Counter
    let expired: Counter
    let skippedStale: Counter
    let skippedDisabled: Counter
    /// A subscriber whose filter policy does not match the message (not sent, not a failure).
    public let filtered: Counter
    /// Over the mobile app's frequency cap; dropped by its quiet hours (schema v22).
    let capped: Counter
    let quietSkipped: Counter

    init(metrics: DeliveryMetrics, platform: String, application: String) {
        func outcome(_ name: String) -> Counter { metrics.deliveries.labels(platform, application, name) }
        sent = metrics.sent.labels(platform, application)
        retried = metrics.retried.labels(platform, application)
        accepted = outcome("accepted")
        tokenInvalid = outcome("token_invalid")
        messageInvalid = outcome("message_invalid")
        credentialsInvalid = outcome("credentials_invalid")
        retryable = outcome("retryable")
        rejected = outcome("rejected")
        expired = outcome("expired")
        skippedStale = outcome("skipped_stale")
        skippedDisabled = outcome("skipped_disabled")
        filtered = outcome("filtered")
        capped = outcome("capped")
        quietSkipped = outcome("quiet_skipped")
    }

    /// A final failure, by class.
    func failed(_ outcome: DeliveryOutcome) {
        switch outcome {
        case .tokenInvalid: tokenInvalid.increment()
        case .messageInvalid: messageInvalid.increment()
        case .credentialsInvalid: credentialsInvalid.increment()
        case .retryable, .authTokenExpired: retryable.increment()
        case .rejected: rejected.increment()
        case .expired: expired.increment()
        case .accepted, .tokenReplaced: accepted.increment()
        }
    }

    /// An endpoint not sent to: its token is stale, or the endpoint is disabled.
    func skipped(stale: Bool) {
        (stale ? skippedStale : skippedDisabled).increment()
    }

    public static func == (a: ApplicationDeliveryCounters, b: ApplicationDeliveryCounters) -> Bool { a === b }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
