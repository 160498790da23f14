import ClarionCore
@testable import ClarionDispatch
import ClarionStore
import ClarionTestSupport
import Foundation
import Testing

/// The frequency cap, quiet hours and `send_at_local` zones of direct pushes (endpoint and user targets of
/// `POST /v1/publish`: one message per endpoint, sent by `DirectBatchWorker`) on real PostgreSQL, with the
/// dispatchers' clock injected as in `TimingFanOutTests` (2026-12-08 20:30 UTC: 05:30 on the 9th in Tokyo, inside
/// 22:00-08:00 quiet hours; 12:30 on the 8th in Los Angeles, outside). Issue 18: "Per mobile app: at most N campaign
/// pushes per endpoint per rolling window, and quiet hours in the endpoint's local time ... Ordinary transactional
/// publishes are exempt unless they opt in" (docs/api.md, "Local-time sends, frequency capping and quiet hours").
@Suite("Frequency cap, quiet hours and local-time zones of direct pushes", .serialized)
struct TimingDirectTests {
    /// Direct messages with `timing` (nil: a transactional publish) to the endpoints with these tokens, stored as the
    /// publish path stores them (unplanned, no shard: `FanOutJobs.claimDirect` takes them); keys in token order.
    static func publishDirect(_ fixture: FanOutFixture, tokens: [String], _ timing: CampaignTiming?, text: String = "direct") throws -> [Int64] {
        let c = try fixture.connection()
        let literal = "{" + tokens.map { "\"\($0)\"" }.joined(separator: ",") + "}"
        let keys = try c.query("""
            INSERT INTO messages (external_id, account, target_kind, target_id, message, attributes)
            SELECT gen_random_uuid(), $1, 'endpoint', e.id, $3, $4::jsonb
            FROM unnest($2::text[]) WITH ORDINALITY AS t(token, n) JOIN endpoints e ON e.token = t.token
            ORDER BY t.n
            RETURNING id
            """, [fixture.account, literal, text, timing.map(TimingFanOutTests.attributes) ?? "{}"]).rows.map { $0.int64(0)! }
        try c.notify(FanOutJobs.workChannel)
        return keys
    }

    static func deferredCount(_ fixture: FanOutFixture, _ keys: [Int64]) async throws -> Int64 {
        var total: Int64 = 0
        for key in keys { total += try await fixture.status(key).counters.deferred }
        return total
    }

    static func tokens(_ prefix: String, _ count: Int) -> [String] { (1...count).map { "\(prefix)\($0)" } }

    /// Runs one node until the messages are final; returns their statuses.
    static func run(_ fixture: FanOutFixture, _ keys: [Int64], clock: ShiftedClock, transport: RecordingTransport) async throws -> [MessageStatus] {
        let node = RunningDispatcher(Dispatcher(pool: fixture.pool, directory: TestDirectory(transports: ["ios": transport]),
                                                configuration: TimingFanOutTests.configuration("node-a", clock: clock)))
        let statuses = try await fixture.waitForAllFinal(keys)
        await node.stop()
        return statuses
    }

    static func sum(_ statuses: [MessageStatus], _ value: (DeliveryCounters) -> Int64) -> Int64 {
        statuses.map { value($0.counters) }.reduce(0, +)
    }

