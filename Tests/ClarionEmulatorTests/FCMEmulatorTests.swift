import ClarionCore
import ClarionCrypto
import Testing
@testable import ClarionEmulator

@Suite struct FCMEmulatorTests {
    typealias F = EmulatorFixture

    static func message(_ fields: String = #""token":"device-token-1","data":{"k":"v"}"#, validateOnly: Bool? = nil) -> String {
        let flag = validateOnly.map { #""validate_only":\#($0),"# } ?? ""
        return #"{\#(flag)"message":{\#(fields)}}"#
    }

    // MARK: B.2 token endpoint

    @Test("FCM B.2: a valid RS256 assertion gets a Bearer access token with expires_in")
    func tokenIssued() throws {
        let f = try F()
        let decision = f.emulator.handle(f.fcmTokenRequest(assertion: f.fcmAssertion()), connection: f.connection())
        #expect(decision.status == 200)
        let json = try #require(decision.json)
        #expect(json["token_type"] == "Bearer")
        #expect(json["expires_in"]?.numberValue?.int64Value == 3599)
        #expect(json["access_token"]?.stringValue?.hasPrefix("ya29.") == true)
    }

    @Test("FCM B.1/B.2: a token from /token sends a message: 200 with name projects/<p>/messages/<id>")
    func sendAccepted() throws {
        let f = try F()
        let decision = f.emulator.handle(f.fcmSend(Self.message(), accessToken: f.fcmAccessToken()), connection: f.connection())
        #expect(decision.status == 200)
        let name = try #require(decision.json?["name"]?.stringValue)
        #expect(name.hasPrefix("projects/\(F.project)/messages/"))
        #expect(name != "projects/\(F.project)/messages/fake_message_id")
    }

    @Test("FCM B.2: the cloud-platform scope works as well as firebase.messaging")
    func cloudPlatformScope() throws {
        let f = try F()
        let token = f.fcmAccessToken(f.fcmAssertion(scope: "openid https://www.googleapis.com/auth/cloud-platform"))
        #expect(f.emulator.handle(f.fcmSend(Self.message(), accessToken: token), connection: f.connection()).status == 200)
    }

    @Test("FCM B.2: the assertion may name the emulator's own token URI as aud")
    func ownAudience() throws {
        let f = try F()
        var request = f.fcmTokenRequest(assertion: f.fcmAssertion(audience: "http://127.0.0.1:9999/token"))
        request.authority = "127.0.0.1:9999"
        #expect(f.emulator.handle(request, connection: f.connection()).status == 200)
        request.authority = "127.0.0.1:9998"
        #expect(f.emulator.handle(request, connection: f.connection()).status == 400)
    }

    @Test("FCM B.2: token endpoint refusals", arguments: [
        ("grant", 400, "unsupported_grant_type"),
        ("noAssertion", 400, "invalid_request"),
        ("notForm", 400, "invalid_request"),
        ("wrongKey", 400, "invalid_grant"),
        ("es256", 400, "invalid_grant"),
        ("unknownIssuer", 400, "invalid_grant"),
        ("wrongKid", 400, "invalid_grant"),
        ("audience", 400, "invalid_grant"),
        ("tooLong", 400, "invalid_grant"),
        ("expired", 400, "invalid_grant"),
        ("future", 400, "invalid_grant"),
        ("noScope", 400, "invalid_scope"),
    ])
    func tokenRefusals(kind: String, status: Int, error: String) throws {
        let f = try F()
        let request: EmulatorRequest
        switch kind {
        case "grant": request = f.fcmTokenRequest(assertion: f.fcmAssertion(), grantType: "client_credentials")
        case "noAssertion":
            request = EmulatorRequest(method: "POST", path: "/token", headers: [("content-type", "application/x-www-form-urlencoded")],
                                      body: Array("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer".utf8))
        case "notForm":
            var r = f.fcmTokenRequest(assertion: f.fcmAssertion())
            r.headers = [("content-type", "application/json")]
            request = r
        case "wrongKey": request = f.fcmTokenRequest(assertion: f.fcmAssertion(key: FixtureKeys.fcmOtherProject))
        case "es256":
            let jwt = try JWT.sign(claims: ["iss": .string(F.serviceAccount), "aud": "https://oauth2.googleapis.com/token",
                                            "iat": .double(f.clock.now), "exp": .double(f.clock.now + 60), "scope": "x"], key: FixtureKeys.apns)
            request = f.fcmTokenRequest(assertion: jwt)
        case "unknownIssuer": request = f.fcmTokenRequest(assertion: f.fcmAssertion(issuer: "nobody@x.iam.gserviceaccount.com"))
        case "wrongKid": request = f.fcmTokenRequest(assertion: f.fcmAssertion(kid: "kid-2"))
        case "audience": request = f.fcmTokenRequest(assertion: f.fcmAssertion(audience: "https://example.com/token"))
        case "tooLong": request = f.fcmTokenRequest(assertion: f.fcmAssertion(lifetime: 3601))
        case "expired": request = f.fcmTokenRequest(assertion: f.fcmAssertion(issuedAt: f.clock.now - 3700))
        case "future": request = f.fcmTokenRequest(assertion: f.fcmAssertion(issuedAt: f.clock.now + 900))
        default: request = f.fcmTokenRequest(assertion: f.fcmAssertion(scope: nil))
        }
        let decision = f.emulator.handle(request, connection: f.connection())
        #expect(decision.status == status)
        #expect(decision.json?["error"]?.stringValue == error)
    }

    // MARK: B.2 bearer on send

    @Test("FCM B.2: a send without a bearer token, or with an unknown one, is 401 UNAUTHENTICATED without an FCM error code")
    func unauthenticated() throws {
        let f = try F()
        var missing = f.fcmSend(Self.message(), accessToken: "x")
        missing.headers.removeAll { $0.0 == "authorization" }
        for request in [missing, f.fcmSend(Self.message(), accessToken: "ya29.unknown")] {
            let decision = f.emulator.handle(request, connection: f.connection())
            #expect(decision.status == 401)
            #expect(decision.googleStatus == "UNAUTHENTICATED")
            #expect(decision.fcmErrorCode == nil)
        }
    }

    @Test("FCM B.2: an access token past expires_in is 401 UNAUTHENTICATED, also when cached on the connection")
    func expiredAccessToken() throws {
        let f = try F()
        let token = f.fcmAccessToken()
        let connection = f.connection()
        #expect(f.emulator.handle(f.fcmSend(Self.message(), accessToken: token), connection: connection).status == 200)
        f.clock.advance(3600)
        let decision = f.emulator.handle(f.fcmSend(Self.message(), accessToken: token), connection: connection)
        #expect(decision.status == 401)
        #expect(decision.googleStatus == "UNAUTHENTICATED")
    }

    @Test("FCM B.2: a token without a messaging scope is 403 PERMISSION_DENIED")
    func insufficientScope() throws {
        let f = try F()
        let token = f.fcmAccessToken(f.fcmAssertion(scope: "https://www.googleapis.com/auth/userinfo.email"))
        let decision = f.emulator.handle(f.fcmSend(Self.message(), accessToken: token), connection: f.connection())
        #expect(decision.status == 403)
        #expect(decision.googleStatus == "PERMISSION_DENIED")
    }

    @Test("FCM B.1: sending to another project with this project's token is 403 PERMISSION_DENIED")
    func wrongProject() throws {
        let f = try F()
        let other = f.fcmAccessToken(f.fcmAssertion(key: FixtureKeys.fcmOtherProject, issuer: F.otherServiceAccount, kid: nil))
        let decision = f.emulator.handle(f.fcmSend(Self.message(), accessToken: other), connection: f.connection())
        #expect(decision.status == 403)
        #expect(decision.googleStatus == "PERMISSION_DENIED")
        #expect(f.emulator.handle(f.fcmSend(Self.message(), accessToken: other, project: "other-project"), connection: f.connection()).status == 200)
    }

    // MARK: B.3 message checks

    @Test("FCM B.3: the message must have exactly one target", arguments: [
        #""data":{"k":"v"}"#,
        #""token":"a","topic":"b""#,
        #""topic":"news","condition":"'a' in topics""#,
    ])
    func oneTarget(fields: String) throws {
        let f = try F()
        let decision = f.emulator.handle(f.fcmSend(Self.message(fields), accessToken: f.fcmAccessToken()), connection: f.connection())
        #expect(decision.status == 400)
        #expect(decision.googleStatus == "INVALID_ARGUMENT")
    }

    @Test("FCM B.3: token, topic and condition targets are each accepted", arguments: [
        #""token":"abc:APA91b-x_y.z""#, #""topic":"news-1_2.3~%""#, #""condition":"'a' in topics && 'b' in topics""#,
    ])
    func targets(fields: String) throws {
        let f = try F()
        #expect(f.emulator.handle(f.fcmSend(Self.message(fields), accessToken: f.fcmAccessToken()), connection: f.connection()).status == 200)
    }

    @Test("FCM B.3: a data value that is not a string is 400 INVALID_ARGUMENT naming the field", arguments: [
        #""token":"t","data":{"n":1}"#,
        #""token":"t","data":{"ok":"v","b":true}"#,
        #""token":"t","android":{"data":{"o":{}}}"#,
        #""token":"t","webpush":{"data":{"n":null}}"#,
    ])
    func dataValuesMustBeStrings(fields: String) throws {
        let f = try F()
        let decision = f.emulator.handle(f.fcmSend(Self.message(fields), accessToken: f.fcmAccessToken()), connection: f.connection())
        #expect(decision.status == 400)
        #expect(decision.googleStatus == "INVALID_ARGUMENT")
        let violation = decision.json?["error"]?["details"]?.arrayValue?.first?["fieldViolations"]?.arrayValue?.first
        #expect(violation?["field"]?.stringValue?.contains(".data[") == true)
        #expect(violation?["description"]?.stringValue?.contains("TYPE_STRING") == true)
    }

    @Test("FCM B.3: reserved data keys are 400 INVALID_ARGUMENT", arguments: ["from", "message_type", "google.x", "gcm.notification"])
    func reservedDataKeys(key: String) throws {
        let f = try F()
        let decision = f.emulator.handle(f.fcmSend(Self.message(#""token":"t","data":{"\#(key)":"v"}"#), accessToken: f.fcmAccessToken()), connection: f.connection())
        #expect(decision.status == 400)
        #expect(decision.googleStatus == "INVALID_ARGUMENT")
    }

    @Test("FCM B.3: android.ttl is a Duration like \"3.5s\", at most 2,419,200 s",
          arguments: [("3.5s", 200), ("0s", 200), ("2419200s", 200), ("3600", 400), ("abc", 400), ("-1s", 400), ("1.s", 400), ("2419201s", 400), ("1.1234567891s", 400)])
    func ttlFormat(ttl: String, status: Int) throws {
        let f = try F()
        let decision = f.emulator.handle(f.fcmSend(Self.message(#""token":"t","android":{"ttl":"\#(ttl)"}"#), accessToken: f.fcmAccessToken()), connection: f.connection())
        #expect(decision.status == status)
    }

    @Test("FCM B.3: a numeric ttl is 400 INVALID_ARGUMENT")
    func numericTTL() throws {
        let f = try F()
        let decision = f.emulator.handle(f.fcmSend(Self.message(#""token":"t","android":{"ttl":3600}"#), accessToken: f.fcmAccessToken()), connection: f.connection())
        #expect(decision.status == 400)
    }

    @Test("FCM B.3: android.priority is NORMAL or HIGH in any case", arguments: [("high", 200), ("HIGH", 200), ("normal", 200), ("urgent", 400), ("10", 400)])
    func androidPriority(priority: String, status: Int) throws {
        let f = try F()
        let decision = f.emulator.handle(f.fcmSend(Self.message(#""token":"t","android":{"priority":"\#(priority)"}"#), accessToken: f.fcmAccessToken()), connection: f.connection())
        #expect(decision.status == status)
    }

    @Test("FCM B.3: unknown field names are 400 INVALID_ARGUMENT (proto JSON is strict); camelCase spellings are accepted")
    func unknownFields() throws {
        let f = try F()
        let token = f.fcmAccessToken()
        for body in [#"{"message":{"token":"t"},"dry_run":true}"#, #"{"message":{"token":"t","time_to_live":60}}"#,
                     #"{"message":{"token":"t","android":{"time_to_live":"60s"}}}"#, #"{"message":{"token":"t","notification":{"icon":"x"}}}"#] {
            let decision = f.emulator.handle(f.fcmSend(body, accessToken: token), connection: f.connection())
            #expect(decision.status == 400, "\(body)")
            #expect(decision.json?["error"]?["message"]?.stringValue?.contains("Unknown name") == true)
        }
        let camel = #"{"validateOnly":false,"message":{"token":"t","android":{"collapseKey":"c","restrictedPackageName":"p","directBootOk":true},"fcmOptions":{"analyticsLabel":"l"}}}"#
        #expect(f.emulator.handle(f.fcmSend(camel, accessToken: token), connection: f.connection()).status == 200)
    }

    @Test("FCM B.3: a body that is not JSON, or has no message object, is 400 INVALID_ARGUMENT", arguments: ["", "{", "[]", #"{"message":"x"}"#, #"{"validate_only":true}"#])
    func malformedBody(body: String) throws {
        let f = try F()
        let decision = f.emulator.handle(f.fcmSend(body, accessToken: f.fcmAccessToken()), connection: f.connection())
        #expect(decision.status == 400)
        #expect(decision.googleStatus == "INVALID_ARGUMENT")
    }

    @Test("FCM B.3: a topic with a /topics/ prefix or a token with spaces is 400 INVALID_ARGUMENT")
    func targetFormats() throws {
        let f = try F()
        let token = f.fcmAccessToken()
        #expect(f.emulator.handle(f.fcmSend(Self.message(#""topic":"/topics/news""#), accessToken: token), connection: f.connection()).status == 400)
        let bad = f.emulator.handle(f.fcmSend(Self.message(#""token":"has space""#), accessToken: token), connection: f.connection())
        #expect(bad.status == 400)
        #expect(bad.fcmErrorCode == "INVALID_ARGUMENT")
    }

    @Test("FCM B.3: keys + values up to 4096 bytes pass for a token message, 4097 is 400 INVALID_ARGUMENT")
    func tokenSizeLimit() throws {
        let f = try F()
        let token = f.fcmAccessToken()
        // "data" (4) + "k" (1) + value: 4096 exactly with a 4091-byte value.
        let fits = Self.message(#""token":"t","data":{"k":"\#(String(repeating: "v", count: 4091))"}"#)
        #expect(f.emulator.handle(f.fcmSend(fits, accessToken: token), connection: f.connection()).status == 200)
        let over = Self.message(#""token":"t","data":{"k":"\#(String(repeating: "v", count: 4092))"}"#)
        let decision = f.emulator.handle(f.fcmSend(over, accessToken: token), connection: f.connection())
        #expect(decision.status == 400)
        #expect(decision.fcmErrorCode == "INVALID_ARGUMENT")
    }

    @Test("FCM B.3: topic messages are limited to 2048 bytes of keys + values")
    func topicSizeLimit() throws {
        let f = try F()
        let token = f.fcmAccessToken()
        let fits = Self.message(#""topic":"news","data":{"k":"\#(String(repeating: "v", count: 2043))"}"#)
        #expect(f.emulator.handle(f.fcmSend(fits, accessToken: token), connection: f.connection()).status == 200)
        let over = Self.message(#""topic":"news","data":{"k":"\#(String(repeating: "v", count: 2044))"}"#)
        #expect(f.emulator.handle(f.fcmSend(over, accessToken: token), connection: f.connection()).status == 400)
    }

    @Test("FCM B.1: validate_only answers 200 with fake_message_id")
    func validateOnly() throws {
        let f = try F()
        let decision = f.emulator.handle(f.fcmSend(Self.message(validateOnly: true), accessToken: f.fcmAccessToken()), connection: f.connection())
        #expect(decision.status == 200)
        #expect(decision.json?["name"]?.stringValue == "projects/\(F.project)/messages/fake_message_id")
        let bad = f.emulator.handle(f.fcmSend(#"{"validate_only":"yes","message":{"token":"t"}}"#, accessToken: f.fcmAccessToken()), connection: f.connection())
        #expect(bad.status == 400)
    }

    // MARK: B.4 errors from token patterns

    @Test("FCM B.4: token prefixes give FCM's error envelope with the FcmError code", arguments: [
        ("unregistered-1", 404, "NOT_FOUND", "UNREGISTERED"),
        ("invalid-1", 400, "INVALID_ARGUMENT", "INVALID_ARGUMENT"),
        ("mismatch-1", 403, "PERMISSION_DENIED", "SENDER_ID_MISMATCH"),
        ("thirdpartyauth-1", 401, "UNAUTHENTICATED", "THIRD_PARTY_AUTH_ERROR"),
        ("quota-1", 429, "RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED"),
        ("unavailable-1", 503, "UNAVAILABLE", "UNAVAILABLE"),
        ("internal-1", 500, "INTERNAL", "INTERNAL"),
    ])
    func tokenPatterns(token: String, status: Int, canonical: String, code: String) throws {
        let f = try F()
        let decision = f.emulator.handle(f.fcmSend(Self.message(#""token":"\#(token)""#), accessToken: f.fcmAccessToken()), connection: f.connection())
        #expect(decision.status == status)
        #expect(decision.googleStatus == canonical)
        #expect(decision.fcmErrorCode == code)
        #expect(decision.json?["error"]?["code"]?.numberValue?.int64Value == Int64(status))
        let retryAfter = decision.response?.header("retry-after")
        #expect((retryAfter != nil) == (code == "QUOTA_EXCEEDED" || code == "UNAVAILABLE"))
    }

    @Test("FCM B.3: the size check ignores the target field")
    func sizeIgnoresTarget() throws {
        let f = try F()
        let longToken = String(repeating: "t", count: 4000)
        let body = Self.message(#""token":"\#(longToken)","data":{"k":"\#(String(repeating: "v", count: 1000))"}"#)
        #expect(f.emulator.handle(f.fcmSend(body, accessToken: f.fcmAccessToken()), connection: f.connection()).status == 200)
    }

    @Test("FCM B.3 size rule: keys and scalar values count, structure does not")
    func payloadSizeRule() throws {
        guard case .valid(let result) = FCMMessageCheck.check(body: Array(#"{"message":{"token":"tok","notification":{"title":"ab"},"android":{"direct_boot_ok":true}}}"#.utf8)) else {
            Issue.record("valid message refused")
            return
        }
        // notification(12) + title(5) + ab(2) + android(7) + direct_boot_ok(14) + true(4) = 44
        #expect(result.payloadSize == 44)
        #expect(result.target == .init(kind: "token", value: "tok"))
    }
}
