import ClarionCore
import ClarionStore
import Foundation
import Testing
@testable import ClarionAPI

/// The device's time zone through the registration API (`TimeZone`) and events (`app.time_zone`), and a mobile app's
/// frequency cap and quiet hours through `/v1/mobile-apps` (issue 18, schema v22), over HTTP and PostgreSQL.
@Suite("Time zones and timing settings through registrations, events and mobile apps", .serialized)
struct TimeZoneRegistrationTests {
    static func zone(_ f: RegistrationFixture, application: Int64, token: String) async throws -> String? {
        try await EndpointRepository(pool: f.pool).find(applicationKey: application, token: token)?.attributes["TimeZone"]
    }

    static func errorField(_ result: ClientResult) -> String? {
        let object = try? JSONSerialization.jsonObject(with: Data(result.body)) as? [String: Any]
        return ((object?["error"] as? [String: Any])?["field"] as? String) ?? (object?["field"] as? String)
    }

    @Test("a registration's TimeZone becomes the endpoint's, a re-registration moves it, an unknown zone is 400 on TimeZone")
    func registration() async throws {
        try await RegistrationFixture.with { f in
            let item = { (zone: String) in
                String(f.item(user: "u1", fcm: "fcm-zone-1").dropLast()) + ",\"TimeZone\":\(jsonText(zone))}"
            }
            #expect(try await f.post(f.devices, item("Asia/Tokyo")).status == 202)
            await f.processAll()
            #expect(try await Self.zone(f, application: f.fcmApplication, token: "fcm-zone-1") == "Asia/Tokyo")
            #expect(try await f.post(f.devices, item("Europe/Berlin")).status == 202)
            await f.processAll()
            #expect(try await Self.zone(f, application: f.fcmApplication, token: "fcm-zone-1") == "Europe/Berlin")
            let bad = try await f.post(f.devices, item("Mars/Base"))
            #expect(bad.status == 400 && Self.errorField(bad) == "TimeZone", "\(bad.text)")
            // Without TimeZone the endpoint keeps its zone.
            #expect(try await f.post(f.devices, f.item(user: "u1", fcm: "fcm-zone-1")).status == 202)
            await f.processAll()
            #expect(try await Self.zone(f, application: f.fcmApplication, token: "fcm-zone-1") == "Europe/Berlin")
        }
    }

    @Test("an event's app.time_zone becomes the endpoint's; an unknown one is refused naming app.time_zone and changes nothing")
    func event() async throws {
        try await RegistrationFixture.with { f in
            let good = RegistrationEventTests.event(token: "fcm-ev-zone", set: ("app.time_zone", "\"America/Los_Angeles\""))
            let answer = try await f.post(f.base + "/v1/events", good)
            #expect(answer.status == 200, "\(answer.text)")
            #expect(try await Self.zone(f, application: f.fcmApplication, token: "fcm-ev-zone") == "America/Los_Angeles")
            let bad = try await f.post(f.base + "/v1/events",
                                       RegistrationEventTests.event(token: "fcm-ev-zone", set: ("app.time_zone", "\"PST\"")))
            #expect(bad.status == 400 && Self.errorField(bad) == "app.time_zone", "\(bad.text)")
            #expect(try await Self.zone(f, application: f.fcmApplication, token: "fcm-ev-zone") == "America/Los_Angeles")
        }
    }

    @Test("frequency_cap and quiet_hours are set, shown, refused when malformed (naming the field) and removed with null")
    func mobileAppSettings() async throws {
        try await RegistrationFixture.with { f in
            let path = "/v1/mobile-apps/\(f.app.externalID.lowercasedText)"
            let set = try await f.native("PATCH", path, """
                {"frequency_cap": {"max": 3, "window_seconds": 86400},
                 "quiet_hours": {"start": "22:00", "end": "08:00", "time_zone": "Europe/Berlin"}}
                """)
            #expect(set.status == 200, "\(set.text)")
            let shown = try #require(try JSONSerialization.jsonObject(with: Data(try await f.native("GET", path).body)) as? [String: Any])
            #expect((shown["frequency_cap"] as? [String: Any])?["max"] as? Int == 3)
            #expect((shown["frequency_cap"] as? [String: Any])?["window_seconds"] as? Int == 86_400)
            #expect((shown["quiet_hours"] as? [String: Any])?["start"] as? String == "22:00")
            #expect((shown["quiet_hours"] as? [String: Any])?["end"] as? String == "08:00")
            #expect((shown["quiet_hours"] as? [String: Any])?["time_zone"] as? String == "Europe/Berlin")
            // What the dispatcher reads with the application.
            let dispatch = try await FanOutJobs(pool: f.pool).applications([f.fcmApplication])
            #expect(dispatch.first?.frequencyCap == FrequencyCap(max: 3, windowSeconds: 86_400))
            #expect(dispatch.first?.quietHours == QuietHours(start: LocalClockTime("22:00")!, end: LocalClockTime("08:00")!))
            #expect(dispatch.first?.quietTimeZone == "Europe/Berlin")
            for (body, field) in [
                (#"{"frequency_cap": {"max": 0, "window_seconds": 86400}}"#, "frequency_cap"),
                (#"{"frequency_cap": {"max": 3}}"#, "frequency_cap"),
                (#"{"frequency_cap": {"max": 3, "window_seconds": 30}}"#, "frequency_cap"),
                (#"{"quiet_hours": {"start": "22:00", "end": "22:00"}}"#, "quiet_hours"),
                (#"{"quiet_hours": {"start": "25:00", "end": "08:00"}}"#, "quiet_hours"),
                (#"{"quiet_hours": {"start": "22:00", "end": "08:00", "time_zone": "CET+1"}}"#, "quiet_hours.time_zone"),
            ] {
                let refused = try await f.native("PATCH", path, body)
                #expect(refused.status == 400 && Self.errorField(refused) == field, "\(body): \(refused.text)")
            }
            let cleared = try await f.native("PATCH", path, #"{"frequency_cap": null, "quiet_hours": null}"#)
            let object = try #require(try JSONSerialization.jsonObject(with: Data(cleared.body)) as? [String: Any])
            #expect(object["frequency_cap"] is NSNull && object["quiet_hours"] is NSNull, "\(cleared.text)")
            #expect(try await FanOutJobs(pool: f.pool).applications([f.fcmApplication]).first?.frequencyCap == nil)
        }
    }
}
