import ClarionCore
import ClarionDispatch
import ClarionStore
import Foundation
import Synchronization
import Testing
@testable import ClarionAPI
@testable import ClarionWorkers

/// Records every push handed to it and accepts it at once: stands in for the provider pools (this test target does
/// not link the emulator), so the dispatcher's whole path (plan, claim, stream, render, submit, checkpoint) runs.
final class RecordingDirectory: PushTransportDirectory, PushTransport {
    private let sent = Mutex<[String]>([])

    func resolve(_ application: DispatchApplication) async -> TransportResolution { .ready(self, RenderSettings()) }

    func submit(_ push: RenderedPush, deliveries: [PushDelivery], sink: any PushResultSink) -> Int {
        sent.withLock { $0.append(contentsOf: deliveries.map(\.token)) }
        sink.receive(deliveries.map { PushResult(tag: $0.tag, outcome: .accepted(providerID: nil)) })
        return deliveries.count
    }

    var tokens: [String] { sent.withLock { $0 } }
}

@Suite("User and audience publishes", .serialized)
struct RegistrationAudienceTests {
    /// Devices of the fixture's app: (platform application, token, user, language, version, os, refreshed days ago).
    static func seed(_ f: RegistrationFixture) async throws {
        let rows: [(Int64, String, String, String?, String?, String?, Int)] = [
            (f.fcmApplication, "fcm-u1-en-2.0", "u1", "en", "2.0.0", "android", 1),
            (f.apnsApplication, "apns-u1-de-1.9", "u1", "de", "1.9", "ios", 1),
            (f.fcmApplication, "fcm-u2-en-1.10", "u2", "en", "1.10.0", "android", 1),
            (f.fcmApplication, "fcm-u3-fr-2.1", "u3", "fr", "2.1", "android", 1),
            (f.apnsApplication, "apns-u4-en-3.0", "u4", "EN", "3.0.0", "ios", 1),
            (f.fcmApplication, "fcm-u5-en-2.0-stale", "u5", "en", "2.0", "android", 300),
            (f.fcmApplication, "fcm-u6-none", "u6", nil, nil, nil, 1),
        ]
        try await f.pool.withConnection { (c) throws(StoreError) in
            for (application, token, user, language, version, os, days) in rows {
                _ = try c.query("""
                    INSERT INTO endpoints (external_id, application, token, user_id, language, app_version, os_type, token_refreshed_at)
                    VALUES ($1, $2, $3, $4, $5, $6, $7, now() - make_interval(days => $8))
                    """, [UUID(), application, token, user, language, version, os, days])
            }
        }
    }

