import ClarionCore
@testable import ClarionDispatch
import ClarionEmulator
import ClarionProviders
import ClarionStore
import ClarionTestSupport
import Foundation
import Testing

/// Exact per-application delivery counts (issue 17, schema v23): what the console's "last hour" reads. The delivery
/// log keeps successes only at the application's SuccessFeedbackSampleRate (SNS's attribute: the percentage of
/// successful deliveries logged, docs/providers.md), so at 0 it holds no success at all; the counts the checkpoints
/// add to `application_delivery_counts` must still be exact, through the shard, direct-batch and retry checkpoints,
/// with one dispatcher or two on the same database.
@Suite("Per-application delivery counts", .serialized)
struct ApplicationCountsTests {
    typealias Harness = EmulatorFanOutTests.Harness

    /// The FCM application under test (SuccessFeedbackSampleRate 0) and a second one whose counts must not mix in.
    static func fixture(_ harness: Harness) throws -> FanOutFixture {
        var fixture = try FanOutFixture()
        let endpoint = harness.emulator.baseURL
        try fixture.addApplication("android", platform: "GCM", attributes: """
            {"ProviderEndpoint":"\(endpoint)","SuccessFeedbackSampleRate":"0"}
            """)
        try fixture.addApplication("other", platform: "GCM", attributes: """
            {"ProviderEndpoint":"\(endpoint)","SuccessFeedbackSampleRate":"100"}
            """)
        return fixture
    }

    static func counts(_ fixture: FanOutFixture, _ application: String) async throws -> ApplicationDeliveryWindow {
        try await ConsoleRepository(pool: fixture.pool).deliveryCounts(applicationKey: fixture.applications[application]!)
    }

    @Test("SuccessFeedbackSampleRate 0: sends and every outcome class counted exactly per application (topic, direct, retries)")
    func exactAtSampleRateZero() async throws {
        let harness = try Harness()
        let fixture = try Self.fixture(harness)
        let good = 1_200, unregistered = 40, internalErrors = 7, disabled = 5, direct = 60
        try fixture.addEndpoints("android", prefix: "fcm-token-", count: good)
        // Emulator rules (EmulatorTokenRule.defaults): FCM `unregistered-` is 404 UNREGISTERED (the token is dead:
        // providers.md B.4), `internal-` is 500 INTERNAL (retry with backoff, B.4) on every attempt.
        try fixture.addEndpoints("android", prefix: "unregistered-", count: unregistered)
        try fixture.addEndpoints("android", prefix: "internal-", count: internalErrors)
        try fixture.addEndpoints("android", prefix: "off-", count: disabled)
        try fixture.addEndpoints("android", prefix: "direct-", count: direct, subscribe: false)
        try fixture.addEndpoints("other", prefix: "other-", count: 25)
        try fixture.connection().query("UPDATE endpoints SET enabled = false WHERE token LIKE 'off-%'")

        let attempts = 4
        let dispatcher = RunningDispatcher(Dispatcher(
            pool: fixture.pool, directory: harness.directory(fixture),
            configuration: testConfiguration(owner: "node-a", shardSize: 400,
                                             retry: RetryPolicy(maxAttempts: attempts, baseDelay: 0.05, maxDelay: 0.2, jitter: 0.5))))
        let topic = try fixture.publishToTopic()
        let directs = try fixture.publishToEndpoints(tokens: (1...direct).map { "direct-\($0)" })
        let statuses = try await fixture.waitForAllFinal([topic] + directs, timeout: 90)
        await dispatcher.stop()
        #expect(statuses.allSatisfy { $0.state.isFinal })

        let window = try await Self.counts(fixture, "android")
        let n = window.counts
        let sends = good + unregistered + attempts * internalErrors + direct
        #expect(n.sent == Int64(sends))
        #expect(n.accepted == Int64(good + direct))
        #expect(n.tokenInvalid == Int64(unregistered))
        #expect(n.retried == Int64((attempts - 1) * internalErrors))
        #expect(n.retryExhausted == Int64(internalErrors))
        #expect(n.skipped == Int64(disabled))
        #expect(n.messageInvalid == 0 && n.credentialsInvalid == 0 && n.rejected == 0 && n.expired == 0)
        #expect(n.failed == Int64(unregistered + internalErrors))
        // Every send ended final or was scheduled again.
        #expect(n.sent == n.accepted + n.tokenInvalid + n.retryExhausted + n.retried)
        #expect(window.now.timeIntervalSince(window.since) > 59 * 60 && window.now.timeIntervalSince(window.since) <= 3600)

        // The log could not have said so: at rate 0 it holds the failures only.
        let log = try await ConsoleRepository(pool: fixture.pool).deliveryLogSummary(
            applicationKey: fixture.applications["android"]!, since: window.since)
        #expect(log.successes == 0)
        #expect(log.failures == Int64(unregistered + internalErrors))

        // The other application's deliveries are its own.
        let other = try await Self.counts(fixture, "other")
        #expect(other.counts.sent == 25 && other.counts.accepted == 25 && other.counts.failed == 0)
        await harness.close()
    }

    @Test("two dispatchers on one database add to the same application rows concurrently: the sums are exact")
    func twoNodes() async throws {
        let harness = try Harness()
        let fixture = try Self.fixture(harness)
        let good = 4_000, unregistered = 100, direct = 200
        try fixture.addEndpoints("android", prefix: "fcm-token-", count: good)
        try fixture.addEndpoints("android", prefix: "unregistered-", count: unregistered)
        try fixture.addEndpoints("android", prefix: "direct-", count: direct, subscribe: false)
        try fixture.addEndpoints("other", prefix: "other-", count: 300)

        // Small shards and frequent checkpoints: many concurrent upserts of the same (application, minute) rows
        // from both nodes' shard workers and direct batches.
        let nodes = ["node-a", "node-b"].map { owner in
            RunningDispatcher(Dispatcher(
                pool: fixture.pool, directory: harness.directory(fixture),
                configuration: testConfiguration(owner: owner, workers: 3, checkpointEvery: 50, shardSize: 250)))
        }
        var messages: [Int64] = []
        for _ in 0..<3 { messages.append(try fixture.publishToTopic()) }
        messages += try fixture.publishToEndpoints(tokens: (1...direct).map { "direct-\($0)" })
        let statuses = try await fixture.waitForAllFinal(messages, timeout: 120)
        for node in nodes { await node.stop() }
        #expect(statuses.allSatisfy { $0.state.isFinal })

        // The counts equal the shards' own counters summed (each checkpoint adds both in one transaction).
        let shards = try fixture.connection().query("""
            SELECT sum(sent), sum(accepted), sum(failed) FROM fanout_shards
            """).first!
        let android = try await Self.counts(fixture, "android").counts
        let other = try await Self.counts(fixture, "other").counts
        // An unregistered token is refused until a checkpoint disables its endpoint; the messages after that skip it.
        #expect(android.tokenInvalid >= Int64(unregistered) && android.tokenInvalid + android.skipped == Int64(3 * unregistered))
        #expect(android.sent == Int64(3 * good + direct) + android.tokenInvalid)
        #expect(android.accepted == Int64(3 * good + direct))
        #expect(other.sent == 900 && other.accepted == 900)
        #expect(shards.int64(0) == android.sent + other.sent)
        #expect(shards.int64(1) == android.accepted + other.accepted)
        #expect(shards.int64(2) == android.failed + other.failed)
        await harness.close()
    }
}
