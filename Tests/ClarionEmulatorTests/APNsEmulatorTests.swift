import ClarionCore
import ClarionCrypto
import Testing
@testable import ClarionEmulator

@Suite struct APNsEmulatorTests {
    typealias F = EmulatorFixture

    @Test("APNs A.6: a valid push is 200 with an empty body and a generated UUID apns-id")
    func accepted() throws {
        let f = try F()
        let decision = f.emulator.handle(f.apnsRequest(), connection: f.connection())
        #expect(decision.status == 200)
        #expect(decision.response?.body.isEmpty == true)
        let id = try #require(decision.response?.header("apns-id"))
        #expect(APNsEmulator.isUUID(id))
        #expect(decision.response?.header("apns-unique-id") == nil)
    }

    @Test("APNs A.6: the request's apns-id is echoed, on errors too")
    func echoesID() throws {
        let f = try F()
        let id = "123e4567-e89b-12d3-a456-426614174000"
        let ok = f.emulator.handle(f.apnsRequest(headers: [("apns-id", id)]), connection: f.connection())
        #expect(ok.response?.header("apns-id") == id)
        let bad = f.emulator.handle(f.apnsRequest(headers: [("apns-id", id), ("apns-priority", "7")]), connection: f.connection())
        #expect(bad.status == 400)
        #expect(bad.response?.header("apns-id") == id)
    }

    @Test("APNs A.6: sandbox answers carry apns-unique-id")
    func sandboxUniqueID() throws {
        let f = try F { $0.apns.environment = .sandbox }
        let decision = f.emulator.handle(f.apnsRequest(), connection: f.connection())
        #expect(decision.status == 200)
        #expect(decision.response?.header("apns-unique-id").map(APNsEmulator.isUUID) == true)
    }

    @Test("APNs A.1: a method other than POST is 405 MethodNotAllowed")
    func methodNotAllowed() throws {
        let f = try F()
        let decision = f.emulator.handle(f.apnsRequest(method: "GET"), connection: f.connection())
        #expect(decision.status == 405)
        #expect(decision.reason == "MethodNotAllowed")
    }

    @Test("APNs A.6: a path outside /3/device/ is 404 BadPath")
    func badPath() throws {
        let f = try F()
        var request = f.apnsRequest()
        request.path = "/3/devices/\(F.validToken)"
        let decision = f.emulator.handle(request, connection: f.connection())
        #expect(decision.status == 404)
        #expect(decision.reason == "BadPath")
    }

    @Test("APNs A.6: /3/device/ with no token is 400 MissingDeviceToken")
    func missingDeviceToken() throws {
        let f = try F()
        let decision = f.emulator.handle(f.apnsRequest(token: ""), connection: f.connection())
        #expect(decision.status == 400)
        #expect(decision.reason == "MissingDeviceToken")
    }

    @Test("APNs A.2: a header sent twice is 400 DuplicateHeaders")
    func duplicateHeaders() throws {
        let f = try F()
        let decision = f.emulator.handle(f.apnsRequest(headers: [("apns-priority", "10"), ("apns-priority", "5")]), connection: f.connection())
        #expect(decision.status == 400)
        #expect(decision.reason == "DuplicateHeaders")
    }

    // MARK: A.5 provider token

    @Test("APNs A.5: no authorization header, or not a bearer token, is 403 MissingProviderToken",
          arguments: [nil, "", "basic abc", "bearer ", "bearer    "])
    func missingProviderToken(authorization: String?) throws {
        let f = try F()
        var request = f.apnsRequest()
        request.headers.removeAll { $0.0 == "authorization" }
        if let authorization { request.headers.append(("authorization", authorization)) }
        let decision = f.emulator.handle(request, connection: f.connection())
        #expect(decision.status == 403)
        #expect(decision.reason == "MissingProviderToken")
    }

