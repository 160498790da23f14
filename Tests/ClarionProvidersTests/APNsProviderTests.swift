import ClarionCore
import ClarionCrypto
import Foundation
import Testing
@testable import ClarionProviders

@Suite(.serialized) struct APNsProviderTests {
    static func credentials() throws -> APNsTokenCredentials {
        let application = try ProviderApplication(id: "a", platform: .apns, attributes: ProviderCredentialsTests.apnsAttributes())
        guard case .apnsToken(let credentials) = application.credentials else { throw ProviderError(.invalidAttribute, "not token auth") }
        return credentials
    }

    static func decode(_ authorization: String) throws -> DecodedJWT {
        #expect(authorization.hasPrefix("bearer "))
        return try JWT.decode(String(authorization.dropFirst("bearer ".count)))
    }

    @Test("APNs A.5: the provider token is ES256 with kid = key id, iss = team id, iat = now, and verifies with the key")
    func tokenShape() throws {
        let clock = ManualClock()
        let signer = APNsTokenSigner(credentials: try Self.credentials(), clock: clock.date)
        let jwt = try Self.decode(try signer.authorization())
        #expect(jwt.algorithm == .es256)
        #expect(jwt.headerString("kid") == Demo.apns.keyID)
        #expect(jwt.claimString("iss") == Demo.apns.teamID)
        #expect(jwt.claimInt64("iat") == Int64(clock.now.timeIntervalSince1970))
        try jwt.verify(with: VerifyingKey(pem: Demo.apns.publicKeyPEM))
    }

    @Test("APNs A.5: a token is reused for 50 minutes and replaced at 50 (injected clock)")
    func renewalCadence() throws {
        let clock = ManualClock()
        let signer = APNsTokenSigner(credentials: try Self.credentials(), clock: clock.date)
        let first = try signer.authorization()
        clock.advance(49 * 60 + 59)
        #expect(try signer.authorization() == first)
        #expect(signer.tokensMinted == 1)
        clock.advance(1)
        let second = try signer.authorization()
        #expect(second != first)
        #expect(signer.tokensMinted == 2)
        #expect(try Self.decode(second).claimInt64("iat") == Int64(clock.now.timeIntervalSince1970))
    }

    @Test("APNs A.5: after ExpiredProviderToken a token at least 20 minutes old is replaced once; a younger one never")
    func expiredRenewalFloor() throws {
        let clock = ManualClock()
        let signer = APNsTokenSigner(credentials: try Self.credentials(), clock: clock.date)
        let first = try signer.authorization()
        clock.advance(19 * 60)
        #expect(signer.providerTokenExpired(rejected: first) == false)
        #expect(try signer.authorization() == first)
        clock.advance(60)
        #expect(signer.providerTokenExpired(rejected: first) == true)
        let second = try signer.authorization()
        #expect(second != first)
        // Other requests that failed with the old token do not renew again.
        #expect(signer.providerTokenExpired(rejected: first) == false)
        #expect(try signer.authorization() == second)
        #expect(signer.tokensMinted == 2)
    }

    @Test("APNs A.5: one JWT per team+key shared by all connections (the emulator saw one token on several connections)")
    func oneTokenAcrossConnections() async throws {
        let options = ProviderOptions(connectionsPerPool: 3, maxConcurrentStreamsPerConnection: 4, requestTimeout: .seconds(10), pingInterval: nil)
        let harness = try Harness(options: options)
        let first = try harness.client("app-1", .apns, harness.apnsAttributes())
        // A second application with the same team and key shares the signer (and the pool).
        let second = try harness.client("app-2", .apns, harness.apnsAttributes())
        #expect(first.apnsTokenSigner === second.apnsTokenSigner)

        let push = harness.render(platform: .apns)
        let sink = CollectingSink()
        let deliveries = (0..<60).map { ProviderDelivery(token: apnsToken(seed: $0), tag: UInt64($0)) }
        #expect(first.submit(push, deliveries: Array(deliveries[..<30]), sink: sink) == 30)
        #expect(second.submit(push, deliveries: Array(deliveries[30...]), sink: sink) == 30)
        let results = try await sink.wait(for: 60)
        #expect(results.count == 60)
        #expect(results.allSatisfy { if case .accepted = $0.outcome { true } else { false } })

        let seen = harness.apnsAuthorizations
        #expect(seen.connections.count >= 2, "the pool should have opened several connections")
        #expect(seen.tokens.count == 1)
        #expect(first.apnsTokenSigner?.tokensMinted == 1)
        #expect(harness.stats["apns"].statuses["200"] == 60)
        #expect(harness.stats["apns"].reasons["TooManyProviderTokenUpdates"] == nil)
        await harness.close()
    }

