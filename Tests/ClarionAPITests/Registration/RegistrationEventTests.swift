import ClarionCore
import ClarionStore
import Foundation
import Testing
@testable import ClarionAPI

@Suite("Mobile event ingestion over HTTP", .serialized)
struct RegistrationEventTests {
    /// A complete event; `drop` removes a member by dotted path, `set` replaces one with raw JSON.
    static func event(type: String = "fcm_registration_token_registered", user: String = "user-1", token: String = "fcm-A",
                      model: String = "Pixel 8", language: String = "en", appVersion: String = "2.3.1",
                      drop: String? = nil, set: (String, String)? = nil) -> String {
        var members: [(String, String)] = [
            ("user_id", jsonText(user)), ("event_type", jsonText(type)), ("event_timestamp", "\"2026-11-30T10:00:00Z\""),
            ("version", "\"1.0\""), ("session_id", "\"s-1\""),
            ("event_data", "{\"fcm_registration_token_refresh_timestamp\":\"2026-11-30T09:59:58.123Z\"}"),
            ("app", "{\"id\":\"com.example.shop\",\"name\":\"Shop\",\"version\":\(jsonText(appVersion)),\"language\":\(jsonText(language))}"),
            ("os", "{\"type\":\"android\",\"version\":\"14\"}"),
            ("device", "{\"manufacturer\":\"Google\",\"model\":\(jsonText(model))}"),
            ("firebase", "{\"project_id\":\"proj-1\",\"registration_token\":\(jsonText(token))}"),
        ]
        func apply(_ path: String, _ replacement: String?) {
            let parts = path.split(separator: ".").map(String.init)
            guard let index = members.firstIndex(where: { $0.0 == parts[0] }) else {
                if let replacement { members.append((parts[0], replacement)) }
                return
            }
            if parts.count == 1 {
                if let replacement { members[index].1 = replacement } else { members.remove(at: index) }
                return
            }
            var object = try! JSONSerialization.jsonObject(with: Data(members[index].1.utf8)) as! [String: Any]
            if let replacement {
                object[parts[1]] = try! JSONSerialization.jsonObject(with: Data(replacement.utf8), options: [.fragmentsAllowed])
            } else {
                object.removeValue(forKey: parts[1])
            }
            members[index].1 = String(decoding: try! JSONSerialization.data(withJSONObject: object), as: UTF8.self)
        }
        if let drop { apply(drop, nil) }
        if let set { apply(set.0, set.1) }
        return "{" + members.map { "\(jsonText($0.0)):\($0.1)" }.joined(separator: ",") + "}"
    }

