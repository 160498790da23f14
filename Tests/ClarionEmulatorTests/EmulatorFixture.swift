import ClarionCore
import ClarionCrypto
import Foundation
import Synchronization
@testable import ClarionEmulator

/// A settable clock for token ages and expiry.
final class TestClock: Sendable {
    private let value: Mutex<Double>
    init(_ start: Double = 1_800_000_000) { value = Mutex(start) }
    var now: Double { value.withLock { $0 } }
    func advance(_ seconds: Double) { value.withLock { $0 += seconds } }
}

/// Keys generated once per test process (RSA generation is the slow part).
enum FixtureKeys {
    static let apns = SigningKey.generateP256()
    static let apnsOther = SigningKey.generateP256()
    static let apnsSandboxOnly = SigningKey.generateP256()
    static let apnsOtherTeam = SigningKey.generateP256()
    static let fcm = try! SigningKey.generateRSA()
    static let fcmOtherProject = try! SigningKey.generateRSA()
}

/// An emulator configured with known credentials, a test clock and helpers to build provider requests.
final class EmulatorFixture: Sendable {
    static let teamID = "TEAM123456"
    static let keyID = "KEY1234567"
    static let relatedKeyID = "KEY7654321"
    static let sandboxKeyID = "SANDBOXKEY"
    static let otherTeamID = "OTHERTEAM1"
    static let otherTeamKeyID = "OTHERKEY01"
    static let bundleID = "com.example.app"
    static let otherBundleID = "com.other.app"
    static let serviceAccount = "sa@clarion-test.iam.gserviceaccount.com"
    static let otherServiceAccount = "sa@other-project.iam.gserviceaccount.com"
    static let project = "clarion-test"
    static let admClientID = "amzn1.application-oa2-client.test"
    static let admSecret = "s3cret"
    static let validToken = String(repeating: "ab", count: 32)

    let clock: TestClock
    let emulator: ProviderEmulator
    private let connectionIDs = Atomic<UInt64>(0)
    private let defaultTokens = Mutex<[Double: String]>([:])

    static func configuration() -> EmulatorConfiguration {
        var configuration = EmulatorConfiguration()
        configuration.recordInMemory = true
        configuration.apns.keys = [
            .init(keyID: keyID, teamID: teamID, publicKeyPEM: FixtureKeys.apns.verifyingKey.pem, relatedKeyIDs: [relatedKeyID]),
            .init(keyID: relatedKeyID, teamID: teamID, publicKeyPEM: FixtureKeys.apnsOther.verifyingKey.pem),
            .init(keyID: sandboxKeyID, teamID: teamID, publicKeyPEM: FixtureKeys.apnsSandboxOnly.verifyingKey.pem, environment: .sandbox),
            .init(keyID: otherTeamKeyID, teamID: otherTeamID, publicKeyPEM: FixtureKeys.apnsOtherTeam.verifyingKey.pem),
        ]
        configuration.apns.teams = [.init(teamID: teamID, bundleIDs: [bundleID]), .init(teamID: otherTeamID, bundleIDs: [otherBundleID])]
        configuration.fcm.serviceAccounts = [
            .init(clientEmail: serviceAccount, projectID: project, privateKeyID: "kid-1", publicKeyPEM: FixtureKeys.fcm.verifyingKey.pem),
            .init(clientEmail: otherServiceAccount, projectID: "other-project", publicKeyPEM: FixtureKeys.fcmOtherProject.verifyingKey.pem),
        ]
        configuration.adm.clients = [.init(clientID: admClientID, clientSecret: admSecret)]
        return configuration
    }

    init(_ adjust: (inout EmulatorConfiguration) -> Void = { _ in }) throws {
        var configuration = EmulatorFixture.configuration()
        adjust(&configuration)
        let clock = TestClock()
        self.clock = clock
        self.emulator = try ProviderEmulator(configuration: configuration, clock: { clock.now })
    }

    func connection() -> EmulatorConnectionState {
        emulator.makeConnectionState(id: connectionIDs.wrappingAdd(1, ordering: .relaxed).newValue)
    }

    // MARK: APNs

    /// A provider token; with the default key, one token per issue second (ECDSA signatures are
    /// randomised, and a client reuses its token rather than re-signing: a second token with the same
    /// `iat` on a connection would be `TooManyProviderTokenUpdates`).
    func apnsJWT(key: SigningKey = FixtureKeys.apns, keyID: String = EmulatorFixture.keyID, teamID: String = EmulatorFixture.teamID, issuedAt: Double? = nil) -> String {
        let iat = (issuedAt ?? clock.now).rounded(.down)
        let sign = { try! JWT.sign(header: ["kid": .string(keyID)], claims: ["iss": .string(teamID), "iat": .double(iat)], key: key) }
        guard key === FixtureKeys.apns, keyID == Self.keyID, teamID == Self.teamID else { return sign() }
        return defaultTokens.withLock { cache in
            if let token = cache[iat] { return token }
            let token = sign()
            cache[iat] = token
            return token
        }
    }