    @Test("APNs A.5: over the emulator, the token stays for 30 minutes and is replaced after 50 on the same connection without TooManyProviderTokenUpdates")
    func refreshTimingAgainstEmulator() async throws {
        let harness = try Harness()
        let client = try harness.client("app", .apns, harness.apnsAttributes())
        let push = harness.render(platform: .apns)
        #expect(await client.send(push, token: apnsToken()).label == "accepted")
        harness.clock.advance(30 * 60)
        #expect(await client.send(push, token: apnsToken()).label == "accepted")
        #expect(harness.apnsAuthorizations.tokens.count == 1)
        harness.clock.advance(21 * 60)
        #expect(await client.send(push, token: apnsToken()).label == "accepted")
        let seen = harness.apnsAuthorizations
        #expect(seen.tokens.count == 2)
        #expect(seen.connections.count == 1)
        #expect(client.apnsTokenSigner?.tokensMinted == 2)
        #expect(harness.stats["apns"].statuses["200"] == 3)
        await harness.close()
    }

    @Test("APNs A.5/A.6: ExpiredProviderToken -> authTokenExpired, a new token and recycled connections; the retry is accepted")
    func expiredProviderToken() async throws {
        // The emulator's clock runs 15 minutes ahead: at 46 minutes our token (not yet due at 50) is 61 minutes
        // old for APNs.
        let harness = try Harness(emulatorAhead: 15 * 60)
        let client = try harness.client("app", .apns, harness.apnsAttributes())
        let push = harness.render(platform: .apns)
        #expect(await client.send(push, token: apnsToken()).label == "accepted")
        harness.clock.advance(46 * 60)
        let outcome = await client.send(push, token: apnsToken())
        #expect(outcome == .authTokenExpired(reason: "ExpiredProviderToken"))
        #expect(outcome.isRetryable)
        #expect(client.apnsTokenSigner?.tokensMinted == 2)
        #expect(await client.send(push, token: apnsToken()).label == "accepted")
        #expect(try await eventually { harness.apnsAuthorizations.connections.count == 2 })
        #expect((await client.poolStatistics()).connectionsOpened == 2)
        #expect(harness.apnsAuthorizations.tokens.count == 2)
        #expect(harness.stats["apns"].reasons["ExpiredProviderToken"] == 1)
        await harness.close()
    }

    @Test("APNs A.6 outcomes: accepted with apns-id; dead tokens disable; message errors; credentials refused; 429 and 5xx retryable")
    func outcomes() async throws {
        let harness = try Harness()
        let client = try harness.client("app", .apns, harness.apnsAttributes())
        let push = harness.render(platform: .apns)

        let accepted = await client.send(push, token: apnsToken())
        guard case .accepted(let id) = accepted else {
            Issue.record("expected accepted, got \(accepted)")
            return
        }
        #expect(id?.count == 36)

        let unregistered = await client.send(push, token: apnsToken("dead0410"), tokenUpdatedAt: harness.clock.now.addingTimeInterval(-3600))
        guard case .tokenInvalid("Unregistered", let since) = unregistered else {
            Issue.record("expected Unregistered, got \(unregistered)")
            return
        }
        #expect(abs((since ?? .distantPast).timeIntervalSince(harness.clock.now)) < 1, "410 timestamp is milliseconds")
        #expect(unregistered.endpointAction == .disable(reason: "Unregistered", at: since))

        // The app re-registered (token updated) after APNs' timestamp: the endpoint stays enabled.
        let stale = await client.send(push, token: apnsToken("dead0410"), tokenUpdatedAt: harness.clock.now.addingTimeInterval(3600))
        #expect(stale.label == "rejected")
        #expect(stale.endpointAction == .none)

        #expect(await client.send(push, token: apnsToken("dead1410")) == .tokenInvalid(reason: "ExpiredToken", invalidSince: harness.clock.now))
        #expect(await client.send(push, token: apnsToken("dead0400")) == .tokenInvalid(reason: "BadDeviceToken", invalidSince: nil))
        #expect(await client.send(push, token: apnsToken("dead1400")) == .tokenInvalid(reason: "DeviceTokenNotForTopic", invalidSince: nil))
        #expect(await client.send(push, token: apnsToken("dead0429")) == .retryable(reason: "TooManyRequests", retryAfter: nil))
        #expect(await client.send(push, token: apnsToken("dead0500")) == .retryable(reason: "InternalServerError", retryAfter: nil))
        #expect(await client.send(push, token: apnsToken("dead0503")) == .retryable(reason: "ServiceUnavailable", retryAfter: nil))

        // A message APNs refuses (a collapse id the renderer would have caught, built by hand here).
        let badHeaders = APNsRequestHeaders(pushType: .alert, topic: Demo.apns.bundleID, priority: .immediate, expiration: nil,
                                            collapseID: String(repeating: "c", count: 65))
        let badPush = RenderedPush(platform: .apns, request: .apns(badHeaders), body: push.body, expiresAt: push.expiresAt)
        let badOutcome = await client.send(badPush, token: apnsToken())
        #expect(badOutcome == .messageInvalid(reason: "BadCollapseId"))
        #expect(badOutcome.endpointAction == .none)

        // A topic the team may not push to: the application's configuration is refused.
        let otherTopic = APNsRequestHeaders(pushType: .alert, topic: "com.not.ours", priority: .immediate, expiration: nil, collapseID: nil)
        let disallowed = await client.send(RenderedPush(platform: .apns, request: .apns(otherTopic), body: push.body, expiresAt: push.expiresAt),
                                           token: apnsToken())
        #expect(disallowed == .credentialsInvalid(reason: "TopicDisallowed"))
        #expect(disallowed.disablesApplication)

        // Background push (content-available only): priority 5, accepted (APNs refuses 10 for background).
        let background = harness.render([.apns: json(["aps": ["content-available": 1], "Foo1": "Bar", "Foo2": 123])], platform: .apns)
        #expect(await client.send(background, token: apnsToken()).label == "accepted")
        await harness.close()
    }

