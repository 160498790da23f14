import ClarionCore
import ClarionCrypto
import ClarionHTTP2
import Foundation
import Testing
@testable import ClarionEmulator
@testable import ClarionProviders

/// Web Push deliveries over real TLS sockets to the emulator playing a push service (docs/providers.md W.4-W.6).
/// The emulator decrypts each push with the keys it issued and verifies the VAPID token (signature, aud, exp, sub).
@Suite("Web Push provider against the emulated push service", .serialized)
struct WebPushProviderTests {
    static let vapidKey = SigningKey.generateP256()

    static func attributes(_ harness: Harness) -> [String: String] {
        [ProviderAttribute.platformCredential: vapidKey.pkcs8PEM, ProviderAttribute.vapidSubject: "mailto:ops@example.com",
         ProviderAttribute.providerCACertificate: harness.certificatePEM!]
    }

    /// A subscription the emulator issued, as the token an endpoint stores.
    static func subscribe(_ harness: Harness) throws -> (token: String, id: String) {
        let json = String(decoding: harness.emulator.webPush.subscribe(authority: "127.0.0.1:\(harness.port)"), as: UTF8.self)
        let subscription = try WebPushSubscription.parse(json)
        return (subscription.canonicalToken, String(subscription.path.dropFirst(WebPushEmulator.pushPrefix.count)))
    }

    static func push(_ harness: Harness, _ text: String, attributes: MobilePushAttributes = MobilePushAttributes()) -> RenderedPush {
        let result = PushRenderer.render(SNSMessage(defaultText: nil, webPushPayload: text), attributes: attributes, platform: .webPush,
                                         settings: RenderSettings(), publishedAt: harness.clock.now, now: harness.clock.now)
        return result.push!
    }

