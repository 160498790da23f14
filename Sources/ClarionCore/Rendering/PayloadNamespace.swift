/// Clarion's own values in a push, under one root key of the payload, so an app SDK can recognise
/// Clarion's pushes, report opens with the delivery id, and merge duplicates by message id.
///
/// The values are flat strings: `type` ("campaign" or "message"), `message_id`, `delivery_id`, `deep_link` when
/// set, then the campaign's data keys. Where they go depends on the platform:
/// - APNs: an object at the payload root beside `aps` (`{"aps":{...},"<key>":{"type":...}}`);
/// - FCM: a JSON-encoded string in `message.data["<key>"]` (FCM data values are strings);
/// - ADM: likewise a JSON-encoded string in `data["<key>"]`.
/// Title and body stay in the platform's own fields; the namespace never carries them.
///
/// The namespace travels with the stored message as the reserved message attribute `Clarion.Namespace` (a JSON
/// object text, `attributeValue()`), which `MobilePushAttributes.parse` reads. So the dispatcher needs nothing
/// new: it renders once per message and platform as before, and the delivery id is a template slot filled per
/// delivery (inside the FCM/ADM string too: `JSONTemplateNode.embedded`), with no JSON encoding per delivery.
/// The message id is part of the stored attribute, so it is the same on every attempt and every retry.
public struct PayloadNamespace: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable {
        /// A campaign send: reports count its opens per campaign.
        case campaign
        /// An ordinary push whose publisher asked for the namespace.
        case message
    }

    /// One extra value (a campaign data key), in the order the publisher gave it.
    public struct Field: Sendable, Hashable {
        public var key: String
        public var value: String
        public init(key: String, value: String) {
            self.key = key
            self.value = value
        }
    }

    /// The message attribute that carries the namespace with the stored message.
    public static let attributeName = "Clarion.Namespace"
    /// Keys Clarion sets itself; campaign data may not use them.
    public static let reservedKeys: Set<String> = ["type", "message_id", "delivery_id", "deep_link"]
    /// Keys that would put the title or body inside the namespace: they belong in the platform's own fields.
    public static let contentKeys: Set<String> = ["title", "body"]
    /// Root keys a namespace cannot take: APNs' own dictionary, and the data keys FCM refuses (B.3).
    public static let forbiddenNamespaceKeys: Set<String> = ["aps", "from", "notification", "message_type", "collapse_key"]
    public static let forbiddenNamespacePrefixes = ["google", "gcm"]
    /// Longest namespace key and data key, in bytes.
    public static let keyLimit = 64
    /// Most campaign data keys.
    public static let fieldLimit = 50

    /// The payload key everything sits under.
    public var key: String
    public var kind: Kind
    /// The message's external id, as the API shows it.
    public var messageID: String
    public var deepLink: String?
    public var fields: [Field]
    /// The campaign's external id: not delivered; it links the stored message to its campaign
    /// (ClarionStore migration 6 sets `messages.campaign` from it in the statement that stores the message).
    public var campaign: String?

    public init(key: String, kind: Kind, messageID: String, deepLink: String? = nil, fields: [Field] = [],
                campaign: String? = nil) {
        self.key = key
        self.kind = kind
        self.messageID = messageID
        self.deepLink = deepLink
        self.fields = fields
        self.campaign = campaign
    }

    // MARK: Validation

    /// Why a namespace key or field cannot be used, or nil when it can. `field` names it in the answer.
    public static func problem(namespaceKey key: String) -> String? {
        guard (1...keyLimit).contains(key.utf8.count) else { return "must be 1 to \(keyLimit) bytes" }
        let lower = key.lowercased()
        if forbiddenNamespaceKeys.contains(lower) || forbiddenNamespacePrefixes.contains(where: { lower.hasPrefix($0) }) {
            return "'\(key)' is reserved by a push provider"
        }
        guard key.utf8.allSatisfy({ $0 >= 0x20 && $0 != 0x7F }) else { return "must not contain control characters" }
        return nil
    }

    public static func problem(dataKey key: String) -> String? {
        guard (1...keyLimit).contains(key.utf8.count) else { return "must be 1 to \(keyLimit) bytes" }
        if reservedKeys.contains(key) { return "'\(key)' is set by Clarion" }
        if contentKeys.contains(key) { return "'\(key)' belongs in the message (the platform's own title/body fields)" }
        return nil
    }

    // MARK: Stored form

    /// The attribute stored with the message: `{"key":..,"type":..,"message_id":..,"deep_link"?:..,"data":{..},
    /// "campaign"?:..}` as a String attribute.
    public func attributeValue() -> MessageAttributeValue {
        var object = JSONObject([("key", .string(key)), ("type", .string(kind.rawValue)), ("message_id", .string(messageID))])
        if let deepLink { object["deep_link"] = .string(deepLink) }
        if !fields.isEmpty { object["data"] = .object(JSONObject(fields.map { ($0.key, .string($0.value)) })) }
        if let campaign { object["campaign"] = .string(campaign) }
        return .string(object.jsonText)
    }

    /// Reads the stored attribute; a malformed one refuses the publish, as any bad reserved attribute does.
    public static func parse(attribute value: MessageAttributeValue) throws(MessageValidationError) -> PayloadNamespace {
        func invalid(_ reason: String) -> MessageValidationError {
            MessageValidationError(.invalidAttribute, "Invalid parameter: MessageAttributes Reason: \(attributeName) \(reason)",
                                   key: attributeName)
        }
        guard value.dataType == "String", let text = value.stringValue else { throw invalid("must be a String attribute") }
        let parsed: JSONValue
        do throws(JSONParseError) { parsed = try JSONValue.parse(text, duplicateKeys: .reject) } catch {
            throw invalid("must be a JSON object")
        }
        guard let object = parsed.objectValue else { throw invalid("must be a JSON object") }
        guard let key = object["key"]?.stringValue else { throw invalid("needs a string 'key'") }
        if let problem = problem(namespaceKey: key) { throw invalid("key \(problem)") }
        guard let kind = object["type"]?.stringValue.flatMap(Kind.init(rawValue:)) else {
            throw invalid("'type' must be \"campaign\" or \"message\"")
        }
        guard let messageID = object["message_id"]?.stringValue, !messageID.isEmpty else {
            throw invalid("needs a string 'message_id'")
        }
        var deepLink: String?
        if let link = object["deep_link"], link != .null {
            guard let text = link.stringValue else { throw invalid("'deep_link' must be a string") }
            deepLink = text
        }
        var fields: [Field] = []
        if let data = object["data"], data != .null {
            guard let map = data.objectValue else { throw invalid("'data' must be an object of strings") }
            guard map.count <= fieldLimit else { throw invalid("'data' has more than \(fieldLimit) keys") }
            for member in map {
                guard let text = member.value.stringValue else { throw invalid("data '\(member.key)' must be a string") }
                if let problem = problem(dataKey: member.key) { throw invalid("data key \(problem)") }
                fields.append(Field(key: member.key, value: text))
            }
        }
        let campaign = object["campaign"]?.stringValue
        return PayloadNamespace(key: key, kind: kind, messageID: messageID, deepLink: deepLink, fields: fields,
                                campaign: campaign)
    }

    // MARK: Rendering

    /// The namespace's members, the delivery id as a template slot.
    var members: [(String, JSONTemplateNode)] {
        var out: [(String, JSONTemplateNode)] = [
            ("type", .value(.string(kind.rawValue))), ("message_id", .value(.string(messageID))),
            ("delivery_id", .slot(.deliveryID)),
        ]
        if let deepLink { out.append(("deep_link", .value(.string(deepLink)))) }
        for field in fields { out.append((field.key, .value(.string(field.value)))) }
        return out
    }

    /// APNs: an object beside `aps`.
    var objectNode: JSONTemplateNode { .object(members) }

    /// FCM and ADM: the object's JSON text as one string value.
    var stringNode: JSONTemplateNode { .embedded(.object(members)) }

    /// The JSON text as a device will read it, with a delivery id of the real length (sizes, tests).
    public func jsonText(deliveryID: String) -> String {
        var object = JSONObject([("type", .string(kind.rawValue)), ("message_id", .string(messageID)),
                                 ("delivery_id", .string(deliveryID))])
        if let deepLink { object["deep_link"] = .string(deepLink) }
        for field in fields { object[field.key] = .string(field.value) }
        return object.jsonText
    }

    /// What FCM counts against its 4096-byte "keys + values" limit for this data entry.
    var dataEntrySize: Int {
        key.utf8.count + jsonText(deliveryID: String(repeating: "A", count: PushRenderer.deliveryIDSlotLength)).utf8.count
    }

    /// Replaces (or adds) the namespace member of an object being rendered.
    static func place(_ node: JSONTemplateNode, at key: String, in members: inout [(String, JSONTemplateNode)]) {
        members.removeAll { $0.0 == key }
        members.append((key, node))
    }
}

extension PayloadTemplate {
    /// Bytes of the body once every delivery-id slot is filled (token slots not counted): for size limits.
    var sizeWithDeliveryIDs: Int {
        fixedByteCount + slots.reduce(0) { $0 + ($1 == .deliveryID ? PushRenderer.deliveryIDSlotLength : 0) }
    }
}
