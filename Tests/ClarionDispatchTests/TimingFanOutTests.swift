import ClarionCore
@testable import ClarionDispatch
import ClarionMetrics
import ClarionStore
import ClarionTestSupport
import Foundation
import Testing

/// Local-time sends, frequency capping and quiet hours in the fan-out (issue 18, schema v22), on real PostgreSQL with
/// the dispatchers' clock injected (`ShiftedClock`): the clock is moved to a fixed instant, 2026-12-08 20:30 UTC,
/// which is 05:30 on the 9th in Tokyo (inside 22:00-08:00 quiet hours) and 12:30 on the 8th in Los Angeles (outside).
@Suite("Local-time sends, frequency cap and quiet hours in the fan-out", .serialized)
struct TimingFanOutTests {
    static let instant = ISO8601DateFormatter().date(from: "2026-12-08T20:30:00Z")!

    /// A clock that reads `instant` now and moves with real time from here.
    static func clockAtInstant() -> ShiftedClock {
        let clock = ShiftedClock()
        clock.advance(instant.timeIntervalSinceNow)
        return clock
    }

    static func configuration(_ owner: String, clock: ShiftedClock) -> DispatcherConfiguration {
        var configuration = testConfiguration(owner: owner)
        configuration.now = clock.now
        return configuration
    }

    /// The stored attributes of a message with `Clarion.Timing` as the native publish writes it.
    static func attributes(_ timing: CampaignTiming) -> String {
        JSONValue.object(JSONObject([(CampaignTiming.attributeName, .object(JSONObject([
            ("DataType", .string("String")), ("StringValue", timing.attributeValue().stringValue.map(JSONValue.string) ?? .null),
        ])))])).jsonText
    }

    /// The app's endpoints `tokyo-1...` and `la-1...` with their zones, all subscribed to the fixture's topic, and
    /// the mobile app the application belongs to with the given cap and quiet hours.
    static func fixture(tokyo: Int, losAngeles: Int, unzoned: Int = 0, cap: (max: Int, window: Int)? = nil,
                        quiet: (start: Int, end: Int)? = nil) throws -> FanOutFixture {
        var fixture = try FanOutFixture(poolSize: 10)
        try fixture.addApplication("ios", platform: "APNS")
        try fixture.addEndpoints("ios", prefix: "tokyo-", count: tokyo)
        try fixture.addEndpoints("ios", prefix: "la-", count: losAngeles)
        if unzoned > 0 { try fixture.addEndpoints("ios", prefix: "none-", count: unzoned) }
        let c = try fixture.connection()
        try c.query("UPDATE endpoints SET attributes = attributes || '{\"TimeZone\": \"Asia/Tokyo\"}' WHERE token LIKE 'tokyo-%'")
        try c.query("UPDATE endpoints SET attributes = attributes || '{\"TimeZone\": \"America/Los_Angeles\"}' WHERE token LIKE 'la-%'")
        try c.query("""
            INSERT INTO mobile_apps (external_id, account, name, apns_application, frequency_cap_max, frequency_cap_window_seconds,
                                     quiet_start_minute, quiet_end_minute, quiet_time_zone)
            VALUES (gen_random_uuid(), $1, 'app', $2, $3, $4, $5, $6, 'UTC')
            """, [fixture.account, fixture.applications["ios"]!, cap?.max, cap?.window, quiet?.start, quiet?.end])
        return fixture
    }

    /// Publishes one message with `timing` (nil: a transactional publish) and waits for it to finish.
    static func send(_ fixture: FanOutFixture, _ timing: CampaignTiming?, clock: ShiftedClock, transport: RecordingTransport,
                     metrics: DeliveryMetrics? = nil) async throws -> MessageStatus
    {
        let key = try fixture.publishToTopic("hello", attributes: timing.map(attributes) ?? "{}")
        var configuration = configuration("node-a", clock: clock)
        configuration.metrics = metrics
        let node = RunningDispatcher(Dispatcher(pool: fixture.pool, directory: TestDirectory(transports: ["ios": transport]),
                                                configuration: configuration))
        let status = try await fixture.waitForFinal(key)
        await node.stop()
        return status
    }