    @Test("APNs A.5: unreadable, non-ES256, unknown kid, wrong iss, bad signature, no iat or future iat is 403 InvalidProviderToken",
          arguments: ["garbage", "unknownKid", "wrongIssuer", "wrongKey", "rs256", "noIat", "futureIat", "stringIat", "tampered"])
    func invalidProviderToken(kind: String) throws {
        let f = try F()
        let jwt: String
        switch kind {
        case "garbage": jwt = "not.a.jwt"
        case "unknownKid": jwt = f.apnsJWT(keyID: "NOSUCHKEY0")
        case "wrongIssuer": jwt = f.apnsJWT(teamID: "SOMEONEELS")
        case "wrongKey": jwt = f.apnsJWT(key: FixtureKeys.apnsOther)
        case "rs256": jwt = try JWT.sign(header: ["kid": .string(F.keyID)], claims: ["iss": .string(F.teamID), "iat": .double(f.clock.now)], key: FixtureKeys.fcm)
        case "noIat": jwt = try JWT.sign(header: ["kid": .string(F.keyID)], claims: ["iss": .string(F.teamID)], key: FixtureKeys.apns)
        case "futureIat": jwt = f.apnsJWT(issuedAt: f.clock.now + 3600)
        case "stringIat": jwt = try JWT.sign(header: ["kid": .string(F.keyID)], claims: ["iss": .string(F.teamID), "iat": "1800000000"], key: FixtureKeys.apns)
        default:
            var parts = f.apnsJWT().split(separator: ".").map(String.init)
            parts[1] = Base64URL.encode(Array(#"{"iat":1800000000,"iss":"TEAM123457"}"#.utf8))
            jwt = parts.joined(separator: ".")
        }
        let decision = f.emulator.handle(f.apnsRequest(jwt: jwt), connection: f.connection())
        #expect(decision.status == 403)
        #expect(decision.reason == "InvalidProviderToken")
    }

    @Test("APNs A.5: a token issued more than an hour ago is 403 ExpiredProviderToken")
    func expiredProviderToken() throws {
        let f = try F()
        let old = f.apnsJWT(issuedAt: f.clock.now - 3601)
        let decision = f.emulator.handle(f.apnsRequest(jwt: old), connection: f.connection())
        #expect(decision.status == 403)
        #expect(decision.reason == "ExpiredProviderToken")
        let fresh = f.apnsJWT(issuedAt: f.clock.now - 3599)
        #expect(f.emulator.handle(f.apnsRequest(jwt: fresh), connection: f.connection()).status == 200)
    }

    @Test("APNs A.5: a token cached on the connection still expires once it is an hour old")
    func cachedTokenExpires() throws {
        let f = try F()
        let connection = f.connection()
        let jwt = f.apnsJWT()
        #expect(f.emulator.handle(f.apnsRequest(jwt: jwt), connection: connection).status == 200)
        f.clock.advance(3000)
        #expect(f.emulator.handle(f.apnsRequest(jwt: jwt), connection: connection).status == 200)
        f.clock.advance(601)
        let decision = f.emulator.handle(f.apnsRequest(jwt: jwt), connection: connection)
        #expect(decision.status == 403)
        #expect(decision.reason == "ExpiredProviderToken")
    }

    @Test("APNs A.5: a key restricted to sandbox, used on production, is 403 BadEnvironmentKeyIdInToken")
    func badEnvironmentKey() throws {
        let f = try F()
        let jwt = f.apnsJWT(key: FixtureKeys.apnsSandboxOnly, keyID: F.sandboxKeyID)
        let decision = f.emulator.handle(f.apnsRequest(jwt: jwt), connection: f.connection())
        #expect(decision.status == 403)
        #expect(decision.reason == "BadEnvironmentKeyIdInToken")
        let sandbox = try F { $0.apns.environment = .sandbox }
        #expect(sandbox.emulator.handle(sandbox.apnsRequest(jwt: sandbox.apnsJWT(key: FixtureKeys.apnsSandboxOnly, keyID: F.sandboxKeyID)),
                                        connection: sandbox.connection()).status == 200)
    }

    @Test("APNs A.5: a connection is bound to its first team: another team's valid token is 403 InvalidProviderToken")
    func oneTeamPerConnection() throws {
        let f = try F()
        let connection = f.connection()
        #expect(f.emulator.handle(f.apnsRequest(), connection: connection).status == 200)
        f.clock.advance(1300)
        let other = f.apnsJWT(key: FixtureKeys.apnsOtherTeam, keyID: F.otherTeamKeyID, teamID: F.otherTeamID)
        let decision = f.emulator.handle(f.apnsRequest(jwt: other, headers: [("apns-topic", F.otherBundleID)]), connection: connection)
        #expect(decision.status == 403)
        #expect(decision.reason == "InvalidProviderToken")
        // The same token on a fresh connection is fine.
        #expect(f.emulator.handle(f.apnsRequest(jwt: other, headers: [("apns-topic", F.otherBundleID)]), connection: f.connection()).status == 200)
    }

