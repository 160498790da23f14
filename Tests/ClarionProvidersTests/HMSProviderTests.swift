import ClarionCore
import Foundation
import Testing
@testable import ClarionEmulator
@testable import ClarionProviders

/// Huawei Push Kit v1 against the emulated Push Kit over TLS (the harness makes the server certificate and trusts it
/// through ProviderCACertificate). Rules: docs/providers.md E.1 and E.1a.
@Suite(.serialized) struct HMSProviderTests {
    func attributes(_ harness: Harness, secret: String = Demo.credentials.hms.clientSecret, appID: String? = nil) -> [String: String] {
        var attributes = [
            ProviderAttribute.platformPrincipal: Demo.credentials.hms.clientID,
            ProviderAttribute.platformCredential: secret,
            ProviderAttribute.providerEndpoint: harness.baseURL,
            ProviderAttribute.providerAuthEndpoint: harness.baseURL + "/oauth2/v3/token",
        ]
        if let appID { attributes[ProviderAttribute.hmsAppID] = appID }
        if let pem = harness.certificatePEM { attributes[ProviderAttribute.providerCACertificate] = pem }
        return attributes
    }

    @Test("HMS E.1: client-credentials token from the token URL, cached; POST /v1/<app id>/messages:send with Bearer and the v1 body")
    func tokenAndSend() async throws {
        let harness = try Harness(tls: true)
        let client = try harness.client("hms", .hms, attributes(harness))
        let push = harness.render(platform: .hms)
        for i in 0..<3 {
            let outcome = await client.send(push, token: "IQAAAACy0kYdAAB\(i)")
            guard case .accepted(let requestID) = outcome else {
                Issue.record("expected accepted, got \(outcome)")
                continue
            }
            #expect(requestID?.isEmpty == false)
        }
        #expect(client.accessTokenSource?.exchangeCount == 1)
        #expect(harness.stats["hms-oauth"].statuses["200"] == 1)
        #expect(harness.stats["hms"].statuses["200"] == 3)
        let exchange = try #require(harness.emulator.records().first { $0.endpoint == "hms-oauth" })
        #expect(exchange.payload.contains("grant_type=client_credentials"))
        #expect(exchange.payload.contains("client_id=\(Demo.credentials.hms.clientID)"))
        #expect(exchange.payload.contains("client_secret=%3Credacted%3E"))
        #expect(!exchange.payload.contains(Demo.credentials.hms.clientSecret))
        let send = try #require(harness.emulator.records().first { $0.endpoint == "hms" })
        #expect(send.path == "/v1/\(Demo.credentials.hms.clientID)/messages:send")
        #expect(send.token == "IQAAAACy0kYdAAB0")
        let body = try JSONValue.parse(send.payload)
        #expect(body["message"]?["token"] == .array([.string("IQAAAACy0kYdAAB0")]))
        #expect(body["message"]?["notification"]?["body"]?.stringValue == "hello")
        #expect(body["message"]?["android"]?["notification"]?["click_action"]?["type"]?.intValue == 3)
        await harness.close()
    }

    // E.1: up to 1000 tokens of one body a request; a caller handing over deliveries learns to hand 1000 at once for a
    // body without a per-delivery part, and its own size otherwise (the HTTP/2 platforms, a body with a delivery id).
    @Test("HMS E.1: the client asks a fan-out for 1000 deliveries at once, only for a body shared by every token")
    func preferredSubmitSize() async throws {
        let harness = try Harness(tls: true)
        let client = try harness.client("hms", .hms, attributes(harness))
        #expect(client.preferredSubmitSize(for: harness.render(platform: .hms)) == 1_000)
        let withIDs = PushRenderer.render(SNSMessage(defaultText: "hello"), attributes: MobilePushAttributes(), platform: .hms,
                                          settings: RenderSettings(deliveryIDKey: "clarion_delivery_id"),
                                          publishedAt: harness.clock.now, now: harness.clock.now)
        guard case .push(let push) = withIDs else { Issue.record("\(withIDs)"); await harness.close(); return }
        #expect(client.preferredSubmitSize(for: push) == nil, "a body with a delivery id goes one token a request")
        let fcm = try harness.client("fcm", .gcm, harness.fcmAttributes())
        #expect(fcm.preferredSubmitSize(for: harness.render(platform: .gcm)) == nil)
        await harness.close()
    }