    @Test("a cap of 2 per day on direct pushes: the 3rd campaign push to an endpoint is capped, a transactional one is exempt, one opting in is capped")
    func directCap() async throws {
        let fixture = try TimingFanOutTests.fixture(tokyo: 0, losAngeles: 20, cap: (2, 86_400))
        defer { fixture.pool.shutdown() }
        let clock = TimingFanOutTests.clockAtInstant()
        let transport = RecordingTransport()
        let la = Self.tokens("la-", 20)
        for round in 1...2 {
            let statuses = try await Self.run(fixture, try Self.publishDirect(fixture, tokens: la, CampaignTiming(cap: true)),
                                              clock: clock, transport: transport)
            #expect(Self.sum(statuses, \.accepted) == 20 && Self.sum(statuses, \.capped) == 0, "round \(round)")
            clock.advance(60)
        }
        // Over the cap: counted `capped` on each message (which completes), nothing sent.
        let third = try await Self.run(fixture, try Self.publishDirect(fixture, tokens: la, CampaignTiming(cap: true)),
                                       clock: clock, transport: transport)
        #expect(third.allSatisfy { $0.state == .completed && $0.counters.capped == 1 && $0.counters.sent == 0 && $0.counters.targeted == 1 })
        #expect(transport.sendCount == 40)
        // Transactional: exempt; opted in: capped.
        let exempt = try await Self.run(fixture, try Self.publishDirect(fixture, tokens: la, nil), clock: clock, transport: transport)
        #expect(Self.sum(exempt, \.accepted) == 20 && Self.sum(exempt, \.capped) == 0)
        let optedIn = try await Self.run(fixture, try Self.publishDirect(fixture, tokens: la, CampaignTiming(cap: true)),
                                         clock: clock, transport: transport)
        #expect(Self.sum(optedIn, \.capped) == 20 && Self.sum(optedIn, \.sent) == 0)
        // The same history as a fan-out's: 2 pushes per endpoint.
        let c = try fixture.connection()
        let lengths = try c.query("SELECT array_length(messages, 1), count(*) FROM frequency_history GROUP BY 1").rows
        #expect(lengths.count == 1 && lengths.first?.int(0) == 2 && lengths.first?.int64(1) == 20)
        // Two campaign pushes to one endpoint in one batch (asked in two rounds of one statement each): with one slot
        // left a day later, exactly one of them goes.
        clock.advance(86_400 - 120 + 1)  // the first round (at +0) leaves the window, the second (at +60) stays
        let pair = try await Self.run(fixture, try Self.publishDirect(fixture, tokens: ["la-1"], CampaignTiming(cap: true))
                                          + Self.publishDirect(fixture, tokens: ["la-1"], CampaignTiming(cap: true)),
                                      clock: clock, transport: transport)
        #expect(Self.sum(pair, \.accepted) == 1 && Self.sum(pair, \.capped) == 1)
    }

    @Test("two dispatcher nodes sending two campaign pushes to each of 300 endpoints under a cap of 1: each endpoint gets exactly one")
    func directCapAcrossNodes() async throws {
        let fixture = try TimingFanOutTests.fixture(tokyo: 150, losAngeles: 150, cap: (1, 3_600))
        defer { fixture.pool.shutdown() }
        let clock = TimingFanOutTests.clockAtInstant()
        let a = RecordingTransport(), b = RecordingTransport()
        let all = Self.tokens("tokyo-", 150) + Self.tokens("la-", 150)
        // Interleaved (each endpoint's two messages far apart in key order) so both nodes' batches hold some of each.
        let first = try Self.publishDirect(fixture, tokens: all, CampaignTiming(cap: true), text: "one")
        let second = try Self.publishDirect(fixture, tokens: all.reversed(), CampaignTiming(cap: true), text: "two")
        var configurationA = TimingFanOutTests.configuration("node-a", clock: clock)
        var configurationB = TimingFanOutTests.configuration("node-b", clock: clock)
        configurationA.directBatchSize = 25
        configurationB.directBatchSize = 25
        let nodes = [
            RunningDispatcher(Dispatcher(pool: fixture.pool, directory: TestDirectory(transports: ["ios": a]), configuration: configurationA)),
            RunningDispatcher(Dispatcher(pool: fixture.pool, directory: TestDirectory(transports: ["ios": b]), configuration: configurationB)),
        ]
        let statuses = try await fixture.waitForAllFinal(first + second)
        for node in nodes { await node.stop() }
        var counts = a.counts
        counts.merge(b.counts) { $0 + $1 }
        #expect(counts.count == 300 && counts.values.allSatisfy { $0 == 1 })
        #expect(a.sendCount > 0 && b.sendCount > 0, "both nodes sent: a \(a.sendCount), b \(b.sendCount)")
        #expect(Self.sum(statuses, \.accepted) == 300 && Self.sum(statuses, \.capped) == 300)
        #expect(statuses.allSatisfy { $0.state == .completed })
    }

