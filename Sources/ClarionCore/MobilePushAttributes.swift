/// One Publish message attribute as the Query API carries it (`MessageAttributes.entry.N.Value.*`).
public struct MessageAttributeValue: Sendable, Hashable {
    /// `String`, `Number`, `Binary`, `String.Array`, or one of those with a custom suffix (`Number.int`).
    public var dataType: String
    public var stringValue: String?
    public var binaryValue: [UInt8]?

    public init(dataType: String, stringValue: String? = nil, binaryValue: [UInt8]? = nil) {
        self.dataType = dataType
        self.stringValue = stringValue
        self.binaryValue = binaryValue
    }

    public static func string(_ value: String) -> MessageAttributeValue {
        MessageAttributeValue(dataType: "String", stringValue: value)
    }

    public static func number(_ value: String) -> MessageAttributeValue {
        MessageAttributeValue(dataType: "Number", stringValue: value)
    }
}

/// The reserved `AWS.SNS.MOBILE.*` attributes that shape the provider request (docs/providers.md C.4).
///
/// They are read here and never delivered to the device. Other attributes are not delivered either: SNS
/// mobile push does not forward message attributes (C.4), so nothing else is kept.
public struct MobilePushAttributes: Sendable, Hashable {
    /// `AWS.SNS.MOBILE.APNS.PUSH_TYPE`; applies to every APNs platform (sandbox and VoIP too).
    public var apnsPushType: APNsPushType?
    /// `AWS.SNS.MOBILE.APNS.PRIORITY`, 1–10 as a compatible implementation accepts it (C.4). APNs itself takes
    /// only 10, 5 and 1, so another value fails the APNs deliveries of the message before any round trip, while
    /// the message's other platforms are still served.
    public var apnsPriority: Int?
    /// `AWS.SNS.MOBILE.APNS.COLLAPSE_ID`; more than 64 bytes fails the APNs deliveries (BadCollapseId, A.2).
    public var apnsCollapseID: String?
    /// `AWS.SNS.MOBILE.APNS.TOPIC`: the whole `apns-topic`, used instead of bundle id + push-type suffix.
    public var apnsTopic: String?
    /// TTL attributes by the platform they apply to, in seconds.
    public var ttl: [Platform: Int]
    /// `Clarion.Namespace`: Clarion's values under one payload key (`PayloadNamespace`), when the publish asked.
    public var namespace: PayloadNamespace?
    /// `AWS.SNS.MOBILE.WEBPUSH.URGENCY` (RFC 8030 section 5.3); without it the APNs priority decides, if given.
    public var webPushUrgency: WebPushUrgency?
    /// `AWS.SNS.MOBILE.WEBPUSH.TOPIC` (RFC 8030 section 5.4), checked by the renderer.
    public var webPushTopic: String?

    public init(
        apnsPushType: APNsPushType? = nil, apnsPriority: Int? = nil, apnsCollapseID: String? = nil,
        apnsTopic: String? = nil, ttl: [Platform: Int] = [:]
    ) {
        self.apnsPushType = apnsPushType
        self.apnsPriority = apnsPriority
        self.apnsCollapseID = apnsCollapseID
        self.apnsTopic = apnsTopic
        self.ttl = ttl
    }

    public static let pushTypeName = "AWS.SNS.MOBILE.APNS.PUSH_TYPE"
    public static let priorityName = "AWS.SNS.MOBILE.APNS.PRIORITY"
    public static let collapseIDName = "AWS.SNS.MOBILE.APNS.COLLAPSE_ID"
    public static let topicName = "AWS.SNS.MOBILE.APNS.TOPIC"
    public static let webPushUrgencyName = "AWS.SNS.MOBILE.WEBPUSH.URGENCY"
    public static let webPushTopicName = "AWS.SNS.MOBILE.WEBPUSH.TOPIC"

    /// The TTL attribute that applies to `platform`, if one was given.
    public func ttl(for platform: Platform) -> Int? { ttl[platform] }

    /// Reads and validates the reserved attributes of a Publish.
    ///
    /// TTLs must be whole seconds, 0 or more (C.5: 0 means "now or never" for APNs and FCM). The push type must
    /// be one APNs knows (A.3). Every value must come as a `String` or `Number` attribute.
    public static func parse(_ attributes: [String: MessageAttributeValue]) throws(MessageValidationError) -> MobilePushAttributes {
        var result = MobilePushAttributes()
        if let value = attributes[PayloadNamespace.attributeName] {
            result.namespace = try PayloadNamespace.parse(attribute: value)
        }
        for (name, value) in attributes where name.hasPrefix("AWS.SNS.MOBILE.") {
            if let platform = ttlPlatform(forAttribute: name) {
                let text = try scalar(name, value)
                guard let seconds = Int(text.trimmingSpaces), seconds >= 0 else {
                    throw invalid(name, "must be a whole number of seconds, 0 or more")
                }
                result.ttl[platform] = seconds
                continue
            }
            switch name {
            case pushTypeName:
                let text = try scalar(name, value)
                guard let type = APNsPushType(rawValue: text.trimmingSpaces.lowercased()) else {
                    let known = APNsPushType.allCases.map(\.rawValue).joined(separator: ", ")
                    throw invalid(name, "must be one of \(known)")
                }
                result.apnsPushType = type
            case priorityName:
                let text = try scalar(name, value)
                guard let priority = Int(text.trimmingSpaces), (1...10).contains(priority) else {
                    throw invalid(name, "must be an integer from 1 to 10")
                }
                result.apnsPriority = priority
            case collapseIDName:
                result.apnsCollapseID = try scalar(name, value)
            case topicName:
                let topic = try scalar(name, value).trimmingSpaces
                guard !topic.isEmpty else { throw invalid(name, "must not be empty") }
                result.apnsTopic = topic
            case webPushUrgencyName:
                let text = try scalar(name, value).trimmingSpaces.lowercased()
                guard let urgency = WebPushUrgency(rawValue: text) else {
                    throw invalid(name, "must be one of very-low, low, normal, high")
                }
                result.webPushUrgency = urgency
            case webPushTopicName:
                let topic = try scalar(name, value).trimmingSpaces
                guard PushRenderer.isWebPushTopic(topic) else {
                    throw invalid(name, "must be 1 to 32 base64url characters (A-Z a-z 0-9 - _)")
                }
                result.webPushTopic = topic
            default:
                // Reserved attributes for platforms Clarion does not serve (MACOS, BAIDU, MPNS, WNS, ...):
                // accepted as SNS accepts them, and not delivered.
                continue
            }
        }
        return result
    }

    static func ttlPlatform(forAttribute name: String) -> Platform? {
        Platform.allCases.first { $0.ttlAttributeNames.contains(name) }
    }

    private static func scalar(_ name: String, _ value: MessageAttributeValue) throws(MessageValidationError) -> String {
        let base = value.dataType.split(separator: ".", maxSplits: 1).first.map(String.init) ?? ""
        guard (base == "String" || base == "Number"), !value.dataType.hasPrefix("String.Array"),
            let text = value.stringValue
        else {
            throw invalid(name, "must be a String or Number attribute")
        }
        return text
    }

    private static func invalid(_ name: String, _ reason: String) -> MessageValidationError {
        MessageValidationError(.invalidAttribute, "Invalid parameter: MessageAttributes Reason: \(name) \(reason)", key: name)
    }
}

extension String {
    var trimmingSpaces: String {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\t" { s.removeFirst() }
        while let l = s.last, l == " " || l == "\t" { s.removeLast() }
        return String(s)
    }
}
