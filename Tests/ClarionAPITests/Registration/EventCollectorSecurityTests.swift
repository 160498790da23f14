import ClarionCore
import ClarionStore
import Foundation
import Testing
@testable import ClarionAPI

/// The public event collector's per-app settings (issue "Hardening", finding 3; docs/security.md): an anonymous
/// event may not move a device token from one `user_id` to another unless the app allows it, the app's API token
/// lets it, and an app may require the token on every event.
@Suite("Event collector: who may move a device token", .serialized)
struct EventCollectorSecurityTests {
    static let refusedMove = #"{"message":"authorization: firebase.registration_token is bound to another user_id; moving it needs the mobile app's API token (Authorization: Bearer <token>)","status":"error"}"#
    static let tokenRequired = #"{"message":"authentication: this mobile app requires its API token (Authorization: Bearer <token>)","status":"error"}"#
    static let tokenInvalid = #"{"message":"authentication: the API token is not valid for this mobile app","status":"error"}"#

    /// The victim's phone and the attacker's own phone, each registered by its own app install; returns the
    /// endpoints as (token, user) pairs.
    static func victimAndAttacker(_ f: RegistrationFixture) async throws -> [(token: String, user: String?)] {
        let victim = try await f.post(f.base + "/meiro_mobile", RegistrationEventTests.event(user: "victim", token: "fcm-victim", model: "Pixel 8"))
        #expect(victim.status == 200, "\(victim.text)")
        let attacker = try await f.post(f.base + "/meiro_mobile", RegistrationEventTests.event(user: "mallory", token: "fcm-mallory", model: "Galaxy"))
        #expect(attacker.status == 200, "\(attacker.text)")
        let endpoints = try await f.endpoints(f.fcmApplication)
        #expect(endpoints.map(\.token) == ["fcm-victim", "fcm-mallory"])
        #expect(endpoints.map(\.user) == ["victim", "mallory"])
        return endpoints
    }