    /// Publishes through the HTTP route, runs a dispatcher until the message is final, returns the tokens sent to.
    static func publish(_ f: RegistrationFixture, _ body: String) async throws -> (tokens: [String], status: MessageStatus) {
        let result = try await curl(f.base + "/v1/publish/audience", method: "POST",
                                    headers: ["Authorization": "Bearer \(f.apiKey)", "Content-Type": "application/json"],
                                    body: Array(body.utf8))
        #expect(result.status == 202, "\(result.text)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.body)) as? [String: Any])
        let id = try #require(UUID(uuidString: object["message_id"] as? String ?? ""))
        let directory = RecordingDirectory()
        let dispatcher = Dispatcher(pool: f.pool, directory: directory, configuration: DispatcherConfiguration(
            shardWorkers: 2, checkpointInterval: 0.05, shardSize: 2, maxPollInterval: 0.05))
        let task = Task { await dispatcher.run() }
        var status: MessageStatus?
        for _ in 0..<400 {
            status = try await f.context.jobs.messageStatus(externalID: id)
            if status?.state.isFinal == true { break }
            try await Task.sleep(for: .milliseconds(25))
        }
        dispatcher.shutdown()
        await task.value
        return (directory.tokens.sorted(), try #require(status))
    }

    @Test("A user publish reaches exactly that user's fresh endpoints on every platform of the app")
    func userPublish() async throws {
        try await RegistrationFixture.with { f in
            try await Self.seed(f)
            let app = jsonText(f.app.externalID.uuidString.lowercased())
            let (tokens, status) = try await Self.publish(f, "{\"app\":\(app),\"user_id\":\"u1\",\"message\":\"hello\"}")
            #expect(tokens == ["apns-u1-de-1.9", "fcm-u1-en-2.0"])
            #expect(status.state == .completed)
            #expect(status.counters.accepted == 2)
            let (stale, staleStatus) = try await Self.publish(f, "{\"app\":\(app),\"user_id\":\"u5\",\"message\":\"hello\"}")
            #expect(stale.isEmpty, "an endpoint not refreshed for 270 days is skipped")
            #expect(staleStatus.counters.skipped == 1)
        }
    }

    @Test("An audience publish filters by language, app version range and OS type")
    func audiencePublish() async throws {
        try await RegistrationFixture.with { f in
            try await Self.seed(f)
            let app = jsonText(f.app.externalID.uuidString.lowercased())
            let english = try await Self.publish(f, "{\"app\":\(app),\"languages\":[\"en\"],\"message\":\"hi\"}")
            #expect(english.tokens == ["apns-u4-en-3.0", "fcm-u1-en-2.0", "fcm-u2-en-1.10"])
            #expect(english.status.counters.skipped == 1, "the stale English endpoint is counted, not sent")
            let range = try await Self.publish(f, "{\"app\":\(app),\"app_version\":{\"min\":\"1.10\",\"max\":\"2.0\"},\"message\":\"hi\"}")
            #expect(range.tokens == ["fcm-u1-en-2.0", "fcm-u2-en-1.10"])
            let android = try await Self.publish(f, "{\"app\":\(app),\"os_types\":[\"android\"],\"languages\":[\"en\",\"fr\"],\"app_version\":{\"min\":\"2\"},\"message\":\"hi\"}")
            #expect(android.tokens == ["fcm-u1-en-2.0", "fcm-u3-fr-2.1"])
            let everyone = try await Self.publish(f, "{\"app\":\(app),\"message\":{\"default\":\"hi\"}}")
            #expect(everyone.tokens.count == 6)
        }
    }

    // Issue 18: the mobile app's frequency cap and quiet hours apply to an audience publish that opts in (it is not a
    // campaign, so it is exempt by default), with the same counts as a topic's fan-out.
    @Test("An audience publish opting in is capped by its app's frequency cap and skipped in its quiet hours; one that does not is exempt")
    func capAndQuietHours() async throws {
        try await RegistrationFixture.with { f in
            try await Self.seed(f)
            let app = jsonText(f.app.externalID.uuidString.lowercased())
            let path = "/v1/mobile-apps/\(f.app.externalID.lowercasedText)"
            #expect(try await f.native("PATCH", path, #"{"frequency_cap": {"max": 1, "window_seconds": 3600}}"#).status == 200)
            let english = "{\"app\":\(app),\"languages\":[\"en\"],\"message\":\"hi\""
            let first = try await Self.publish(f, english + ",\"frequency_cap\":true}")
            #expect(first.tokens == ["apns-u4-en-3.0", "fcm-u1-en-2.0", "fcm-u2-en-1.10"])
            let second = try await Self.publish(f, english + ",\"frequency_cap\":true}")
            #expect(second.tokens.isEmpty)
            #expect(second.status.counters.capped == 3 && second.status.counters.accepted == 0)
            let exempt = try await Self.publish(f, english + "}")
            #expect(exempt.tokens.count == 3 && exempt.status.counters.capped == 0)

            // Quiet hours around the current UTC time (the endpoints have no zone: the app's quiet-hours zone).
            var utc = Calendar(identifier: .gregorian)
            utc.timeZone = TimeZone(identifier: "UTC")!
            let now = Date()
            func clock(_ date: Date) -> String {
                let parts = utc.dateComponents([.hour, .minute], from: date)
                return String(format: "%02d:%02d", parts.hour!, parts.minute!)
            }
            let quiet = #"{"frequency_cap": null, "quiet_hours": {"start": "\#(clock(now.addingTimeInterval(-3600)))", "end": "\#(clock(now.addingTimeInterval(3600)))", "time_zone": "UTC"}}"#
            let set = try await f.native("PATCH", path, quiet)
            #expect(set.status == 200, "\(set.text)")
            let skipped = try await Self.publish(f, english + ",\"quiet_hours\":\"skip\"}")
            #expect(skipped.tokens.isEmpty)
            #expect(skipped.status.counters.quietSkipped == 3, "\(skipped.status.counters)")
            let ignored = try await Self.publish(f, english + "}")
            #expect(ignored.tokens.count == 3)
        }
    }

    // Issue 18: "`send_at_local` ('09:00'): delivered at that local time in each endpoint's time zone ... Endpoints
    // without one use the campaign's fallback zone. The fan-out is planned per zone, not per endpoint."
    @Test("An audience publish with send_at_local stores one scheduled message per zone of the app's devices, each due at its zone's 09:00 and sending only to the matching devices in its zone")
    func sendAtLocal() async throws {
        try await RegistrationFixture.with { f in
            try await Self.seed(f)
            try await f.pool.withConnection { (c) throws(StoreError) in
                _ = try c.query("UPDATE endpoints SET attributes = attributes || '{\"TimeZone\": \"Asia/Tokyo\"}' WHERE token = 'fcm-u1-en-2.0'")
                _ = try c.query("UPDATE endpoints SET attributes = attributes || '{\"TimeZone\": \"America/Los_Angeles\"}' WHERE token IN ('apns-u4-en-3.0', 'fcm-u3-fr-2.1')")
            }
            let app = jsonText(f.app.externalID.uuidString.lowercased())
            func call(_ body: String) async throws -> ClientResult {
                try await curl(f.base + "/v1/publish/audience", method: "POST",
                               headers: ["Authorization": "Bearer \(f.apiKey)", "Content-Type": "application/json"],
                               body: Array(body.utf8))
            }
            let both = try await call("{\"app\":\(app),\"message\":\"x\",\"send_at_local\":\"09:00\",\"send_at\":\"2030-01-01T00:00:00Z\"}")
            #expect(both.status == 400 && both.text.contains("\"field\":\"send_at_local\""), "\(both.text)")
            let bad = try await call("{\"app\":\(app),\"message\":\"x\",\"send_at_local\":\"9:00\"}")
            #expect(bad.status == 400 && bad.text.contains("\"field\":\"send_at_local\""), "\(bad.text)")

            let now = Date()
            let result = try await call("{\"app\":\(app),\"languages\":[\"en\"],\"message\":\"good morning\",\"send_at_local\":\"09:00\",\"fallback_time_zone\":\"Europe/Berlin\"}")
            #expect(result.status == 202, "\(result.text)")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(result.body)) as? [String: Any])
            let units = try #require(object["messages"] as? [[String: Any]])
            // Zones of the app's devices (the language filter applies when each unit is sent): Tokyo, Los Angeles,
            // and Berlin for the devices without one.
            #expect(units.compactMap { $0["time_zone"] as? String }.sorted() == ["America/Los_Angeles", "Asia/Tokyo", "Europe/Berlin"])
            var ids: [String: UUID] = [:]
            for unit in units {
                let zone = try #require(unit["time_zone"] as? String)
                let due = try #require((unit["send_at"] as? String).flatMap { try? Date($0, strategy: .iso8601) })
                let expected = LocalClockTime("09:00")!.next(after: now, in: TimeZone(identifier: zone)!)
                #expect(abs(due.timeIntervalSince(expected)) < 2, "\(zone): \(due) vs \(expected)")
                #expect(unit["state"] as? String == "Scheduled")
                ids[zone] = try #require(UUID(uuidString: unit["message_id"] as? String ?? ""))
            }
            #expect(try await f.count("SELECT count(*) FROM messages WHERE state = 'Scheduled' AND target_kind = 'audience'") == 3)

            // Their times come (brought forward in the store): each unit sends to its zone's English devices only.
            try await f.pool.withConnection { (c) throws(StoreError) in
                _ = try c.query("UPDATE messages SET send_at = now() WHERE state = 'Scheduled'")
            }
            let directory = RecordingDirectory()
            let dispatcher = Dispatcher(pool: f.pool, directory: directory, configuration: DispatcherConfiguration(
                shardWorkers: 2, checkpointInterval: 0.05, shardSize: 2, maxPollInterval: 0.05))
            let task = Task { await dispatcher.run() }
            var statuses: [String: MessageStatus] = [:]
            for _ in 0..<400 {
                for (zone, id) in ids { statuses[zone] = try await f.context.jobs.messageStatus(externalID: id) }
                if statuses.values.allSatisfy({ $0.state.isFinal }) { break }
                try await Task.sleep(for: .milliseconds(25))
            }
            dispatcher.shutdown()
            await task.value
            #expect(directory.tokens.sorted() == ["apns-u4-en-3.0", "fcm-u1-en-2.0", "fcm-u2-en-1.10"])
            #expect(statuses["Asia/Tokyo"]?.counters.accepted == 1 && statuses["Asia/Tokyo"]?.counters.targeted == 1)
            #expect(statuses["America/Los_Angeles"]?.counters.accepted == 1 && statuses["America/Los_Angeles"]?.counters.targeted == 1)
            // Berlin's unit: the unzoned English devices (u5's is stale: counted skipped, not sent).
            #expect(statuses["Europe/Berlin"]?.counters.accepted == 1 && statuses["Europe/Berlin"]?.counters.skipped == 1)
            #expect(statuses.values.allSatisfy { $0.state == .completed })
        }
    }

    @Test("Audience publishes refuse what they cannot send, naming the field")
    func refusals() async throws {
        try await RegistrationFixture.with { f in
            let app = jsonText(f.app.externalID.uuidString.lowercased())
            func call(_ body: String, key: String? = nil) async throws -> ClientResult {
                try await curl(f.base + "/v1/publish/audience", method: "POST",
                               headers: ["Authorization": "Bearer \(key ?? f.apiKey)", "Content-Type": "application/json"],
                               body: Array(body.utf8))
            }
            #expect(try await call("{\"app\":\(app),\"message\":\"x\"}", key: "clk_wrong").status == 401)
            for (body, field) in [("{\"message\":\"x\"}", "app"), ("{\"app\":\(app)}", "message"),
                                  ("{\"app\":\(app),\"languages\":[],\"message\":\"x\"}", "languages"),
                                  ("{\"app\":\(app),\"app_version\":{\"min\":\"beta\"},\"message\":\"x\"}", "app_version.min"),
                                  ("{\"app\":\(app),\"message\":{\"GCM\":\"{}\"}}", "message.APNS")] {
                let result = try await call(body)
                #expect(result.status == 400, "\(body): \(result.text)")
                #expect(result.text.contains("\"field\":\"\(field)\""), "\(body): \(result.text)")
            }
            #expect(try await call("{\"app\":\(jsonText(UUID().uuidString)),\"message\":\"x\"}").status == 404)
            #expect(try await f.count("SELECT count(*) FROM messages") == 0)
        }
    }

    @Test("Version parts compare numerically")
    func versionParts() {
        #expect(AudienceFilter.versionParts("1.10.0") == [1, 10, 0, 0])
        #expect(AudienceFilter.versionParts("v2") == [2, 0, 0, 0])
        #expect(AudienceFilter.versionParts("3.1.4-beta.2") == [3, 1, 4, 2])
        #expect(AudienceFilter.versionParts("beta") == nil)
    }
}

@Suite("Mobile apps over the native API", .serialized)
struct RegistrationMobileAppTests {
    @Test("POST /v1/mobile-apps and /tokens with the account's API key; the token then registers devices")
    func createAppAndToken() async throws {
        try await RegistrationFixture.with { f in
            let headers = ["Authorization": "Bearer \(f.apiKey)", "Content-Type": "application/json"]
            let created = try await curl(f.base + "/v1/mobile-apps", method: "POST", headers: headers,
                                         body: Array("{\"name\":\"news\",\"fcm_application\":\"GCM:android\",\"firebase_project_id\":\"p2\",\"dry_run_validation\":true}".utf8))
            #expect(created.status == 201, "\(created.text)")
            let app = try #require(try JSONSerialization.jsonObject(with: Data(created.body)) as? [String: Any])
            let id = try #require(app["id"] as? String)
            #expect(app["dry_run_validation"] as? Bool == true)
            let token = try await curl(f.base + "/v1/mobile-apps/\(id)/tokens", method: "POST", headers: headers)
            #expect(token.status == 201)
            let secret = try #require((try JSONSerialization.jsonObject(with: Data(token.body)) as? [String: Any])?["token"] as? String)
            #expect(secret.hasPrefix("cmt_"))
            let registered = try await f.post(f.devices, f.item(user: "u", fcm: "tok", token: secret, app: UUID(uuidString: id)!),
                                              headers: ["x-ms-track-registration": "true"])
            #expect(registered.status == 202)
            #expect(try await f.count("SELECT count(*) FROM registration_requests") == 1)
            // Revoked, the token registers nothing more.
            let tokenID = try #require((try JSONSerialization.jsonObject(with: Data(token.body)) as? [String: Any])?["id"] as? String)
            #expect(try await curl(f.base + "/v1/mobile-apps/\(id)/tokens/\(tokenID)", method: "DELETE", headers: headers).status == 204)
            #expect(try await curl(f.base + "/v1/mobile-apps/\(id)/tokens/999999", method: "DELETE", headers: headers).status == 404)
            _ = try await f.post(f.devices, f.item(user: "u", fcm: "tok2", token: secret, app: UUID(uuidString: id)!))
            #expect(try await f.count("SELECT count(*) FROM registration_requests") == 1)

            #expect(try await curl(f.base + "/v1/mobile-apps", method: "POST", headers: ["Content-Type": "application/json"],
                                   body: Array("{\"name\":\"x\"}".utf8)).status == 401)
            let wrongPlatform = try await curl(f.base + "/v1/mobile-apps", method: "POST", headers: headers,
                                               body: Array("{\"name\":\"x\",\"apns_application\":\"GCM:android\"}".utf8))
            #expect(wrongPlatform.status == 400)
            #expect(wrongPlatform.text.contains("\"field\":\"apns_application\""))
            let duplicate = try await curl(f.base + "/v1/mobile-apps", method: "POST", headers: headers,
                                           body: Array("{\"name\":\"news\"}".utf8))
            #expect(duplicate.status == 409)
            #expect(try await curl(f.base + "/v1/mobile-apps/\(UUID().uuidString)/tokens", method: "POST", headers: headers).status == 404)
        }
    }
}

