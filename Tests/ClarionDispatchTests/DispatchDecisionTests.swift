import ClarionCore
@testable import ClarionDispatch
import ClarionStore
import Foundation
import Testing

/// The pure parts: the checkpoint window, outcome accounting and retry decisions, final states, attribute forms.
@Suite("Dispatch decisions (pure)")
struct DispatchDecisionTests {
    @Test("the window pops only the completed prefix, in key order; a second or unknown completion is ignored")
    func windowPrefix() {
        var window = DeliveryWindow<Int64>()
        let seqs = (1...5).map { window.append(Int64($0 * 10)) }
        #expect(window.count == 5)
        do { let done = window.complete(seqs[1], .accepted(providerID: nil), sent: true); #expect(done) }
        do { let done = window.complete(seqs[3], .accepted(providerID: nil), sent: true); #expect(done) }
        var popped: [Int64] = []
        window.popCompleted { key, _, _, _ in popped.append(key) }
        #expect(popped.isEmpty)
        do { let done = window.complete(seqs[0], .expired, sent: false); #expect(done) }
        window.popCompleted { key, _, _, _ in popped.append(key) }
        #expect(popped == [10, 20])
        do { let done = window.complete(seqs[1], .accepted(providerID: nil), sent: true); #expect(!done) }  // already popped
        do { let done = window.complete(seqs[3], .expired, sent: false); #expect(!done) }  // second outcome
        do { let done = window.complete(99, .expired, sent: false); #expect(!done) }
        do { let done = window.complete(seqs[2], .accepted(providerID: nil), sent: true); #expect(done) }
        do { let done = window.complete(seqs[4], .accepted(providerID: nil), sent: true); #expect(done) }
        window.popCompleted { key, _, _, _ in popped.append(key) }
        #expect(popped == [10, 20, 30, 40, 50])
        #expect(window.isEmpty)
        #expect(window.pendingCount == 0)
        // Sequence numbers keep growing after the buffer is emptied.
        let next = window.append(60)
        #expect(next == 5)
        #expect(window.entry(5) == 60)
    }

    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    static func facts(attempt: Int = 1, expiresIn: Double? = 3_600, rate: Int = 0) -> DeliveryFacts {
        DeliveryFacts(endpoint: 7, application: 3, token: "tok", attempt: attempt,
                      expiresAt: expiresIn.map { now.addingTimeInterval($0) }, publishedAt: now.addingTimeInterval(-2),
                      successSampleRate: rate)
    }

    @Test("a retryable outcome is rescheduled no earlier than Retry-After, and expires rather than retry past the TTL")
    func retryDecisions() {
        var accounting = DeliveryAccounting(policy: RetryPolicy(maxAttempts: 3, baseDelay: 1, maxDelay: 60, jitter: 0.5))
        let busy = DeliveryOutcome.retryable(reason: "TooManyRequests", retryAfter: 10)
        let d1 = accounting.record(busy, facts: Self.facts(), sent: true, targeted: true, now: Self.now, unitRandom: 0.3)
        #expect(d1 == .retry)
        let d2 = accounting.record(busy, facts: Self.facts(expiresIn: 5), sent: true, targeted: true, now: Self.now, unitRandom: 0.3)
        #expect(d2 == .final)
        let d3 = accounting.record(busy, facts: Self.facts(attempt: 3), sent: true, targeted: true, now: Self.now, unitRandom: 0.3)
        #expect(d3 == .final)
        let effects = accounting.take()
        #expect(effects.retries.count == 1)
        #expect(effects.retries[0].notBefore >= Self.now.addingTimeInterval(10))
        #expect(effects.retries[0].attempt == 1)
        #expect(effects.counters == DeliveryCounters(targeted: 3, sent: 3, accepted: 0, failed: 1, retried: 1, skipped: 0, expired: 1))
        #expect(effects.failures == ["TooManyRequests": 1])
        #expect(effects.log.count == 1 && effects.log[0].attempts == 3)
        // The same outcomes by application class (schema v23): retried, expired, and given up after the last attempt.
        var counts = ApplicationOutcomeCounts()
        (counts.sent, counts.retried, counts.expired, counts.retryExhausted) = (3, 1, 1, 1)
        #expect(effects.applications == [3: counts])
        let rest = accounting.take()
        #expect(rest.isEmpty)
    }

    @Test("every outcome class is counted per application, and not at all when application counts are off")
    func applicationCounts() {
        func run(_ counting: Bool) -> [Int64: ApplicationOutcomeCounts] {
            var accounting = DeliveryAccounting(policy: .standard, countsApplications: counting)
            let outcomes: [DeliveryOutcome] = [
                .accepted(providerID: nil), .tokenReplaced(newToken: "new", providerID: nil),
                .tokenInvalid(reason: "Unregistered", invalidSince: nil), .messageInvalid(reason: "PayloadTooLarge"),
                .credentialsInvalid(reason: "InvalidProviderToken"), .rejected(reason: "Forbidden"), .expired,
            ]
            for outcome in outcomes {
                accounting.record(outcome, facts: Self.facts(), sent: outcome != .expired, targeted: true, now: Self.now,
                                  unitRandom: 0)
            }
            accounting.recordSkipped(targeted: true, application: 3)
            accounting.recordFiltered(application: 4)
            accounting.recordHeldOut(application: 4)
            return accounting.take().applications
        }
        var three = ApplicationOutcomeCounts()
        (three.sent, three.accepted, three.tokenInvalid, three.messageInvalid) = (6, 2, 1, 1)
        (three.credentialsInvalid, three.rejected, three.expired, three.skipped) = (1, 1, 1, 1)
        var four = ApplicationOutcomeCounts()
        (four.filtered, four.heldOut) = (1, 1)
        #expect(run(true) == [3: three, 4: four])
        #expect(three.failed == 4)
        #expect(run(false).isEmpty)
    }

    @Test("token-invalid disables the endpoint with the provider's time; credentials disable the application once")
    func endpointAndApplicationActions() {
        var accounting = DeliveryAccounting(policy: .standard)
        let since = Self.now.addingTimeInterval(-86_400)
        accounting.record(.tokenInvalid(reason: "Unregistered", invalidSince: since), facts: Self.facts(), sent: true,
                          targeted: true, now: Self.now, unitRandom: 0)
        accounting.record(.tokenInvalid(reason: "BadDeviceToken", invalidSince: nil), facts: Self.facts(), sent: true,
                          targeted: true, now: Self.now, providerStatus: 400, unitRandom: 0)
        for _ in 0..<3 {
            accounting.record(.credentialsInvalid(reason: "InvalidProviderToken"), facts: Self.facts(), sent: true,
                              targeted: true, now: Self.now, unitRandom: 0)
        }
        accounting.record(.tokenReplaced(newToken: "fresh", providerID: nil), facts: Self.facts(), sent: true,
                          targeted: true, now: Self.now, unitRandom: 0)
        let effects = accounting.take()
        #expect(effects.disable.map(\.at) == [since, Self.now])
        #expect(effects.disable.map(\.reason) == ["Unregistered", "BadDeviceToken"])
        #expect(effects.disable.allSatisfy { $0.token == "tok" && $0.endpoint == 7 })
        // The provider's status, when it answered, stays with the disable and the delivery-log row.
        #expect(effects.disable.map(\.providerStatus) == [nil, 400])
        #expect(effects.log.map(\.providerStatus).contains(400))
        #expect(effects.disableApplications == [ApplicationDisable(application: 3, reason: "InvalidProviderToken", at: Self.now)])
        #expect(effects.replace == [TokenReplacement(endpoint: 7, oldToken: "tok", newToken: "fresh")])
        #expect(effects.counters.failed == 5)
        #expect(effects.counters.accepted == 1)
        #expect(effects.failures == ["Unregistered": 1, "BadDeviceToken": 1, "InvalidProviderToken": 3])
    }

    @Test("successes are logged at the application's sample rate; failures always")
    func sampling() {
        var accounting = DeliveryAccounting(policy: .standard)
        for i in 0..<100 {
            accounting.record(.accepted(providerID: nil), facts: Self.facts(rate: 25), sent: true, targeted: true,
                              now: Self.now, unitRandom: Double(i) / 100)
        }
        accounting.record(.accepted(providerID: nil), facts: Self.facts(rate: 0), sent: true, targeted: true,
                          now: Self.now, unitRandom: 0)
        let effects = accounting.take()
        #expect(effects.log.count == 25)
        #expect(effects.log.allSatisfy { $0.status == "SUCCESS" && $0.dwellMilliseconds == 2_000 })
    }

    @Test("a worker that read its shard to the end gives its slot back, up to the draining limit, and ends once")
    func drainingSlots() {
        var slots = WorkerSlots()
        slots.general = 2
        let first = slots.startDraining(express: false, limit: 1)
        #expect(first)
        #expect(slots.general == 1 && slots.generalDraining == 1)
        // The draining set is full: the second worker keeps its slot until it finishes.
        let second = slots.startDraining(express: false, limit: 1)
        #expect(!second)
        #expect(slots.general == 1 && slots.generalDraining == 1)
        slots.end(express: false, draining: true)
        slots.end(express: false, draining: false)
        #expect(slots.general == 0 && slots.generalDraining == 0)
        slots.express = 1
        let express = slots.startDraining(express: true, limit: 0)
        #expect(!express)
        slots.end(express: true, draining: false)
        #expect(slots.express == 0 && slots.expressDraining == 0)
    }

    @Test("the final state follows the counters")
    func finalStates() {
        #expect(MessageState.final(for: DeliveryCounters(accepted: 1, failed: 9)) == .completed)
        #expect(MessageState.final(for: DeliveryCounters(failed: 2, expired: 3)) == .failed)
        #expect(MessageState.final(for: DeliveryCounters(expired: 3)) == .expired)
        #expect(MessageState.final(for: DeliveryCounters(skipped: 3)) == .completed)
        #expect(MessageState.final(for: DeliveryCounters()) == .completed)
    }

    @Test("message attributes are read in SNS's DataType/StringValue form, the Type/Value form and plain strings")
    func attributeForms() throws {
        let parsed = MessageContent.attributes(json: """
            {"AWS.SNS.MOBILE.APNS.TTL": {"DataType": "Number", "StringValue": "60"},
             "AWS.SNS.MOBILE.FCM.TTL": {"Type": "String", "Value": "30"},
             "AWS.SNS.MOBILE.APNS.PRIORITY": "5"}
            """)
        let attributes = try MobilePushAttributes.parse(parsed)
        #expect(attributes.ttl[.apns] == 60)
        #expect(attributes.ttl[.gcm] == 30)
        #expect(attributes.apnsPriority == 5)
        #expect(MessageContent.attributes(json: "not json").isEmpty)
    }

    @Test("a wake-up raised while nobody waits is kept for the next wait; otherwise the wait times out")
    func wakeSignal() async {
        let signal = WakeSignal()
        signal.raise()
        #expect(await signal.wait(timeout: 5))
        #expect(await signal.wait(timeout: 0.01) == false)
    }
}

/// `checkpointRetryDelay`: a checkpoint holding sent deliveries is not given up during a short database outage.
@Suite("Checkpoint retries (pure)")
struct CheckpointRetryTests {
    let configuration = DispatcherConfiguration(leaseDuration: 30)

    @Test("a transient store error is retried 0.2 s, 0.4 s ... at most 1 s apart while the lease keeps a sixth of its duration")
    func transientWhileLeaseHolds() {
        let down = StoreError(.unavailable, "cannot connect to PostgreSQL")
        let delays = (1...6).map { configuration.checkpointRetryDelay(after: down, attempt: $0, leaseHeldFor: 1, stopping: false) }
        #expect(delays == [0.2, 0.4, 0.6, 0.8, 1.0, 1.0])
        #expect(configuration.checkpointRetryDelay(after: down, attempt: 20, leaseHeldFor: 23.9, stopping: false) == 1.0)
        #expect(configuration.checkpointRetryDelay(after: down, attempt: 20, leaseHeldFor: 24.5, stopping: false) == nil)
        let full = StoreError(.insufficientResources, "No space left on device", sqlState: "53100")
        #expect(configuration.checkpointRetryDelay(after: full, attempt: 9, leaseHeldFor: 10, stopping: false) == 1.0)
    }

    @Test("other errors, and any error while stopping, get three attempts")
    func threeAttempts() {
        let other = StoreError(.queryFailed, "syntax error")
        #expect(configuration.checkpointRetryDelay(after: other, attempt: 1, leaseHeldFor: 0, stopping: false) == 0.2)
        #expect(configuration.checkpointRetryDelay(after: other, attempt: 2, leaseHeldFor: 0, stopping: false) == 0.4)
        #expect(configuration.checkpointRetryDelay(after: other, attempt: 3, leaseHeldFor: 0, stopping: false) == nil)
        let down = StoreError(.connectionLost, "server closed the connection")
        #expect(configuration.checkpointRetryDelay(after: down, attempt: 3, leaseHeldFor: 0, stopping: true) == nil)
    }
}