    @Test("APNs A.5: switching to an unrelated key on a connection is 403 UnrelatedKeyIdInToken; a related key is accepted")
    func unrelatedKey() throws {
        let f = try F()
        let sandboxCapable = try F { $0.apns.environment = .sandbox }
        // Bound to the sandbox-only key, then the main key (not related to it).
        let connection = sandboxCapable.connection()
        #expect(sandboxCapable.emulator.handle(sandboxCapable.apnsRequest(jwt: sandboxCapable.apnsJWT(key: FixtureKeys.apnsSandboxOnly, keyID: F.sandboxKeyID)),
                                               connection: connection).status == 200)
        sandboxCapable.clock.advance(1300)
        let unrelated = sandboxCapable.emulator.handle(sandboxCapable.apnsRequest(), connection: connection)
        #expect(unrelated.status == 403)
        #expect(unrelated.reason == "UnrelatedKeyIdInToken")

        // KEY1234567 lists KEY7654321 as related.
        let bound = f.connection()
        #expect(f.emulator.handle(f.apnsRequest(), connection: bound).status == 200)
        f.clock.advance(1300)
        let related = f.apnsJWT(key: FixtureKeys.apnsOther, keyID: F.relatedKeyID)
        #expect(f.emulator.handle(f.apnsRequest(jwt: related), connection: bound).status == 200)
    }

    @Test("APNs A.5: a new token less than 20 minutes after the connection's current one is 429 TooManyProviderTokenUpdates")
    func tooManyProviderTokenUpdates() throws {
        let f = try F()
        let connection = f.connection()
        let first = f.apnsJWT()
        #expect(f.emulator.handle(f.apnsRequest(jwt: first), connection: connection).status == 200)
        f.clock.advance(600)
        let early = f.emulator.handle(f.apnsRequest(jwt: f.apnsJWT()), connection: connection)
        #expect(early.status == 429)
        #expect(early.reason == "TooManyProviderTokenUpdates")
        // The connection keeps its current token.
        #expect(f.emulator.handle(f.apnsRequest(jwt: first), connection: connection).status == 200)
        f.clock.advance(600)
        #expect(f.emulator.handle(f.apnsRequest(jwt: f.apnsJWT()), connection: connection).status == 200)
    }

    @Test("APNs A.5: one token shared by several connections is accepted on each")
    func sharedTokenAcrossConnections() throws {
        let f = try F()
        let jwt = f.apnsJWT()
        for _ in 0..<3 {
            #expect(f.emulator.handle(f.apnsRequest(jwt: jwt), connection: f.connection()).status == 200)
        }
    }

    // MARK: A.7 streams

    @Test("APNs A.7: MAX_CONCURRENT_STREAMS is 1 until the connection presents a valid token, then raised once")
    func streamLimit() throws {
        let f = try F()
        #expect(f.emulator.initialMaxConcurrentStreams == 1)
        let connection = f.connection()
        #expect(connection.advertisedMaxConcurrentStreams == 1)
        let rejected = f.emulator.handle(f.apnsRequest(jwt: f.apnsJWT(key: FixtureKeys.apnsOther)), connection: connection)
        #expect(rejected.status == 403)
        #expect(rejected.maxConcurrentStreams == nil)
        let accepted = f.emulator.handle(f.apnsRequest(), connection: connection)
        #expect(accepted.status == 200)
        #expect(accepted.maxConcurrentStreams == 1000)
        #expect(connection.advertisedMaxConcurrentStreams == 1000)
        #expect(f.emulator.handle(f.apnsRequest(), connection: connection).maxConcurrentStreams == nil)
    }

    @Test("APNs A.7: a valid token on a push rejected for another reason still lifts the stream limit")
    func limitLiftedOnAuthenticatedRejection() throws {
        let f = try F()
        let connection = f.connection()
        let decision = f.emulator.handle(f.apnsRequest(headers: [("apns-priority", "7")]), connection: connection)
        #expect(decision.status == 400)
        #expect(decision.maxConcurrentStreams == 1000)
    }

    @Test("APNs A.7 (observed): with lowerLimitAfterRejection the limit drops to 1 after a rejection and returns after an accept")
    func lowerLimitAfterRejection() throws {
        let f = try F { $0.apns.lowerLimitAfterRejection = true }
        let connection = f.connection()
        #expect(f.emulator.handle(f.apnsRequest(), connection: connection).maxConcurrentStreams == 1000)
        #expect(f.emulator.handle(f.apnsRequest(headers: [("apns-priority", "7")]), connection: connection).maxConcurrentStreams == 1)
        #expect(f.emulator.handle(f.apnsRequest(headers: [("apns-priority", "7")]), connection: connection).maxConcurrentStreams == nil)
        #expect(f.emulator.handle(f.apnsRequest(), connection: connection).maxConcurrentStreams == 1000)
    }

    // MARK: A.2 / A.3 headers

    @Test("APNs A.2: an apns-id that is not a UUID is 400 BadMessageId", arguments: ["abc", "123e4567e89b12d3a456426614174000", "123e4567-e89b-12d3-a456-42661417400g"])
    func badMessageID(id: String) throws {
        let f = try F()
        let decision = f.emulator.handle(f.apnsRequest(headers: [("apns-id", id)]), connection: f.connection())
        #expect(decision.status == 400)
        #expect(decision.reason == "BadMessageId")
    }

    @Test("APNs A.3: an unknown apns-push-type is 400 InvalidPushType")
    func invalidPushType() throws {
        let f = try F()
        let decision = f.emulator.handle(f.apnsRequest(headers: [("apns-push-type", "banner")]), connection: f.connection())
        #expect(decision.status == 400)
        #expect(decision.reason == "InvalidPushType")
    }

    @Test("APNs A.2: with requirePushType, a push without apns-push-type is 400 InvalidPushType")
    func requirePushType() throws {
        let f = try F { $0.apns.requirePushType = true }
        #expect(f.emulator.handle(f.apnsRequest(), connection: f.connection()).reason == "InvalidPushType")
        #expect(f.emulator.handle(f.apnsRequest(headers: [("apns-push-type", "alert")]), connection: f.connection()).status == 200)
    }

    @Test("APNs A.3: each push type is accepted with its topic suffix", arguments: [
        ("alert", ""), ("voip", ".voip"), ("complication", ".complication"), ("fileprovider", ".pushkit.fileprovider"),
        ("location", ".location-query"), ("liveactivity", ".push-type.liveactivity"), ("pushtotalk", ".voip-ptt"),
        ("controls", ".push-type.controls"), ("widgets", ".push-type.widgets"),
    ])
    func topicSuffixes(pushType: String, suffix: String) throws {
        let f = try F()
        let decision = f.emulator.handle(f.apnsRequest(headers: [("apns-push-type", pushType), ("apns-topic", F.bundleID + suffix)]), connection: f.connection())
        #expect(decision.status == 200)
    }

    @Test("APNs A.3: a VoIP push to the bare bundle id, or an alert to the .voip topic, is 400 BadTopic")
    func wrongSuffix() throws {
        let f = try F()
        let voip = f.emulator.handle(f.apnsRequest(headers: [("apns-push-type", "voip"), ("apns-topic", F.bundleID)]), connection: f.connection())
        #expect(voip.reason == "BadTopic")
        let alert = f.emulator.handle(f.apnsRequest(headers: [("apns-push-type", "alert"), ("apns-topic", F.bundleID + ".voip")]), connection: f.connection())
        #expect(alert.reason == "BadTopic")
    }

    @Test("APNs A.3: without apns-push-type the topic suffix decides the type (.voip gets the VoIP payload limit)")
    func inferredPushType() throws {
        let f = try F()
        let body = [UInt8](repeating: 0x20, count: 5000)
        let decision = f.emulator.handle(f.apnsRequest(headers: [("apns-topic", F.bundleID + ".voip")], body: body), connection: f.connection())
        #expect(decision.status == 200)
    }

    @Test("APNs A.2: a push without apns-topic is 400 MissingTopic")
    func missingTopic() throws {
        let f = try F()
        let decision = f.emulator.handle(f.apnsRequest(includeTopic: false), connection: f.connection())
        #expect(decision.status == 400)
        #expect(decision.reason == "MissingTopic")
    }

    @Test("APNs A.6: a topic the key's team may not push to is 400 TopicDisallowed")
    func topicDisallowed() throws {
        let f = try F()
        for topic in [F.otherBundleID, "com.unknown.app", "com.unknown.app.voip"] {
            let decision = f.emulator.handle(f.apnsRequest(headers: [("apns-topic", topic)]), connection: f.connection())
            #expect(decision.status == 400)
            #expect(decision.reason == "TopicDisallowed")
        }
    }

    @Test("APNs A.5: a topic-specific key may push only to its own bundle ids")
    func topicSpecificKey() throws {
        let f = try F { configuration in
            configuration.apns.teams = [.init(teamID: F.teamID, bundleIDs: [F.bundleID, "com.example.second"])]
            configuration.apns.keys[0].bundleIDs = ["com.example.second"]
        }
        #expect(f.emulator.handle(f.apnsRequest(headers: [("apns-topic", "com.example.second")]), connection: f.connection()).status == 200)
        #expect(f.emulator.handle(f.apnsRequest(headers: [("apns-topic", F.bundleID)]), connection: f.connection()).reason == "TopicDisallowed")
    }

    @Test("APNs A.6: background push with priority 10 is 400 BadPriority")
    func backgroundPriority10() throws {
        let f = try F()
        let decision = f.emulator.handle(f.apnsRequest(headers: [("apns-push-type", "background"), ("apns-priority", "10")]), connection: f.connection())
        #expect(decision.status == 400)
        #expect(decision.reason == "BadPriority")
    }

    @Test("APNs A.3: background push with priority 5 is 200; with priority 1 or no priority (default 10) it is 400 BadPriority")
    func backgroundPriorities() throws {
        let f = try F()
        let content = Array(#"{"aps":{"content-available":1}}"#.utf8)
        #expect(f.emulator.handle(f.apnsRequest(headers: [("apns-push-type", "background"), ("apns-priority", "5")], body: content), connection: f.connection()).status == 200)
        #expect(f.emulator.handle(f.apnsRequest(headers: [("apns-push-type", "background"), ("apns-priority", "1")], body: content), connection: f.connection()).reason == "BadPriority")
        #expect(f.emulator.handle(f.apnsRequest(headers: [("apns-push-type", "background")], body: content), connection: f.connection()).reason == "BadPriority")
    }

    @Test("APNs A.2: apns-priority must be 10, 5 or 1", arguments: [("10", 200), ("5", 200), ("1", 200), ("7", 400), ("high", 400), ("", 400)])
    func priorities(value: String, status: Int) throws {
        let f = try F()
        let decision = f.emulator.handle(f.apnsRequest(headers: [("apns-priority", value)]), connection: f.connection())
        #expect(decision.status == status)
        if status == 400 { #expect(decision.reason == "BadPriority") }
    }

    @Test("APNs A.2: apns-expiration must be epoch seconds (0 allowed)", arguments: [("0", 200), ("1800003600", 200), ("-1", 400), ("soon", 400), ("1.5", 400), ("", 400)])
    func expiration(value: String, status: Int) throws {
        let f = try F()
        let decision = f.emulator.handle(f.apnsRequest(headers: [("apns-expiration", value)]), connection: f.connection())
        #expect(decision.status == status)
        if status == 400 { #expect(decision.reason == "BadExpirationDate") }
    }

    @Test("APNs A.2: apns-collapse-id of 64 bytes is accepted, 65 bytes is 400 BadCollapseId")
    func collapseID() throws {
        let f = try F()
        #expect(f.emulator.handle(f.apnsRequest(headers: [("apns-collapse-id", String(repeating: "c", count: 64))]), connection: f.connection()).status == 200)
        // 22 three-byte characters: 66 bytes but only 22 characters.
        let decision = f.emulator.handle(f.apnsRequest(headers: [("apns-collapse-id", String(repeating: "€", count: 22))]), connection: f.connection())
        #expect(decision.status == 400)
        #expect(decision.reason == "BadCollapseId")
    }

    // MARK: A.4 payload

    @Test("APNs A.4: an empty body is 400 PayloadEmpty")
    func payloadEmpty() throws {
        let f = try F()
        let decision = f.emulator.handle(f.apnsRequest(body: []), connection: f.connection())
        #expect(decision.status == 400)
        #expect(decision.reason == "PayloadEmpty")
    }

    @Test("APNs A.4: 4096 bytes is accepted and 4097 is 413 PayloadTooLarge; VoIP allows 5120 and refuses 5121",
          arguments: [("alert", "", 4096, 200), ("alert", "", 4097, 413), ("voip", ".voip", 5120, 200), ("voip", ".voip", 5121, 413)])
    func payloadLimits(pushType: String, suffix: String, size: Int, status: Int) throws {
        let f = try F()
        let body = [UInt8](repeating: UInt8(ascii: "x"), count: size)
        let decision = f.emulator.handle(f.apnsRequest(headers: [("apns-push-type", pushType), ("apns-topic", F.bundleID + suffix)], body: body),
                                         connection: f.connection())
        #expect(decision.status == status)
        if status == 413 { #expect(decision.reason == "PayloadTooLarge") }
    }

    // MARK: A.8 tokens, A.6 410

    @Test("APNs A.8: tokens that are not even-length hex of 64-400 characters are 400 BadDeviceToken",
          arguments: [String(repeating: "g", count: 64), String(repeating: "a", count: 63), String(repeating: "a", count: 62),
                      String(repeating: "a", count: 402), String(repeating: "a", count: 60) + "-abc"])
    func badDeviceToken(token: String) throws {
        let f = try F()
        let decision = f.emulator.handle(f.apnsRequest(token: token), connection: f.connection())
        #expect(decision.status == 400)
        #expect(decision.reason == "BadDeviceToken")
    }

    @Test("APNs A.8: upper-case hex and 400-character tokens are accepted")
    func longTokens() throws {
        let f = try F()
        #expect(f.emulator.handle(f.apnsRequest(token: String(repeating: "AB", count: 32)), connection: f.connection()).status == 200)
        #expect(f.emulator.handle(f.apnsRequest(token: String(repeating: "ab", count: 200)), connection: f.connection()).status == 200)
    }

    @Test("APNs A.6: a configured unregistered token is 410 Unregistered with its millisecond timestamp")
    func configuredUnregistered() throws {
        let token = String(repeating: "cd", count: 32)
        let f = try F { $0.apns.unregisteredTokens = [token: 1_700_000_000_123] }
        let decision = f.emulator.handle(f.apnsRequest(token: token), connection: f.connection())
        #expect(decision.status == 410)
        #expect(decision.reason == "Unregistered")
        #expect(decision.json?["timestamp"]?.numberValue?.int64Value == 1_700_000_000_123)
    }

    @Test("APNs A.6: the dead0410 suffix is 410 Unregistered stamped now, in milliseconds")
    func patternUnregistered() throws {
        let f = try F()
        let decision = f.emulator.handle(f.apnsRequest(token: String(repeating: "ab", count: 28) + "DEAD0410"), connection: f.connection())
        #expect(decision.status == 410)
        #expect(decision.reason == "Unregistered")
        #expect(decision.json?["timestamp"]?.numberValue?.int64Value == Int64(f.clock.now * 1000))
    }

    @Test("APNs A.6: token suffix rules give their reasons and statuses", arguments: [
        ("dead1410", 410, "ExpiredToken"), ("dead0400", 400, "BadDeviceToken"), ("dead1400", 400, "DeviceTokenNotForTopic"),
        ("dead0429", 429, "TooManyRequests"), ("dead0500", 500, "InternalServerError"), ("dead0503", 503, "ServiceUnavailable"),
    ])
    func tokenRules(suffix: String, status: Int, reason: String) throws {
        let f = try F()
        let decision = f.emulator.handle(f.apnsRequest(token: String(repeating: "ab", count: 28) + suffix), connection: f.connection())
        #expect(decision.status == status)
        #expect(decision.reason == reason)
    }

    @Test("APNs: token rules run after validation, so a malformed request keeps its own error")
    func rulesAfterValidation() throws {
        let f = try F()
        let decision = f.emulator.handle(f.apnsRequest(token: String(repeating: "ab", count: 28) + "dead0410", body: []), connection: f.connection())
        #expect(decision.reason == "PayloadEmpty")
    }

    @Test("APNs: a configured rule with an outcome APNs does not have is refused at load")
    func badRule() {
        #expect(throws: EmulatorConfigurationError.self) {
            _ = try F { $0.tokenRules = [.init(provider: .apns, suffix: "00", outcome: "NotAReason")] }
        }
    }
}
