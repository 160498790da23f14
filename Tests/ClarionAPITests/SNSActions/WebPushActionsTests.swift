import ClarionCore
import ClarionCrypto
import ClarionStore
import Foundation
import Testing
@testable import ClarionAPI

/// WEBPUSH applications and endpoints through the SNS actions and the native API (docs/providers.md W.2, W.3).
@Suite("WEBPUSH applications and endpoints (SNS actions, native API)", .serialized)
struct WebPushActionsTests {
    typealias Actions = APNsCertificateValidationTests.Actions
    static let appARN = "arn:aws:sns:us-east-1:123456789012:app/WEBPUSH/site"
    static let p256dh = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
    static let auth = "BTBZMqHH6r4Tts7J_aSIgg"
    static let subscription = #"{"endpoint":"https://push.example.net/wpush/abc","expirationTime":null,"keys":{"p256dh":"\#(p256dh)","auth":"\#(auth)"}}"#

    static func create(_ extra: [String: String], credential: String? = nil) -> [String: String] {
        ["Name": "site", "Platform": "WEBPUSH"].merging(APNsCertificateValidationTests.attributes(credential: credential, extra: extra)) { $1 }
    }

    static func stored(_ actions: Actions) async throws -> PlatformApplicationRecord {
        let account = try await actions.context.accounts.account(accountID: "123456789012").key
        return try await actions.context.applications.get(accountKey: account, region: "us-east-1", platform: "WEBPUSH", name: "site")
    }

    // W.2 (RFC 8292 section 2.1 and 3.2): a subject is required and is mailto: or https:; with no key given one is
    // generated, kept as the credential, and its public key is readable as VAPIDPublicKey; creating again keeps it.
    @Test("CreatePlatformApplication WEBPUSH: subject required and checked, a key generated and its public key shown, kept on re-create")
    func createGeneratesKey() async throws {
        let actions = try Actions()
        defer { actions.stop() }
        let missing = await actions.refusal("CreatePlatformApplication", Self.create([:]))
        #expect(missing?.code == "InvalidParameter" && missing?.message.contains("VAPIDSubject") == true, "\(missing?.message ?? "")")
        let bad = await actions.refusal("CreatePlatformApplication", Self.create(["VAPIDSubject": "ops@example.com"]))
        #expect(bad?.code == "InvalidParameter" && bad?.message.contains("mailto:") == true)
        #expect(await actions.refusal("CreatePlatformApplication", Self.create(["VAPIDSubject": "mailto:ops@example.com"])) == nil)
        let record = try await Self.stored(actions)
        let publicKey = try #require(record.attributes["VAPIDPublicKey"])
        let point = try #require(Base64URL.decode(publicKey))
        #expect(point.count == 65 && point[0] == 4)
        let credentials = try await actions.context.applications.credentials(applicationKey: record.key)
        #expect(try SigningKey(pem: try #require(credentials.credential)).uncompressedPublicKey == point)
        #expect(PlatformApplicationActions.visibleAttributes(record)["VAPIDPublicKey"] == publicKey)
        #expect(PlatformApplicationActions.visibleAttributes(record)["PlatformCredential"] == nil)
        // Again without a key: the same key (a new one would orphan every subscription).
        #expect(await actions.refusal("CreatePlatformApplication", Self.create(["VAPIDSubject": "https://example.com/contact"])) == nil)
        #expect(try await Self.stored(actions).attributes["VAPIDPublicKey"] == publicKey)
        // VAPIDPublicKey is read-only.
        let set = await actions.refusal("SetPlatformApplicationAttributes",
                                        ["PlatformApplicationArn": Self.appARN].merging(APNsCertificateValidationTests.attributes(extra: ["VAPIDPublicKey": "x"])) { $1 })
        #expect(set?.code == "InvalidParameter")
    }

