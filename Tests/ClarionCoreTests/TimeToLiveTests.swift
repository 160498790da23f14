import Foundation
import Testing
@testable import ClarionCore

@Suite("TTL precedence, dwell and expiry")
struct TimeToLiveTests {
    struct Precedence: Sendable, CustomTestStringConvertible {
        let rule: String
        let attribute: Int?
        let payload: Int?
        let appDefault: Int?
        let expected: TimeToLive
        var testDescription: String { rule }
    }

    @Test("SNS C.5 precedence", arguments: [
        Precedence(rule: "SNS C.5: attribute beats payload and default", attribute: 10, payload: 20, appDefault: 30,
                   expected: TimeToLive(seconds: 10, source: .attribute)),
        Precedence(rule: "SNS C.5: payload beats the application default", attribute: nil, payload: 20, appDefault: 30,
                   expected: TimeToLive(seconds: 20, source: .payload)),
        Precedence(rule: "SNS C.5: application default when nothing else", attribute: nil, payload: nil, appDefault: 30,
                   expected: TimeToLive(seconds: 30, source: .applicationDefault)),
        Precedence(rule: "SNS C.5: SNS default of four weeks last", attribute: nil, payload: nil, appDefault: nil,
                   expected: TimeToLive(seconds: 2_419_200, source: .snsDefault)),
        Precedence(rule: "SNS C.5: an attribute of 0 still wins", attribute: 0, payload: 20, appDefault: nil,
                   expected: TimeToLive(seconds: 0, source: .attribute)),
    ])
    func precedence(_ c: Precedence) {
        #expect(TimeToLive.resolve(attribute: c.attribute, payload: c.payload, applicationDefault: c.appDefault) == c.expected)
    }

    struct Remaining: Sendable, CustomTestStringConvertible {
        let rule: String
        let ttl: Int
        let dwell: TimeInterval
        let zeroMeansNowOrNever: Bool
        let expected: TimeToLive.Remaining
        var testDescription: String { rule }
    }

    @Test("SNS C.5 dwell subtraction", arguments: [
        Remaining(rule: "SNS C.5: dwell is subtracted", ttl: 100, dwell: 30, zeroMeansNowOrNever: true, expected: .seconds(70)),
        Remaining(rule: "SNS C.5: partial seconds round down", ttl: 100, dwell: 30.4, zeroMeansNowOrNever: true, expected: .seconds(69)),
        Remaining(rule: "SNS C.5: dwell equal to TTL expires", ttl: 100, dwell: 100, zeroMeansNowOrNever: true, expected: .expired),
        Remaining(rule: "SNS C.5: less than a second left expires", ttl: 100, dwell: 99.5, zeroMeansNowOrNever: true, expected: .expired),
        Remaining(rule: "SNS C.5: TTL 0 is now-or-never for APNs and FCM, whatever the dwell", ttl: 0, dwell: 5, zeroMeansNowOrNever: true, expected: .nowOrNever),
        Remaining(rule: "SNS C.5: TTL 0 drops the message where 0 has no meaning (ADM)", ttl: 0, dwell: 0, zeroMeansNowOrNever: false, expected: .expired),
        Remaining(rule: "A clock that runs backwards counts no dwell", ttl: 100, dwell: -10, zeroMeansNowOrNever: true, expected: .seconds(100)),
    ])
    func remaining(_ c: Remaining) {
        let ttl = TimeToLive(seconds: c.ttl, source: .attribute)
        #expect(ttl.remaining(publishedAt: t0, now: t0.addingTimeInterval(c.dwell), zeroMeansNowOrNever: c.zeroMeansNowOrNever) == c.expected)
    }

    // MARK: - Through the renderer

    static let ttlAttributes = MobilePushAttributes(ttl: [.apns: 600, .apnsSandbox: 60, .gcm: 600, .adm: 600])

    @Test("SNS C.5: APNs expiration is absolute publish time + TTL; the platform's own attribute applies")
    func apnsExpiration() throws {
        let push = try renderOrFail(SNSMessage(defaultText: "x"), .apns, attributes: Self.ttlAttributes, now: t0.addingTimeInterval(100))
        #expect(try apnsHeaders(push).expiration == Int(t0.timeIntervalSince1970) + 600)
        #expect(push.expiresAt == t0.addingTimeInterval(600))
        let sandbox = try renderOrFail(SNSMessage(defaultText: "x"), .apnsSandbox, attributes: Self.ttlAttributes)
        #expect(try apnsHeaders(sandbox).expiration == Int(t0.timeIntervalSince1970) + 60)
    }

