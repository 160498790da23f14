import ClarionCore
import ClarionHTTP2
import Foundation
import Testing
@testable import ClarionEmulator
@testable import ClarionProviders

@Suite(.serialized) struct FCMProviderTests {
    @Test("FCM B.2: jwt-bearer exchange (RS256) through the service account's token_uri; the access token is cached across sends")
    func authFlowAndCaching() async throws {
        let harness = try Harness()
        let client = try harness.client("fcm", .gcm, harness.fcmAttributes())
        #expect(client.application.authURL == harness.tokenURL, "token_uri from the JSON")
        let push = harness.render(platform: .gcm)
        for i in 0..<3 {
            let outcome = await client.send(push, token: "device-token-\(i)")
            guard case .accepted(let name) = outcome else {
                Issue.record("expected accepted, got \(outcome)")
                continue
            }
            #expect(name?.hasPrefix("projects/\(Demo.credentials.fcm.projectID)/messages/") == true)
        }
        #expect(client.accessTokenSource?.exchangeCount == 1)
        #expect(harness.stats["fcm-oauth"].statuses["200"] == 1)
        #expect(harness.stats["fcm"].statuses["200"] == 3)
        await harness.close()
    }

    @Test("FCM B.2: the access token is refreshed ahead of expiry in the background while sends keep using the valid one")
    func refreshAhead() async throws {
        let harness = try Harness()
        let client = try harness.client("fcm", .gcm, harness.fcmAttributes())
        let source = try #require(client.accessTokenSource)
        let push = harness.render(platform: .gcm)
        #expect(await client.send(push, token: "device-a").label == "accepted")
        let first = try #require(source.cachedToken())

        // The emulator issues 3599 s tokens; with a 300 s margin the refresh is due at 3299 s.
        harness.clock.advance(3298)
        #expect(source.cachedToken() == first)
        #expect(source.exchangeCount == 1)
        harness.clock.advance(2)
        // Due: the send goes out at once with the token it has, and a refresh starts behind it.
        #expect(source.cachedToken() == first)
        #expect(await client.send(push, token: "device-b").label == "accepted")
        #expect(try await eventually { source.exchangeCount == 2 })
        let second = try #require(source.cachedToken())
        #expect(second != first)
        #expect(await client.send(push, token: "device-c").label == "accepted")
        #expect(harness.stats["fcm-oauth"].statuses["200"] == 2)
        #expect(harness.stats["fcm"].statuses["200"] == 3)
        await harness.close()
    }

    @Test("FCM B.2: the background owner refreshes a due token with no send asking; not before it is due")
    func refreshWithoutTraffic() async throws {
        let harness = try Harness()
        let client = try harness.client("fcm", .gcm, harness.fcmAttributes())
        let source = try #require(client.accessTokenSource)
        #expect(await client.send(harness.render(platform: .gcm), token: "device-a").label == "accepted")
        source.refreshIfDue()  // what the worker's timer calls
        #expect(source.exchangeCount == 1)
        harness.clock.advance(3300)
        source.refreshIfDue()
        #expect(try await eventually { source.exchangeCount == 2 })
        #expect(harness.stats["fcm-oauth"].statuses["200"] == 2)
        #expect(harness.stats["fcm"].requests == 1)
        await harness.close()
    }

    @Test("FCM B.2: 401 UNAUTHENTICATED -> authTokenExpired and the token is dropped; the retry exchanges again and is accepted")
    func staleAccessToken() async throws {
        let harness = try Harness()
        let client = try harness.client("fcm", .gcm, harness.fcmAttributes())
        let source = try #require(client.accessTokenSource)
        let push = harness.render(platform: .gcm)
        #expect(await client.send(push, token: "device-a").label == "accepted")
        let first = try #require(source.cachedToken())
        // The provider forgets every token it issued (the emulator caches a token per connection: use a new one).
        harness.emulator.fcm.tokens.removeAll()
        client.pool.recycleConnections()
        let outcome = await client.send(push, token: "device-b")
        #expect(outcome.label == "auth_token_expired")
        #expect(outcome.isRetryable)
        #expect(source.cachedToken() == nil)
        #expect(await client.send(push, token: "device-b").label == "accepted")
        #expect(source.exchangeCount == 2)
        #expect(source.cachedToken() != first)
        await harness.close()
    }

