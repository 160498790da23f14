import Foundation
import Testing
@testable import ClarionCore

@Suite("Rendering for APNs")
struct PushRendererAPNsTests {
    @Test("SNS C.2: default becomes the plain alert {\"aps\":{\"alert\":...}}")
    func defaultAlert() throws {
        let push = try renderOrFail(SNSMessage(defaultText: "Hello \"you\""), .apns)
        #expect(String(decoding: push.body(token: "ignored"), as: UTF8.self) == #"{"aps":{"alert":"Hello \"you\""}}"#)
        let headers = try apnsHeaders(push)
        #expect(headers == APNsRequestHeaders(
            pushType: .alert, topic: "com.example.app", priority: .immediate, expiration: nil, collapseID: nil))
        #expect(push.body.slots.isEmpty, "APNs carries the token in :path, not in the body")
    }

    @Test("SNS C.2: the platform key wins over default and is sent compact, key order kept")
    func platformKeyWins() throws {
        let message = try SNSMessage.parse(
            message: structured([
                ("default", "fallback"),
                ("APNS", #"{ "aps" : { "alert" : { "title": "T", "body": "B" }, "badge": 2 }, "z": 1, "a": [1.50, true] }"#),
            ]), structure: .json, requireDefault: true)
        let push = try renderOrFail(message, .apns)
        #expect(String(decoding: push.body(token: "x"), as: UTF8.self)
            == #"{"aps":{"alert":{"title":"T","body":"B"},"badge":2},"z":1,"a":[1.50,true]}"#)
    }

    @Test("SNS C.2: APNS_SANDBOX endpoints read APNS_SANDBOX, not APNS")
    func sandboxKey() throws {
        let message = try SNSMessage.parse(
            message: structured([
                ("default", "d"), ("APNS", #"{"aps":{"alert":"prod"}}"#), ("APNS_SANDBOX", #"{"aps":{"alert":"sandbox"}}"#),
            ]), structure: .json, requireDefault: true)
        #expect(bodyJSON(try renderOrFail(message, .apnsSandbox))["aps"]?["alert"] == "sandbox")
        #expect(bodyJSON(try renderOrFail(message, .apns))["aps"]?["alert"] == "prod")
    }

    struct HeaderCase: Sendable, CustomTestStringConvertible {
        let rule: String
        let platform: Platform
        let payload: String
        let attributes: MobilePushAttributes
        let expected: APNsRequestHeaders
        var testDescription: String { rule }
    }

    @Test("APNs headers from attributes, platform and inference", arguments: [
        HeaderCase(rule: "SNS C.6: inferred background goes with priority 5 and the bare bundle topic", platform: .apns,
                   payload: #"{"aps":{"content-available":1},"Foo1":"Bar","Foo2":123}"#, attributes: .init(),
                   expected: .init(pushType: .background, topic: "com.example.app", priority: .conservePower, expiration: nil, collapseID: nil)),
        HeaderCase(rule: "SNS C.6: content-available 1 with an alert is alert, priority 10", platform: .apns,
                   payload: #"{"aps":{"content-available":1,"alert":"hi"}}"#, attributes: .init(),
                   expected: .init(pushType: .alert, topic: "com.example.app", priority: .immediate, expiration: nil, collapseID: nil)),
        HeaderCase(rule: "SNS C.4: PUSH_TYPE attribute overrides inference and picks the topic suffix", platform: .apns,
                   payload: #"{"aps":{"content-available":1}}"#, attributes: .init(apnsPushType: .liveactivity),
                   expected: .init(pushType: .liveactivity, topic: "com.example.app.push-type.liveactivity", priority: .immediate, expiration: nil, collapseID: nil)),
        HeaderCase(rule: "SNS C.4: PRIORITY attribute is used as given, even for background", platform: .apns,
                   payload: #"{"aps":{"content-available":1}}"#, attributes: .init(apnsPriority: 10),
                   expected: .init(pushType: .background, topic: "com.example.app", priority: .immediate, expiration: nil, collapseID: nil)),
        HeaderCase(rule: "SNS C.4: TOPIC attribute replaces bundle id + suffix", platform: .apns,
                   payload: #"{"aps":{"alert":"x"}}"#, attributes: .init(apnsPushType: .voip, apnsTopic: "org.other.voip"),
                   expected: .init(pushType: .voip, topic: "org.other.voip", priority: .immediate, expiration: nil, collapseID: nil)),
        HeaderCase(rule: "SNS C.4: COLLAPSE_ID attribute becomes apns-collapse-id", platform: .apnsSandbox,
                   payload: #"{"aps":{"alert":"x"}}"#, attributes: .init(apnsCollapseID: "scores"),
                   expected: .init(pushType: .alert, topic: "com.example.app", priority: .immediate, expiration: nil, collapseID: "scores")),
        HeaderCase(rule: "APNs A.3: APNS_VOIP endpoints push voip to <bundle>.voip", platform: .apnsVoIP,
                   payload: #"{"aps":{"alert":"ring"}}"#, attributes: .init(),
                   expected: .init(pushType: .voip, topic: "com.example.app.voip", priority: .immediate, expiration: nil, collapseID: nil)),
    ])
    func headers(_ c: HeaderCase) throws {
        let key = c.platform.messageKey.rawValue
        let message = try SNSMessage.parse(message: structured([(key, c.payload)]), structure: .json, requireDefault: false)
        #expect(try apnsHeaders(try renderOrFail(message, c.platform, attributes: c.attributes)) == c.expected)
    }

    @Test("APNs A.2: the header fields are sent in a stable order with their wire values")
    func headerFields() {
        let headers = APNsRequestHeaders(pushType: .background, topic: "t", priority: .conservePower, expiration: 0, collapseID: "c")
        #expect(headers.fields.map(\.name) == ["apns-push-type", "apns-topic", "apns-priority", "apns-expiration", "apns-collapse-id"])
        #expect(headers.fields.map(\.value) == ["background", "t", "5", "0", "c"])
        let minimal = APNsRequestHeaders(pushType: .alert, topic: nil, priority: .immediate, expiration: nil, collapseID: nil)
        #expect(minimal.fields.map(\.name) == ["apns-push-type", "apns-priority"])
    }

    @Test("Without a bundle id or TOPIC attribute the topic is left to the provider layer")
    func noTopic() throws {
        let push = try renderOrFail(SNSMessage(defaultText: "x"), .apns, settings: RenderSettings())
        #expect(try apnsHeaders(push).topic == nil)
    }

    struct Invalid: Sendable, CustomTestStringConvertible {
        let rule: String
        let attributes: MobilePushAttributes
        let reasonPrefix: String
        var testDescription: String { rule }
    }

    @Test("Header values APNs would refuse fail the delivery before any round trip", arguments: [
        Invalid(rule: "APNs A.2: collapse id over 64 bytes is BadCollapseId",
                attributes: .init(apnsCollapseID: String(repeating: "c", count: 65)), reasonPrefix: "APNs collapse id is 65 bytes"),
        Invalid(rule: "APNs A.2: priority other than 10, 5, 1 is BadPriority",
                attributes: .init(apnsPriority: 7), reasonPrefix: "APNs priority 7"),
    ])
    func invalidHeaders(_ c: Invalid) {
        let result = PushRenderer.render(
            SNSMessage(defaultText: "x"), attributes: c.attributes, platform: .apns,
            settings: RenderSettings(apnsBundleID: "b"), publishedAt: t0, now: t0)
        guard case .invalid(let reason) = result else { Issue.record("rendered: \(result)"); return }
        #expect(reason.hasPrefix(c.reasonPrefix))
        #expect(result.outcome == .messageInvalid(reason: reason))
    }

    @Test("APNs A.2: a 64-byte collapse id is accepted")
    func collapseIDAtLimit() throws {
        let id = String(repeating: "c", count: 64)
        let push = try renderOrFail(SNSMessage(defaultText: "x"), .apns, attributes: .init(apnsCollapseID: id))
        #expect(try apnsHeaders(push).collapseID == id)
    }

    /// A payload of exactly `size` bytes once encoded.
    static func payload(ofSize size: Int) -> String {
        let overhead = #"{"aps":{"alert":""}}"#.utf8.count
        return #"{"aps":{"alert":""# + String(repeating: "a", count: size - overhead) + #""}}"#
    }

    struct Limit: Sendable, CustomTestStringConvertible {
        let rule: String
        let platform: Platform
        let size: Int
        let accepted: Bool
        var testDescription: String { rule }
    }

    @Test("APNs A.4 payload limits", arguments: [
        Limit(rule: "APNs A.4: 4096 bytes is accepted", platform: .apns, size: 4096, accepted: true),
        Limit(rule: "APNs A.4: 4097 bytes is refused", platform: .apns, size: 4097, accepted: false),
        Limit(rule: "APNs A.4: VoIP takes 5120 bytes", platform: .apnsVoIP, size: 5120, accepted: true),
        Limit(rule: "APNs A.4: VoIP refuses 5121 bytes", platform: .apnsVoIP, size: 5121, accepted: false),
    ])
    func limits(_ c: Limit) throws {
        let text = Self.payload(ofSize: c.size)
        #expect(text.utf8.count == c.size)
        let message = try SNSMessage.parse(
            message: structured([(c.platform.messageKey.rawValue, text)]), structure: .json, requireDefault: false)
        let result = PushRenderer.render(
            message, attributes: .init(), platform: c.platform, settings: .init(), publishedAt: t0, now: t0)
        if c.accepted {
            #expect(result.push?.body(token: "t").count == c.size)
        } else {
            guard case .invalid(let reason) = result else { Issue.record("rendered: \(result)"); return }
            #expect(reason.contains("\(c.size) bytes"))
        }
    }

    @Test("Delivery id slot: beside aps, filled per delivery, counted in the size limit")
    func deliveryIDSlot() throws {
        let settings = RenderSettings(apnsBundleID: "b", deliveryIDKey: "cdid")
        let push = try renderOrFail(SNSMessage(defaultText: "hi"), .apns, settings: settings)
        #expect(push.body.slots == [.deliveryID])
        let id = String(repeating: "A", count: DeliveryIDCodec.encodedLength)
        #expect(String(decoding: push.body(token: "t", deliveryID: id), as: UTF8.self) == #"{"aps":{"alert":"hi"},"cdid":""# + id + #""}"#)

        // A payload that fits alone but not with the 35-character id is refused.
        let fits = Self.payload(ofSize: 4096 - #","cdid":"""#.utf8.count - DeliveryIDCodec.encodedLength + 1)
        let message = try SNSMessage.parse(message: structured([("APNS", fits)]), structure: .json, requireDefault: false)
        let result = PushRenderer.render(message, attributes: .init(), platform: .apns, settings: settings, publishedAt: t0, now: t0)
        guard case .invalid = result else { Issue.record("rendered: \(result)"); return }
    }
}
