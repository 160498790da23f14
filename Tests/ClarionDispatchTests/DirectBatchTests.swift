import ClarionCore
@testable import ClarionDispatch
import ClarionStore
import ClarionTestSupport
import Foundation
import Synchronization
import Testing

/// Direct messages claimed and worked in batches (`FanOutJobs.claimDirect`, `DirectBatchWorker`) against real
/// PostgreSQL, with `RecordingTransport` standing in for the provider pools.
@Suite("Direct batches", .serialized)
struct DirectBatchTests {
    func configuration(owner: String, batch: Int = 64, lease: Double = 5) -> DispatcherConfiguration {
        var configuration = testConfiguration(owner: owner, lease: lease)
        configuration.directBatchSize = batch
        configuration.directWorkers = 2
        return configuration
    }

    /// Every direct shard held at most once at a time (by the observer's intervals).
    func noOverlap(_ log: ShardLog) -> Bool {
        let byShard = Dictionary(grouping: log.all, by: \.shard)
        for intervals in byShard.values {
            let sorted = intervals.sorted { $0.start < $1.start }
            for (a, b) in zip(sorted, sorted.dropFirst()) where (a.end ?? .distantFuture) > b.start { return false }
        }
        return true
    }

    @Test("a batch claim of many direct messages: each delivered once, each message Completed with its counters")
    func manyDirectMessagesOnce() async throws {
        var fixture = try FanOutFixture()
        defer { fixture.pool.shutdown() }
        try fixture.addApplication("ios", platform: "APNS")
        try fixture.addApplication("android", platform: "GCM", attributes: #"{"SuccessFeedbackSampleRate": "100"}"#)
        try fixture.addEndpoints("ios", prefix: "d-ios-", count: 150, subscribe: false)
        try fixture.addEndpoints("android", prefix: "d-and-", count: 150, subscribe: false)
        let transports = ["ios": RecordingTransport(), "android": RecordingTransport()]
        let log = ShardLog()
        let tokens = (1...150).flatMap { ["d-ios-\($0)", "d-and-\($0)"] }
        let messages = try fixture.publishToEndpoints(tokens: tokens)
        #expect(messages.count == 300)
        let dispatcher = RunningDispatcher(Dispatcher(
            pool: fixture.pool, directory: TestDirectory(transports: transports),
            configuration: configuration(owner: "node-a"), observer: log))
        let statuses = try await fixture.waitForAllFinal(messages)
        await dispatcher.stop()

        #expect(statuses.allSatisfy { $0.state == .completed })
        #expect(statuses.allSatisfy { $0.counters == DeliveryCounters(targeted: 1, sent: 1, accepted: 1) })
        #expect(statuses.allSatisfy { $0.shards == 1 && $0.shardsDone == 1 && $0.completedAt != nil })
        var counts = transports["ios"]!.counts
        counts.merge(transports["android"]!.counts) { $0 + $1 }
        #expect(counts.count == 300 && counts.values.allSatisfy { $0 == 1 })
        // Claimed in batches: far fewer claim statements than messages is not observable here, but every shard was
        // claimed once and finished once.
        #expect(log.all.count == 300 && log.all.allSatisfy { $0.exit == .finished })
        let c = try fixture.connection()
        #expect(try c.query("SELECT count(*) FROM fanout_shards WHERE state = 'done' AND claims = 1").first!.int64(0) == 300)
        // The sampled successes of the 100% application are in the delivery log, each under its own message.
        #expect(try c.query("""
            SELECT count(DISTINCT message) FROM delivery_log WHERE status = 'SUCCESS'
            """).first!.int64(0) == 150)
        #expect(try c.query("SELECT count(*) FROM messages WHERE NOT planned").first!.int64(0) == 0)
    }

    @Test("two dispatchers over a few hundred direct messages: no message is delivered twice, none is missed")
    func twoDispatchersNoDuplicates() async throws {
        var fixture = try FanOutFixture()
        defer { fixture.pool.shutdown() }
        try fixture.addApplication("android", platform: "GCM")
        try fixture.addEndpoints("android", prefix: "two-", count: 200, subscribe: false)
        let a = RecordingTransport(latency: 0.005)
        let b = RecordingTransport(latency: 0.005)
        let log = ShardLog()
        // Each endpoint gets two messages, so a message delivered twice would show as a third send to its token.
        let tokens = (1...200).map { "two-\($0)" }
        var messages = try fixture.publishToEndpoints(tokens: tokens)
        let first = RunningDispatcher(Dispatcher(
            pool: fixture.pool, directory: TestDirectory(transports: ["android": a]),
            configuration: configuration(owner: "node-a", batch: 16), observer: log))
        let second = RunningDispatcher(Dispatcher(
            pool: fixture.pool, directory: TestDirectory(transports: ["android": b]),
            configuration: configuration(owner: "node-b", batch: 16), observer: log))
        messages += try fixture.publishToEndpoints(tokens: tokens)
        let statuses = try await fixture.waitForAllFinal(messages)
        await first.stop()
        await second.stop()

        #expect(statuses.allSatisfy { $0.state == .completed && $0.counters.accepted == 1 && $0.counters.sent == 1 })
        var counts = a.counts
        counts.merge(b.counts) { $0 + $1 }
        #expect(counts.count == 200 && counts.values.allSatisfy { $0 == 2 })
        #expect(a.sendCount + b.sendCount == 400)
        #expect(noOverlap(log))
        #expect(Set(log.all.map(\.shard)).count == 400 && log.all.count == 400)
    }

    @Test("a batch whose holder died is claimed again when its leases expire and delivered by another dispatcher")
    func expiredBatchReclaimed() async throws {
        var fixture = try FanOutFixture()
        defer { fixture.pool.shutdown() }
        try fixture.addApplication("android", platform: "GCM")
        try fixture.addEndpoints("android", prefix: "exp-", count: 100, subscribe: false)
        // The first node's provider never answers in time: it holds the batch until it "crashes".
        let silent = RecordingTransport(latency: 3_600)
        let first = RunningDispatcher(Dispatcher(
            pool: fixture.pool, directory: TestDirectory(transports: ["android": silent]),
            configuration: configuration(owner: "node-a", batch: 256, lease: 1)))
        let messages = try fixture.publishToEndpoints(tokens: (1...100).map { "exp-\($0)" })
        while silent.sendCount < 100 { try await Task.sleep(for: .milliseconds(5)) }
        await first.crash()
        let c = try fixture.connection()
        #expect(try c.query("SELECT count(*) FROM fanout_shards WHERE state = 'leased' AND lease_owner = 'node-a'")
            .first!.int64(0) == 100)

        let b = RecordingTransport()
        let log = ShardLog()
        let second = RunningDispatcher(Dispatcher(
            pool: fixture.pool, directory: TestDirectory(transports: ["android": b]),
            configuration: configuration(owner: "node-b", batch: 256), observer: log))
        let statuses = try await fixture.waitForAllFinal(messages)
        await second.stop()
        #expect(statuses.allSatisfy { $0.state == .completed && $0.counters == DeliveryCounters(targeted: 1, sent: 1, accepted: 1) })
        #expect(b.counts.count == 100 && b.counts.values.allSatisfy { $0 == 1 })
        // Taken over through the same shards (a second claim each), not made again.
        #expect(try c.query("SELECT count(*), min(claims), max(claims) FROM fanout_shards").first.map {
            [$0.int64(0), $0.int64(1), $0.int64(2)] } == [100, 2, 2])
        #expect(log.all.count == 100 && log.all.allSatisfy { $0.exit == .finished })
    }

    @Test("shutdown hands back what has no outcome yet; the next node delivers it, what finished is not sent again")
    func shutdownReleasesBatch() async throws {
        var fixture = try FanOutFixture()
        defer { fixture.pool.shutdown() }
        try fixture.addApplication("fast", platform: "GCM")
        try fixture.addApplication("slow", platform: "GCM")
        try fixture.addEndpoints("fast", prefix: "ok-", count: 40, subscribe: false)
        try fixture.addEndpoints("slow", prefix: "held-", count: 10, subscribe: false)
        // The first node's "slow" provider answers only after the shutdown grace.
        let fast = RecordingTransport()
        let slow = RecordingTransport(latency: 3_600)
        var configurationA = configuration(owner: "node-a", batch: 256)
        configurationA.shutdownGrace = 0.3
        let first = RunningDispatcher(Dispatcher(
            pool: fixture.pool, directory: TestDirectory(transports: ["fast": fast, "slow": slow]), configuration: configurationA))
        let messages = try fixture.publishToEndpoints(tokens: (1...40).map { "ok-\($0)" } + (1...10).map { "held-\($0)" })
        while fast.sendCount + slow.sendCount < 50 { try await Task.sleep(for: .milliseconds(5)) }
        _ = try await fixture.waitForAllFinal(Array(messages.prefix(40)))
        await first.stop()
        let c = try fixture.connection()
        let shards = try c.query("""
            SELECT count(*) FILTER (WHERE state = 'ready' AND lease_owner IS NULL), count(*) FILTER (WHERE state = 'done')
            FROM fanout_shards
            """).first!
        #expect(shards.int64(0) == 10 && shards.int64(1) == 40)
        #expect(try await fixture.status(messages[40]).state == .processing)

        let b = ["fast": RecordingTransport(), "slow": RecordingTransport()]
        let second = RunningDispatcher(Dispatcher(
            pool: fixture.pool, directory: TestDirectory(transports: b), configuration: configuration(owner: "node-b")))
        let statuses = try await fixture.waitForAllFinal(messages)
        await second.stop()
        #expect(statuses.allSatisfy { $0.state == .completed && $0.counters.accepted == 1 && $0.counters.targeted == 1 })
        #expect(fast.counts.count == 40 && fast.counts.values.allSatisfy { $0 == 1 })
        #expect(b["fast"]!.sendCount == 0)
        #expect(b["slow"]!.counts.count == 10 && b["slow"]!.counts.values.allSatisfy { $0 == 1 })
    }

    @Test("topic and direct messages together: every delivery once, both kinds complete; shard workers and the direct lane run side by side")
    func topicAndDirectMix() async throws {
        var fixture = try FanOutFixture()
        defer { fixture.pool.shutdown() }
        try fixture.addApplication("android", platform: "GCM")
        try fixture.addEndpoints("android", prefix: "t-", count: 3_000)
        try fixture.addEndpoints("android", prefix: "m-", count: 200, subscribe: false)
        let transport = RecordingTransport(latency: 0.01)
        let dispatcher = RunningDispatcher(Dispatcher(
            pool: fixture.pool, directory: TestDirectory(transports: ["android": transport]),
            configuration: configuration(owner: "node-a", batch: 32)))
        let before = try fixture.publishToEndpoints(tokens: (1...100).map { "m-\($0)" })
        let topic = try fixture.publishToTopic()
        let after = try fixture.publishToEndpoints(tokens: (101...200).map { "m-\($0)" })
        let directs = try await fixture.waitForAllFinal(before + after)
        let topicStatus = try await fixture.waitForFinal(topic)
        await dispatcher.stop()
        #expect(directs.allSatisfy { $0.state == .completed && $0.counters.accepted == 1 })
        #expect(topicStatus.state == .completed && topicStatus.counters.accepted == 3_000)
        #expect(transport.counts.count == 3_200 && transport.counts.values.allSatisfy { $0 == 1 })
    }

    @Test("invalid-token feedback inside a batch disables only those endpoints, with the reason and an event")
    func invalidTokenInBatch() async throws {
        var fixture = try FanOutFixture()
        defer { fixture.pool.shutdown() }
        try fixture.addApplication("ios", platform: "APNS")
        try fixture.addEndpoints("ios", prefix: "live-", count: 60, subscribe: false)
        try fixture.addEndpoints("ios", prefix: "dead-", count: 4, subscribe: false)
        let transport = RecordingTransport { token, _ in
            token.hasPrefix("dead-") ? .tokenInvalid(reason: "Unregistered", invalidSince: nil) : .accepted(providerID: nil)
        }
        let tokens = (1...60).map { "live-\($0)" } + (1...4).map { "dead-\($0)" }
        let messages = try fixture.publishToEndpoints(tokens: tokens.shuffled())
        let dispatcher = RunningDispatcher(Dispatcher(
            pool: fixture.pool, directory: TestDirectory(transports: ["ios": transport]),
            configuration: configuration(owner: "node-a", batch: 128)))
        let statuses = try await fixture.waitForAllFinal(messages)
        await dispatcher.stop()
        #expect(statuses.filter { $0.state == .completed }.count == 60)
        let failed = statuses.filter { $0.state == .failed }
        #expect(failed.count == 4 && failed.allSatisfy { $0.failuresByReason == ["Unregistered": 1] })
        let c = try fixture.connection()
        let disabled = try c.query("""
            SELECT count(*), count(*) FILTER (WHERE disabled_reason = 'Unregistered' AND disabled_at IS NOT NULL AND token LIKE 'dead-%')
            FROM endpoints WHERE NOT enabled
            """).first!
        #expect(disabled.int64(0) == 4 && disabled.int64(1) == 4)
        #expect(try c.query("""
            SELECT count(*), count(DISTINCT detail->>'message') FROM events WHERE kind = 'EndpointDisabled'
            """).first.map { [$0.int64(0), $0.int64(1)] } == [4, 4])
        #expect(try c.query("SELECT count(*) FROM delivery_log WHERE status = 'FAILURE'").first!.int64(0) == 4)
    }

    @Test("partial failures inside a batch: retryable deliveries come back with backoff, rejected ones fail, the rest complete at once")
    func partialFailuresAndRetries() async throws {
        var fixture = try FanOutFixture()
        defer { fixture.pool.shutdown() }
        try fixture.addApplication("android", platform: "GCM")
        try fixture.addEndpoints("android", prefix: "fine-", count: 50, subscribe: false)
        try fixture.addEndpoints("android", prefix: "flaky-", count: 10, subscribe: false)
        try fixture.addEndpoints("android", prefix: "bad-", count: 5, subscribe: false)
        let transport = RecordingTransport { token, attempt in
            if token.hasPrefix("flaky-") && attempt == 1 { return .retryable(reason: "Unavailable", retryAfter: 0.3) }
            if token.hasPrefix("bad-") { return .rejected(reason: "InvalidParameters") }
            return .accepted(providerID: nil)
        }
        let tokens = (1...50).map { "fine-\($0)" } + (1...10).map { "flaky-\($0)" } + (1...5).map { "bad-\($0)" }
        let messages = try fixture.publishToEndpoints(tokens: tokens.shuffled())
        let dispatcher = RunningDispatcher(Dispatcher(
            pool: fixture.pool, directory: TestDirectory(transports: ["android": transport]),
            configuration: configuration(owner: "node-a", batch: 128)))
        let statuses = try await fixture.waitForAllFinal(messages)
        await dispatcher.stop()
        let c = try fixture.connection()
        func kind(_ status: MessageStatus) throws -> String {
            let token = try c.query("SELECT e.token FROM messages m JOIN endpoints e ON e.id = m.target_id WHERE m.id = $1",
                                    [status.key]).first!.string(0)!
            return String(token.prefix { $0 != "-" })
        }
        for status in statuses {
            switch try kind(status) {
            case "fine":
                #expect(status.state == .completed && status.counters == DeliveryCounters(targeted: 1, sent: 1, accepted: 1))
            case "flaky":
                #expect(status.state == .completed
                        && status.counters == DeliveryCounters(targeted: 1, sent: 2, accepted: 1, retried: 1))
                #expect(status.pendingRetries == 0)
            default:
                #expect(status.state == .failed && status.failuresByReason == ["InvalidParameters": 1])
            }
        }
        // The retries waited at least Retry-After.
        let flaky = transport.sends.filter { $0.token.hasPrefix("flaky-") }
        for token in Set(flaky.map(\.token)) {
            let at = flaky.filter { $0.token == token }.sorted { $0.attempt < $1.attempt }.map(\.at)
            #expect(at.count == 2 && at[1].timeIntervalSince(at[0]) >= 0.29)
        }
        #expect(transport.counts.filter { $0.key.hasPrefix("bad-") }.values.allSatisfy { $0 == 1 })
    }

    @Test("a direct message whose TTL ran out is not sent and ends Expired; a disabled endpoint is skipped")
    func expiredAndSkippedInBatch() async throws {
        var fixture = try FanOutFixture()
        defer { fixture.pool.shutdown() }
        try fixture.addApplication("android", platform: "GCM")
        try fixture.addEndpoints("android", prefix: "x-", count: 3, subscribe: false)
        try fixture.connection().query("UPDATE endpoints SET enabled = false WHERE token = 'x-3'")
        let transport = RecordingTransport()
        let expired = try fixture.publishToEndpoints(tokens: ["x-1"], expiresInSeconds: -1)
        let live = try fixture.publishToEndpoints(tokens: ["x-2", "x-3"])
        let dispatcher = RunningDispatcher(Dispatcher(
            pool: fixture.pool, directory: TestDirectory(transports: ["android": transport]),
            configuration: configuration(owner: "node-a")))
        let statuses = try await fixture.waitForAllFinal(expired + live)
        await dispatcher.stop()
        #expect(statuses[0].state == .expired && statuses[0].counters == DeliveryCounters(targeted: 1, expired: 1))
        #expect(statuses[1].state == .completed && statuses[1].counters.accepted == 1)
        #expect(statuses[2].state == .completed && statuses[2].counters == DeliveryCounters(targeted: 1, skipped: 1))
        #expect(transport.counts == ["x-2": 1])
    }

    @Test("a direct message stored before schema v10 (planned, with a ready shard) is delivered once beside new ones")
    func v9DirectMessage() async throws {
        var fixture = try FanOutFixture()
        defer { fixture.pool.shutdown() }
        try fixture.addApplication("android", platform: "GCM")
        try fixture.addEndpoints("android", prefix: "v9-", count: 3, subscribe: false)
        let c = try fixture.connection()
        let endpoint = try c.query("SELECT id FROM endpoints WHERE token = 'v9-1'").first!.int64(0)!
        let old = try c.query("""
            INSERT INTO messages (external_id, account, target_kind, target_id, message, planned)
            VALUES (gen_random_uuid(), $1, 'endpoint', $2, 'old', true) RETURNING id
            """, [fixture.account, endpoint]).first!.int64(0)!
        try c.query("""
            INSERT INTO fanout_shards (message, lo, hi, checkpoint, planned_targets) VALUES ($1, $2 - 1, $2, $2 - 1, 1)
            """, [old, endpoint])
        let new = try fixture.publishToEndpoints(tokens: ["v9-2", "v9-3"])
        let transport = RecordingTransport()
        let dispatcher = RunningDispatcher(Dispatcher(
            pool: fixture.pool, directory: TestDirectory(transports: ["android": transport]),
            configuration: configuration(owner: "node-a")))
        let statuses = try await fixture.waitForAllFinal([old] + new)
        await dispatcher.stop()
        #expect(statuses.allSatisfy { $0.state == .completed && $0.counters == DeliveryCounters(targeted: 1, sent: 1, accepted: 1) })
        #expect(statuses.allSatisfy { $0.shards == 1 })
        #expect(transport.counts == ["v9-1": 1, "v9-2": 1, "v9-3": 1])
    }

    @Test("with batching off (directBatchSize 0) direct messages go through shard workers, one each, as before")
    func batchingOff() async throws {
        var fixture = try FanOutFixture()
        defer { fixture.pool.shutdown() }
        try fixture.addApplication("android", platform: "GCM")
        try fixture.addEndpoints("android", prefix: "off-", count: 30, subscribe: false)
        let transport = RecordingTransport()
        let log = ShardLog()
        let messages = try fixture.publishToEndpoints(tokens: (1...30).map { "off-\($0)" })
        let dispatcher = RunningDispatcher(Dispatcher(
            pool: fixture.pool, directory: TestDirectory(transports: ["android": transport]),
            configuration: configuration(owner: "node-a", batch: 0), observer: log))
        let statuses = try await fixture.waitForAllFinal(messages)
        await dispatcher.stop()
        #expect(statuses.allSatisfy { $0.state == .completed && $0.counters.accepted == 1 })
        #expect(transport.counts.count == 30 && transport.counts.values.allSatisfy { $0 == 1 })
        #expect(log.all.count == 30 && log.all.allSatisfy { $0.exit == .finished })
        #expect(dispatcher.dispatcher.timings.pagesRead >= 30, "shard workers read a targets page per message")
    }

    @Test("ClarionSendRate holds for direct batches: over the rate, deliveries wait their turn without spinning")
    func sendRateInBatch() async throws {
        var fixture = try FanOutFixture()
        defer { fixture.pool.shutdown() }
        try fixture.addApplication("limited", platform: "GCM", attributes: #"{"ClarionSendRate": "40"}"#)
        try fixture.addEndpoints("limited", prefix: "r-", count: 60, subscribe: false)
        let transport = RecordingTransport()
        let messages = try fixture.publishToEndpoints(tokens: (1...60).map { "r-\($0)" })
        let dispatcher = RunningDispatcher(Dispatcher(
            pool: fixture.pool, directory: TestDirectory(transports: ["limited": transport]),
            configuration: configuration(owner: "node-a", batch: 128)))
        let statuses = try await fixture.waitForAllFinal(messages)
        await dispatcher.stop()
        #expect(statuses.allSatisfy { $0.state == .completed && $0.counters.accepted == 1 })
        let sends = transport.sends.map(\.at).sorted()
        #expect(sends.count == 60)
        #expect(mostWithinOneSecond(sends) <= 40 + 4 + 2)
        #expect(sends.last!.timeIntervalSince(sends.first!) >= (60 - 4) / 40 - 0.1)
        #expect(dispatcher.dispatcher.timings.outcomeWaits < 2_000, "waits: \(dispatcher.dispatcher.timings.outcomeWaits)")
    }
}
