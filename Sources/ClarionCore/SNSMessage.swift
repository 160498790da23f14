/// The `MessageStructure` parameter of Publish.
public enum MessageStructure: String, Sendable, Hashable {
    case json

    /// Reads the parameter: absent or empty means plain text; anything but "json" is refused.
    public static func parse(_ raw: String?) throws(MessageValidationError) -> MessageStructure? {
        guard let raw, !raw.isEmpty else { return nil }
        guard let structure = MessageStructure(rawValue: raw) else {
            throw MessageValidationError(.invalidMessageStructure, "Invalid parameter: MessageStructure", key: "MessageStructure")
        }
        return structure
    }
}

/// The message-map keys Clarion reads. Other keys (transport keys such as "email", and platforms Clarion does
/// not serve such as "MACOS", "BAIDU", "WNS") are ignored, as SNS ignores keys that do not apply (C.2).
public enum SNSMessageKey: String, Sendable, Hashable, CaseIterable {
    case `default` = "default"
    case apns = "APNS"
    case apnsSandbox = "APNS_SANDBOX"
    case apnsVoIP = "APNS_VOIP"
    case apnsVoIPSandbox = "APNS_VOIP_SANDBOX"
    case gcm = "GCM"
    case adm = "ADM"
    /// Web Push: a string is the plaintext as it is, an object its compact JSON (not SNS: Clarion's platform).
    case webPush = "WEBPUSH"
    /// Huawei Push Kit: a string holding a JSON object (the v1 `message` fields), or plain text (the notification
    /// body). Not SNS: Clarion's platform.
    case hms = "HMS"
}

/// A published message as the per-platform map SNS builds from `Message` and `MessageStructure`.
///
/// Without MessageStructure the text is the "default" for every platform. With `json`, the message must be a
/// JSON object; string values of known keys are kept, non-string values are ignored as SNS ignores them
/// (C.2; a map whose "APNS" is an object, not a string, is answered by SNS with "JSON must contain an entry
/// for 'default' or 'APNS'."), and each platform value must hold a JSON object.
public struct SNSMessage: Sendable, Hashable {
    /// The "default" text, or the whole message when it was not structured.
    public let defaultText: String?
    /// Platform keys present with a string value, each parsed to the JSON object it holds.
    public let payloads: [SNSMessageKey: JSONObject]
    /// The `WEBPUSH` entry: what a browser's service worker receives, verbatim.
    public let webPushPayload: String?
    /// An `HMS` entry that is text, not a JSON object: the notification body.
    public let hmsText: String?

    public init(defaultText: String?, payloads: [SNSMessageKey: JSONObject] = [:], webPushPayload: String? = nil,
                hmsText: String? = nil) {
        precondition(payloads[.default] == nil, "SNSMessage: \"default\" is text, not a payload")
        precondition(payloads[.webPush] == nil, "SNSMessage: \"WEBPUSH\" is text, in webPushPayload")
        self.defaultText = defaultText
        self.payloads = payloads
        self.webPushPayload = webPushPayload
        self.hmsText = hmsText
    }

    /// What an endpoint of one platform receives: its own key's object, or the default text.
    public enum Content: Sendable, Hashable {
        case payload(JSONObject)
        case defaultText(String)
        /// A platform entry delivered as it is (`WEBPUSH`).
        case text(String)
    }

    /// Parses Publish's Message and MessageStructure.
    ///
    /// - Parameter requireDefault: true for topic publishes, which SNS refuses without a string "default"
    ///   (C.2, G.10). Direct publishes pass false and call `requireEntry(for:)` with the endpoint's platform.
    /// - Throws: `MessageValidationError` with SNS's wording for bad JSON and a missing default; a platform
    ///   value that is not a JSON object is named in the error.
    public static func parse(
        message: String, structure: MessageStructure?, requireDefault: Bool
    ) throws(MessageValidationError) -> SNSMessage {
        guard structure == .json else { return SNSMessage(defaultText: message) }

        let parsed: JSONValue
        do {
            parsed = try JSONValue.parse(message, duplicateKeys: .reject)
        } catch {
            throw MessageValidationError(.invalidJSON, Wording.failedToParse, key: error.key)
        }
        guard let map = parsed.objectValue else {
            throw MessageValidationError(.invalidJSON, Wording.failedToParse)
        }

        let defaultText = map["default"]?.stringValue
        if requireDefault && defaultText == nil {
            throw MessageValidationError(.missingDefault, Wording.noDefault, key: "default")
        }

        var payloads: [SNSMessageKey: JSONObject] = [:]
        // WEBPUSH: a string is the plaintext, an object stands for its JSON text; other kinds are ignored, as SNS
        // ignores non-string values.
        var webPush: String?
        switch map[SNSMessageKey.webPush.rawValue] {
        case .string(let text)?: webPush = text
        case .object(let object)?: webPush = object.jsonText
        default: break
        }
        // HMS: a string holding a JSON object is the message's fields; other text is the notification body; an
        // object value stands for itself.
        var hmsText: String?
        switch map[SNSMessageKey.hms.rawValue] {
        case .string(let text)?:
            if let object = (try? JSONValue.parse(text))?.objectValue { payloads[.hms] = object } else { hmsText = text }
        case .object(let object)?: payloads[.hms] = object
        default: break
        }
        for key in SNSMessageKey.allCases where key != .default && key != .webPush && key != .hms {
            guard let text = map[key.rawValue]?.stringValue else { continue }
            let value = try? JSONValue.parse(text)
            guard let object = value?.objectValue else {
                throw MessageValidationError(.invalidPlatformPayload, Wording.notAnObject(key.rawValue), key: key.rawValue)
            }
            payloads[key] = object
        }
        return SNSMessage(defaultText: defaultText, payloads: payloads, webPushPayload: webPush, hmsText: hmsText)
    }

    /// For a direct publish to an endpoint: SNS refuses a map with neither "default" nor the platform's key.
    public func requireEntry(for platform: Platform) throws(MessageValidationError) {
        guard content(for: platform) == nil else { return }
        throw MessageValidationError(
            .missingPlatformEntry, Wording.noEntry(platform.messageKey.rawValue), key: platform.messageKey.rawValue)
    }

    /// The content an endpoint of `platform` gets: its key wins, "default" is the fallback, nil when neither.
    public func content(for platform: Platform) -> Content? {
        if platform == .webPush, let webPushPayload { return .text(webPushPayload) }
        if platform == .hms, let hmsText { return .text(hmsText) }
        if let payload = payloads[platform.messageKey] { return .payload(payload) }
        if let text = defaultText { return .defaultText(text) }
        return nil
    }

    enum Wording {
        static let failedToParse = "Invalid parameter: Message Structure - JSON message body failed to parse"
        static let noDefault = "Invalid parameter: Message Structure - No default entry in JSON message body"
        static func noEntry(_ key: String) -> String {
            "Invalid parameter: JSON must contain an entry for 'default' or '\(key)'."
        }
        static func notAnObject(_ key: String) -> String {
            "Invalid parameter: Message Structure - the value of '\(key)' must be a string holding a JSON object"
        }
    }
}