    @Test("a cap of 3 per day: the 4th campaign push is capped for every endpoint, a transactional publish is exempt, one opting in is capped, a day later it sends again")
    func frequencyCap() async throws {
        let fixture = try Self.fixture(tokyo: 30, losAngeles: 30, cap: (3, 86_400))
        defer { fixture.pool.shutdown() }
        let clock = Self.clockAtInstant()
        let transport = RecordingTransport()
        let campaign = CampaignTiming(cap: true)
        for round in 1...3 {
            let status = try await Self.send(fixture, campaign, clock: clock, transport: transport)
            #expect(status.counters.accepted == 60 && status.counters.capped == 0, "round \(round)")
            clock.advance(60)
        }
        // N + 1: over the cap, counted `capped`, nothing sent; the message still completes.
        let registry = MetricsRegistry()
        let fourth = try await Self.send(fixture, campaign, clock: clock, transport: transport,
                                         metrics: DeliveryMetrics(registry: registry))
        #expect(await registry.exposition().contains(
            "clarion_deliveries_total{platform=\"APNS\",application=\"ios\",outcome=\"capped\"} 60\n"))
        #expect(fourth.state == .completed)
        #expect(fourth.counters.capped == 60 && fourth.counters.sent == 0 && fourth.counters.targeted == 60)
        #expect(transport.sendCount == 180)
        // Ordinary transactional publishes are exempt...
        let transactional = try await Self.send(fixture, nil, clock: clock, transport: transport)
        #expect(transactional.counters.accepted == 60 && transactional.counters.capped == 0)
        // ...unless they opt in.
        let optedIn = try await Self.send(fixture, CampaignTiming(cap: true), clock: clock, transport: transport)
        #expect(optedIn.counters.capped == 60 && optedIn.counters.sent == 0)
        // The history keeps 3 pushes per endpoint (capped and exempt ones are not recorded).
        let c = try fixture.connection()
        let lengths = try c.query("SELECT array_length(messages, 1), count(*) FROM frequency_history GROUP BY 1").rows
        #expect(lengths.count == 1 && lengths.first?.int(0) == 3 && lengths.first?.int64(1) == 60)
        // The window rolls: a day after the first push, one slot is free again.
        clock.advance(86_400 - 180 + 1)
        let later = try await Self.send(fixture, campaign, clock: clock, transport: transport)
        #expect(later.counters.accepted == 60 && later.counters.capped == 0)
    }

    @Test("two nodes with one campaign each to the same endpoints under a cap of 1: each endpoint gets exactly one")
    func capAcrossNodes() async throws {
        let fixture = try Self.fixture(tokyo: 400, losAngeles: 400, cap: (1, 3_600))
        defer { fixture.pool.shutdown() }
        let clock = Self.clockAtInstant()
        let a = RecordingTransport(), b = RecordingTransport()
        let first = try fixture.publishToTopic("one", attributes: Self.attributes(CampaignTiming(cap: true)))
        let second = try fixture.publishToTopic("two", attributes: Self.attributes(CampaignTiming(cap: true)))
        var configurationA = Self.configuration("node-a", clock: clock), configurationB = Self.configuration("node-b", clock: clock)
        configurationA.shardSize = 200
        configurationB.shardSize = 200
        let nodes = [
            RunningDispatcher(Dispatcher(pool: fixture.pool, directory: TestDirectory(transports: ["ios": a]), configuration: configurationA)),
            RunningDispatcher(Dispatcher(pool: fixture.pool, directory: TestDirectory(transports: ["ios": b]), configuration: configurationB)),
        ]
        let statuses = try await fixture.waitForAllFinal([first, second])
        for node in nodes { await node.stop() }
        var counts = a.counts
        counts.merge(b.counts) { $0 + $1 }
        #expect(counts.count == 800 && counts.values.allSatisfy { $0 == 1 })
        #expect(statuses.map(\.counters.accepted).reduce(0, +) == 800)
        #expect(statuses.map(\.counters.capped).reduce(0, +) == 800)
    }

    @Test("quiet hours 22:00-08:00: defer holds Tokyo (05:30) until 08:00 Tokyo then delivers; skip drops it; a transactional publish is exempt")
    func quietHours() async throws {
        let fixture = try Self.fixture(tokyo: 20, losAngeles: 25, quiet: (22 * 60, 8 * 60))
        defer { fixture.pool.shutdown() }
        let clock = Self.clockAtInstant()
        let c = try fixture.connection()

        // Defer: Los Angeles is sent at once, Tokyo waits in the retry queue until 08:00 Tokyo (23:00 UTC).
        let transport = RecordingTransport()
        let key = try fixture.publishToTopic("deferred", attributes: Self.attributes(CampaignTiming(quiet: .defer_)))
        var node = RunningDispatcher(Dispatcher(pool: fixture.pool, directory: TestDirectory(transports: ["ios": transport]),
                                                configuration: Self.configuration("node-a", clock: clock)))
        var status = try await fixture.status(key)
        let deadline = Date().addingTimeInterval(30)
        while status.counters.targeted < 45, Date() < deadline {
            try await Task.sleep(for: .milliseconds(50))
            status = try await fixture.status(key)
        }
        try await Task.sleep(for: .milliseconds(300))
        status = try await fixture.status(key)
        #expect(status.state == .processing)
        #expect(status.counters.deferred == 20 && status.counters.accepted == 25 && status.pendingRetries == 20)
        #expect(Set(transport.sends.map(\.token)).allSatisfy { $0.hasPrefix("la-") })
        let due = try c.query("SELECT DISTINCT not_before, attempt, last_reason FROM delivery_retries WHERE message = $1", [key]).rows
        #expect(due.count == 1)
        #expect(due.first?.date(0) == ISO8601DateFormatter().date(from: "2026-12-08T23:00:00Z"))
        #expect(due.first?.int(1) == 0 && due.first?.string(2) == "QuietHours")
        // The end of the quiet hours comes (the retry queue is due by the database's clock: bring it forward).
        try c.query("UPDATE delivery_retries SET not_before = now() WHERE message = $1", [key])
        status = try await fixture.waitForFinal(key)
        await node.stop()
        #expect(status.state == .completed)
        #expect(status.counters.accepted == 45 && status.counters.deferred == 20 && status.counters.sent == 45)
        #expect(status.counters.retried == 0 && status.counters.targeted == 45)
        let tokyo = transport.sends.filter { $0.token.hasPrefix("tokyo-") }
        #expect(tokyo.count == 20 && tokyo.allSatisfy { $0.attempt == 1 })

        // Skip: Tokyo is counted `quiet_skipped`, never sent.
        let skipping = RecordingTransport()
        let skipped = try await Self.send(fixture, CampaignTiming(quiet: .skip), clock: clock, transport: skipping)
        #expect(skipped.counters.quietSkipped == 20 && skipped.counters.accepted == 25 && skipped.pendingRetries == 0)
        #expect(skipping.sends.allSatisfy { $0.token.hasPrefix("la-") })

        // A transactional publish ignores quiet hours.
        let exempt = RecordingTransport()
        let transactional = try await Self.send(fixture, nil, clock: clock, transport: exempt)
        #expect(transactional.counters.accepted == 45 && transactional.counters.deferred == 0)

        // Outside the quiet hours in Tokyo (moved on to 09:00 Tokyo), the same campaign sends to everyone.
        clock.advance(3.5 * 3_600)
        node = RunningDispatcher(Dispatcher(pool: fixture.pool, directory: TestDirectory(transports: ["ios": exempt]),
                                            configuration: Self.configuration("node-a", clock: clock)))
        let outside = try fixture.publishToTopic("outside", attributes: Self.attributes(CampaignTiming(quiet: .defer_)))
        let outsideStatus = try await fixture.waitForFinal(outside)
        await node.stop()
        #expect(outsideStatus.counters.accepted == 45 && outsideStatus.counters.deferred == 0)
    }

    @Test("zone units: each zone's message sends only to its zone (fallback for endpoints without one); a second node releases a unit when due")
    func zoneUnits() async throws {
        let fixture = try Self.fixture(tokyo: 15, losAngeles: 10, unzoned: 5)
        defer { fixture.pool.shutdown() }
        let clock = Self.clockAtInstant()
        let now = clock.now()
        let nine = LocalClockTime("09:00")!
        let zones = try await FanOutJobs(pool: fixture.pool).endpointZones(topicKey: fixture.topic, fallback: "Europe/Berlin")
        // One unit per distinct zone among the targets: Tokyo, Los Angeles and the fallback of the 5 without one.
        #expect(zones == ["America/Los_Angeles", "Asia/Tokyo", "Europe/Berlin"])
        var keys: [String: Int64] = [:]
        for zone in zones {
            let timing = CampaignTiming(zone: zone, fallback: "Europe/Berlin", local: nine)
            let stored = try await MessageRepository(pool: fixture.pool).store(NewMessage(
                externalID: UUID(), accountKey: fixture.account, target: .topic(key: fixture.topic, arn: "arn:topic"),
                message: "good morning", attributesJSON: Self.attributes(timing),
                sendAt: nine.next(after: now, in: TimeZone(identifier: zone)!)))
            keys[zone] = stored.key
        }
        // 20:30 UTC: 09:00 comes first in Tokyo (00:00 UTC, 3.5 h), then Berlin (08:00 UTC), then Los Angeles (17:00 UTC).
        #expect(try await fixture.status(keys["Asia/Tokyo"]!).sendAt == ISO8601DateFormatter().date(from: "2026-12-09T00:00:00Z"))
        #expect(try await fixture.status(keys["America/Los_Angeles"]!).sendAt == ISO8601DateFormatter().date(from: "2026-12-09T17:00:00Z"))

        // Node A runs until Tokyo's unit is due and sends it; it stops before the others are due.
        let a = RecordingTransport(), b = RecordingTransport()
        clock.advance(3.5 * 3_600 + 1)
        let nodeA = RunningDispatcher(Dispatcher(pool: fixture.pool, directory: TestDirectory(transports: ["ios": a]),
                                                 configuration: Self.configuration("node-a", clock: clock)))
        let tokyo = try await fixture.waitForFinal(keys["Asia/Tokyo"]!)
        await nodeA.stop()
        #expect(tokyo.counters.accepted == 15 && tokyo.counters.targeted == 15)
        #expect(a.sends.allSatisfy { $0.token.hasPrefix("tokyo-") } && a.sendCount == 15)
        #expect(try await fixture.status(keys["Europe/Berlin"]!).state == .scheduled)

        // Node B (another process) releases the remaining units when their time comes.
        clock.advance(21 * 3_600)
        let nodeB = RunningDispatcher(Dispatcher(pool: fixture.pool, directory: TestDirectory(transports: ["ios": b]),
                                                 configuration: Self.configuration("node-b", clock: clock)))
        let rest = try await fixture.waitForAllFinal([keys["Europe/Berlin"]!, keys["America/Los_Angeles"]!])
        await nodeB.stop()
        #expect(rest[0].counters.accepted == 5 && rest[1].counters.accepted == 10)
        #expect(Set(b.sends.map(\.token)) == Set((1...5).map { "none-\($0)" } + (1...10).map { "la-\($0)" }))
        #expect(b.sendCount == 15)
    }
}
