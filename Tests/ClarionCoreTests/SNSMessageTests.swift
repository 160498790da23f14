import Testing
@testable import ClarionCore

@Suite("SNS message map parsing")
struct SNSMessageTests {
    @Test("SNS C.2: without MessageStructure the whole text is the default for every platform")
    func plainText() throws {
        let message = try SNSMessage.parse(message: #"{"not":"parsed"}"#, structure: nil, requireDefault: true)
        #expect(message.defaultText == #"{"not":"parsed"}"#)
        #expect(message.payloads.isEmpty)
        for platform in Platform.allCases {
            #expect(message.content(for: platform) == .defaultText(#"{"not":"parsed"}"#))
        }
    }

    @Test("SNS C.2: MessageStructure must be absent or json")
    func structureParameter() throws {
        #expect(try MessageStructure.parse(nil) == nil)
        #expect(try MessageStructure.parse("") == nil)
        #expect(try MessageStructure.parse("json") == .json)
        #expect(throws: MessageValidationError(.invalidMessageStructure, "Invalid parameter: MessageStructure", key: "MessageStructure")) {
            try MessageStructure.parse("xml")
        }
    }

    struct Failure: Sendable, CustomTestStringConvertible {
        let name: String
        let message: String
        let requireDefault: Bool
        let code: MessageValidationError.Code
        let text: String
        let key: String?
        var testDescription: String { name }
    }

    @Test("SNS C.2: invalid maps fail the whole Publish with SNS's wording", arguments: [
        Failure(name: "not JSON", message: #"{"default": "x"} }"#, requireDefault: true, code: .invalidJSON,
                text: "Invalid parameter: Message Structure - JSON message body failed to parse", key: nil),
        Failure(name: "JSON but not an object", message: #"["default"]"#, requireDefault: false, code: .invalidJSON,
                text: "Invalid parameter: Message Structure - JSON message body failed to parse", key: nil),
        Failure(name: "duplicate key", message: #"{"default":"a","default":"b"}"#, requireDefault: true, code: .invalidJSON,
                text: "Invalid parameter: Message Structure - JSON message body failed to parse", key: "default"),
        Failure(name: "unpaired surrogate escape in the map", message: #"{"default":"a\ud800"}"#, requireDefault: true,
                code: .invalidJSON, text: "Invalid parameter: Message Structure - JSON message body failed to parse", key: nil),
        Failure(name: "unpaired surrogate escape in a platform payload", message: #"{"default":"d","GCM":"{\"data\":{\"a\":\"\\udc00\"}}"}"#,
                requireDefault: true, code: .invalidPlatformPayload,
                text: "Invalid parameter: Message Structure - the value of 'GCM' must be a string holding a JSON object", key: "GCM"),
        Failure(name: "topic publish without default", message: #"{"APNS":"{}"}"#, requireDefault: true, code: .missingDefault,
                text: "Invalid parameter: Message Structure - No default entry in JSON message body", key: "default"),
        Failure(name: "non-string default counts as missing", message: #"{"default":{"object":"test"}}"#, requireDefault: true,
                code: .missingDefault, text: "Invalid parameter: Message Structure - No default entry in JSON message body", key: "default"),
        Failure(name: "platform string that is not JSON", message: #"{"default":"d","GCM":"not json"}"#, requireDefault: true,
                code: .invalidPlatformPayload,
                text: "Invalid parameter: Message Structure - the value of 'GCM' must be a string holding a JSON object", key: "GCM"),
        Failure(name: "platform string holding an array", message: #"{"default":"d","ADM":"[1]"}"#, requireDefault: false,
                code: .invalidPlatformPayload,
                text: "Invalid parameter: Message Structure - the value of 'ADM' must be a string holding a JSON object", key: "ADM"),
    ])
    func failures(_ c: Failure) {
        #expect(throws: MessageValidationError(c.code, c.text, key: c.key)) {
            try SNSMessage.parse(message: c.message, structure: .json, requireDefault: c.requireDefault)
        }
    }

    @Test("SNS C.2: non-string platform values and unknown keys are ignored")
    func ignoredKeys() throws {
        let text = #"{"default":"d","APNS":{"aps":{"alert":"object, not string"}},"email":"e","MACOS":"{}","WNS":7}"#
        let message = try SNSMessage.parse(message: text, structure: .json, requireDefault: true)
        #expect(message.payloads.isEmpty)
        #expect(message.content(for: .apns) == .defaultText("d"))
    }

    @Test("SNS C.2: the endpoint's platform key wins, default is the fallback; APNS_SANDBOX is not APNS")
    func keySelection() throws {
        let text = structured([
            ("default", "plain"), ("APNS", #"{"aps":{"alert":"prod"}}"#), ("GCM", #"{"data":{"k":"v"}}"#),
        ])
        let message = try SNSMessage.parse(message: text, structure: .json, requireDefault: true)
        #expect(message.content(for: .apns) == .payload(object(#"{"aps":{"alert":"prod"}}"#)))
        #expect(message.content(for: .apnsSandbox) == .defaultText("plain"))
        #expect(message.content(for: .gcm) == .payload(object(#"{"data":{"k":"v"}}"#)))
        #expect(message.content(for: .adm) == .defaultText("plain"))
        #expect(message.content(for: .apnsVoIP) == .defaultText("plain"))
    }

    @Test("SNS G.10: a direct publish needs default or the endpoint platform's key")
    func directPublishEntry() throws {
        let message = try SNSMessage.parse(
            message: structured([("APNS_SANDBOX", #"{"aps":{"alert":"x"}}"#)]), structure: .json, requireDefault: false)
        #expect(throws: Never.self) { try message.requireEntry(for: .apnsSandbox) }
        #expect(throws: MessageValidationError(
            .missingPlatformEntry, "Invalid parameter: JSON must contain an entry for 'default' or 'APNS'.", key: "APNS")
        ) {
            try message.requireEntry(for: .apns)
        }
        #expect(message.content(for: .apns) == nil)
    }
}
