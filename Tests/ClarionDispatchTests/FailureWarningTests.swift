import ClarionCore
@testable import ClarionDispatch
import ClarionEmulator
import ClarionProviders
import ClarionStore
import ClarionTestSupport
import Foundation
import Synchronization
import Testing

/// A dispatcher's log lines, captured; each warning notes whether the state it reports was already committed
/// (read on a connection of its own when the line is written).
final class LogCapture: Sendable {
    struct Line: Sendable {
        let level: Log.Level
        let message: String
        let fields: [String: String]
        /// What `committed` said when the line was written (nil when it was not asked).
        let committed: Bool?
    }

    private let lines = Mutex<[Line]>([])
    private let committed: @Sendable (_ message: String, _ fields: [String: String]) -> Bool?

    init(committed: @escaping @Sendable (_ message: String, _ fields: [String: String]) -> Bool? = { _, _ in nil }) {
        self.committed = committed
    }

    var log: Log {
        Log("test") { [self] level, message, fields in
            let line = Line(level: level, message: message, fields: fields,
                            committed: level == .warning ? committed(message, fields) : nil)
            lines.withLock { $0.append(line) }
        }
    }

    var all: [Line] { lines.withLock { $0 } }

    func warnings(_ message: String) -> [Line] { all.filter { $0.level == .warning && $0.message == message } }
}

/// No silent failure: whatever the dispatcher disables or gives up on is written to the log once, with why.
@Suite("Warnings for what the dispatcher disables or gives up on", .serialized)
struct FailureWarningTests {
    /// PEM-shaped, base64 that decodes, but no certificate: passes a PEM check, fails when the pool loads it.
    static let garbageCA = "-----BEGIN CERTIFICATE-----\nZ2FyYmFnZQ==\n-----END CERTIFICATE-----\n"

    static func json(_ map: [String: String]) -> String {
        String(decoding: try! JSONSerialization.data(withJSONObject: map, options: [.sortedKeys]), as: UTF8.self)
    }

    /// A checker for `LogCapture`: is the resource a warning names already disabled (or the message final) in
    /// the database, as another connection sees it?
    static func committedCheck(_ url: String) -> @Sendable (String, [String: String]) -> Bool? {
        { message, fields in
            guard let c = try? PGConnection(conninfo: url) else { return nil }
            switch message {
            case Log.applicationDisabled:
                return (try? c.query("SELECT NOT enabled FROM platform_applications WHERE id = $1",
                                     [Int64(fields["application_key"] ?? "") ?? 0]).first?.bool(0)) ?? false
            case Log.endpointDisabled:
                return (try? c.query("SELECT NOT enabled FROM endpoints WHERE id = $1",
                                     [Int64(fields["endpoint_key"] ?? "") ?? 0]).first?.bool(0)) ?? false
            case Log.messageGivenUp, Log.deliveriesGivenUp:
                return (try? c.query("SELECT state IN ('Completed', 'Failed', 'Expired') FROM messages WHERE id = $1",
                                     [Int64(fields["message_key"] ?? "") ?? 0]).first?.bool(0)) ?? false
            default:
                return nil
            }
        }
    }