    // W.2: a given key must be P-256 (ES256, RFC 8292 section 3.2); its public key is shown.
    @Test("a given VAPID key is used; an RSA key is refused naming PlatformCredential")
    func givenKey() async throws {
        let actions = try Actions()
        defer { actions.stop() }
        let rsa = try SigningKey.generateRSA(bits: 2048)
        let refused = await actions.refusal("CreatePlatformApplication", Self.create(["VAPIDSubject": "mailto:a@b.c"], credential: rsa.pkcs8PEM))
        #expect(refused?.code == "InvalidParameter" && refused?.message.contains("PlatformCredential") == true, "\(refused?.message ?? "")")
        let key = SigningKey.generateP256()
        #expect(await actions.refusal("CreatePlatformApplication", Self.create(["VAPIDSubject": "mailto:a@b.c"], credential: key.pkcs8PEM)) == nil)
        #expect(try await Self.stored(actions).attributes["VAPIDPublicKey"] == Base64URL.encode(key.uncompressedPublicKey!))
    }

    // W.3: the token is the subscription JSON, checked by rule; the same subscription is the same endpoint; the
    // keys are masked when shown.
    @Test("CreatePlatformEndpoint WEBPUSH: rules named, idempotent on the same subscription, keys masked in Get")
    func endpoints() async throws {
        let actions = try Actions()
        defer { actions.stop() }
        #expect(await actions.refusal("CreatePlatformApplication", Self.create(["VAPIDSubject": "mailto:a@b.c"])) == nil)
        let http = await actions.refusal("CreatePlatformEndpoint", ["PlatformApplicationArn": Self.appARN,
                                                                    "Token": Self.subscription.replacingOccurrences(of: "https://", with: "http://")])
        #expect(http?.code == "InvalidParameter" && http?.message.contains("endpoint-https") == true, "\(http?.message ?? "")")
        var offCurve = Base64URL.decode(Self.p256dh)!
        offCurve[64] ^= 1
        let notOnCurve = await actions.refusal("CreatePlatformEndpoint", ["PlatformApplicationArn": Self.appARN,
                                                                          "Token": Self.subscription.replacingOccurrences(of: Self.p256dh, with: Base64URL.encode(offCurve))])
        #expect(notOnCurve?.message.contains("p256dh-on-curve") == true, "\(notOnCurve?.message ?? "")")
        let shortAuth = await actions.refusal("CreatePlatformEndpoint", ["PlatformApplicationArn": Self.appARN,
                                                                         "Token": Self.subscription.replacingOccurrences(of: Self.auth, with: "AAAA")])
        #expect(shortAuth?.message.contains("auth-16-octets") == true)

        let first = try await actions.call("CreatePlatformEndpoint", ["PlatformApplicationArn": Self.appARN, "Token": Self.subscription])
        let reordered = #"{"keys":{"auth":"\#(Self.auth)","p256dh":"\#(Self.p256dh)"},"endpoint":"https://push.example.net/wpush/abc"}"#
        let second = try await actions.call("CreatePlatformEndpoint", ["PlatformApplicationArn": Self.appARN, "Token": reordered])
        let firstText = String(decoding: first.result ?? [], as: UTF8.self)
        #expect(firstText.contains("endpoint/WEBPUSH/site/"))
        #expect(firstText == String(decoding: second.result ?? [], as: UTF8.self))
        let list = try await actions.call("ListEndpointsByPlatformApplication", ["PlatformApplicationArn": Self.appARN])
        let listed = String(decoding: list.result ?? [], as: UTF8.self)
        #expect(!listed.contains(Self.auth) && !listed.contains(Self.p256dh))
        #expect(listed.contains("push.example.net"))
    }

    // W.2 in the native API: the same rules, refusals naming the native field.
    @Test("native: WEBPUSH application with a generated key; subject refused by field; endpoint token masked")
    func native() async throws {
        try await NativeAPIFixture.with { f in
            #expect(try await f.error("POST", "/v1/applications", #"{"name":"site","platform":"WEBPUSH"}"#)
                    == (400, "invalid_field", "attributes.VAPIDSubject"))
            let app = try await f.json("POST", "/v1/applications",
                                       #"{"name":"site","platform":"WEBPUSH","attributes":{"VAPIDSubject":"mailto:a@b.c"}}"#, expect: 201)
            #expect(((app["attributes"] as? [String: Any])?["VAPIDPublicKey"] as? String)?.count == 87)
            let token = quoted(Self.subscription)
            let endpoint = try await f.json("POST", "/v1/applications/WEBPUSH:site/endpoints", #"{"token":\#(token)}"#, expect: 201)
            let shown = endpoint["token"] as? String ?? ""
            #expect(!shown.contains(Self.auth) && shown.contains("push.example.net"), "\(shown)")
        }
    }
}