    // W.4/W.6: RFC 8291 encryption the push service can decrypt, RFC 8292 VAPID with aud = the push service's origin,
    // RFC 8030 TTL/Urgency/Topic headers; 201 is accepted.
    @Test("a push is accepted, decrypts to the payload at the push service, and carries TTL, Urgency and Topic")
    func accepted() async throws {
        let harness = try Harness(tls: true)
        let client = try harness.client("wp", .webPush, Self.attributes(harness))
        let (token, id) = try Self.subscribe(harness)
        let attributes = try MobilePushAttributes.parse(["AWS.SNS.MOBILE.WEBPUSH.TTL": .number("120"),
                                                         "AWS.SNS.MOBILE.WEBPUSH.URGENCY": .string("high"),
                                                         "AWS.SNS.MOBILE.WEBPUSH.TOPIC": .string("news")])
        let outcome = await client.send(Self.push(harness, #"{"title":"Hello, browser"}"#, attributes: attributes), token: token)
        guard case .accepted(let location) = outcome else { Issue.record("\(outcome)"); await harness.close(); return }
        #expect(location?.hasPrefix("/m/\(id)/") == true)
        let record = try #require(harness.emulator.records().last)
        #expect(record.endpoint == "webpush" && record.status == 201)
        #expect(record.payload == #"{"title":"Hello, browser"}"#)
        #expect(record.headers["ttl"] == "120" && record.headers["urgency"] == "high" && record.headers["topic"] == "news")
        #expect(record.headers["content-encoding"] == "aes128gcm")
        #expect(record.headers["authorization"] == "<redacted>")
        // The raw body is the aes128gcm body: 86-octet header with the sender's 65-octet key, one record.
        let body = try #require(record.body.flatMap { Base64URL.decode($0) })
        #expect(body.count == 86 + record.payload.utf8.count + 1 + 16)
        #expect(body[20] == 65)
        await harness.close()
    }

    // RFC 8292 section 3 / issue 19: one VAPID token per (origin, key), reused, not one per request.
    @Test("the batch path delivers to several subscriptions with one VAPID token for the origin")
    func batchSharesToken() async throws {
        let harness = try Harness(tls: true)
        let client = try harness.client("wp", .webPush, Self.attributes(harness))
        var deliveries: [ProviderDelivery] = []
        for tag in 0..<5 { deliveries.append(ProviderDelivery(token: try Self.subscribe(harness).token, tag: UInt64(tag))) }
        let sink = CollectingSink()
        #expect(client.submit(Self.push(harness, "batch"), deliveries: deliveries, sink: sink) == 5)
        let results = try await sink.wait(for: 5)
        #expect(results.count == 5)
        #expect(results.allSatisfy { if case .accepted = $0.outcome { true } else { false } }, "\(results.map(\.outcome))")
        #expect(Set(results.map(\.tag)) == Set(0..<5))
        let tokens = Set(harness.emulator.records().compactMap(\.vapidToken))
        #expect(tokens.count == 1)
        #expect(harness.emulator.records().allSatisfy { $0.payload == "batch" })
        await harness.close()
    }

    @Test("the emulator's bulk subscribe makes N distinct subscriptions a sender can deliver to, and refuses a bad count")
    func bulkSubscriptions() async throws {
        let harness = try Harness(tls: true)
        let client = try harness.client("wp", .webPush, Self.attributes(harness))
        let path = WebPushEmulator.subscriptionsPath
        func control(_ query: String) -> EmulatorResponse? {
            let request = EmulatorRequest(method: "POST", path: path + query, authority: "127.0.0.1:\(harness.port)", headers: [], body: [])
            guard case .respond(let response) = harness.emulator.handle(request, connection: harness.emulator.makeConnectionState(id: 1)).action
            else { return nil }
            return response
        }
        #expect(control("?count=0")?.status == 400)
        #expect(control("?count=x")?.status == 400)
        let response = try #require(control("?count=4"))
        #expect(response.status == 201)
        let lines = response.bodyText.split(separator: "\n")
        #expect(lines.count == 4)
        let subscriptions = try lines.map { try WebPushSubscription.parse(String($0)) }
        #expect(Set(subscriptions.map(\.path)).count == 4)
        #expect(!response.bodyText.contains("browserPrivateKey"))
        let deliveries = subscriptions.enumerated().map { ProviderDelivery(token: $0.element.canonicalToken, tag: UInt64($0.offset)) }
        let sink = CollectingSink()
        #expect(client.submit(Self.push(harness, "bulk"), deliveries: deliveries, sink: sink) == 4)
        let results = try await sink.wait(for: 4)
        #expect(results.allSatisfy { if case .accepted = $0.outcome { true } else { false } }, "\(results.map(\.outcome))")
        #expect(harness.emulator.records().filter { $0.payload == "bulk" }.count == 4)
        await harness.close()
    }

    // W.5: RFC 8030 section 7.3: 410 for an unsubscribed subscription disables the endpoint, with the reason.
    @Test("an unsubscribed subscription answers 410 and the outcome disables the endpoint with the reason")
    func unsubscribed() async throws {
        let harness = try Harness(tls: true)
        let client = try harness.client("wp", .webPush, Self.attributes(harness))
        let (token, id) = try Self.subscribe(harness)
        #expect(harness.emulator.webPush.unsubscribe(id: id))
        let outcome = await client.send(Self.push(harness, "gone?"), token: token)
        guard case .tokenInvalid(let reason, _) = outcome else { Issue.record("\(outcome)"); await harness.close(); return }
        #expect(reason.contains("410"))
        #expect(outcome.endpointAction != .none)
        await harness.close()
    }

    // W.5: RFC 8292 section 4.2: a subscription restricted to another application server key answers 403; the endpoint
    // (not the application) is disabled.
    @Test("a subscription made for another VAPID key answers 403 and disables the endpoint, not the application")
    func restrictedToAnotherKey() async throws {
        let harness = try Harness(tls: true)
        let client = try harness.client("wp", .webPush, Self.attributes(harness))
        let other = Base64URL.encode(SigningKey.generateP256().uncompressedPublicKey!)
        let json = harness.emulator.webPush.subscribe(authority: "127.0.0.1:\(harness.port)",
                                                      body: Array(#"{"applicationServerKey":"\#(other)"}"#.utf8))
        let token = try WebPushSubscription.parse(String(decoding: json, as: UTF8.self)).canonicalToken
        let outcome = await client.send(Self.push(harness, "not for you"), token: token)
        guard case .tokenInvalid(let reason, _) = outcome else { Issue.record("\(outcome)"); await harness.close(); return }
        #expect(reason.contains("403"))
        #expect(!outcome.disablesApplication)
        await harness.close()
    }

    // W.6 (docs/security.md): the subscription URL comes from a browser: with the public-only address policy the
    // emulator's loopback address is refused before any request reaches it.
    @Test("the outbound address policy refuses a subscription on a loopback address")
    func addressPolicy() async throws {
        var options = Harness.options
        options.addressPolicy = .publicOnly
        options.connectTimeout = .seconds(2)
        options.requestTimeout = .seconds(4)
        let harness = try Harness(tls: true, options: options)
        let client = try harness.client("wp", .webPush, Self.attributes(harness))
        let outcome = await client.send(Self.push(harness, "ssrf?"), token: try Self.subscribe(harness).token)
        #expect(!outcome.isDelivered, "\(outcome)")
        #expect(harness.emulator.records().filter { $0.endpoint == "webpush" }.isEmpty)
        await harness.close()
    }

    // RFC 8292 section 2: the emulator refuses a token whose aud is another origin (403), so acceptance above
    // means the aud was right.
    @Test("the emulated push service refuses a VAPID token for another origin, an expired one and a missing one")
    func emulatorChecksVAPID() throws {
        let key = SigningKey.generateP256()
        let signer = try VAPIDSigner(key: key, subject: "mailto:a@b.c", lifetime: 3600, renewalMargin: 60)
        let wrongAud = try signer.authorization(origin: "https://elsewhere.example", now: 1000)
        let (token, k) = try #require(VAPIDSigner.parseAuthorization(wrongAud))
        #expect(WebPushEmulator.checkVAPID(token: token, key: k, origin: "https://127.0.0.1:1", now: 1000)?.contains("aud") == true)
        let right = try #require(VAPIDSigner.parseAuthorization(try signer.authorization(origin: "https://127.0.0.1:1", now: 1000)))
        #expect(WebPushEmulator.checkVAPID(token: right.token, key: right.publicKey, origin: "https://127.0.0.1:1", now: 1000) == nil)
        #expect(WebPushEmulator.checkVAPID(token: right.token, key: right.publicKey, origin: "https://127.0.0.1:1", now: 5000) != nil)
        let otherKey = Base64URL.encode(SigningKey.generateP256().uncompressedPublicKey!)
        #expect(WebPushEmulator.checkVAPID(token: right.token, key: otherKey, origin: "https://127.0.0.1:1", now: 1000) != nil)
    }
}
