import ClarionCore
@testable import ClarionDispatch
import ClarionStore
import ClarionTestSupport
import Foundation
import Synchronization
import Testing

/// Subscription filter policies applied at fan-out (issue 16): a subscriber whose FilterPolicy does not match the
/// message gets nothing and is counted `filtered`, never failed; before, every subscriber got every message.
@Suite("Filter policies at fan-out", .serialized)
struct FilterPolicyFanOutTests {
    @Test("only subscribers whose policy matches are sent to; the others count filtered, not failed or skipped")
    func policiesDecideWhoGetsTheMessage() async throws {
        var fixture = try FanOutFixture()
        try fixture.addApplication("android", platform: "GCM")
        try fixture.addEndpoints("android", prefix: "gold-", count: 120)
        try fixture.addEndpoints("android", prefix: "silver-", count: 130)
        try fixture.addEndpoints("android", prefix: "plain-", count: 40)
        try fixture.addEndpoints("android", prefix: "body-", count: 30)
        try fixture.addEndpoints("android", prefix: "nobody-", count: 20)
        try fixture.addEndpoints("android", prefix: "legacy-", count: 10)
        try fixture.addEndpoints("android", prefix: "off-", count: 5)
        let c = try fixture.connection()
        func setPolicy(_ prefix: String, _ policy: String, scope: String? = nil) throws {
            try c.query("""
                UPDATE subscriptions s SET filter_policy = $2::jsonb,
                    attributes = CASE WHEN $3::text IS NULL THEN s.attributes
                                      ELSE s.attributes || jsonb_build_object('FilterPolicyScope', $3::text) END
                FROM endpoints e WHERE e.id = s.endpoint AND e.token LIKE $1 || '%'
                """, [prefix, policy, scope])
        }
        // Exact string match (string-value-matching), an exact match that fails, a numeric range on the body
        // (MessageBody scope), a policy the body does not match, and a policy stored before policies were checked
        // (6 keys: SNS refuses it, so it cannot be applied; the subscriber keeps getting everything).
        try setPolicy("gold-", #"{"tier": ["gold"], "price": [{"numeric": [">=", 100]}]}"#)
        try setPolicy("silver-", #"{"tier": ["silver"]}"#)
        try setPolicy("body-", #"{"order": {"total": [{"numeric": [">", 10, "<=", 50]}]}}"#, scope: "MessageBody")
        try setPolicy("nobody-", #"{"order": {"total": [{"numeric": [">", 50]}]}}"#, scope: "MessageBody")
        try setPolicy("legacy-", #"{"a": ["1"], "b": ["1"], "c": ["1"], "d": ["1"], "e": ["1"], "f": ["1"]}"#)
        // Disabled endpoints whose policy does not match: filtered (decided first), not skipped.
        try setPolicy("off-", #"{"tier": ["silver"]}"#)
        try c.query("UPDATE endpoints SET enabled = false WHERE token LIKE 'off-%'")

        let transport = RecordingTransport()
        let warnings = Mutex<[[String: String]]>([])
        var configuration = testConfiguration(owner: "node-a", shardSize: 100)
        configuration.pageSize = 50
        configuration.log = Log("test") { level, message, fields in
            if level == .warning, message.hasPrefix("filter policy") { warnings.withLock { $0.append(fields) } }
        }
        let dispatcher = RunningDispatcher(Dispatcher(
            pool: fixture.pool, directory: TestDirectory(transports: ["android": transport]), configuration: configuration))
        let attributes = #"{"tier": {"DataType": "String", "StringValue": "gold"}, "price": {"DataType": "Number", "StringValue": "150"}}"#
        let message = try fixture.publishToTopic(#"{"order": {"total": 42}}"#, attributes: attributes)
        let status = try await fixture.waitForFinal(message, timeout: 30)
        await dispatcher.stop()

        let sentPrefixes = Set(transport.sends.map { String($0.token.prefix { $0 != "-" }) })
        #expect(sentPrefixes == ["gold", "plain", "body", "legacy"])
        #expect(transport.sendCount == 120 + 40 + 30 + 10)
        #expect(status.state == .completed)
        #expect(status.counters.filtered == 130 + 20 + 5)
        #expect(status.counters.accepted == 200)
        #expect(status.counters.failed == 0)
        #expect(status.counters.skipped == 0)
        #expect(status.counters.targeted == 355)
        #expect(status.counters.targeted == status.counters.finished)
        // The unusable policy is said once per shard worker that met it, never per delivery.
        let logged = warnings.withLock { $0 }
        #expect(!logged.isEmpty && logged.count <= 10)
        #expect(logged.allSatisfy { $0["reason"] == "FilterPolicy: Filter policy can not have more than 5 keys" })
    }
}
