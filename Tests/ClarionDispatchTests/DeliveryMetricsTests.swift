import ClarionCore
@testable import ClarionDispatch
import ClarionMetrics
import Foundation
import Testing

/// `clarion_deliveries_total` and its siblings as `DeliveryAccounting` feeds them: each delivery is counted once,
/// at its final outcome, under its class; a retry counts as a retry, not an outcome.
@Suite("Delivery metrics")
struct DeliveryMetricsTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    static func facts(_ counters: ApplicationDeliveryCounters, attempt: Int = 1, expiresIn: Double = 3_600) -> DeliveryFacts {
        DeliveryFacts(endpoint: 7, application: 3, token: "tok", attempt: attempt, expiresAt: now.addingTimeInterval(expiresIn),
                      publishedAt: now.addingTimeInterval(-2), successSampleRate: 0, counters: counters)
    }

    @Test("every outcome class counts once under its own label; retries and sends count apart")
    func outcomeClasses() async {
        let registry = MetricsRegistry()
        let metrics = DeliveryMetrics(registry: registry)
        let counters = metrics.counters(platform: "GCM", application: "shop")
        #expect(metrics.counters(platform: "GCM", application: "shop") === counters, "one set of counters per application")
        var accounting = DeliveryAccounting(policy: RetryPolicy(maxAttempts: 3, baseDelay: 1, maxDelay: 60, jitter: 0))
        let outcomes: [DeliveryOutcome] = [
            .accepted(providerID: nil), .accepted(providerID: "x"), .tokenReplaced(newToken: "new", providerID: nil),
            .tokenInvalid(reason: "Unregistered", invalidSince: nil), .messageInvalid(reason: "TooBig"),
            .credentialsInvalid(reason: "BadKey"), .rejected(reason: "Nope"), .expired,
        ]
        for outcome in outcomes {
            accounting.record(outcome, facts: Self.facts(counters), sent: true, targeted: true, now: Self.now, unitRandom: 0.5)
        }
        // A retryable answer on attempt 1 is a retry; on the last attempt it is a final `retryable` failure;
        // past the TTL it is `expired`.
        let busy = DeliveryOutcome.retryable(reason: "Unavailable", retryAfter: nil)
        #expect(accounting.record(busy, facts: Self.facts(counters), sent: true, targeted: true, now: Self.now, unitRandom: 0.5) == .retry)
        accounting.record(busy, facts: Self.facts(counters, attempt: 3), sent: true, targeted: false, now: Self.now, unitRandom: 0.5)
        accounting.record(busy, facts: Self.facts(counters, expiresIn: 0.5), sent: true, targeted: true, now: Self.now, unitRandom: 0.5)
        counters.skipped(stale: true)
        counters.skipped(stale: false)
        counters.skipped(stale: false)

        let text = await registry.exposition()
        func count(_ outcome: String) -> String? {
            text.split(separator: "\n").first { $0.hasPrefix("clarion_deliveries_total{") && $0.contains("outcome=\"\(outcome)\"") }
                .map { String($0.split(separator: " ").last!) }
        }
        #expect(count("accepted") == "3")
        #expect(count("token_invalid") == "1")
        #expect(count("message_invalid") == "1")
        #expect(count("credentials_invalid") == "1")
        #expect(count("rejected") == "1")
        #expect(count("expired") == "2")
        #expect(count("retryable") == "1")
        #expect(count("skipped_stale") == "1")
        #expect(count("skipped_disabled") == "2")
        #expect(count("filtered") == "0")
        #expect(text.contains("clarion_deliveries_sent_total{platform=\"GCM\",application=\"shop\"} 11\n"))
        #expect(text.contains("clarion_delivery_retries_total{platform=\"GCM\",application=\"shop\"} 1\n"))
    }

    @Test("without counters (metrics off) accounting is unchanged and counts nothing")
    func metricsOff() {
        var accounting = DeliveryAccounting(policy: .standard)
        let facts = DeliveryFacts(endpoint: 7, application: 3, token: "tok", attempt: 1, expiresAt: nil,
                                  publishedAt: Self.now, successSampleRate: 0)
        accounting.record(.accepted(providerID: nil), facts: facts, sent: true, targeted: true, now: Self.now, unitRandom: 0.5)
        #expect(accounting.take().counters.accepted == 1)
    }
}