    @Test("APNs A.6: a key the provider does not know is InvalidProviderToken -> credentials invalid, application disabled")
    func invalidProviderToken() async throws {
        let harness = try Harness()
        var attributes = harness.apnsAttributes()
        attributes[ProviderAttribute.platformCredential] = SigningKey.generateP256().pkcs8PEM
        let client = try harness.client("app", .apns, attributes)
        let outcome = await client.send(harness.render(platform: .apns), token: apnsToken())
        #expect(outcome == .credentialsInvalid(reason: "InvalidProviderToken"))
        #expect(outcome.disablesApplication)
        await harness.close()
    }

    @Test("APNs A.7: GOAWAY carrying a credential reason (revoked key) -> credentials invalid; carrying Shutdown -> retryable")
    func goAwayReasons() async throws {
        for (reason, expected) in [("InvalidProviderToken", "credentials_invalid"), ("Shutdown", "retryable")] {
            let harness = try Harness { configuration in
                configuration.faults.goAwayAfterStreams = 0
                configuration.faults.goAwayReason = reason
                configuration.faults.providers = [.apns]
            }
            let client = try harness.client("app", .apns, harness.apnsAttributes())
            let outcome = await client.send(harness.render(platform: .apns), token: apnsToken())
            #expect(outcome.label == expected, "GOAWAY \(reason): \(outcome)")
            #expect(outcome.reason?.contains(reason) == true)
            #expect(harness.stats["apns"].statuses["200"] == nil)
            await harness.close()
        }
    }

    @Test("APNs A.4: a payload over 4096 bytes fails as message invalid with no round trip (the emulator saw nothing)")
    func payloadTooLarge() async throws {
        let harness = try Harness()
        let client = try harness.client("app", .apns, harness.apnsAttributes())
        let big = json(["aps": ["alert": .string(String(repeating: "x", count: 5000))]])
        // The renderer refuses it first (core rule)...
        let rendered = PushRenderer.render(SNSMessage(defaultText: nil, payloads: [.apns: big]), attributes: MobilePushAttributes(),
                                           platform: .apns, settings: RenderSettings(apnsBundleID: Demo.apns.bundleID),
                                           publishedAt: harness.clock.now, now: harness.clock.now)
        #expect(rendered.outcome?.label == "message_invalid")
        // ...and the client refuses a too-large body it is handed anyway, on both paths.
        let headers = APNsRequestHeaders(pushType: .alert, topic: Demo.apns.bundleID, priority: .immediate, expiration: nil, collapseID: nil)
        let push = RenderedPush(platform: .apns, request: .apns(headers), body: PayloadTemplate(bytes: big.encoded()),
                                expiresAt: harness.clock.now.addingTimeInterval(60))
        let outcome = await client.send(push, token: apnsToken())
        #expect(outcome.label == "message_invalid")
        #expect(outcome.reason?.contains("4096") == true)
        let sink = CollectingSink()
        #expect(client.submit(push, deliveries: [ProviderDelivery(token: apnsToken(), tag: 7)], sink: sink) == 1)
        #expect(sink.all.map(\.tag) == [7])
        #expect(sink.all.first?.outcome.label == "message_invalid")
        #expect(harness.stats.totalRequests == 0)
        #expect(harness.apnsAuthorizations.tokens.isEmpty)
        await harness.close()
    }

    @Test("APNs batch path: outcomes come back by tag through the sink, one per delivery, for mixed tokens")
    func batchOutcomes() async throws {
        let harness = try Harness()
        let client = try harness.client("app", .apns, harness.apnsAttributes())
        let push = harness.render(platform: .apns)
        let suffixes = ["", "dead0410", "dead0400", "dead0503", ""]
        let deliveries = (0..<50).map { i in ProviderDelivery(token: apnsToken(suffixes[i % suffixes.count], seed: i), tag: UInt64(1000 + i)) }
        let sink = CollectingSink()
        #expect(client.submit(push, deliveries: deliveries, sink: sink) == 50)
        let results = try await sink.wait(for: 50)
        #expect(results.count == 50)
        #expect(Set(results.map(\.tag)) == Set(deliveries.map(\.tag)))
        for result in results {
            let expected = ["accepted", "token_invalid", "token_invalid", "retryable", "accepted"][Int(result.tag - 1000) % 5]
            #expect(result.outcome.label == expected, "tag \(result.tag)")
        }
        await harness.close()
    }
}
