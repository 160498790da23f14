import ClarionCrypto
import Testing
@testable import ClarionEmulator

@Suite struct ADMEmulatorTests {
    typealias F = EmulatorFixture

    @Test("ADM D.1: client credentials with scope messaging:push get a bearer token (both path spellings)")
    func tokenIssued() throws {
        let f = try F()
        for path in ["/auth/o2/token", "/auth/O2/token"] {
            var request = f.admTokenRequest()
            request.path = path
            let decision = f.emulator.handle(request, connection: f.connection())
            #expect(decision.status == 200)
            #expect(decision.json?["scope"] == "messaging:push")
            #expect(decision.json?["token_type"] == "bearer")
            #expect(decision.json?["expires_in"]?.numberValue?.int64Value == 3600)
            #expect(decision.json?["access_token"]?.stringValue?.isEmpty == false)
        }
    }

    @Test("ADM D.1: token refusals", arguments: [
        ("secret", 401, "invalid_client"), ("client", 401, "invalid_client"), ("scope", 400, "invalid_scope"), ("grant", 400, "unsupported_grant_type"),
    ])
    func tokenRefusals(kind: String, status: Int, error: String) throws {
        let f = try F()
        let request: EmulatorRequest
        switch kind {
        case "secret": request = f.admTokenRequest(secret: "wrong")
        case "client": request = f.admTokenRequest(clientID: "amzn1.application-oa2-client.nobody")
        case "scope": request = f.admTokenRequest(scope: "profile")
        default: request = f.admTokenRequest(grantType: "password")
        }
        let decision = f.emulator.handle(request, connection: f.connection())
        #expect(decision.status == status)
        #expect(decision.json?["error"]?.stringValue == error)
    }

    @Test("ADM D.3: a valid send is 200 with registrationID equal to the id sent, and X-Amzn-RequestId")
    func accepted() throws {
        let f = try F()
        let decision = f.emulator.handle(f.admSend(registrationID: "amzn1.adm-registration.v3.abc", accessToken: f.admAccessToken()), connection: f.connection())
        #expect(decision.status == 200)
        #expect(decision.json?["registrationID"] == "amzn1.adm-registration.v3.abc")
        #expect(decision.response?.header("x-amzn-requestid") != nil)
    }

    @Test("ADM D.3: a configured id answers with its canonical registrationID")
    func configuredCanonical() throws {
        let f = try F { $0.adm.canonicalRegistrationIDs = ["old-id": "new-id"] }
        let decision = f.emulator.handle(f.admSend(registrationID: "old-id", accessToken: f.admAccessToken()), connection: f.connection())
        #expect(decision.status == 200)
        #expect(decision.json?["registrationID"] == "new-id")
    }

    @Test("ADM D.3: the canonical- prefix answers registrationID renewed-<rest>")
    func patternCanonical() throws {
        let f = try F()
        let decision = f.emulator.handle(f.admSend(registrationID: "canonical-xyz", accessToken: f.admAccessToken()), connection: f.connection())
        #expect(decision.json?["registrationID"] == "renewed-xyz")
    }

    @Test("ADM D.3: no token, an unknown token or an expired one is 401 AccessTokenExpired")
    func accessTokenExpired() throws {
        let f = try F()
        let token = f.admAccessToken()
        var noToken = f.admSend(registrationID: "r", accessToken: "x")
        noToken.headers.removeAll { $0.0 == "authorization" }
        #expect(f.emulator.handle(noToken, connection: f.connection()).reason == "AccessTokenExpired")
        #expect(f.emulator.handle(f.admSend(registrationID: "r", accessToken: "Atc|unknown"), connection: f.connection()).reason == "AccessTokenExpired")
        let connection = f.connection()
        #expect(f.emulator.handle(f.admSend(registrationID: "r", accessToken: token), connection: connection).status == 200)
        f.clock.advance(3601)
        let expired = f.emulator.handle(f.admSend(registrationID: "r", accessToken: token), connection: connection)
        #expect(expired.status == 401)
        #expect(expired.reason == "AccessTokenExpired")
    }