    @Test("HMS E.1: HMSAppID names the app in the path when it is not the client id")
    func appIDAttribute() async throws {
        let harness = try Harness(tls: true) { configuration in
            configuration.hms.clients = [.init(clientID: Demo.credentials.hms.clientID, clientSecret: Demo.credentials.hms.clientSecret,
                                               appID: "107000001")]
        }
        let client = try harness.client("hms", .hms, attributes(harness, appID: "107000001"))
        #expect(await client.send(harness.render(platform: .hms), token: "IQAAAAtoken").label == "accepted")
        #expect(harness.emulator.records().first { $0.endpoint == "hms" }?.path == "/v1/107000001/messages:send")
        await harness.close()
    }

    @Test("HMS E.1: a wrong client secret is a refused exchange -> credentials invalid (application disabled), nothing sent")
    func wrongSecret() async throws {
        let harness = try Harness(tls: true)
        let client = try harness.client("hms", .hms, attributes(harness, secret: "not-the-secret"))
        let outcome = await client.send(harness.render(platform: .hms), token: "IQAAAAtoken")
        #expect(outcome.label == "credentials_invalid")
        #expect(outcome.disablesApplication)
        #expect(outcome.reason?.contains("invalid client") == true)
        #expect(harness.stats["hms"].requests == 0)
        await harness.close()
    }

    @Test("HMS E.1a: 80200003 (token expired) drops the access token; the retry exchanges again and is accepted")
    func tokenExpired() async throws {
        let harness = try Harness(tls: true)
        let client = try harness.client("hms", .hms, attributes(harness))
        let source = try #require(client.accessTokenSource)
        let push = harness.render(platform: .hms)
        #expect(await client.send(push, token: "IQAAAAa").label == "accepted")
        harness.emulator.hms.tokens.removeAll()
        let expired = await client.send(push, token: "IQAAAAb")
        #expect(expired.label == "auth_token_expired")
        #expect(expired.reason?.hasPrefix("Push Kit 80200003") == true)
        #expect(source.cachedToken() == nil)
        #expect(await client.send(push, token: "IQAAAAb").label == "accepted")
        #expect(source.exchangeCount == 2)
        await harness.close()
    }

    @Test("HMS E.1a: 80200001 (auth failed) renews the token once; refused again with the new token -> credentials invalid")
    func authFailedTwice() async throws {
        // The client's tokens are for app 107000001; sending for another app is refused with 80200001 every time.
        let harness = try Harness(tls: true) { configuration in
            configuration.hms.clients = [.init(clientID: Demo.credentials.hms.clientID, clientSecret: Demo.credentials.hms.clientSecret,
                                               appID: "107000001")]
        }
        let client = try harness.client("hms", .hms, attributes(harness, appID: "107000999"))
        let push = harness.render(platform: .hms)
        let first = await client.send(push, token: "IQAAAAa")
        #expect(first.label == "auth_token_expired")
        let second = await client.send(push, token: "IQAAAAa")
        #expect(second.label == "credentials_invalid")
        #expect(second.reason?.contains("80200001") == true)
        #expect(client.accessTokenSource?.exchangeCount == 2)
        await harness.close()
    }

    @Test("HMS E.1a: 80300007 invalid token disables the endpoint; 503 flow control retries after Retry-After; 80300008 message invalid")
    func outcomes() async throws {
        let harness = try Harness(tls: true) { configuration in
            configuration.hms.maximumPayloadBytes = 200
        }
        let client = try harness.client("hms", .hms, attributes(harness))
        let push = harness.render(platform: .hms)
        let invalid = await client.send(push, token: "invalid-IQAAAA")
        #expect(invalid == .tokenInvalid(reason: "Push Kit 80300007: the token is not valid", invalidSince: nil))
        #expect(await client.send(push, token: "unavailable-IQAAAA") == .retryable(reason: "Push Kit answered 503 (flow control)", retryAfter: 1))
        let big = harness.render([.hms: json(["data": .string(String(repeating: "d", count: 300))])], platform: .hms)
        #expect(await client.send(big, token: "IQAAAAc") == .messageInvalid(reason: "Push Kit 80300008: the message body is larger than 4 KB"))
        await harness.close()
    }

    @Test("HMS E.1a: the emulator's injected faults play Push Kit's: 503 flow control and 429 with Retry-After, 500; all retried")
    func injectedFaults() async throws {
        let harness = try Harness(tls: true) { configuration in
            configuration.faults.providers = [.hms]
            configuration.faults.unavailable = .init(everyNth: 3)
            configuration.faults.throttle = .init(everyNth: 2)
            configuration.faults.retryAfterSeconds = 4
        }
        let client = try harness.client("hms", .hms, attributes(harness))
        let push = harness.render(platform: .hms)
        var outcomes: [DeliveryOutcome] = []
        for i in 0..<6 { outcomes.append(await client.send(push, token: "IQAAAAfault\(i)")) }
        #expect(outcomes.contains(.retryable(reason: "Push Kit answered 503 (flow control)", retryAfter: 4)))
        #expect(outcomes.contains(.retryable(reason: "Push Kit answered 429", retryAfter: 4)))
        #expect(outcomes.contains { $0.label == "accepted" })
        #expect(outcomes.allSatisfy { $0.label == "accepted" || $0.label == "retryable" })
        await harness.close()
    }