    @Test("quiet hours 22:00-08:00 on direct pushes: defer holds Tokyo until 08:00 Tokyo then sends it, skip drops it, a transactional push is exempt")
    func directQuietHours() async throws {
        let fixture = try TimingFanOutTests.fixture(tokyo: 10, losAngeles: 10, quiet: (22 * 60, 8 * 60))
        defer { fixture.pool.shutdown() }
        let clock = TimingFanOutTests.clockAtInstant()
        let c = try fixture.connection()
        let both = Self.tokens("tokyo-", 10) + Self.tokens("la-", 10)

        let transport = RecordingTransport()
        let node = RunningDispatcher(Dispatcher(pool: fixture.pool, directory: TestDirectory(transports: ["ios": transport]),
                                                configuration: TimingFanOutTests.configuration("node-a", clock: clock)))
        let deferred = try Self.publishDirect(fixture, tokens: both, CampaignTiming(quiet: .defer_))
        let tokyoKeys = Array(deferred[..<10]), laKeys = Array(deferred[10...])
        let la = try await fixture.waitForAllFinal(laKeys)
        #expect(Self.sum(la, \.accepted) == 10 && Self.sum(la, \.deferred) == 0)
        let deadline = Date().addingTimeInterval(30)
        while try await Self.deferredCount(fixture, tokyoKeys) < 10, Date() < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        let held = try await fixture.status(tokyoKeys[0])
        #expect(held.state == .processing && held.counters.deferred == 1 && held.counters.sent == 0 && held.pendingRetries == 1)
        #expect(transport.sends.allSatisfy { $0.token.hasPrefix("la-") })
        let due = try c.query("SELECT DISTINCT not_before, attempt, last_reason FROM delivery_retries").rows
        #expect(due.count == 1 && due.first?.date(0) == ISO8601DateFormatter().date(from: "2026-12-08T23:00:00Z"))
        #expect(due.first?.int(1) == 0 && due.first?.string(2) == TimingRules.quietHoursReason)
        // The end of the quiet hours (the retry queue is due by the database's clock: bring it forward).
        try c.query("UPDATE delivery_retries SET not_before = now()")
        let tokyo = try await fixture.waitForAllFinal(tokyoKeys)
        #expect(tokyo.allSatisfy { $0.state == .completed && $0.counters.accepted == 1 && $0.counters.deferred == 1 && $0.counters.targeted == 1 })
        #expect(transport.sends.filter { $0.token.hasPrefix("tokyo-") }.allSatisfy { $0.attempt == 1 })
        #expect(transport.sends.count { $0.token.hasPrefix("tokyo-") } == 10)

        // Skip: Tokyo counted `quiet_skipped`, never sent; transactional: sent.
        let skipped = try await fixture.waitForAllFinal(try Self.publishDirect(fixture, tokens: both, CampaignTiming(quiet: .skip)))
        #expect(Self.sum(skipped, \.quietSkipped) == 10 && Self.sum(skipped, \.accepted) == 10)
        let exempt = try await fixture.waitForAllFinal(try Self.publishDirect(fixture, tokens: both, nil))
        #expect(Self.sum(exempt, \.accepted) == 20 && Self.sum(exempt, \.quietSkipped) == 0)
        await node.stop()
        #expect(transport.sends.count { $0.token.hasPrefix("tokyo-") } == 20)
    }

