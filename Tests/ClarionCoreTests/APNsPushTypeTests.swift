import Testing
@testable import ClarionCore

@Suite("APNs push types")
struct APNsPushTypeTests {
    struct Inference: Sendable, CustomTestStringConvertible {
        let rule: String
        let payload: String
        let expected: APNsPushType
        var testDescription: String { rule }
    }

    @Test("SNS C.6 push-type inference", arguments: [
        Inference(rule: "SNS C.6: content-available 1 alone with custom keys outside aps is background",
                  payload: #"{"aps":{"content-available":1},"Foo1":"Bar","Foo2":123}"#, expected: .background),
        Inference(rule: "SNS C.6: content-available 1 with alert is alert",
                  payload: #"{"aps":{"content-available":1,"alert":"hi"}}"#, expected: .alert),
        Inference(rule: "SNS C.6: content-available 1 with badge is alert",
                  payload: #"{"aps":{"content-available":1,"badge":3}}"#, expected: .alert),
        Inference(rule: "SNS C.6: content-available 1 with sound is alert",
                  payload: #"{"aps":{"content-available":1,"sound":"default"}}"#, expected: .alert),
        Inference(rule: "SNS C.6: content-available 0 is alert",
                  payload: #"{"aps":{"content-available":0}}"#, expected: .alert),
        Inference(rule: "SNS C.6: content-available absent is alert",
                  payload: #"{"aps":{"badge":1}}"#, expected: .alert),
        Inference(rule: "SNS C.6: no aps at all is alert",
                  payload: #"{"Foo":"Bar"}"#, expected: .alert),
        Inference(rule: "SNS C.6: content-available as a string is not an integer: alert",
                  payload: #"{"aps":{"content-available":"1"}}"#, expected: .alert),
        Inference(rule: "SNS C.6: content-available 1.0 is not an integer: alert",
                  payload: #"{"aps":{"content-available":1.0}}"#, expected: .alert),
        Inference(rule: "SNS C.6: content-available null is alert",
                  payload: #"{"aps":{"content-available":null}}"#, expected: .alert),
        Inference(rule: "SNS C.6: content-available 2 is not 1: alert",
                  payload: #"{"aps":{"content-available":2}}"#, expected: .alert),
        Inference(rule: "SNS C.6: content-available true is the boolean form of 1: background",
                  payload: #"{"aps":{"content-available":true}}"#, expected: .background),
        Inference(rule: "SNS C.6: content-available false is alert",
                  payload: #"{"aps":{"content-available":false}}"#, expected: .alert),
        Inference(rule: "SNS G.13: mutable-content, category, thread-id are not user-interaction keys",
                  payload: #"{"aps":{"content-available":1,"mutable-content":1,"category":"c","thread-id":"t"}}"#,
                  expected: .background),
        Inference(rule: "SNS C.6: keys inside a custom dictionary do not count",
                  payload: #"{"aps":{"content-available":1},"custom":{"alert":"x"}}"#, expected: .background),
    ])
    func inference(_ c: Inference) {
        #expect(APNsPushType.inferred(fromPayload: object(c.payload)) == c.expected)
    }

    @Test("APNs A.3: topic suffix per push type", arguments: [
        (APNsPushType.alert, "com.example.app"),
        (.background, "com.example.app"),
        (.voip, "com.example.app.voip"),
        (.complication, "com.example.app.complication"),
        (.fileprovider, "com.example.app.pushkit.fileprovider"),
        (.location, "com.example.app.location-query"),
        (.liveactivity, "com.example.app.push-type.liveactivity"),
        (.pushtotalk, "com.example.app.voip-ptt"),
        (.mdm, "com.example.app"),
        (.controls, "com.example.app.push-type.controls"),
        (.widgets, "com.example.app.push-type.widgets"),
    ])
    func topicSuffix(_ type: APNsPushType, _ topic: String) {
        #expect(type.topic(bundleID: "com.example.app") == topic)
    }

    @Test("APNs A.3/A.4: background defaults to priority 5, others to 10; VoIP may be 5120 bytes")
    func defaults() {
        for type in APNsPushType.allCases {
            #expect(type.defaultPriority == (type == .background ? .conservePower : .immediate))
            #expect(type.payloadLimit == (type == .voip ? 5120 : 4096))
        }
    }

    @Test("Platforms: message keys, environment and provider")
    func platforms() {
        #expect(Platform(rawValue: "APNS_SANDBOX") == .apnsSandbox)
        #expect(Platform.apnsSandbox.messageKeys == [.apnsSandbox, .default])
        #expect(Platform.gcm.messageKeys == [.gcm, .default])
        #expect(Platform.apnsVoIPSandbox.apnsEnvironment == .sandbox)
        #expect(Platform.apns.apnsEnvironment == .production)
        #expect(Platform.adm.apnsEnvironment == nil)
        #expect(Platform.gcm.provider == .fcm)
        #expect(Platform.apnsVoIP.provider == .apns)
    }
}