    @Test("HMS E.1: a fan-out sends up to 1000 tokens per request; a partial success (80100000) disables only the listed tokens")
    func batchedPartialSuccess() async throws {
        let harness = try Harness(tls: true)
        let client = try harness.client("hms", .hms, attributes(harness))
        let push = harness.render(platform: .hms)
        var deliveries = (0..<1500).map { ProviderDelivery(token: "IQAAAAgood\($0)", tag: UInt64($0)) }
        deliveries[7].token = "invalid-seven"
        deliveries[1200].token = "invalid-twelve-hundred"
        let sink = CollectingSink()
        #expect(client.submit(push, deliveries: deliveries, sink: sink) == 1500)
        let results = try await sink.wait(for: 1500)
        #expect(results.count == 1500)
        let byTag = Dictionary(uniqueKeysWithValues: results.map { ($0.tag, $0.outcome) })
        #expect(byTag[7]?.label == "token_invalid")
        #expect(byTag[1200]?.label == "token_invalid")
        #expect(results.filter { $0.outcome.label == "accepted" }.count == 1498)
        // Two requests: 1000 tokens and 500.
        #expect(harness.stats["hms"].requests == 2)
        #expect(harness.emulator.records().filter { $0.endpoint == "hms" }.count == 1500)
        #expect(harness.emulator.records().filter { $0.reason == "IllegalToken" }.count == 2)
        await harness.close()
    }

    @Test("HMS E.1: a payload with per-delivery ids is not batched: one request per token")
    func deliveryIDsAreNotBatched() async throws {
        let harness = try Harness(tls: true)
        let client = try harness.client("hms", .hms, attributes(harness))
        let result = PushRenderer.render(SNSMessage(defaultText: "hi"), attributes: MobilePushAttributes(), platform: .hms,
                                         settings: RenderSettings(deliveryIDKey: "cdid"), publishedAt: harness.clock.now, now: harness.clock.now)
        let push = try #require(result.push)
        let deliveries = (0..<5).map { ProviderDelivery(token: "IQAAAA\($0)", deliveryID: "D\($0)", tag: UInt64($0)) }
        let sink = CollectingSink()
        #expect(client.submit(push, deliveries: deliveries, sink: sink) == 5)
        #expect(try await sink.wait(for: 5).allSatisfy { $0.outcome.label == "accepted" })
        #expect(harness.stats["hms"].requests == 5)
        let record = try #require(harness.emulator.records().first { $0.endpoint == "hms" && $0.token == "IQAAAA3" })
        let data = try #require(try JSONValue.parse(record.payload)["message"]?["data"]?.stringValue)
        #expect(try JSONValue.parse(data)["cdid"]?.stringValue == "D3")
        await harness.close()
    }

    @Test("HMS: credentials are checked: client id and app id go into a path, so '/' is refused with the attribute named")
    func credentialChecks() throws {
        #expect(throws: ProviderError.self) {
            try ProviderCredentials.parse(platform: .hms, attributes: [ProviderAttribute.platformPrincipal: "a/b",
                                                                       ProviderAttribute.platformCredential: "s"])
        }
        do {
            _ = try ProviderCredentials.parse(platform: .hms, attributes: [ProviderAttribute.platformPrincipal: "1234"])
            Issue.record("a missing secret was accepted")
        } catch {
            #expect(error.attribute == ProviderAttribute.platformCredential)
        }
        guard case .hms(let credentials) = try ProviderCredentials.parse(
            platform: .hms, attributes: [ProviderAttribute.platformPrincipal: "1234", ProviderAttribute.platformCredential: "s3cr3t-value"]) else {
            Issue.record("not HMS credentials")
            return
        }
        #expect(credentials.appID == "1234")  // without HMSAppID the client id is the app id
        let application = try ProviderApplication(id: "x", platform: .hms, attributes: [
            ProviderAttribute.platformPrincipal: "1234", ProviderAttribute.platformCredential: "s3cr3t-value"])
        #expect(application.endpointURL == "https://push-api.cloud.huawei.com")
        #expect(application.authURL == "https://oauth-login.cloud.huawei.com/oauth2/v3/token")
        #expect(!application.credentials.identity.contains("s3cr3t"))
        #expect(!application.fingerprint.contains("s3cr3t"))
    }
}
