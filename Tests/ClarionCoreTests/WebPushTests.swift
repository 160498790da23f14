import Foundation
import Testing
@testable import ClarionCore

/// The Web Push rules of docs/providers.md W.3 to W.5, each test naming its rule and source.
@Suite struct WebPushSubscriptionTests {
    // RFC 8291 Appendix A's user agent keys: a real P-256 point and a 16-octet auth secret.
    static let p256dh = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
    static let auth = "BTBZMqHH6r4Tts7J_aSIgg"

    static func json(endpoint: String = "https://push.example.net/wpush/v2/abc?x=1", p256dh: String = p256dh, auth: String = auth) -> String {
        #"{"endpoint":"\#(endpoint)","expirationTime":null,"keys":{"p256dh":"\#(p256dh)","auth":"\#(auth)"}}"#
    }

    static func rule(_ text: String) -> String? {
        do {
            _ = try WebPushSubscription.parse(text)
            return nil
        } catch {
            return error.rule
        }
    }

    // W.3 (W3C Push API PushSubscription.toJSON(); RFC 8030 section 5): endpoint, origin (the VAPID aud of RFC 8292
    // section 2), path and both keys are read.
    @Test("a browser's subscription JSON parses: origin without the default port, path with its query, both keys")
    func parses() throws {
        let subscription = try WebPushSubscription.parse(Self.json())
        #expect(subscription.origin == "https://push.example.net")
        #expect(subscription.host == "push.example.net" && subscription.port == 443)
        #expect(subscription.path == "/wpush/v2/abc?x=1")
        #expect(subscription.p256dh.count == 65 && subscription.p256dh[0] == 4)
        #expect(subscription.auth.count == 16)
        let other = try WebPushSubscription.parse(Self.json(endpoint: "https://Push.Example.net:8443/x"))
        #expect(other.origin == "https://push.example.net:8443")
    }

    // W.3: the same subscription is the same endpoint: member order, spacing, base64url padding do not matter.
    @Test("the canonical token is the same for the same subscription written differently")
    func canonical() throws {
        let a = try WebPushSubscription.parse(Self.json()).canonicalToken
        let reordered = #"{ "keys": {"auth": "\#(Self.auth)==", "p256dh": "\#(Self.p256dh)"}, "endpoint": "https://push.example.net/wpush/v2/abc?x=1" }"#
        #expect(try WebPushSubscription.parse(reordered).canonicalToken == a)
        #expect(try WebPushSubscription.parse(a).canonicalToken == a)
    }

    // W.3: RFC 8030 section 8 (https only); RFC 8291 section 2.1 (auth is 16 octets); RFC 8291 section 3.1 with
    // SEC 1 section 2.3.3 (p256dh is the 65-octet uncompressed point).
    @Test("each broken rule is refused by name: not JSON, no endpoint, no keys, http, bad p256dh, bad auth")
    func refusals() {
        #expect(Self.rule("not json") == "subscription-json")
        #expect(Self.rule(#"{"keys":{"p256dh":"a","auth":"b"}}"#) == "endpoint-required")
        #expect(Self.rule(#"{"endpoint":"https://a.b/c"}"#) == "keys-required")
        #expect(Self.rule(Self.json(endpoint: "http://push.example.net/x")) == "endpoint-https")
        #expect(Self.rule(Self.json(endpoint: "https://user:pw@push.example.net/x")) == "endpoint-url")
        #expect(Self.rule(Self.json(p256dh: String(Self.p256dh.dropLast(4)))) == "p256dh-uncompressed-point")
        #expect(Self.rule(Self.json(p256dh: "B+xx")) == "p256dh-base64url")
        #expect(Self.rule(Self.json(auth: "BTBZMqHH6r4Tts7J_aSI")) == "auth-16-octets")
    }

    // W.3: keys never shown whole: a masked token cannot be encrypted to or pushed to.
    @Test("the shown token keeps the origin and a hint, never the keys or the whole URL")
    func masked() throws {
        let masked = try WebPushSubscription.parse(Self.json()).maskedToken
        #expect(!masked.contains(Self.auth) && !masked.contains(Self.p256dh) && !masked.contains("/wpush/v2/abc"))
        #expect(masked.contains("https://push.example.net"))
    }
}

@Suite struct WebPushRenderTests {
    static let published = Date(timeIntervalSince1970: 1_800_000_000)

    static func render(_ message: SNSMessage, _ attributes: MobilePushAttributes = MobilePushAttributes(),
                       settings: RenderSettings = RenderSettings()) -> RenderResult {
        PushRenderer.render(message, attributes: attributes, platform: .webPush, settings: settings, publishedAt: published, now: published)
    }

    static func parse(_ text: String, requireDefault: Bool = false) throws -> SNSMessage {
        try SNSMessage.parse(message: text, structure: .json, requireDefault: requireDefault)
    }