    @Test("zones read at release: a direct send_at_local push planned for Los Angeles whose endpoint moved east goes now, one that moved west waits for 09:00 there")
    func zonesAtRelease() async throws {
        let fixture = try TimingFanOutTests.fixture(tokyo: 1, losAngeles: 3)
        defer { fixture.pool.shutdown() }
        let clock = TimingFanOutTests.clockAtInstant()
        let c = try fixture.connection()
        // Planned for 09:00 in Los Angeles (17:00 UTC on the 9th); released early here to see the zones read at
        // release. la-1 stays; la-2 moved to Berlin (21:30 there: today's 09:00 has passed, so now); la-3 moved to
        // Honolulu (10:30 on the 8th there: passed, now); tokyo-1 was planned for Los Angeles too but is in Tokyo
        // (05:30 on the 9th: 09:00 is ahead, at 00:00 UTC).
        try c.query("UPDATE endpoints SET attributes = attributes || '{\"TimeZone\": \"Europe/Berlin\"}' WHERE token = 'la-2'")
        try c.query("UPDATE endpoints SET attributes = attributes || '{\"TimeZone\": \"Pacific/Honolulu\"}' WHERE token = 'la-3'")
        let timing = CampaignTiming(zone: "America/Los_Angeles", local: LocalClockTime("09:00")!)
        let keys = try Self.publishDirect(fixture, tokens: ["la-1", "la-2", "la-3", "tokyo-1"], timing)
        let transport = RecordingTransport()
        let node = RunningDispatcher(Dispatcher(pool: fixture.pool, directory: TestDirectory(transports: ["ios": transport]),
                                                configuration: TimingFanOutTests.configuration("node-a", clock: clock)))
        let sent = try await fixture.waitForAllFinal(Array(keys[..<3]))
        #expect(sent.allSatisfy { $0.counters.accepted == 1 && $0.counters.deferred == 0 })
        var moved = try await fixture.status(keys[3])
        let deadline = Date().addingTimeInterval(30)
        while moved.counters.deferred == 0, Date() < deadline {
            try await Task.sleep(for: .milliseconds(50))
            moved = try await fixture.status(keys[3])
        }
        #expect(moved.counters.deferred == 1 && moved.counters.sent == 0 && moved.pendingRetries == 1)
        let due = try c.query("SELECT not_before, last_reason FROM delivery_retries WHERE message = $1", [keys[3]]).rows
        #expect(due.first?.date(0) == ISO8601DateFormatter().date(from: "2026-12-09T00:00:00Z"))
        #expect(due.first?.string(1) == TimingRules.localTimeReason)
        try c.query("UPDATE delivery_retries SET not_before = now()")
        let tokyo = try await fixture.waitForFinal(keys[3])
        await node.stop()
        #expect(tokyo.counters.accepted == 1 && tokyo.state == .completed)
        #expect(Set(transport.sends.map(\.token)) == ["la-1", "la-2", "la-3", "tokyo-1"] && transport.sendCount == 4)
    }

    @Test("localTimeInMovedZone: unchanged zone nil; today's local time ahead in the new zone is returned; passed is nil (send now)")
    func movedZoneRule() {
        let now = TimingFanOutTests.instant  // 2026-12-08 20:30 UTC
        let nine = LocalClockTime("09:00")!
        let planned = CampaignTiming(zone: "Europe/Berlin", fallback: "Europe/Berlin", local: nine)
        #expect(TimingRules.localTimeInMovedZone(planned, endpointZone: "Europe/Berlin", now: now) == nil)
        #expect(TimingRules.localTimeInMovedZone(planned, endpointZone: nil, now: now) == nil)  // the fallback is Berlin
        #expect(TimingRules.localTimeInMovedZone(planned, endpointZone: "Asia/Tokyo", now: now)
                == ISO8601DateFormatter().date(from: "2026-12-09T00:00:00Z"))
        #expect(TimingRules.localTimeInMovedZone(planned, endpointZone: "America/New_York", now: now) == nil)  // 15:30 there
        #expect(TimingRules.localTimeInMovedZone(CampaignTiming(local: nine), endpointZone: "Asia/Tokyo", now: now) == nil)  // no planned zone
    }
}