    func apnsRequest(token: String = EmulatorFixture.validToken, jwt: String? = nil, headers: [(String, String)] = [],
                     body: [UInt8] = Array(#"{"aps":{"alert":"hi"}}"#.utf8), method: String = "POST", includeTopic: Bool = true) -> EmulatorRequest {
        var fields: [(String, String)] = [("authorization", "bearer \(jwt ?? apnsJWT())")]
        if includeTopic, !headers.contains(where: { $0.0 == "apns-topic" }) { fields.append(("apns-topic", Self.bundleID)) }
        fields += headers
        return EmulatorRequest(method: method, path: "/3/device/\(token)", headers: fields, body: body)
    }

    // MARK: FCM

    func fcmAssertion(key: SigningKey = FixtureKeys.fcm, issuer: String = EmulatorFixture.serviceAccount, audience: String = "https://oauth2.googleapis.com/token",
                      scope: String? = "https://www.googleapis.com/auth/firebase.messaging", issuedAt: Double? = nil, lifetime: Double = 3600,
                      kid: String? = "kid-1") -> String {
        let iat = (issuedAt ?? clock.now).rounded(.down)
        var claims: JSONObject = ["iss": .string(issuer), "aud": .string(audience), "iat": .double(iat), "exp": .double(iat + lifetime)]
        if let scope { claims["scope"] = .string(scope) }
        var header: JSONObject = ["typ": "JWT"]
        if let kid { header["kid"] = .string(kid) }
        return try! JWT.sign(header: header, claims: claims, key: key)
    }

    func fcmTokenRequest(assertion: String, grantType: String = "urn:ietf:params:oauth:grant-type:jwt-bearer") -> EmulatorRequest {
        let body = "grant_type=\(FormBody.encode(grantType))&assertion=\(assertion)"
        return EmulatorRequest(method: "POST", path: "/token", headers: [("content-type", "application/x-www-form-urlencoded")], body: Array(body.utf8))
    }

    /// An access token from the emulator's token endpoint.
    func fcmAccessToken(_ assertion: String? = nil) -> String {
        let decision = emulator.handle(fcmTokenRequest(assertion: assertion ?? fcmAssertion()), connection: connection())
        let body = (try? JSONValue.parse(bytes: decision.response!.body))!
        return body["access_token"]!.stringValue!
    }

    func fcmSend(_ body: String, accessToken: String, project: String = EmulatorFixture.project) -> EmulatorRequest {
        EmulatorRequest(method: "POST", path: "/v1/projects/\(project)/messages:send",
                        headers: [("authorization", "Bearer \(accessToken)"), ("content-type", "application/json")], body: Array(body.utf8))
    }

    // MARK: ADM

    func admTokenRequest(clientID: String = EmulatorFixture.admClientID, secret: String = EmulatorFixture.admSecret, scope: String = "messaging:push",
                         grantType: String = "client_credentials") -> EmulatorRequest {
        let body = "grant_type=\(grantType)&scope=\(FormBody.encode(scope))&client_id=\(FormBody.encode(clientID))&client_secret=\(FormBody.encode(secret))"
        return EmulatorRequest(method: "POST", path: "/auth/o2/token", headers: [("content-type", "application/x-www-form-urlencoded")], body: Array(body.utf8))
    }

    func admAccessToken() -> String {
        let decision = emulator.handle(admTokenRequest(), connection: connection())
        return (try? JSONValue.parse(bytes: decision.response!.body))!["access_token"]!.stringValue!
    }

    func admSend(registrationID: String, body: String = #"{"data":{"k":"v"}}"#, accessToken: String,
                 headers: [(String, String)]? = nil) -> EmulatorRequest {
        let fields = headers ?? [
            ("authorization", "Bearer \(accessToken)"), ("content-type", "application/json"), ("accept", "application/json"),
            ("x-amzn-type-version", "com.amazon.device.messaging.ADMMessage@1.0"),
            ("x-amzn-accept-type", "com.amazon.device.messaging.ADMSendResult@1.0"),
        ]
        return EmulatorRequest(method: "POST", path: "/messaging/registrations/\(registrationID)/messages", headers: fields, body: Array(body.utf8))
    }
}

extension EmulatorDecision {
    var status: Int? { response?.status }
    /// `reason` of an APNs/ADM error body.
    var reason: String? { response.flatMap { (try? JSONValue.parse(bytes: $0.body))?["reason"]?.stringValue } }
    var json: JSONValue? { response.flatMap { (try? JSONValue.parse(bytes: $0.body)) } }
    /// FCM's `details[].errorCode` (FcmError).
    var fcmErrorCode: String? {
        json?["error"]?["details"]?.arrayValue?.compactMap { $0["errorCode"]?.stringValue }.first
    }
    var googleStatus: String? { json?["error"]?["status"]?.stringValue }
}
