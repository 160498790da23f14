import ClarionCore
import ClarionCrypto
import Foundation
import Testing
@testable import ClarionEmulator

@Suite struct EmulatorRecordTests {
    typealias F = EmulatorFixture

    @Test("Counters: per endpoint, per status and per reason; reset clears them")
    func counters() throws {
        let f = try F()
        let connection = f.connection()
        _ = f.emulator.handle(f.apnsRequest(), connection: connection)
        _ = f.emulator.handle(f.apnsRequest(), connection: connection)
        _ = f.emulator.handle(f.apnsRequest(token: String(repeating: "ab", count: 28) + "dead0410"), connection: connection)
        let token = f.fcmAccessToken()
        _ = f.emulator.handle(f.fcmSend(FCMEmulatorTests.message(#""token":"unregistered-x""#), accessToken: token), connection: connection)
        let stats = f.emulator.stats()
        #expect(stats["apns"].requests == 3)
        #expect(stats["apns"].statuses == ["200": 2, "410": 1])
        #expect(stats["apns"].reasons == ["Unregistered": 1])
        #expect(stats.accepted("apns") == 2)
        #expect(stats["fcm-oauth"].statuses == ["200": 1])
        #expect(stats["fcm"].reasons == ["UNREGISTERED": 1])
        #expect(stats.totalRequests == 5)
        f.emulator.reset()
        #expect(f.emulator.stats().totalRequests == 0)
        #expect(f.emulator.records().isEmpty)
    }

    @Test("Records: provider, token, headers, payload and status; the authorization header is redacted")
    func records() throws {
        let f = try F()
        let jwt = f.apnsJWT()
        _ = f.emulator.handle(f.apnsRequest(jwt: jwt, headers: [("apns-push-type", "alert")]), connection: f.connection())
        let record = try #require(f.emulator.records().first)
        #expect(record.endpoint == "apns")
        #expect(record.token == F.validToken)
        #expect(record.status == 200)
        #expect(record.headers["apns-push-type"] == "alert")
        #expect(record.headers["authorization"] == "<redacted>")
        #expect(record.payload == #"{"aps":{"alert":"hi"}}"#)
        let line = String(decoding: EmulatorRecorder.jsonLine(record), as: UTF8.self)
        #expect(!line.contains(jwt))
    }

    @Test("Records: OAuth form bodies keep their shape but not the assertion or client secret")
    func oauthRedaction() throws {
        let f = try F()
        let assertion = f.fcmAssertion()
        _ = f.emulator.handle(f.fcmTokenRequest(assertion: assertion), connection: f.connection())
        _ = f.emulator.handle(f.admTokenRequest(), connection: f.connection())
        let records = f.emulator.records()
        #expect(records.count == 2)
        #expect(records[0].payload.contains("assertion=%3Credacted%3E"))
        #expect(!records[0].payload.contains(assertion))
        #expect(records[1].payload.contains("client_secret=%3Credacted%3E"))
        #expect(!records[1].payload.contains(F.admSecret))
        #expect(records[1].payload.contains("client_id="))
    }

    @Test("Records: in-memory records are bounded by recordLimit and the overflow is counted")
    func recordLimit() throws {
        let f = try F { $0.recordLimit = 2 }
        let connection = f.connection()
        for _ in 0..<5 { _ = f.emulator.handle(f.apnsRequest(), connection: connection) }
        #expect(f.emulator.records().count == 2)
        #expect(f.emulator.stats().recordsDropped == 3)
    }

    @Test("Records: the record file gets one JSON line per request, rejected ones included")
    func recordFile() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("emu-records-\(UUID().uuidString).jsonl").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let f = try F {
            $0.recordPath = path
            $0.recordInMemory = false
        }
        _ = f.emulator.handle(f.apnsRequest(), connection: f.connection())
        _ = f.emulator.handle(f.apnsRequest(body: []), connection: f.connection())
        f.emulator.flushRecords()
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 2)
        let second = try #require((try? JSONValue.parse(String(lines[1]))))
        #expect(second["endpoint"] == "apns")
        #expect(second["status"]?.numberValue?.int64Value == 400)
        #expect(second["reason"] == "PayloadEmpty")
        #expect(second["token"]?.stringValue == F.validToken)
        #expect(f.emulator.records().isEmpty)
    }

    @Test("HTTP control: GET /_emulator/stats serves the counters as JSON; POST /_emulator/reset clears them")
    func controlEndpoints() throws {
        let f = try F()
        let connection = f.connection()
        _ = f.emulator.handle(f.apnsRequest(), connection: connection)
        let stats = f.emulator.handle(EmulatorRequest(method: "GET", path: "/_emulator/stats"), connection: connection)
        #expect(stats.status == 200)
        #expect(stats.json?["endpoints"]?["apns"]?["statuses"]?["200"]?.numberValue?.int64Value == 1)
        #expect(stats.json?["totalRequests"]?.numberValue?.int64Value == 1)
        let records = f.emulator.handle(EmulatorRequest(method: "GET", path: "/_emulator/records"), connection: connection)
        #expect(records.response?.bodyText.split(separator: "\n").count == 1)
        #expect(f.emulator.handle(EmulatorRequest(method: "POST", path: "/_emulator/reset"), connection: connection).status == 204)
        #expect(f.emulator.stats().totalRequests == 0)
        #expect(f.emulator.handle(EmulatorRequest(method: "GET", path: "/_emulator/nope"), connection: connection).status == 404)
    }

    @Test("Routing: an unknown path is 404 and counted as unknown")
    func unknownPath() throws {
        let f = try F()
        let decision = f.emulator.handle(EmulatorRequest(method: "POST", path: "/fcm/send"), connection: f.connection())
        #expect(decision.status == 404)
        #expect(f.emulator.stats()["unknown"].requests == 1)
    }

    @Test("Streams: an FCM request raises a fresh connection's limit from APNs' 1 to FCM's 100")
    func fcmRaisesLimit() throws {
        let f = try F()
        let connection = f.connection()
        #expect(connection.advertisedMaxConcurrentStreams == 1)
        let decision = f.emulator.handle(f.fcmTokenRequest(assertion: f.fcmAssertion()), connection: connection)
        #expect(decision.maxConcurrentStreams == 100)
        #expect(f.emulator.handle(f.fcmTokenRequest(assertion: f.fcmAssertion()), connection: connection).maxConcurrentStreams == nil)
    }

    @Test("Streams: without APNs keys a connection starts at the FCM/ADM limit")
    func noAPNsInitialLimit() throws {
        let f = try F { $0.apns.keys = [] }
        #expect(f.emulator.initialMaxConcurrentStreams == 100)
    }
}
