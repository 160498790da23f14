import ClarionCore
import ClarionCrypto
import ClarionStore
import Foundation
import Testing
@testable import ClarionAPI

/// A browser registered through the registration API with `WebPushSubscription` (issue 19), over HTTP and
/// PostgreSQL: the mobile app's WEBPUSH application, CreatePlatformEndpoint's WEBPUSH rules at acceptance
/// (docs/providers.md W.3: https endpoint per RFC 8030 section 8, `p256dh` a P-256 point and `auth` 16 octets per
/// RFC 8291 section 2), and the canonical token.
@Suite("Web Push subscriptions through the registration API", .serialized)
struct WebPushRegistrationTests {
    /// A subscription as a browser's `PushSubscription.toJSON()` gives it, with a real P-256 point.
    static func subscription(_ id: String) -> (endpoint: String, p256dh: String, auth: String) {
        ("https://push.example.net/wp/\(id)", Base64URL.encode(P256KeyAgreementKey.generate().publicKey), Base64URL.encode(SecureRandom.bytes(16)))
    }

    static func item(_ f: RegistrationFixture, app: UUID, token: String, user: String, subscription: String) -> String {
        "{\"MobileAppId\":\(jsonText(app.uuidString)),\"UserId\":\(jsonText(user)),\"ApiToken\":\(jsonText(token)),\"WebPushSubscription\":\(subscription)}"
    }

    static func errorField(_ result: ClientResult) -> (field: String?, message: String?) {
        let object = try? JSONSerialization.jsonObject(with: Data(result.body)) as? [String: Any]
        let error = (object?["error"] as? [String: Any]) ?? object
        return (error?["field"] as? String, error?["message"] as? String)
    }

    @Test("a mobile app's webpush_application takes WebPushSubscription (object or text), stored canonical and idempotent; bad ones are 400 naming the rule")
    func registers() async throws {
        try await RegistrationFixture.with { f in
            let account = try await f.context.accounts.ensureAccount(accountID: RegistrationFixture.accountID)
            let web = try await f.context.applications.createOrUpdate(
                accountKey: account.key, region: "us-east-1", name: "site", platform: "WEBPUSH", credentials: PlatformCredentials(),
                attributes: ["VAPIDSubject": "mailto:ops@example.com"]).0
            // The native route names the application PLATFORM:name; another platform's application is refused.
            let wrong = try await f.native("POST", "/v1/mobile-apps", #"{"name":"web-wrong","webpush_application":"GCM:android"}"#)
            #expect(wrong.status == 400 && Self.errorField(wrong).field == "webpush_application", "\(wrong.text)")
            let created = try await f.native("POST", "/v1/mobile-apps", #"{"name":"web","webpush_application":"WEBPUSH:site"}"#)
            #expect(created.status == 201, "\(created.text)")
            let appID = try #require(UUID(uuidString: (try JSONSerialization.jsonObject(with: Data(created.body)) as? [String: Any])?["id"] as? String ?? ""))
            let app = try await f.context.apps.get(externalID: appID, accountKey: account.key)
            #expect(app.webPushApplication == web.key)
            let tokenAnswer = try await f.native("POST", "/v1/mobile-apps/\(appID.lowercasedText)/tokens", "{}")
            #expect(tokenAnswer.status == 201, "\(tokenAnswer.text)")
            let token = try #require((try JSONSerialization.jsonObject(with: Data(tokenAnswer.body)) as? [String: Any])?["token"] as? String)

            let s = Self.subscription("one")
            let object = #"{"endpoint":"\#(s.endpoint)","expirationTime":null,"keys":{"p256dh":"\#(s.p256dh)","auth":"\#(s.auth)"}}"#
            #expect(try await f.post(f.devices, Self.item(f, app: appID, token: token, user: "u1", subscription: object)).status == 202)
            // The same subscription as JSON text, members in another order: the same endpoint.
            let text = #"{"keys":{"auth":"\#(s.auth)","p256dh":"\#(s.p256dh)"},"endpoint":"\#(s.endpoint)"}"#
            #expect(try await f.post(f.devices, Self.item(f, app: appID, token: token, user: "u1", subscription: jsonText(text))).status == 202)
            await f.processAll()
            let stored = try await f.endpoints(web.key)
            #expect(stored.count == 1)
            #expect(stored.first?.user == "u1")
            let parsed = try WebPushSubscription.parse(stored.first?.token ?? "")
            #expect(stored.first?.token == parsed.canonicalToken)
            #expect(parsed.endpoint == s.endpoint && Base64URL.encode(parsed.p256dh) == s.p256dh)

            // W.3 rules at acceptance: each refusal names the field and the rule, and stores nothing.
            let bad: [(String, String)] = [
                (#"{"endpoint":"http://push.example.net/wp/x","keys":{"p256dh":"\#(s.p256dh)","auth":"\#(s.auth)"}}"#, "endpoint-https"),
                (#"{"endpoint":"https://push.example.net/wp/x","keys":{"p256dh":"\#(s.p256dh)","auth":"AAAA"}}"#, "auth-16-octets"),
                (#"{"endpoint":"https://push.example.net/wp/x","keys":{"p256dh":"\#(Base64URL.encode([0x04] + [UInt8](repeating: 1, count: 64)))","auth":"\#(s.auth)"}}"#,
                 "p256dh-on-curve"),
                ("42", "PushSubscription"),
            ]
            for (subscription, rule) in bad {
                let answer = try await f.post(f.devices, Self.item(f, app: appID, token: token, user: "u2", subscription: subscription))
                let error = Self.errorField(answer)
                #expect(answer.status == 400 && error.field == "WebPushSubscription", "\(answer.text)")
                #expect(error.message?.contains(rule) == true, "\(rule): \(answer.text)")
            }
            // Two platforms in one item are refused.
            let both = String(Self.item(f, app: appID, token: token, user: "u2", subscription: object).dropLast()) + #","FcmDeviceToken":"fcm-x"}"#
            #expect(try await f.post(f.devices, both).status == 400)
            await f.processAll()
            #expect(try await f.endpoints(web.key).count == 1)

            // A mobile app without a WEBPUSH application fails the registration, as for a missing APNs or FCM one.
            let other = Self.subscription("two")
            let id = try await {
                let answer = try await f.post(f.devices, Self.item(f, app: f.app.externalID, token: f.apiToken, user: "u3", subscription:
                    #"{"endpoint":"\#(other.endpoint)","keys":{"p256dh":"\#(other.p256dh)","auth":"\#(other.auth)"}}"#),
                    headers: ["x-ms-track-registration": "true"])
                #expect(answer.status == 202, "\(answer.text)")
                return try #require((try JSONSerialization.jsonObject(with: Data(answer.body)) as? [String: Any])?["RegistrationRequestId"] as? String)
            }()
            await f.processAll()
            let states = try await f.states([id])
            #expect(states.first?.0 == "Failed" && states.first?.1 == "FailedToStoreDevice", "\(states)")
        }
    }
}