    @Test("By default an anonymous event cannot take the attacker's token to the victim's user_id, nor the victim's token away: 403, nothing changed")
    func victimScenarioRefusedByDefault() async throws {
        try await RegistrationFixture.with { f in
            #expect(f.app.eventsRequireAPIToken == false)
            #expect(f.app.eventsRequireAPITokenForUserChange == true)
            let before = try await Self.victimAndAttacker(f)
            // The attacker's own token, the victim's user_id: a user-targeted publish to "victim" would reach it.
            for path in MobileEventRoutes.paths {
                let redirect = try await f.post(f.base + path, RegistrationEventTests.event(user: "victim", token: "fcm-mallory", model: "Galaxy"))
                #expect(redirect.status == 403)
                #expect(redirect.text == Self.refusedMove)
            }
            // The victim's token to another user: the victim's pushes would stop reaching the victim.
            let steal = try await f.post(f.base + "/v1/events", RegistrationEventTests.event(type: "fcm_registration_token_refreshed",
                                                                                              user: "mallory", token: "fcm-victim"))
            #expect(steal.status == 403)
            #expect(steal.text == Self.refusedMove)
            let after = try await f.endpoints(f.fcmApplication)
            #expect(after.map(\.token) == before.map(\.token))
            #expect(after.map(\.user) == before.map(\.user))
            // What a publish to the user "victim" reaches: the victim's device only.
            let victims = try await EndpointRepository(pool: f.pool).find(applicationKey: f.fcmApplication, userID: "victim")
            #expect(victims.map(\.token) == ["fcm-victim"])
            // Nothing else was written either: the refused events' device details were not stored.
            let mallory = try #require(try await EndpointRepository(pool: f.pool).find(applicationKey: f.fcmApplication, token: "fcm-mallory"))
            #expect(try await f.context.devices.details(endpointKey: mallory.key)?.model == "Galaxy")
            #expect(f.context.eventCounters.tokenReassignmentsRefused == 3)
            #expect(f.context.eventCounters.tokenReassignmentsAllowed == 0)

            // The same user again, a device's own token refreshed, and a new device: unchanged behaviour.
            #expect(try await f.post(f.base + "/meiro_mobile", RegistrationEventTests.event(user: "victim", token: "fcm-victim")).status == 200)
            #expect(try await f.post(f.base + "/meiro_mobile", RegistrationEventTests.event(type: "fcm_registration_token_refreshed",
                                                                                             user: "victim", token: "fcm-victim-2")).status == 200)
            #expect(try await f.post(f.base + "/meiro_mobile", RegistrationEventTests.event(user: "carol", token: "fcm-carol")).status == 200)
            #expect(try await f.endpoints(f.fcmApplication).map(\.token) == ["fcm-victim-2", "fcm-mallory", "fcm-carol"])
            // An endpoint without a user (made through the SNS or native API) is nobody's: an event may claim it.
            _ = try await EndpointRepository(pool: f.pool).create(NewEndpoint(applicationKey: f.fcmApplication, token: "fcm-unowned"),
                                                                  externalID: UUID())
            #expect(try await f.post(f.base + "/meiro_mobile", RegistrationEventTests.event(user: "dave", token: "fcm-unowned")).status == 200)
            #expect(try await f.endpoints(f.fcmApplication).last?.user == "dave")
            #expect(f.context.eventCounters.tokenReassignmentsRefused == 3)
            #expect(f.context.eventCounters.tokenReassignmentsAllowed == 0)
        }
    }

    @Test("With the app's API token the same move is made and counted; a wrong, revoked or other app's token is 401 and changes nothing")
    func moveAllowedWithTheAppToken() async throws {
        try await RegistrationFixture.with { f in
            _ = try await Self.victimAndAttacker(f)
            let event = RegistrationEventTests.event(user: "victim", token: "fcm-mallory", model: "Galaxy")
            let other = try await f.context.admin.createApp(accountID: RegistrationFixture.accountID, name: "other")
            let otherToken = try await f.context.admin.createToken(accountID: RegistrationFixture.accountID, app: other.externalID).token
            let revoked = try await f.context.admin.createToken(accountID: RegistrationFixture.accountID, app: f.app.externalID)
            try await f.context.admin.revokeToken(accountID: RegistrationFixture.accountID, app: f.app.externalID, tokenID: revoked.id)
            for header in ["Bearer cmt_not-a-token", "Bearer " + otherToken, "Bearer " + revoked.token, "Bearer", "Basic " + f.apiToken,
                           "Bearer " + f.apiKey] {
                let refused = try await f.post(f.base + "/meiro_mobile", event, headers: ["Authorization": header])
                #expect(refused.status == 401, "\(header)")
                #expect(refused.text == Self.tokenInvalid, "\(header): \(refused.text)")
            }
            #expect(try await f.endpoints(f.fcmApplication).map(\.user) == ["victim", "mallory"])
            #expect(f.context.eventCounters.tokenReassignmentsAllowed == 0)

            let moved = try await f.post(f.base + "/meiro_mobile", event, headers: ["Authorization": "Bearer " + f.apiToken])
            #expect(moved.status == 200, "\(moved.text)")
            #expect(moved.text == #"{"status":"ok"}"#)
            let endpoints = try await f.endpoints(f.fcmApplication)
            #expect(endpoints.map(\.token) == ["fcm-victim", "fcm-mallory"])
            #expect(endpoints.map(\.user) == ["victim", "victim"])
            #expect(f.context.eventCounters.tokenReassignmentsAllowed == 1)
            #expect(f.context.eventCounters.tokenReassignmentsRefused == 0)
        }
    }

    @Test("events_require_api_token refuses every anonymous event with 401 and stores nothing; the app's token is accepted")
    func requireTokenRefusesAnonymousEvents() async throws {
        try await RegistrationFixture.with { f in
            let patched = try await f.native("PATCH", "/v1/mobile-apps/\(f.app.externalID.lowercasedText)", #"{"events_require_api_token": true}"#)
            #expect(patched.status == 200, "\(patched.text)")
            for path in MobileEventRoutes.paths {
                let anonymous = try await f.post(f.base + path, RegistrationEventTests.event(user: "u1", token: "fcm-new"))
                #expect(anonymous.status == 401)
                #expect(anonymous.text == Self.tokenRequired)
            }
            let wrong = try await f.post(f.base + "/meiro_mobile", RegistrationEventTests.event(user: "u1", token: "fcm-new"),
                                         headers: ["Authorization": "Bearer cmt_wrong"])
            #expect(wrong.status == 401)
            #expect(wrong.text == Self.tokenInvalid)
            #expect(try await f.count("SELECT count(*) FROM endpoints") == 0)
            // A malformed event is still a validation error first: the app is named by the event itself.
            #expect(try await f.post(f.base + "/meiro_mobile", RegistrationEventTests.event(drop: "user_id")).status == 400)

            let signed = try await f.post(f.base + "/v1/events", RegistrationEventTests.event(user: "u1", token: "fcm-new"),
                                          headers: ["Authorization": "Bearer " + f.apiToken])
            #expect(signed.status == 200, "\(signed.text)")
            #expect(try await f.endpoints(f.fcmApplication).map(\.token) == ["fcm-new"])
        }
    }

    @Test("With events_require_api_token_for_user_change off, anonymous events move tokens as before, each one counted")
    func settingOffKeepsTodaysBehaviour() async throws {
        try await RegistrationFixture.with { f in
            let patched = try await f.native("PATCH", "/v1/mobile-apps/\(f.app.externalID.uuidString)",
                                             #"{"events_require_api_token_for_user_change": false}"#)
            #expect(patched.status == 200, "\(patched.text)")
            _ = try await Self.victimAndAttacker(f)
            let redirect = try await f.post(f.base + "/meiro_mobile", RegistrationEventTests.event(user: "victim", token: "fcm-mallory", model: "Galaxy"))
            #expect(redirect.status == 200, "\(redirect.text)")
            #expect(try await f.endpoints(f.fcmApplication).map(\.user) == ["victim", "victim"])
            let steal = try await f.post(f.base + "/v1/events", RegistrationEventTests.event(user: "mallory", token: "fcm-victim"))
            #expect(steal.status == 200, "\(steal.text)")
            #expect(try await f.endpoints(f.fcmApplication).map(\.user) == ["mallory", "victim"])
            #expect(f.context.eventCounters.tokenReassignmentsAllowed == 2)
            #expect(f.context.eventCounters.tokenReassignmentsRefused == 0)
        }
    }

    @Test("GET and PATCH /v1/mobile-apps/{id}, and the settings at create: defaults, validation, 401 and 404")
    func settingsThroughTheNativeAPI() async throws {
        try await RegistrationFixture.with { f in
            let path = "/v1/mobile-apps/\(f.app.externalID.lowercasedText)"
            func object(_ result: ClientResult) throws -> [String: Any] {
                try #require(try JSONSerialization.jsonObject(with: Data(result.body)) as? [String: Any])
            }
            let read = try await f.native("GET", path)
            #expect(read.status == 200, "\(read.text)")
            let app = try object(read)
            #expect(app["id"] as? String == f.app.externalID.lowercasedText)
            #expect(app["events_require_api_token"] as? Bool == false)
            #expect(app["events_require_api_token_for_user_change"] as? Bool == true)

            let changed = try object(try await f.native("PATCH", path, #"{"events_require_api_token": true, "dry_run_validation": true}"#))
            #expect(changed["events_require_api_token"] as? Bool == true)
            #expect(changed["dry_run_validation"] as? Bool == true)
            #expect(changed["events_require_api_token_for_user_change"] as? Bool == true, "absent settings stay")
            #expect(try object(try await f.native("GET", path))["events_require_api_token"] as? Bool == true)

            let typo = try await f.native("PATCH", path, #"{"events_require_token": true}"#)
            #expect(typo.status == 400)
            #expect(try object(typo)["error"].flatMap { ($0 as? [String: Any])?["field"] as? String } == "events_require_token")
            let notBool = try await f.native("PATCH", path, #"{"events_require_api_token": "yes"}"#)
            #expect(notBool.status == 400)
            #expect(try await f.native("PATCH", "/v1/mobile-apps/\(UUID().uuidString)", #"{"dry_run_validation": false}"#).status == 404)
            #expect(try await f.native("GET", "/v1/mobile-apps/nope").status == 404)
            #expect(try await curl(f.base + path).status == 401)
            #expect(try await curl(f.base + path, method: "PATCH", headers: ["Content-Type": "application/json"],
                                   body: Array(#"{"events_require_api_token": false}"#.utf8)).status == 401)
            #expect(try await f.context.apps.get(externalID: f.app.externalID, accountKey: f.app.accountKey).eventsRequireAPIToken == true)

            let created = try await f.native("POST", "/v1/mobile-apps", #"""
                {"name": "locked", "fcm_application": "GCM:android", "events_require_api_token": true,
                 "events_require_api_token_for_user_change": false}
                """#)
            #expect(created.status == 201, "\(created.text)")
            #expect(try object(created)["events_require_api_token"] as? Bool == true)
            #expect(try object(created)["events_require_api_token_for_user_change"] as? Bool == false)
            let plain = try object(try await f.native("POST", "/v1/mobile-apps", #"{"name": "plain"}"#))
            #expect(plain["events_require_api_token"] as? Bool == false)
            #expect(plain["events_require_api_token_for_user_change"] as? Bool == true)
        }
    }
}