/// Captures the rendered push a dry run submits and answers with a scripted outcome.
final class CapturingDirectory: PushTransportDirectory, PushTransport {
    private let pushes = Mutex<[(RenderedPush, String)]>([])
    let outcome: DeliveryOutcome

    init(outcome: DeliveryOutcome) { self.outcome = outcome }

    func resolve(_ application: DispatchApplication) async -> TransportResolution {
        .ready(self, RenderSettings(apnsBundleID: "com.example.shop"))
    }

    func submit(_ push: RenderedPush, deliveries: [PushDelivery], sink: any PushResultSink) -> Int {
        pushes.withLock { $0.append(contentsOf: deliveries.map { (push, $0.token) }) }
        let outcome = self.outcome
        DispatchQueue.global().async { sink.receive(deliveries.map { PushResult(tag: $0.tag, outcome: outcome) }) }
        return deliveries.count
    }

    var captured: [(RenderedPush, String)] { pushes.withLock { $0 } }
}

@Suite("Registration dry runs", .serialized)
struct RegistrationDryRunTests {
    @Test("FCM is asked with validate_only, APNs with a background push carrying only content-available")
    func dryRunPushes() async throws {
        try await RegistrationFixture.with { f in
            let directory = CapturingDirectory(outcome: .accepted(providerID: nil))
            let validator = TransportDryRunValidator(directory: directory, jobs: f.context.jobs)
            #expect(await validator.validate(applicationKey: f.fcmApplication, token: "fcm-dry").isDelivered)
            #expect(await validator.validate(applicationKey: f.apnsApplication, token: "apns-dry").isDelivered)
            let captured = directory.captured
            #expect(captured.map(\.1) == ["fcm-dry", "apns-dry"])
            let fcm = try #require(try JSONSerialization.jsonObject(with: Data(captured[0].0.body(token: "fcm-dry"))) as? [String: Any])
            #expect(fcm["validate_only"] as? Bool == true)
            #expect((fcm["message"] as? [String: Any])?["token"] as? String == "fcm-dry")
            #expect((fcm["message"] as? [String: Any])?["notification"] == nil, "nothing shows on the device")
            let apns = captured[1].0
            #expect(String(decoding: apns.body(token: "apns-dry"), as: UTF8.self) == "{\"aps\":{\"content-available\":1}}")
            guard case .apns(let headers) = apns.request else { Issue.record("not an APNs request"); return }
            #expect(headers.pushType == .background)

            let refusing = TransportDryRunValidator(directory: CapturingDirectory(outcome: .tokenInvalid(reason: "BadDeviceToken", invalidSince: nil)),
                                                    jobs: f.context.jobs)
            #expect(await refusing.validate(applicationKey: f.fcmApplication, token: "x") == .tokenInvalid(reason: "BadDeviceToken", invalidSince: nil))
        }
    }
}