    @Test("FCM B.4 outcomes: dead tokens disable, THIRD_PARTY_AUTH_ERROR disables the app, 429 with Retry-After and 5xx retry, INVALID_ARGUMENT on the message")
    func outcomes() async throws {
        let harness = try Harness()
        let client = try harness.client("fcm", .gcm, harness.fcmAttributes())
        let push = harness.render(platform: .gcm)
        func label(_ token: String) async -> DeliveryOutcome { await client.send(push, token: token) }

        let unregistered = await label("unregistered-1")
        #expect(unregistered.label == "token_invalid")
        #expect(unregistered.reason?.hasPrefix("UNREGISTERED") == true)
        #expect(await label("invalid-1").label == "token_invalid")
        let mismatch = await label("mismatch-1")
        #expect(mismatch.label == "token_invalid")
        #expect(mismatch.reason?.hasPrefix("SENDER_ID_MISMATCH") == true)
        let thirdParty = await label("thirdpartyauth-1")
        #expect(thirdParty.label == "credentials_invalid")
        #expect(thirdParty.disablesApplication)
        let quota = await label("quota-1")
        guard case .retryable(let reason, let retryAfter) = quota else {
            Issue.record("expected retryable, got \(quota)")
            return
        }
        #expect(reason.hasPrefix("QUOTA_EXCEEDED"))
        #expect(retryAfter == 1)
        guard case .retryable(_, let unavailableAfter) = await label("unavailable-1") else {
            Issue.record("expected retryable for UNAVAILABLE")
            return
        }
        #expect(unavailableAfter == 1)
        #expect(await label("internal-1").label == "retryable")

        // A message FCM refuses (android.priority must be NORMAL or HIGH): the endpoint is untouched.
        let gcm: JSONObject = json(["fcmV1Message": ["message": ["android": ["priority": "urgent"]]]])
        let badPush = harness.render([.gcm: gcm], platform: .gcm)
        let bad = await client.send(badPush, token: "device-ok")
        #expect(bad.label == "message_invalid")
        #expect(bad.endpointAction == .none)
        await harness.close()
    }

    @Test("FCM B.2: a refused token exchange (unknown service account) -> credentials invalid for every waiting delivery, remembered")
    func refusedExchange() async throws {
        let harness = try Harness()
        let client = try harness.client("fcm", .gcm, harness.fcmAttributes(Demo.stranger))
        let push = harness.render(platform: .gcm)
        let sink = CollectingSink()
        let deliveries = (0..<5).map { ProviderDelivery(token: "device-\($0)", tag: UInt64($0)) }
        #expect(client.submit(push, deliveries: deliveries, sink: sink) == 5)
        let results = try await sink.wait(for: 5)
        #expect(results.count == 5)
        #expect(results.allSatisfy { $0.outcome.label == "credentials_invalid" && $0.outcome.disablesApplication })
        #expect(results.first?.outcome.reason?.contains("invalid_grant") == true)
        // Remembered: the next send does not ask again.
        #expect(await client.send(push, token: "device-x").label == "credentials_invalid")
        #expect(harness.stats["fcm-oauth"].requests == 1)
        #expect(harness.stats["fcm"].requests == 0)
        await harness.close()
    }

    @Test("FCM batch path: deliveries submitted before any access token wait for one exchange, then all go out")
    func batchBeforeToken() async throws {
        let harness = try Harness()
        let client = try harness.client("fcm", .gcm, harness.fcmAttributes())
        let push = harness.render(platform: .gcm)
        let sink = CollectingSink()
        let first = (0..<20).map { ProviderDelivery(token: "device-\($0)", tag: UInt64($0)) }
        let second = (20..<40).map { ProviderDelivery(token: $0 % 10 == 0 ? "unregistered-\($0)" : "device-\($0)", tag: UInt64($0)) }
        #expect(client.submit(push, deliveries: first, sink: sink) == 20)
        #expect(client.submit(push, deliveries: second, sink: sink) == 20)
        let results = try await sink.wait(for: 40)
        #expect(results.count == 40)
        #expect(Set(results.map(\.tag)) == Set(0..<40))
        for result in results {
            #expect(result.outcome.label == (result.tag >= 20 && result.tag % 10 == 0 ? "token_invalid" : "accepted"), "tag \(result.tag)")
        }
        #expect(client.accessTokenSource?.exchangeCount == 1)
        #expect(harness.stats["fcm-oauth"].requests == 1)
        await harness.close()
    }
}

@Suite struct FCMAcceptedNameTests {
    @Test("the acceptance body's name is read without a JSON tree; anything else falls back to the full parse (nil)")
    func scan() {
        #expect(FCMAcceptedName.scan(Array(#"{"name":"projects/p/messages/1"}"#.utf8)) == "projects/p/messages/1")
        #expect(FCMAcceptedName.scan(Array("{ \"name\" : \"projects/p/messages/2\" }\n".utf8)) == "projects/p/messages/2")
        #expect(FCMAcceptedName.scan(Array(#"{"name":"a\"b"}"#.utf8)) == nil)
        #expect(FCMAcceptedName.scan(Array(#"{"name":"x","other":1}"#.utf8)) == nil)
        #expect(FCMAcceptedName.scan(Array(#"{"names":"x"}"#.utf8)) == nil)
        #expect(FCMAcceptedName.scan([]) == nil)
        #expect(FCMAcceptedName.scan(Array(#"{"name":"x"}trailing"#.utf8)) == nil)
    }

    @Test("APNs requests carry the token as the path suffix; the wire path is prefix + token")
    func apnsPathSuffix() {
        let request = HTTP2Request(path: "/3/device/", pathSuffix: "abc")
        #expect(request.fullPath == "/3/device/abc")
        #expect(HTTP2Request(path: "/x").fullPath == "/x")
    }
}