    // W.4: a WEBPUSH string is the service worker's event.data verbatim; an object its compact JSON.
    @Test("WEBPUSH as a string is delivered verbatim, as an object as its JSON; other platforms keep default")
    func payloads() throws {
        let text = try Self.parse(#"{"default":"d","WEBPUSH":"plain text, not JSON"}"#)
        #expect(Self.render(text).push?.body(token: "") == Array("plain text, not JSON".utf8))
        let object = try Self.parse(#"{"default":"d","WEBPUSH":{"title":"Hi","n":1}}"#)
        #expect(Self.render(object).push?.body(token: "") == Array(#"{"title":"Hi","n":1}"#.utf8))
        let apns = PushRenderer.render(text, attributes: MobilePushAttributes(), platform: .apns,
                                       settings: RenderSettings(apnsBundleID: "b"), publishedAt: Self.published, now: Self.published)
        #expect(apns.push?.body(token: "") == Array(#"{"aps":{"alert":"d"}}"#.utf8))
    }

    // W.4: only default gives the documented notification {"notification":{"body":<default>}}.
    @Test("default becomes {\"notification\":{\"body\":...}}; TTL defaults to SNS's four weeks")
    func defaultNotification() throws {
        let push = try #require(Self.render(SNSMessage(defaultText: "Hello")).push)
        #expect(push.body(token: "") == Array(#"{"notification":{"body":"Hello"}}"#.utf8))
        guard case .webPush(let headers) = push.request else { Issue.record("not a Web Push request"); return }
        #expect(headers.ttl == TimeToLive.snsDefaultSeconds)
        #expect(headers.urgency == nil && headers.topic == nil)
    }

    // RFC 8030 section 5.2 (TTL), 5.3 (Urgency), 5.4 (Topic: at most 32 base64url characters).
    @Test("TTL, Urgency and Topic come from the message attributes; Urgency falls back to the APNs priority")
    func headers() throws {
        let attributes = try MobilePushAttributes.parse([
            "AWS.SNS.MOBILE.WEBPUSH.TTL": .number("60"), "AWS.SNS.MOBILE.WEBPUSH.URGENCY": .string("very-low"),
            "AWS.SNS.MOBILE.WEBPUSH.TOPIC": .string("scores-1"),
        ])
        guard case .webPush(let headers)? = Self.render(SNSMessage(defaultText: "x"), attributes).push?.request else {
            Issue.record("not rendered"); return
        }
        #expect(headers.fields.map(\.name) == ["ttl", "urgency", "topic"])
        #expect(headers.fields.map(\.value) == ["60", "very-low", "scores-1"])
        let fromPriority = try MobilePushAttributes.parse(["AWS.SNS.MOBILE.APNS.PRIORITY": .string("10")])
        guard case .webPush(let high)? = Self.render(SNSMessage(defaultText: "x"), fromPriority).push?.request else {
            Issue.record("not rendered"); return
        }
        #expect(high.urgency == .high)
        #expect(throws: MessageValidationError.self) {
            try MobilePushAttributes.parse(["AWS.SNS.MOBILE.WEBPUSH.TOPIC": .string(String(repeating: "a", count: 33))])
        }
        #expect(throws: MessageValidationError.self) { try MobilePushAttributes.parse(["AWS.SNS.MOBILE.WEBPUSH.URGENCY": .string("urgent")]) }
    }

    // RFC 8291 section 4: 3993 octets of plaintext at most.
    @Test("a plaintext over 3993 octets is message invalid before any encryption")
    func tooLarge() {
        let result = Self.render(SNSMessage(defaultText: nil, webPushPayload: String(repeating: "a", count: 3994)))
        guard case .invalid(let reason) = result else { Issue.record("\(result)"); return }
        #expect(reason.contains("3993"))
        #expect(Self.render(SNSMessage(defaultText: nil, webPushPayload: String(repeating: "a", count: 3993))).push != nil)
    }

    // W.4: delivery ids go into a JSON object payload as a top-level member.
    @Test("a delivery id slot is added to an object payload")
    func deliveryID() throws {
        let push = try #require(Self.render(try Self.parse(#"{"default":"d","WEBPUSH":{"t":"x"}}"#),
                                            settings: RenderSettings(deliveryIDKey: "did")).push)
        #expect(push.body(token: "", deliveryID: "ID1") == Array(#"{"t":"x","did":"ID1"}"#.utf8))
    }
}

@Suite struct WebPushOutcomeTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static func classify(_ status: Int, _ headers: [(String, String)] = [], _ body: String = "") -> DeliveryOutcome {
        WebPushResponseClassifier.classify(ProviderResponse(status: status, headers: headers, body: body), now: now)
    }

    // W.5: RFC 8030 section 5 (201), 7.3 (410 expired subscription), 7.2 (413), 8.4 (429), RFC 8292 section 4 (401:
    // our VAPID token refused) and 4.2 (403: the subscription is restricted to another key).
    @Test("201 accepted, 404/410/403 disable the endpoint, 413 message invalid, 429/5xx retried with Retry-After, 401 credentials, 400 rejected")
    func outcomes() {
        #expect(Self.classify(201, [("location", "/m/1")]) == .accepted(providerID: "/m/1"))
        guard case .tokenInvalid(let reason, _) = Self.classify(410, [], #"{"reason":"unsubscribed"}"#) else { Issue.record("410"); return }
        #expect(reason.contains("410") && reason.contains("unsubscribed"))
        guard case .tokenInvalid = Self.classify(404) else { Issue.record("404"); return }
        guard case .messageInvalid = Self.classify(413) else { Issue.record("413"); return }
        #expect(Self.classify(429, [("retry-after", "30")]) == .retryable(reason: "push service answered 429: HTTP 429", retryAfter: 30))
        guard case .retryable = Self.classify(503) else { Issue.record("503"); return }
        guard case .tokenInvalid = Self.classify(403) else { Issue.record("403"); return }
        guard case .credentialsInvalid = Self.classify(401) else { Issue.record("401"); return }
        guard case .rejected = Self.classify(400) else { Issue.record("400"); return }
        #expect(Self.classify(404).endpointAction != .none)
        #expect(Self.classify(413).endpointAction == .none)
    }
}