    // Rule (no silent failure; docs/security.md for the tokens): every platform application and endpoint the dispatcher disables,
    // and every message it finishes with deliveries given up, is exactly one warning, written after the state is
    // committed, naming the resource, the reason and the provider's status; no line carries a whole device token.
    @Test("through the emulator: one warning per disabled application (bad extra CA), disabled endpoint (410) and message given up, after the write, never a whole token")
    func oneWarningPerThingGivenUp() async throws {
        let harness = try EmulatorFanOutTests.Harness()
        var fixture = try FanOutFixture()
        try fixture.addApplication("ios", platform: "APNS", attributes: harness.apnsAttributes())
        // The user's report: an extra CA that cannot be loaded disables the application at its first delivery,
        // before anything is sent.
        try fixture.addApplication("android", platform: "GCM", attributes: Self.json([
            ProviderAttribute.providerEndpoint: harness.emulator.baseURL,
            ProviderAttribute.providerCACertificate: Self.garbageCA,
        ]))
        let c = try fixture.connection()
        let live = (1...3).map { EmulatorFanOutTests.apnsToken($0) }
        let dead = (4...5).map { EmulatorFanOutTests.apnsToken($0, suffix: "dead0410") }
        let direct = EmulatorFanOutTests.apnsToken(6, suffix: "dead0410")
        for token in live + dead + [direct] {
            try c.query("INSERT INTO endpoints (external_id, application, token) VALUES (gen_random_uuid(), $1, $2)",
                        [fixture.applications["ios"]!, token])
        }
        try c.query("""
            INSERT INTO subscriptions (external_id, topic, protocol, endpoint)
            SELECT gen_random_uuid(), $1, 'application', e.id FROM endpoints e WHERE e.application = $2 AND e.token <> $3
            """, [fixture.topic, fixture.applications["ios"]!, direct])
        try fixture.addEndpoints("android", prefix: "fcm-token-", count: 3)
        let androidTokens = (1...3).map { "fcm-token-\($0)" }

        let capture = LogCapture(committed: Self.committedCheck(fixture.url))
        var configuration = testConfiguration(owner: "node-a")
        configuration.log = capture.log
        let dispatcher = RunningDispatcher(Dispatcher(
            pool: fixture.pool, directory: harness.directory(fixture), configuration: configuration))
        let topicMessage = try fixture.publishToTopic(#"{"default":"hello","APNS":"{\"aps\":{\"alert\":\"hi\"}}"}"#)
        let topicStatus = try await fixture.waitForFinal(topicMessage)
        let directMessage = try fixture.publishToEndpoint(token: direct)
        let directStatus = try await fixture.waitForFinal(directMessage)
        await dispatcher.stop()
        await harness.close()

        #expect(topicStatus.state == .completed && topicStatus.counters.accepted == 3 && topicStatus.counters.failed == 5)
        #expect(directStatus.state == .failed)

        let applications = capture.warnings(Log.applicationDisabled)
        #expect(applications.count == 1)
        let app = try #require(applications.first)
        #expect(app.fields["application"] == "android" && app.fields["platform"] == "GCM")
        #expect(app.fields["account"] == "123456789012" && app.fields["outcome"] == "credentials_invalid")
        #expect(app.fields["reason"]?.contains("ProviderCACertificate") == true, "\(app.fields)")
        #expect(app.fields["provider_status"] == nil, "nothing was sent: no provider answer")
        #expect(app.fields["disabled_at"] != nil)

        let endpoints = capture.warnings(Log.endpointDisabled)
        #expect(endpoints.count == 3)
        let disabledIDs = Set(try c.query("SELECT external_id::text FROM endpoints WHERE NOT enabled").rows.compactMap { $0.string(0) })
        #expect(Set(endpoints.compactMap { $0.fields["endpoint"] }) == disabledIDs && disabledIDs.count == 3)
        for line in endpoints {
            #expect(line.fields["reason"] == "Unregistered" && line.fields["outcome"] == "token_invalid")
            #expect(line.fields["provider_status"] == "410", "the provider's answer: \(line.fields)")
            #expect(line.fields["application"] == "ios" && line.fields["platform"] == "APNS")
            #expect(line.fields["token_prefix"]?.count == 9, "8 characters and an ellipsis")
            #expect(line.fields["endpoint_key"] != nil && line.fields["message_key"] != nil)
        }

        let completedWithFailures = capture.warnings(Log.deliveriesGivenUp)
        #expect(completedWithFailures.count == 1)
        let topicLine = try #require(completedWithFailures.first)
        #expect(topicLine.fields["message_key"] == String(topicMessage) && topicLine.fields["state"] == "Completed")
        #expect(topicLine.fields["failed"] == "5" && topicLine.fields["accepted"] == "3")
        #expect(topicLine.fields["failures"]?.contains("Unregistered=2") == true, "\(topicLine.fields)")
        let givenUp = capture.warnings(Log.messageGivenUp)
        #expect(givenUp.count == 1)
        #expect(givenUp.first?.fields["message_key"] == String(directMessage) && givenUp.first?.fields["state"] == "Failed")
        #expect(givenUp.first?.fields["failures"] == "Unregistered=1")

        // The delivery log keeps the provider's status with each failure too.
        let logged = try c.query("SELECT count(*) FILTER (WHERE provider_status = 410), count(*) FROM delivery_log WHERE status = 'FAILURE'").first!
        #expect(logged.int64(0) == 3 && logged.int64(1) == 6, "3 refused by APNs with 410; 3 never sent (no status)")

        let warnings = capture.all.filter { $0.level == .warning }
        #expect(warnings.allSatisfy { $0.committed == true }, "a warning came before its write: \(warnings.filter { $0.committed != true })")
        for token in live + dead + [direct] + androidTokens {
            #expect(capture.all.allSatisfy { line in !line.fields.values.contains { $0.contains(token) } }, "token \(token) in a log line")
        }
    }

    // Rule (no silent failure): a disable made by the retry worker is one warning too, a message that ends with a
    // delivery given up is one warning, and a later message that delivers everything (the disabled endpoint
    // skipped) adds none.
    @Test("a retry that finds the token dead: one endpoint warning, one message warning; a clean message none")
    func retryDisableWarnsOnce() async throws {
        var fixture = try FanOutFixture()
        try fixture.addApplication("android", platform: "GCM")
        try fixture.addEndpoints("android", prefix: "and-", count: 3)
        let transport = RecordingTransport { token, attempt in
            guard token == "and-1" else { return .accepted(providerID: nil) }
            return attempt == 1 ? .retryable(reason: "Unavailable", retryAfter: nil)
                                : .tokenInvalid(reason: "UNREGISTERED", invalidSince: nil)
        }
        let capture = LogCapture(committed: FailureWarningTests.committedCheck(fixture.url))
        var configuration = testConfiguration(owner: "node-a")
        configuration.log = capture.log
        let dispatcher = RunningDispatcher(Dispatcher(
            pool: fixture.pool, directory: TestDirectory(transports: ["android": transport]), configuration: configuration))
        let first = try await fixture.waitForFinal(try fixture.publishToTopic())
        let second = try await fixture.waitForFinal(try fixture.publishToTopic())
        await dispatcher.stop()

        #expect(first.state == .completed && first.counters.failed == 1 && first.counters.accepted == 2)
        #expect(second.state == .completed && second.counters.failed == 0 && second.counters.skipped == 1)
        let endpoints = capture.warnings(Log.endpointDisabled)
        #expect(endpoints.count == 1)
        #expect(endpoints.first?.fields["reason"] == "UNREGISTERED" && endpoints.first?.fields["token_prefix"] == "an…")
        #expect(capture.warnings(Log.deliveriesGivenUp).count == 1)
        #expect(capture.warnings(Log.messageGivenUp).isEmpty)
        #expect(capture.warnings(Log.applicationDisabled).isEmpty)
        #expect(capture.all.filter { $0.level == .warning }.allSatisfy { $0.committed == true })
    }
}