    /// Rule (the event collector's documentation): the message names the property by its own name,
    /// `validation: registration_token is required property` for a field nested under `firebase`; Clarion adds the
    /// full path as `field`, which the collector's clients ignore.
    @Test("Every required field missing in turn is 400 'validation: <property> is required property', its path in 'field'")
    func requiredFields() async throws {
        try await RegistrationFixture.with { f in
            let required = ["user_id", "event_type", "event_timestamp", "version", "app", "app.id", "app.name", "app.version",
                            "os", "os.type", "firebase", "firebase.project_id", "firebase.registration_token"]
            for path in ["/meiro_mobile", "/v1/events"] {
                for field in required {
                    let result = try await f.post(f.base + path, Self.event(drop: field))
                    #expect(result.status == 400, "\(field)")
                    let name = field.split(separator: ".").last!
                    #expect(result.text == "{\"message\":\"validation: \(name) is required property\",\"status\":\"error\",\"field\":\"\(field)\"}",
                            "\(field): \(result.text)")
                }
            }
            // The refresh needs event_data and its refresh timestamp; the registration does not.
            for field in ["event_data", "event_data.fcm_registration_token_refresh_timestamp"] {
                let refreshed = try await f.post(f.base + "/meiro_mobile", Self.event(type: "fcm_registration_token_refreshed", drop: field))
                let name = field.split(separator: ".").last!
                #expect(refreshed.text == "{\"message\":\"validation: \(name) is required property\",\"status\":\"error\",\"field\":\"\(field)\"}")
            }
            let registered = try await f.post(f.base + "/meiro_mobile", Self.event(drop: "event_data"))
            #expect(registered.status == 200, "\(registered.text)")
            // Optional members may be absent.
            for field in ["session_id", "app.language", "os.version", "device", "device.model"] {
                let result = try await f.post(f.base + "/v1/events", Self.event(drop: field))
                #expect(result.status == 200, "\(field): \(result.text)")
            }
        }
    }

    @Test("Wrong types, enums, formats and unknown event types have exact messages")
    func wrongValues() async throws {
        try await RegistrationFixture.with { f in
            let cases: [((String, String), String)] = [
                (("user_id", "5"), "user_id must be a string"),
                (("event_type", "\"app_opened\""), "event_type must be one of [fcm_registration_token_registered fcm_registration_token_refreshed]"),
                (("event_timestamp", "\"yesterday\""), "event_timestamp must be an ISO-8601 date-time"),
                (("app", "[]"), "app must be an object"),
                (("app.language", "\"eng\""), "language must be a 2-letter ISO-639-1 code"),
                (("os.type", "\"windows\""), "type must be one of [android ios]"),
                (("firebase.registration_token", "true"), "registration_token must be a string"),
                (("event_data", "\"x\""), "event_data must be an object"),
            ]
            for ((path, value), message) in cases {
                let result = try await f.post(f.base + "/meiro_mobile", Self.event(set: (path, value)))
                #expect(result.status == 400, "\(path)")
                #expect(result.text == "{\"message\":\"validation: \(message)\",\"status\":\"error\",\"field\":\"\(path)\"}",
                        "\(path): \(result.text)")
            }
            let notJSON = try await f.post(f.base + "/meiro_mobile", "nope")
            #expect(notJSON.status == 400)
            #expect(notJSON.text.hasPrefix("{\"message\":\"validation: "))
            let unknownProject = try await f.post(f.base + "/meiro_mobile", Self.event(set: ("firebase.project_id", "\"other\"")))
            #expect(unknownProject.status == 404)
            #expect(try await f.count("SELECT count(*) FROM endpoints") == 0)
        }
    }

    @Test("A registration creates the FCM endpoint with its details; a new token for the same user keeps the subscriptions")
    func tokenRefreshKeepsSubscriptions() async throws {
        try await RegistrationFixture.with { f in
            let created = try await f.post(f.base + "/meiro_mobile", Self.event(token: "fcm-A"))
            #expect(created.status == 200)
            #expect(created.text == "{\"status\":\"ok\"}")
            let endpoint = try #require(try await f.context.registrations.pool.withConnection { (c) throws(StoreError) -> Int64? in
                try c.query("SELECT id FROM endpoints WHERE token = 'fcm-A'").first?.int64(0)
            })
            let details = try #require(try await f.context.devices.details(endpointKey: endpoint))
            #expect(details.userID == "user-1")
            #expect(details.appVersion == "2.3.1")
            #expect(details.language == "en")
            #expect(details.osType == "android")
            #expect(details.osVersion == "14")
            #expect(details.manufacturer == "Google")
            #expect(details.model == "Pixel 8")
            #expect(abs(details.refreshedAt.timeIntervalSince1970 - 1_796_032_800) < 0.001)  // 2026-11-30T10:00:00Z

            // The endpoint is subscribed to a topic.
            let account = try await f.context.accounts.account(accountID: RegistrationFixture.accountID)
            let topic = try await TopicRepository(pool: f.pool).create(accountKey: account.key, region: "us-east-1", name: "news", attributes: [:]).0
            let subscription = try await SubscriptionRepository(pool: f.pool).subscribe(
                topicKey: topic.key, endpointKey: endpoint, externalID: UUID(), filterPolicy: nil, attributes: [:]).0

            // The same device refreshes its token.
            let refreshed = try await f.post(f.base + "/v1/events", Self.event(type: "fcm_registration_token_refreshed", token: "fcm-B",
                                                                               appVersion: "2.4.0"))
            #expect(refreshed.status == 200, "\(refreshed.text)")
            #expect(try await f.endpoints(f.fcmApplication).map(\.token) == ["fcm-B"])
            let after = try #require(try await f.context.devices.details(endpointKey: endpoint))
            #expect(after.token == "fcm-B")
            #expect(after.appVersion == "2.4.0")
            #expect(abs(after.refreshedAt.timeIntervalSince1970 - 1_796_032_798.123) < 0.001)
            let kept = try await SubscriptionRepository(pool: f.pool).get(externalID: subscription.externalID)
            #expect(kept.endpointKey == endpoint)

            // The same token again only updates; another device of the user is a second endpoint.
            #expect(try await f.post(f.base + "/meiro_mobile", Self.event(type: "fcm_registration_token_refreshed", token: "fcm-B")).status == 200)
            #expect(try await f.post(f.base + "/meiro_mobile", Self.event(token: "fcm-C", model: "Galaxy")).status == 200)
            #expect(try await f.endpoints(f.fcmApplication).map(\.token) == ["fcm-B", "fcm-C"])
            #expect(try await f.count("SELECT count(*) FROM subscriptions") == 1)
        }
    }
}