    @Test("SNS C.5: APNs TTL 0 is sent with apns-expiration 0 even after dwell")
    func apnsZero() throws {
        let push = try renderOrFail(SNSMessage(defaultText: "x"), .apns, attributes: .init(ttl: [.apns: 0]), now: t0.addingTimeInterval(3))
        #expect(try apnsHeaders(push).expiration == 0)
        #expect(push.expiresAt == t0)
    }

    /// A TTL close to `Int.max` trapped where the seconds left, or the absolute expiry, went back to `Int`: the
    /// dispatcher stopped at render time, and a publisher chooses the TTL attribute and payload TTLs freely.
    /// Tests/fuzz/corpus/render/crash-ttl-int-max.
    @Test("a TTL near Int.max is kept as a year, from the attribute or from the payload, for every platform")
    func hugeTTL() throws {
        #expect(TimeToLive(seconds: .max, source: .attribute).seconds == TimeToLive.maximumSeconds)
        #expect(TimeToLive(seconds: 3600, source: .payload).seconds == 3600)
        let attributes = try MobilePushAttributes.parse(Dictionary(uniqueKeysWithValues: Platform.allCases.map {
            ($0.ttlAttributeNames[0], MessageAttributeValue.number("9223372036854775807"))
        }))
        for platform in Platform.allCases {
            let push = try renderOrFail(SNSMessage(defaultText: "x"), platform, attributes: attributes, now: t0.addingTimeInterval(5))
            #expect(push.expiresAt == t0.addingTimeInterval(TimeInterval(TimeToLive.maximumSeconds)))
            if platform.provider == .apns {
                #expect(try apnsHeaders(push).expiration == Int(t0.timeIntervalSince1970) + TimeToLive.maximumSeconds)
            }
        }
        let huge = "9223372036854775807"
        let payloads: [(Platform, String)] = [
            (.gcm, #"{"time_to_live":\#(huge)}"#), (.gcm, #"{"fcmV1Message":{"message":{"android":{"ttl":"\#(huge)s"}}}}"#),
            (.adm, #"{"data":{},"expiresAfter":\#(huge)}"#),
        ]
        for (platform, payload) in payloads {
            let message = SNSMessage(defaultText: nil, payloads: [platform.messageKey: object(payload)])
            let push = try renderOrFail(message, platform, now: t0.addingTimeInterval(5))
            #expect(push.expiresAt == t0.addingTimeInterval(TimeInterval(TimeToLive.maximumSeconds)), "\(payload)")
        }
    }

    @Test("SNS C.5: no TTL anywhere: no apns-expiration header, four weeks of bookkeeping")
    func apnsNoTTL() throws {
        let push = try renderOrFail(SNSMessage(defaultText: "x"), .apns)
        #expect(try apnsHeaders(push).expiration == nil)
        #expect(push.expiresAt == t0.addingTimeInterval(2_419_200))
    }

    @Test("SNS C.5: the application default TTL applies when the publish gives none")
    func applicationDefault() throws {
        let push = try renderOrFail(SNSMessage(defaultText: "x"), .apns, settings: RenderSettings(apnsBundleID: "b", defaultTTL: 3600))
        #expect(try apnsHeaders(push).expiration == Int(t0.timeIntervalSince1970) + 3600)
    }

    struct Expired: Sendable, CustomTestStringConvertible {
        let platform: Platform
        var testDescription: String { platform.rawValue }
    }

    @Test("SNS C.5: a TTL shorter than the dwell is not sent, on every platform",
          arguments: Platform.allCases)
    func expired(_ platform: Platform) {
        let attributes = MobilePushAttributes(ttl: [platform: 60])
        let result = PushRenderer.render(
            SNSMessage(defaultText: "x"), attributes: attributes, platform: platform,
            settings: RenderSettings(apnsBundleID: "b"), publishedAt: t0, now: t0.addingTimeInterval(61))
        #expect(result == .expired)
        #expect(result.outcome == .expired)
    }

    @Test("SNS C.5: FCM android.ttl from the attribute replaces the payload's, minus dwell")
    func fcmAttributeRewritesPayload() throws {
        let message = try SNSMessage.parse(
            message: structured([("GCM", #"{"fcmV1Message":{"message":{"android":{"ttl":"10023.32s","priority":"high"}}}}"#)]),
            structure: .json, requireDefault: false)
        let push = try renderOrFail(message, .gcm, attributes: .init(ttl: [.gcm: 600]), now: t0.addingTimeInterval(100))
        #expect(bodyJSON(push)["message"]?["android"] == json(#"{"ttl":"500s","priority":"high"}"#))
    }

    @Test("SNS C.5: FCM payload android.ttl is used when no attribute, rounded down and minus dwell")
    func fcmPayloadTTL() throws {
        let message = try SNSMessage.parse(
            message: structured([("GCM", #"{"fcmV1Message":{"message":{"android":{"ttl":"10023.32s"}}}}"#)]),
            structure: .json, requireDefault: false)
        let push = try renderOrFail(message, .gcm, now: t0.addingTimeInterval(23))
        #expect(bodyJSON(push)["message"]?["android"]?["ttl"] == "10000s")
        #expect(push.expiresAt == t0.addingTimeInterval(10023))
    }

    @Test("FCM B.8: legacy time_to_live becomes android.ttl (minus dwell) and an absolute apns-expiration")
    func fcmLegacyTTL() throws {
        let message = try SNSMessage.parse(
            message: structured([("GCM", #"{"data":{"a":"b"},"time_to_live":3600}"#)]), structure: .json, requireDefault: false)
        let push = try renderOrFail(message, .gcm, now: t0.addingTimeInterval(600))
        let body = bodyJSON(push)
        #expect(body["message"]?["android"]?["ttl"] == "3000s")
        #expect(body["message"]?["apns"]?["headers"]?["apns-expiration"] == .string(String(Int(t0.timeIntervalSince1970) + 3600)))
    }

    @Test("FCM B.3: TTLs over 28 days are sent as 28 days; TTL 0 as \"0s\"")
    func fcmBounds() throws {
        let long = try renderOrFail(SNSMessage(defaultText: "x"), .gcm, attributes: .init(ttl: [.gcm: 40 * 86_400]))
        #expect(bodyJSON(long)["message"]?["android"]?["ttl"] == "2419200s")
        let zero = try renderOrFail(SNSMessage(defaultText: "x"), .gcm, attributes: .init(ttl: [.gcm: 0]), now: t0.addingTimeInterval(2))
        #expect(bodyJSON(zero)["message"]?["android"]?["ttl"] == "0s")
    }

    @Test("SNS C.5: no TTL anywhere leaves android.ttl out (FCM's default is also four weeks)")
    func fcmNoTTL() throws {
        let push = try renderOrFail(SNSMessage(defaultText: "x"), .gcm, now: t0.addingTimeInterval(100))
        #expect(bodyJSON(push)["message"]?["android"] == nil)
    }

    @Test("SNS C.5: ADM expiresAfter: attribute beats payload, dwell subtracted; payload alone also reduced")
    func admTTL() throws {
        let message = try SNSMessage.parse(
            message: structured([("ADM", #"{"data":{"a":"b"},"expiresAfter":1000}"#)]), structure: .json, requireDefault: false)
        let byAttribute = try renderOrFail(message, .adm, attributes: .init(ttl: [.adm: 600]), now: t0.addingTimeInterval(100))
        #expect(bodyJSON(byAttribute)["expiresAfter"] == 500)
        let byPayload = try renderOrFail(message, .adm, now: t0.addingTimeInterval(100))
        #expect(bodyJSON(byPayload)["expiresAfter"] == 900)
    }

    @Test("SNS C.5: ADM TTL 0 is dropped")
    func admZero() {
        let result = PushRenderer.render(
            SNSMessage(defaultText: "x"), attributes: .init(ttl: [.adm: 0]), platform: .adm, settings: .init(),
            publishedAt: t0, now: t0)
        #expect(result == .expired)
    }

    @Test("SNS C.4: the APNS TTL attribute does not apply to GCM or ADM endpoints")
    func ttlIsPerPlatform() throws {
        let attributes = MobilePushAttributes(ttl: [.apns: 10])
        let push = try renderOrFail(SNSMessage(defaultText: "x"), .gcm, attributes: attributes, now: t0.addingTimeInterval(60))
        #expect(bodyJSON(push)["message"]?["android"] == nil)
    }
}
