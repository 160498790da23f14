import ClarionCore
import Foundation
import Testing
@testable import ClarionEmulator
@testable import ClarionProviders

@Suite(.serialized) struct ADMProviderTests {
    @Test("ADM D.1: client-credentials token (scope messaging:push) from ProviderAuthEndpoint, cached across sends")
    func authFlowAndCaching() async throws {
        let harness = try Harness()
        let client = try harness.client("adm", .adm, harness.admAttributes())
        let push = harness.render(platform: .adm)
        for i in 0..<3 {
            let outcome = await client.send(push, token: "amzn1.adm-registration.v3.device\(i)")
            guard case .accepted(let requestID) = outcome else {
                Issue.record("expected accepted, got \(outcome)")
                continue
            }
            #expect(requestID?.isEmpty == false)
        }
        #expect(client.accessTokenSource?.exchangeCount == 1)
        #expect(harness.stats["adm-oauth"].statuses["200"] == 1)
        #expect(harness.stats["adm"].statuses["200"] == 3)
        let tokenRequest = try #require(harness.emulator.records().first { $0.endpoint == "adm-oauth" })
        #expect(tokenRequest.payload.contains("scope=messaging%3Apush"))
        #expect(tokenRequest.payload.contains("grant_type=client_credentials"))
        await harness.close()
    }

    @Test("ADM D.1: the access token is refreshed ahead of expiry without holding sends back")
    func refreshAhead() async throws {
        let harness = try Harness()
        let client = try harness.client("adm", .adm, harness.admAttributes())
        let source = try #require(client.accessTokenSource)
        let push = harness.render(platform: .adm)
        #expect(await client.send(push, token: "device-a").label == "accepted")
        let first = try #require(source.cachedToken())
        harness.clock.advance(3600 - 300)  // the emulator issues 3600 s tokens; refresh due 300 s before
        #expect(source.cachedToken() == first)
        #expect(await client.send(push, token: "device-b").label == "accepted")
        #expect(try await eventually { source.exchangeCount == 2 })
        #expect(source.cachedToken() != first)
        #expect(await client.send(push, token: "device-c").label == "accepted")
        #expect(harness.stats["adm-oauth"].statuses["200"] == 2)
        await harness.close()
    }

    @Test("ADM D.3: AccessTokenExpired -> authTokenExpired, the token is dropped and the retry fetches a new one")
    func accessTokenExpired() async throws {
        let harness = try Harness()
        let client = try harness.client("adm", .adm, harness.admAttributes())
        let source = try #require(client.accessTokenSource)
        let push = harness.render(platform: .adm)
        #expect(await client.send(push, token: "device-a").label == "accepted")
        harness.emulator.adm.tokens.removeAll()
        client.pool.recycleConnections()
        #expect(await client.send(push, token: "device-b") == .authTokenExpired(reason: "AccessTokenExpired"))
        #expect(source.cachedToken() == nil)
        #expect(await client.send(push, token: "device-b").label == "accepted")
        #expect(source.exchangeCount == 2)
        await harness.close()
    }

    @Test("ADM D.3 outcomes: canonical registration id replaces the token; dead ids disable; 429 with Retry-After and 5xx retry; bad message")
    func outcomes() async throws {
        let harness = try Harness()
        let client = try harness.client("adm", .adm, harness.admAttributes())
        let push = harness.render(platform: .adm)
        let canonical = await client.send(push, token: "canonical-abc")
        guard case .tokenReplaced(let newToken, _) = canonical else {
            Issue.record("expected tokenReplaced, got \(canonical)")
            return
        }
        #expect(newToken == "renewed-abc")
        #expect(canonical.isDelivered)
        #expect(canonical.endpointAction == .replaceToken("renewed-abc"))
        #expect(await client.send(push, token: "unregistered-1") == .tokenInvalid(reason: "Unregistered", invalidSince: nil))
        #expect(await client.send(push, token: "invalid-1") == .tokenInvalid(reason: "InvalidRegistrationId", invalidSince: nil))
        #expect(await client.send(push, token: "ratelimited-1") == .retryable(reason: "MaxRateExceeded", retryAfter: 1))
        let unavailable = await client.send(push, token: "unavailable-1")
        guard case .retryable(_, let after) = unavailable else {
            Issue.record("expected retryable, got \(unavailable)")
            return
        }
        #expect(after == 1)
        #expect(await client.send(push, token: "internal-1").label == "retryable")

        let badPush = harness.render([.adm: json(["data": ["a": "b"], "consolidationKey": 5])], platform: .adm)
        #expect(await client.send(badPush, token: "device-a") == .messageInvalid(reason: "InvalidConsolidationKey"))
        await harness.close()
    }

    @Test("ADM D.1: a wrong client secret is a refused exchange -> credentials invalid, application disabled")
    func refusedExchange() async throws {
        let harness = try Harness()
        let client = try harness.client("adm", .adm, harness.admAttributes(secret: "wrong"))
        let outcome = await client.send(harness.render(platform: .adm), token: "device-a")
        #expect(outcome.label == "credentials_invalid")
        #expect(outcome.reason?.contains("invalid_client") == true)
        #expect(outcome.disablesApplication)
        #expect(harness.stats["adm"].requests == 0)
        await harness.close()
    }

    @Test("ADM D.1: a refused secret is remembered; the corrected secret gets a token source of its own, so the refusal does not carry over")
    func correctedSecretStartsFresh() async throws {
        let harness = try Harness()
        let refused = try harness.client("adm", .adm, harness.admAttributes(secret: "wrong"))
        let push = harness.render(platform: .adm)
        #expect(await refused.send(push, token: "device-a").label == "credentials_invalid")
        // Remembered (refusalRetention): the next send fails without asking the token endpoint again.
        #expect(await refused.send(push, token: "device-b").label == "credentials_invalid")
        #expect(harness.stats["adm-oauth"].statuses["401"] == 1)
        #expect(refused.accessTokenSource?.exchangeCount == 1)

        // The owner changes the credential: the source is keyed by the secret's digest, so the new client has a
        // new source with nothing remembered, and the first send is delivered at once.
        let corrected = try ProviderApplication(id: "adm", platform: .adm, attributes: harness.admAttributes())
        let client = try await harness.registry.applicationChanged(corrected)
        #expect(client.accessTokenSource !== refused.accessTokenSource)
        #expect(await client.send(push, token: "device-c").label == "accepted")
        #expect(harness.stats["adm-oauth"].statuses["200"] == 1)
        await harness.close()
    }

    @Test("ADM D.2: a payload over 6 KB fails as message invalid with no round trip (the emulator saw nothing)")
    func payloadTooLarge() async throws {
        let harness = try Harness()
        let client = try harness.client("adm", .adm, harness.admAttributes())
        let body = json(["data": ["message": .string(String(repeating: "y", count: 7000))]])
        let push = RenderedPush(platform: .adm, request: .adm, body: PayloadTemplate(bytes: body.encoded()),
                                expiresAt: harness.clock.now.addingTimeInterval(60))
        let outcome = await client.send(push, token: "device-a")
        #expect(outcome.label == "message_invalid")
        #expect(outcome.reason?.contains("6144") == true)
        #expect(harness.stats.totalRequests == 0)
        await harness.close()
    }
}
