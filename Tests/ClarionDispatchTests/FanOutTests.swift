import ClarionCore
@testable import ClarionDispatch
import ClarionMetrics
import ClarionStore
import ClarionTestSupport
import Foundation
import Synchronization
import Testing

/// The dispatcher against real PostgreSQL, with `RecordingTransport` standing in for the provider pools.
@Suite("Fan-out dispatcher on PostgreSQL", .serialized)
struct FanOutTests {
    @Test("a 10k-endpoint topic across APNs, FCM and ADM arrives exactly once per endpoint; a direct publish too")
    func exactlyOnce() async throws {
        var fixture = try FanOutFixture()
        try fixture.addApplication("ios", platform: "APNS")
        try fixture.addApplication("android", platform: "GCM", attributes: #"{"SuccessFeedbackSampleRate": "100"}"#)
        try fixture.addApplication("kindle", platform: "ADM")
        try fixture.addEndpoints("ios", prefix: "ios-", count: 4_000)
        try fixture.addEndpoints("android", prefix: "and-", count: 5_000)
        try fixture.addEndpoints("kindle", prefix: "adm-", count: 1_000)
        let transports = ["ios": RecordingTransport(), "android": RecordingTransport(), "kindle": RecordingTransport()]
        let dispatcher = RunningDispatcher(Dispatcher(
            pool: fixture.pool, directory: TestDirectory(transports: transports),
            configuration: testConfiguration(owner: "node-a")))
        let message = try fixture.publishToTopic(#"{"default":"hi","GCM":"{\"data\":{\"k\":\"v\"}}"}"#)
        let status = try await fixture.waitForFinal(message)
        let direct = try fixture.publishToEndpoint(token: "ios-17")
        let directStatus = try await fixture.waitForFinal(direct)
        await dispatcher.stop()

        #expect(status.state == .completed)
        #expect(status.shards == 4)
        #expect(status.shardsDone == 4)
        #expect(status.plannedTargets == 10_000)
        #expect(status.counters.targeted == 10_000)
        #expect(status.counters.accepted == 10_000)
        #expect(status.counters.sent == 10_000)
        #expect(status.counters.failed == 0)
        #expect(status.progress == 1)
        #expect(status.startedAt != nil && status.completedAt != nil)
        #expect(directStatus.state == .completed)
        #expect(directStatus.counters.accepted == 1)

        let counts = transports.values.reduce(into: [String: Int]()) { all, t in all.merge(t.counts) { $0 + $1 } }
        #expect(counts.count == 10_000)
        #expect(counts["ios-17"] == 2)  // once for the topic, once direct
        #expect(counts.filter { $0.key != "ios-17" }.values.allSatisfy { $0 == 1 })
        #expect(transports["ios"]!.sendCount == 4_001)
        #expect(transports["android"]!.sendCount == 5_000)
        #expect(transports["kindle"]!.sendCount == 1_000)
        // FCM bodies carry the token in the body; the GCM key's payload was used.
        #expect(transports["android"]!.sends.allSatisfy { $0.bodyBytes > 20 })
        // Sample rate 100 on the FCM app: every success logged; none for the others.
        let logged = try fixture.connection().query(
            "SELECT count(*) FROM delivery_log WHERE message = $1 AND status = 'SUCCESS'", [message]).first!.int64(0)
        #expect(logged == 5_000)
        // Leases are gone.
        let leased = try fixture.connection().query("SELECT count(*) FROM fanout_shards WHERE state <> 'done'").first!.int64(0)
        #expect(leased == 0)
    }

    @Test("two dispatchers on one database never work the same shard at once; each endpoint gets one push")
    func twoDispatchers() async throws {
        var fixture = try FanOutFixture(poolSize: 10)
        try fixture.addApplication("ios", platform: "APNS")
        try fixture.addApplication("android", platform: "GCM")
        try fixture.addEndpoints("ios", prefix: "ios-", count: 3_000)
        try fixture.addEndpoints("android", prefix: "and-", count: 3_000)
        let log = ShardLog()
        let a = ["ios": RecordingTransport(latency: 0.01), "android": RecordingTransport(latency: 0.01)]
        let b = ["ios": RecordingTransport(latency: 0.01), "android": RecordingTransport(latency: 0.01)]
        // Each node its own metrics, as two processes have.
        let registries = [MetricsRegistry(), MetricsRegistry()]
        var configurationA = testConfiguration(owner: "node-a", shardSize: 500)
        configurationA.metrics = DeliveryMetrics(registry: registries[0])
        var configurationB = testConfiguration(owner: "node-b", shardSize: 500)
        configurationB.metrics = DeliveryMetrics(registry: registries[1])
        let first = RunningDispatcher(Dispatcher(
            pool: fixture.pool, directory: TestDirectory(transports: a), configuration: configurationA, observer: log))
        let second = RunningDispatcher(Dispatcher(
            pool: fixture.pool, directory: TestDirectory(transports: b), configuration: configurationB, observer: log))
        let message = try fixture.publishToTopic()
        let status = try await fixture.waitForFinal(message)
        await first.stop()
        await second.stop()

        #expect(status.state == .completed)
        #expect(status.shards == 12)
        #expect(status.counters.accepted == 6_000)
        // Twelve shards on two nodes delivered, yet the message's first delivery is recorded and observed once.
        let firstDelivery = try #require(status.firstDeliveryAt)
        #expect(firstDelivery >= status.publishedAt && firstDelivery <= status.completedAt!)
        var observed = 0
        for registry in registries {
            let text = await registry.exposition()
            let line = text.split(separator: "\n").first { $0.hasPrefix(#"clarion_message_first_delivery_seconds_count{target_kind="topic"}"#) }
            observed += Int(line?.split(separator: " ").last ?? "0") ?? 0
        }
        #expect(observed == 1)
        var counts: [String: Int] = [:]
        for t in Array(a.values) + Array(b.values) { counts.merge(t.counts) { $0 + $1 } }
        #expect(counts.count == 6_000)
        #expect(counts.values.allSatisfy { $0 == 1 })

        let intervals = log.all
        #expect(intervals.count >= 12)
        #expect(intervals.allSatisfy { $0.end != nil })
        for shard in Set(intervals.map(\.shard)) {
            let held = intervals.filter { $0.shard == shard }.sorted { $0.start < $1.start }
            for (x, y) in zip(held, held.dropFirst()) {
                #expect(x.end! <= y.start, "shard \(shard) held by \(x.owner) and \(y.owner) at once")
            }
        }
    }

    @Test("a dispatcher killed mid-fan-out: a second one resumes at the checkpoints; every endpoint at least once, duplicates within the bound")
    func crashAndResume() async throws {
        var fixture = try FanOutFixture()
        try fixture.addApplication("ios", platform: "APNS")
        try fixture.addApplication("android", platform: "GCM")
        try fixture.addEndpoints("ios", prefix: "ios-", count: 3_000)
        try fixture.addEndpoints("android", prefix: "and-", count: 3_000)
        // Slow first node: about 2 x 200 in flight per 100 ms, so the kill lands mid-fan-out even on a loaded machine.
        let a = ["ios": RecordingTransport(latency: 0.1), "android": RecordingTransport(latency: 0.1)]
        let configurationA = testConfiguration(owner: "node-a", lease: 1.5, checkpointEvery: 300, inFlight: 200, shardSize: 2_000)
        let first = RunningDispatcher(Dispatcher(
            pool: fixture.pool, directory: TestDirectory(transports: a), configuration: configurationA))
        let message = try fixture.publishToTopic()
        while a.values.reduce(0, { $0 + $1.sendCount }) < 1_500 { try await Task.sleep(for: .milliseconds(5)) }
        await first.crash()
        let sentByA = a.values.reduce(0) { $0 + $1.sendCount }
        #expect(sentByA < 6_000)

        // The leases are still held by the dead node.
        let held = try fixture.connection().query(
            "SELECT count(*) FROM fanout_shards WHERE state = 'leased' AND lease_owner = 'node-a'").first!.int64(0)!
        #expect(held > 0)

        let b = ["ios": RecordingTransport(), "android": RecordingTransport()]
        let second = RunningDispatcher(Dispatcher(
            pool: fixture.pool, directory: TestDirectory(transports: b),
            configuration: testConfiguration(owner: "node-b", lease: 5, shardSize: 2_000)))
        let status = try await fixture.waitForFinal(message)
        await second.stop()

        #expect(status.state == .completed)
        var counts: [String: Int] = [:]
        for t in Array(a.values) + Array(b.values) { counts.merge(t.counts) { $0 + $1 } }
        #expect(counts.count == 6_000)  // every endpoint at least once
        let duplicates = counts.values.reduce(0) { $0 + $1 - 1 }
        // At most the shards the first node held (two workers) each re-send what was past their checkpoint.
        #expect(duplicates <= Int(held) * configurationA.duplicateBound)
        #expect(counts.values.allSatisfy { $0 <= 2 })
        // Counters follow the checkpoints: each delivery counted once, however often it was sent.
        #expect(status.counters.accepted == 6_000)
        #expect(status.counters.targeted == 6_000)
    }

    @Test("graceful shutdown hands shards back at their checkpoints; the next node finishes with no duplicate")
    func gracefulHandOff() async throws {
        var fixture = try FanOutFixture()
        try fixture.addApplication("android", platform: "GCM")
        try fixture.addEndpoints("android", prefix: "and-", count: 4_000)
        let a = ["android": RecordingTransport(latency: 0.02)]
        let first = RunningDispatcher(Dispatcher(
            pool: fixture.pool, directory: TestDirectory(transports: a),
            configuration: testConfiguration(owner: "node-a", shardSize: 2_000)))
        let message = try fixture.publishToTopic()
        while a["android"]!.sendCount < 1_000 { try await Task.sleep(for: .milliseconds(5)) }
        await first.stop()
        let released = try fixture.connection().query("""
            SELECT count(*) FILTER (WHERE state = 'ready'), count(*) FILTER (WHERE lease_owner IS NOT NULL)
            FROM fanout_shards WHERE message = $1
            """, [message]).first!
        #expect(released.int64(0)! >= 1)
        #expect(released.int64(1) == 0)

        let b = ["android": RecordingTransport()]
        let second = RunningDispatcher(Dispatcher(
            pool: fixture.pool, directory: TestDirectory(transports: b),
            configuration: testConfiguration(owner: "node-b", shardSize: 2_000)))
        let status = try await fixture.waitForFinal(message)
        await second.stop()
        #expect(status.state == .completed)
        var counts = a["android"]!.counts
        counts.merge(b["android"]!.counts) { $0 + $1 }
        #expect(counts.count == 4_000)
        #expect(counts.values.allSatisfy { $0 == 1 })
    }

    @Test("token-invalid answers disable the endpoint with reason and time and an event; the next publish skips it")
    func tokenInvalidDisables() async throws {
        var fixture = try FanOutFixture()
        try fixture.addApplication("ios", platform: "APNS")
        try fixture.addEndpoints("ios", prefix: "live-", count: 300)
        try fixture.addEndpoints("ios", prefix: "dead-", count: 40)
        let transport = RecordingTransport { token, _ in
            token.hasPrefix("dead-") ? .tokenInvalid(reason: "Unregistered", invalidSince: nil) : .accepted(providerID: nil)
        }
        let dispatcher = RunningDispatcher(Dispatcher(
            pool: fixture.pool, directory: TestDirectory(transports: ["ios": transport]),
            configuration: testConfiguration(owner: "node-a")))
        let first = try fixture.publishToTopic()
        let status = try await fixture.waitForFinal(first)
        #expect(status.state == .completed)
        #expect(status.counters.accepted == 300)
        #expect(status.counters.failed == 40)
        #expect(status.failuresByReason == ["Unregistered": 40])

        let c = try fixture.connection()
        let disabled = try c.query("""
            SELECT count(*), count(*) FILTER (WHERE disabled_reason = 'Unregistered' AND disabled_at IS NOT NULL)
            FROM endpoints WHERE NOT enabled
            """).first!
        #expect(disabled.int64(0) == 40)
        #expect(disabled.int64(1) == 40)
        #expect(try c.query("SELECT count(*) FROM endpoints WHERE NOT enabled AND token NOT LIKE 'dead-%'").first!.int64(0) == 0)
        let events = try c.query("SELECT count(*) FROM events WHERE kind = 'EndpointDisabled' AND detail->>'reason' = 'Unregistered'")
        #expect(events.first!.int64(0) == 40)
        let failuresLogged = try c.query("SELECT count(*) FROM delivery_log WHERE message = $1 AND status = 'FAILURE'", [first])
        #expect(failuresLogged.first!.int64(0) == 40)

        let second = try fixture.publishToTopic()
        let again = try await fixture.waitForFinal(second)
        await dispatcher.stop()
        #expect(again.counters.skipped == 40)
        #expect(again.counters.accepted == 300)
        #expect(transport.counts.filter { $0.key.hasPrefix("dead-") }.values.allSatisfy { $0 == 1 })
    }

    @Test("a 429 storm with Retry-After: everything delivered after the backoff, nothing early")
    func retryAfterStorm() async throws {
        var fixture = try FanOutFixture()
        try fixture.addApplication("android", platform: "GCM")
        try fixture.addApplication("ios", platform: "APNS")
        try fixture.addEndpoints("android", prefix: "and-", count: 400)
        try fixture.addEndpoints("ios", prefix: "ios-", count: 200)
        let rule: @Sendable (String, Int) -> DeliveryOutcome = { _, attempt in
            attempt == 1 ? .retryable(reason: "TooManyRequests", retryAfter: 1.0) : .accepted(providerID: nil)
        }
        let transports = ["android": RecordingTransport(rule: rule), "ios": RecordingTransport(rule: rule)]
        let dispatcher = RunningDispatcher(Dispatcher(
            pool: fixture.pool, directory: TestDirectory(transports: transports),
            configuration: testConfiguration(owner: "node-a")))
        let message = try fixture.publishToTopic()
        let status = try await fixture.waitForFinal(message)
        await dispatcher.stop()

        #expect(status.state == .completed)
        #expect(status.counters.accepted == 600)
        #expect(status.counters.retried == 600)
        #expect(status.counters.sent == 1_200)
        #expect(status.pendingRetries == 0)
        for transport in transports.values {
            var first: [String: Date] = [:]
            var second: [String: Date] = [:]
            for send in transport.sends {
                if send.attempt == 1 { first[send.token] = send.at } else { second[send.token] = send.at }
            }
            #expect(first.count == second.count)
            let early = second.filter { token, at in at.timeIntervalSince(first[token]!) < 1.0 }
            #expect(early.isEmpty, "retried before Retry-After: \(early.count)")
        }
    }

    @Test("retries stop at the attempt limit with the last reason, and never past the TTL")
    func retryLimits() async throws {
        var fixture = try FanOutFixture()
        try fixture.addApplication("android", platform: "GCM")
        try fixture.addEndpoints("android", prefix: "and-", count: 50)
        let transport = RecordingTransport { _, _ in .retryable(reason: "Unavailable", retryAfter: nil) }
        let dispatcher = RunningDispatcher(Dispatcher(
            pool: fixture.pool, directory: TestDirectory(transports: ["android": transport]),
            configuration: testConfiguration(owner: "node-a")))
        let message = try fixture.publishToTopic()
        let status = try await fixture.waitForFinal(message)
        // TTL of 1 s against a 0.8 s Retry-After: one retry would land past the TTL, so it expires instead.
        let shortLived = try fixture.publishToTopic(attributes: #"{"AWS.SNS.MOBILE.FCM.TTL": {"DataType": "Number", "StringValue": "1"}}"#)
        let limited = try await fixture.waitForFinal(shortLived)
        await dispatcher.stop()

        #expect(status.state == .failed)
        #expect(status.counters.failed == 50)
        #expect(status.failuresByReason == ["Unavailable": 50])
        #expect(status.counters.sent == 200)  // maxAttempts 4
        #expect(limited.counters.failed + limited.counters.expired == 50)
        #expect(limited.counters.expired > 0)
        #expect(transport.sends.filter { $0.attempt > 4 }.isEmpty)
    }

    // docs/providers.md E.1: Push Kit takes up to 1000 tokens of one body per request; a fan-out fills requests up to
    // what the transport asks for, within the window, while the HTTP/2 platforms keep `submitBatchSize`.
    @Test("a Push Kit lane is handed up to its preferred submit size at once; the other platforms keep submitBatchSize")
    func preferredSubmitSize() async throws {
        var fixture = try FanOutFixture()
        try fixture.addApplication("huawei", platform: "HMS")
        try fixture.addApplication("android", platform: "GCM")
        try fixture.addEndpoints("huawei", prefix: "hms-", count: 3_000)
        try fixture.addEndpoints("android", prefix: "and-", count: 3_000)
        let huawei = RecordingTransport()
        huawei.preferredSubmit = 1_000
        let android = RecordingTransport()
        let configuration = testConfiguration(owner: "node-a", inFlight: 1_000, shardSize: 10_000)
        #expect(configuration.submitBatchSize == 64)
        let dispatcher = RunningDispatcher(Dispatcher(
            pool: fixture.pool, directory: TestDirectory(transports: ["huawei": huawei, "android": android]),
            configuration: configuration))
        let message = try fixture.publishToTopic()
        let status = try await fixture.waitForFinal(message)
        await dispatcher.stop()

        #expect(status.counters.accepted == 6_000)
        #expect(huawei.counts.count == 3_000 && huawei.counts.values.allSatisfy { $0 == 1 })
        #expect(android.counts.count == 3_000 && android.counts.values.allSatisfy { $0 == 1 })
        #expect(huawei.submitSizes.max() == 1_000, "\(huawei.submitSizes)")
        #expect(huawei.submitSizes.allSatisfy { $0 <= configuration.maxInFlightPerShard })
        #expect(android.submitSizes.allSatisfy { $0 <= 64 }, "\(android.submitSizes)")
        #expect(configuration.duplicateBound == configuration.checkpointEvery + configuration.maxInFlightPerShard + 1_000)
    }

    @Test("a credential failure disables the platform application with an event, and its sends stop")
    func credentialFailure() async throws {
        var fixture = try FanOutFixture()
        try fixture.addApplication("ios", platform: "APNS")
        try fixture.addApplication("android", platform: "GCM")
        try fixture.addEndpoints("ios", prefix: "ios-", count: 1_000)
        try fixture.addEndpoints("android", prefix: "and-", count: 3_000)
        let android = RecordingTransport { _, _ in .credentialsInvalid(reason: "THIRD_PARTY_AUTH_ERROR") }
        let ios = RecordingTransport()
        var configuration = testConfiguration(owner: "node-a", inFlight: 200, shardSize: 5_000)
        let logged = Mutex<[(String, [String: String])]>([])
        configuration.log = Log("test") { _, message, fields in logged.withLock { $0.append((message, fields)) } }
        let dispatcher = RunningDispatcher(Dispatcher(
            pool: fixture.pool, directory: TestDirectory(transports: ["ios": ios, "android": android]),
            configuration: configuration))
        let message = try fixture.publishToTopic()
        let status = try await fixture.waitForFinal(message)
        let later = try fixture.publishToTopic()
        let laterStatus = try await fixture.waitForFinal(later)
        await dispatcher.stop()

        #expect(ios.sendCount == 2_000)
        // Sends stopped once the refusal came back: at most one window's worth went out.
        #expect(android.sendCount <= configuration.maxInFlightPerShard + configuration.submitBatchSize)
        #expect(status.counters.accepted == 1_000)
        #expect(status.counters.failed == 3_000)
        #expect(laterStatus.counters.failed == 3_000)
        #expect(laterStatus.failuresByReason == ["PlatformApplicationDisabled": 3_000])
        let c = try fixture.connection()
        let app = try c.query("SELECT enabled, disabled_reason, disabled_at FROM platform_applications WHERE name = 'android'").first!
        #expect(app.bool(0) == false)
        #expect(app.string(1) == "THIRD_PARTY_AUTH_ERROR")
        #expect(app.date(2) != nil)
        #expect(try c.query("SELECT count(*) FROM events WHERE kind = 'PlatformApplicationDisabled'").first!.int64(0) == 1)
        #expect(try c.query("SELECT enabled FROM platform_applications WHERE name = 'ios'").first!.bool(0) == true)
        let lines = logged.withLock { $0 }
        #expect(lines.filter { $0.0.hasPrefix("platform application disabled") }.count == 1)
        #expect(lines.allSatisfy { line in !line.1.values.contains { $0.contains("and-") || $0.contains("ios-") } })
    }

    @Test("a publish whose TTL ran out sends nothing and ends Expired")
    func expiredTTL() async throws {
        var fixture = try FanOutFixture()
        try fixture.addApplication("ios", platform: "APNS")
        try fixture.addApplication("android", platform: "GCM")
        try fixture.addEndpoints("ios", prefix: "ios-", count: 100)
        try fixture.addEndpoints("android", prefix: "and-", count: 100)
        let transports = ["ios": RecordingTransport(), "android": RecordingTransport()]
        let dispatcher = RunningDispatcher(Dispatcher(
            pool: fixture.pool, directory: TestDirectory(transports: transports),
            configuration: testConfiguration(owner: "node-a")))
        let attributes = #"{"AWS.SNS.MOBILE.APNS.TTL": {"DataType": "Number", "StringValue": "5"}, "AWS.SNS.MOBILE.FCM.TTL": {"DataType": "String", "StringValue": "5"}}"#
        let message = try fixture.publishToTopic(attributes: attributes, publishedSecondsAgo: 30)
        let status = try await fixture.waitForFinal(message)
        await dispatcher.stop()
        #expect(status.state == .expired)
        #expect(status.counters.expired == 200)
        #expect(status.counters.sent == 0)
        #expect(transports.values.allSatisfy { $0.sendCount == 0 })
    }

    @Test("disabled endpoints are skipped and counted; an empty topic completes at planning")
    func skippedAndEmpty() async throws {
        var fixture = try FanOutFixture()
        try fixture.addApplication("ios", platform: "APNS")
        try fixture.addEndpoints("ios", prefix: "ios-", count: 100)
        try fixture.connection().query("UPDATE endpoints SET enabled = false WHERE token LIKE 'ios-1%'")
        let transport = RecordingTransport()
        let dispatcher = RunningDispatcher(Dispatcher(
            pool: fixture.pool, directory: TestDirectory(transports: ["ios": transport]),
            configuration: testConfiguration(owner: "node-a")))
        let message = try fixture.publishToTopic()
        let status = try await fixture.waitForFinal(message)
        try fixture.connection().query("DELETE FROM subscriptions")
        let empty = try fixture.publishToTopic()
        let emptyStatus = try await fixture.waitForFinal(empty)
        await dispatcher.stop()
        #expect(status.counters.skipped == 12)  // ios-1, ios-10...ios-19, ios-100
        #expect(status.counters.accepted == 88)
        #expect(transport.sendCount == 88)
        #expect(emptyStatus.state == .completed)
        #expect(emptyStatus.shards == 0)
    }

    @Test("deliveries a transport never answers are given up after the delivery timeout; the shard does not stall")
    func silentTransport() async throws {
        var fixture = try FanOutFixture()
        try fixture.addApplication("android", platform: "GCM")
        try fixture.addEndpoints("android", prefix: "and-", count: 300)
        try fixture.addEndpoints("android", prefix: RecordingTransport.blackHolePrefix, count: 5)
        let transport = RecordingTransport()
        let dispatcher = RunningDispatcher(Dispatcher(
            pool: fixture.pool, directory: TestDirectory(transports: ["android": transport]),
            configuration: testConfiguration(
                owner: "node-a", retry: RetryPolicy(maxAttempts: 2, baseDelay: 0.05, maxDelay: 1, jitter: 0),
                deliveryTimeout: 0.5)))
        let message = try fixture.publishToTopic()
        let status = try await fixture.waitForFinal(message, timeout: 30)
        await dispatcher.stop()
        #expect(status.state == .completed)
        #expect(status.counters.accepted == 300)
        #expect(status.counters.failed == 5)
        #expect(status.failuresByReason == ["NoProviderAnswer": 5])
        #expect(transport.counts.filter { $0.key.hasPrefix(RecordingTransport.blackHolePrefix) }.values.allSatisfy { $0 == 2 })
    }

    @Test("ClarionSendRate caps one application's sends per second without spinning; another application is not held back")
    func sendRate() async throws {
        var fixture = try FanOutFixture()
        try fixture.addApplication("slow", platform: "APNS", attributes: #"{"ClarionSendRate": "400"}"#)
        try fixture.addApplication("fast", platform: "GCM")
        try fixture.addEndpoints("slow", prefix: "slow-", count: 800)
        try fixture.addEndpoints("fast", prefix: "fast-", count: 2_000)
        let transports = ["slow": RecordingTransport(), "fast": RecordingTransport()]
        let dispatcher = RunningDispatcher(Dispatcher(
            pool: fixture.pool, directory: TestDirectory(transports: transports),
            configuration: testConfiguration(owner: "node-a", workers: 4, shardSize: 500)))
        let message = try fixture.publishToTopic()
        let status = try await fixture.waitForFinal(message)
        try await Task.sleep(for: .milliseconds(200))  // the last worker adds its timings just after its commit
        let timings = dispatcher.dispatcher.timings
        await dispatcher.stop()

        #expect(status.state == .completed)
        #expect(status.counters.accepted == 2_800)
        let slow = transports["slow"]!.sends.map(\.at).sorted()
        let fast = transports["fast"]!.sends.map(\.at).sorted()
        #expect(slow.count == 800 && fast.count == 2_000)
        // 800 at 400/s with a bucket of 40: at least (800 - 40) / 400 = 1.9 s from the first send to the last.
        let slowSpan = slow.last!.timeIntervalSince(slow.first!)
        #expect(slowSpan >= 1.85, "slow application's sends took \(slowSpan) s")
        // In any one second, no more than the rate plus one bucket (and some scheduling slack).
        let most = mostWithinOneSecond(slow)
        #expect(most <= 400 + 40 + 10, "\(most) sends within one second")
        // The unlimited application is not paced: its shards (all but the one it shares with the limited one, whose
        // window waits behind the limited deliveries in key order) were sent long before the limited one's last.
        let early = fast.filter { $0 < slow.last!.addingTimeInterval(-0.5) }.count
        #expect(early >= 1_800, "\(early) of 2,000 unlimited sends more than 0.5 s before the last limited one")
        // Waiting is by timeout in the inbox, not a spin: a handful of wake-ups per 100 ms bucket, not thousands.
        #expect(timings.rateLimitedSubmits > 0)
        #expect(timings.outcomeWaits < 1_000, "\(timings.outcomeWaits) waits")
    }

    @Test("ClarionSendRate holds for retries too: over the rate they wait their turn, without using up an attempt")
    func sendRateCoversRetries() async throws {
        var fixture = try FanOutFixture()
        try fixture.addApplication("limited", platform: "GCM", attributes: #"{"ClarionSendRate": "200"}"#)
        try fixture.addEndpoints("limited", prefix: "lim-", count: 300)
        // Every first attempt is refused with a short Retry-After, so retries come due while first sends still run.
        let transport = RecordingTransport { _, attempt in
            attempt == 1 ? .retryable(reason: "QuotaExceeded", retryAfter: 0.05) : .accepted(providerID: nil)
        }
        let dispatcher = RunningDispatcher(Dispatcher(
            pool: fixture.pool, directory: TestDirectory(transports: ["limited": transport]),
            configuration: testConfiguration(owner: "node-a")))
        let message = try fixture.publishToTopic()
        let status = try await fixture.waitForFinal(message)
        await dispatcher.stop()

        #expect(status.state == .completed)
        #expect(status.counters.accepted == 300)
        #expect(status.counters.retried == 300)
        #expect(status.counters.sent == 600)
        // Deferred retries kept their attempt: every token was sent exactly twice.
        #expect(transport.counts.count == 300 && transport.counts.values.allSatisfy { $0 == 2 })
        // First sends and retries together stay within the rate: at most the rate plus one bucket in any second.
        let sends = transport.sends.map(\.at).sorted()
        let most = mostWithinOneSecond(sends)
        #expect(most <= 200 + 20 + 10, "\(most) sends within one second")
        #expect(sends.last!.timeIntervalSince(sends.first!) >= (600 - 20) / 200 - 0.1)
    }
}

@Suite("Express lane", .serialized)
struct ExpressLaneTests {
    @Test("a direct publish is not queued behind a large fan-out: express workers take small shards")
    func directPublishOvertakes() async throws {
        var fixture = try FanOutFixture()
        try fixture.addApplication("android", platform: "GCM")
        try fixture.addEndpoints("android", prefix: "and-", count: 4_000)
        try fixture.addEndpoints("android", prefix: "solo-", count: 1, subscribe: false)
        // One general worker and a slow provider: the topic takes seconds.
        let transport = RecordingTransport(latency: 0.1)
        var configuration = testConfiguration(owner: "node-a", workers: 1, shardSize: 2_000)
        configuration.expressWorkers = 1
        let dispatcher = RunningDispatcher(Dispatcher(
            pool: fixture.pool, directory: TestDirectory(transports: ["android": transport]), configuration: configuration))
        let topic = try fixture.publishToTopic()
        while transport.sendCount < 200 { try await Task.sleep(for: .milliseconds(5)) }
        let direct = try fixture.publishToEndpoint(token: "solo-1")
        let directStatus = try await fixture.waitForFinal(direct)
        let topicWhenDirectDone = try await fixture.status(topic)
        let topicStatus = try await fixture.waitForFinal(topic)
        await dispatcher.stop()
        #expect(directStatus.state == .completed)
        #expect(directStatus.counters.accepted == 1)
        #expect(topicWhenDirectDone.state == .processing)
        #expect(topicStatus.counters.accepted == 4_000)
    }
}

/// The largest number of the sorted instants that fall within any one second.
func mostWithinOneSecond(_ sorted: [Date]) -> Int {
    var most = 0
    var start = 0
    for end in sorted.indices {
        while sorted[end].timeIntervalSince(sorted[start]) >= 1 { start += 1 }
        most = max(most, end - start + 1)
    }
    return most
}