    @Test("ADM D.2: missing or wrong X-Amzn-Type-Version / X-Amzn-Accept-Type / Content-Type is 400 InvalidType",
          arguments: ["x-amzn-type-version", "x-amzn-accept-type", "content-type"])
    func requiredHeaders(header: String) throws {
        let f = try F()
        let token = f.admAccessToken()
        var request = f.admSend(registrationID: "r", accessToken: token)
        request.headers.removeAll { $0.0 == header }
        let missing = f.emulator.handle(request, connection: f.connection())
        #expect(missing.status == 400)
        #expect(missing.reason == "InvalidType")
        request.headers.append((header, "text/plain"))
        #expect(f.emulator.handle(request, connection: f.connection()).reason == "InvalidType")
    }

    @Test("ADM D.2: a body over 6 KB is 413 MessageTooLarge")
    func messageTooLarge() throws {
        let f = try F()
        let token = f.admAccessToken()
        // {"data":{"k":"..."}} is 17 bytes of structure.
        let fits = #"{"data":{"k":"\#(String(repeating: "v", count: 6144 - 17))"}}"#
        #expect(f.emulator.handle(f.admSend(registrationID: "r", body: fits, accessToken: token), connection: f.connection()).status == 200)
        let over = #"{"data":{"k":"\#(String(repeating: "v", count: 6144 - 16))"}}"#
        let decision = f.emulator.handle(f.admSend(registrationID: "r", body: over, accessToken: token), connection: f.connection())
        #expect(decision.status == 413)
        #expect(decision.reason == "MessageTooLarge")
    }

    @Test("ADM D.2: data must be string -> string and some content is required: else 400 InvalidData", arguments: [
        #"{"data":{"n":1}}"#, #"{"data":"x"}"#, #"{}"#, #"{"consolidationKey":"c"}"#, #"{"notification":{"title":"t"}}"#, "not json", "[]",
    ])
    func invalidData(body: String) throws {
        let f = try F()
        let decision = f.emulator.handle(f.admSend(registrationID: "r", body: body, accessToken: f.admAccessToken()), connection: f.connection())
        #expect(decision.status == 400)
        #expect(decision.reason == "InvalidData")
    }

    @Test("ADM D.2: data {} and a notification with title and body are accepted")
    func acceptedBodies() throws {
        let f = try F()
        let token = f.admAccessToken()
        for body in [#"{"data":{}}"#, #"{"notification":{"title":"t","body":"b"}}"#,
                     #"{"data":{"a":"b"},"consolidationKey":"c","expiresAfter":86400,"md5":"abc="}"#] {
            #expect(f.emulator.handle(f.admSend(registrationID: "r", body: body, accessToken: token), connection: f.connection()).status == 200, "\(body)")
        }
    }

    @Test("ADM D.3: consolidationKey, expiresAfter and md5 of the wrong shape get their reasons", arguments: [
        (#"{"data":{},"consolidationKey":5}"#, "InvalidConsolidationKey"),
        (#"{"data":{},"expiresAfter":0}"#, "InvalidExpiration"),
        (#"{"data":{},"expiresAfter":2678401}"#, "InvalidExpiration"),
        (#"{"data":{},"expiresAfter":"60"}"#, "InvalidExpiration"),
        (#"{"data":{},"expiresAfter":1.5}"#, "InvalidExpiration"),
        (#"{"data":{},"md5":1}"#, "InvalidChecksum"),
    ])
    func fieldReasons(body: String, reason: String) throws {
        let f = try F()
        let decision = f.emulator.handle(f.admSend(registrationID: "r", body: body, accessToken: f.admAccessToken()), connection: f.connection())
        #expect(decision.status == 400)
        #expect(decision.reason == reason)
    }

    @Test("ADM D.3: registration id patterns", arguments: [
        ("unregistered-1", 400, "Unregistered"), ("invalid-1", 400, "InvalidRegistrationId"), ("ratelimited-1", 429, "MaxRateExceeded"),
        ("unavailable-1", 503, nil), ("internal-1", 500, nil), ("bad%20id", 400, "InvalidRegistrationId"),
    ])
    func patterns(id: String, status: Int, reason: String?) throws {
        let f = try F()
        let decision = f.emulator.handle(f.admSend(registrationID: id, accessToken: f.admAccessToken()), connection: f.connection())
        #expect(decision.status == status)
        #expect(decision.reason == reason)
        #expect((decision.response?.header("retry-after") != nil) == (status == 429 || status == 503))
    }
}
