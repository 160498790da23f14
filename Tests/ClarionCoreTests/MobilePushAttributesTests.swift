import Testing
@testable import ClarionCore

@Suite("Reserved mobile-push message attributes")
struct MobilePushAttributesTests {
    @Test("SNS C.4: every reserved attribute is read into its field")
    func readsAll() throws {
        let parsed = try MobilePushAttributes.parse([
            "AWS.SNS.MOBILE.APNS.PUSH_TYPE": .string("background"),
            "AWS.SNS.MOBILE.APNS.PRIORITY": .number("5"),
            "AWS.SNS.MOBILE.APNS.COLLAPSE_ID": .string("scores"),
            "AWS.SNS.MOBILE.APNS.TOPIC": .string("com.example.app.voip"),
            "AWS.SNS.MOBILE.APNS.TTL": .number("60"),
            "AWS.SNS.MOBILE.APNS_SANDBOX.TTL": .string("61"),
            "AWS.SNS.MOBILE.APNS_VOIP.TTL": .number("62"),
            "AWS.SNS.MOBILE.APNS_VOIP_SANDBOX.TTL": .number("63"),
            "AWS.SNS.MOBILE.FCM.TTL": .number("64"),
            "AWS.SNS.MOBILE.ADM.TTL": .number("65"),
            "AWS.SNS.MOBILE.MACOS.TTL": .number("66"),
            "custom": .string("not a reserved attribute"),
        ])
        #expect(parsed == MobilePushAttributes(
            apnsPushType: .background, apnsPriority: 5, apnsCollapseID: "scores", apnsTopic: "com.example.app.voip",
            ttl: [.apns: 60, .apnsSandbox: 61, .apnsVoIP: 62, .apnsVoIPSandbox: 63, .gcm: 64, .adm: 65]))
        #expect(parsed.ttl(for: .apnsSandbox) == 61)
    }

    @Test("SNS C.4: the older AWS.SNS.MOBILE.GCM.TTL name applies to GCM")
    func gcmTTLName() throws {
        let parsed = try MobilePushAttributes.parse(["AWS.SNS.MOBILE.GCM.TTL": .number("30")])
        #expect(parsed.ttl(for: .gcm) == 30)
        #expect(parsed.ttl(for: .adm) == nil)
    }

    struct Bad: Sendable, CustomTestStringConvertible {
        let name: String
        let value: MessageAttributeValue
        var testDescription: String { "\(name) = \(value.stringValue ?? "binary")" }
    }

    @Test("SNS C.4/C.5: invalid reserved attribute values fail the Publish, naming the attribute", arguments: [
        Bad(name: "AWS.SNS.MOBILE.APNS.TTL", value: .number("-1")),
        Bad(name: "AWS.SNS.MOBILE.FCM.TTL", value: .string("soon")),
        Bad(name: "AWS.SNS.MOBILE.ADM.TTL", value: .number("1.5")),
        Bad(name: "AWS.SNS.MOBILE.APNS.PUSH_TYPE", value: .string("loud")),
        Bad(name: "AWS.SNS.MOBILE.APNS.PRIORITY", value: .number("11")),
        Bad(name: "AWS.SNS.MOBILE.APNS.PRIORITY", value: .number("0")),
        Bad(name: "AWS.SNS.MOBILE.APNS.TOPIC", value: .string("  ")),
        Bad(name: "AWS.SNS.MOBILE.APNS.TTL", value: MessageAttributeValue(dataType: "Binary", binaryValue: [1])),
        Bad(name: "AWS.SNS.MOBILE.APNS.COLLAPSE_ID", value: MessageAttributeValue(dataType: "String.Array", stringValue: "[\"a\"]")),
    ])
    func refuses(_ c: Bad) {
        do {
            _ = try MobilePushAttributes.parse([c.name: c.value])
            Issue.record("accepted \(c.name)")
        } catch {
            #expect(error.code == .invalidAttribute)
            #expect(error.key == c.name)
            #expect(error.message.hasPrefix("Invalid parameter: MessageAttributes Reason: \(c.name) "))
        }
    }

    @Test("SNS C.4: push type is read case-insensitively, priorities 1-10 pass as a compatible implementation does")
    func lenientValues() throws {
        let parsed = try MobilePushAttributes.parse([
            "AWS.SNS.MOBILE.APNS.PUSH_TYPE": .string("LiveActivity"),
            "AWS.SNS.MOBILE.APNS.PRIORITY": MessageAttributeValue(dataType: "Number.int", stringValue: "7"),
        ])
        #expect(parsed.apnsPushType == .liveactivity)
        #expect(parsed.apnsPriority == 7)
    }
}
