import Foundation

/// Web Push request headers a rendered push fixes (RFC 8030 section 5.2 to 5.4). `Authorization` (VAPID) and
/// `Content-Encoding: aes128gcm` are added by the sender, which encrypts per subscription.
public struct WebPushRequestHeaders: Sendable, Hashable {
    /// `TTL`, seconds the push service keeps the message (required by RFC 8030 section 5.2).
    public var ttl: Int
    /// `Urgency` (section 5.3); nil omits the header (push services then assume `normal`).
    public var urgency: WebPushUrgency?
    /// `Topic` (section 5.4): a newer message with the same topic replaces a pending one.
    public var topic: String?

    public init(ttl: Int, urgency: WebPushUrgency?, topic: String?) {
        self.ttl = ttl
        self.urgency = urgency
        self.topic = topic
    }

    /// The header fields in a stable order, values as sent.
    public var fields: [(name: String, value: String)] {
        var out: [(name: String, value: String)] = [("ttl", String(ttl))]
        if let urgency { out.append(("urgency", urgency.rawValue)) }
        if let topic { out.append(("topic", topic)) }
        return out
    }
}

/// RFC 8030 section 5.3.
public enum WebPushUrgency: String, Sendable, Hashable, CaseIterable {
    case veryLow = "very-low"
    case low
    case normal
    case high

    /// From an APNs-style priority (`AWS.SNS.MOBILE.APNS.PRIORITY`, the one priority a publish can already carry):
    /// 10 (send now) is `high`, 5 to 9 `normal`, below 5 (power-saving) `low`.
    public init(priority: Int) {
        switch priority {
        case 10...: self = .high
        case 5...9: self = .normal
        default: self = .low
        }
    }
}

extension PushRenderer {
    /// RFC 8030 section 5.4: a topic is at most 32 characters of the base64url alphabet.
    public static let webPushTopicLimit = 32

    /// What a service worker receives as `event.data`: the `WEBPUSH` entry verbatim (a string as it is, an object
    /// as its compact JSON), or for `default` the JSON notification `{"notification":{"body":<default>}}`. When
    /// delivery ids or a namespace are asked for, a JSON object payload gets them as top-level members; a payload
    /// that is not a JSON object is sent untouched.
    static func renderWebPush(_ content: SNSMessage.Content, _ context: Context) -> RenderResult {
        var object: JSONObject?
        var text: String?
        switch content {
        case .defaultText(let value): object = JSONObject([("notification", ["body": .string(value)])])
        case .payload(let value): object = value
        case .text(let value):
            if let parsed = try? JSONValue.parse(value), let parsedObject = parsed.objectValue {
                object = parsedObject
            } else {
                text = value
            }
        }

        // TTL: attribute > application default > SNS's 4 weeks. Web Push has a real 0: "deliver now or drop"
        // (RFC 8030 section 5.2), as APNs and FCM have.
        let ttl = context.timeToLive(payload: nil)
        let seconds: Int
        switch ttl.remaining(publishedAt: context.publishedAt, now: context.now, zeroMeansNowOrNever: true) {
        case .expired: return .expired
        case .nowOrNever: seconds = 0
        case .seconds(let left): seconds = left
        }

        let attributes = context.attributes
        if let topic = attributes.webPushTopic, !Self.isWebPushTopic(topic) {
            return .invalid(reason: "Web Push Topic must be 1 to \(webPushTopicLimit) base64url characters (RFC 8030 section 5.4)")
        }
        let urgency = attributes.webPushUrgency ?? attributes.apnsPriority.map(WebPushUrgency.init(priority:))

        let template: PayloadTemplate
        let size: Int
        if let object {
            let deliveryIDKey = context.settings.deliveryIDKey
            if deliveryIDKey != nil || attributes.namespace != nil {
                var members = object.members.map { ($0.key, JSONTemplateNode.value($0.value)) }
                if let key = deliveryIDKey { PayloadNamespace.place(.slot(.deliveryID), at: key, in: &members) }
                if let namespace = attributes.namespace { PayloadNamespace.place(namespace.objectNode, at: namespace.key, in: &members) }
                template = JSONTemplateNode.object(members).template()
                size = template.sizeWithDeliveryIDs
            } else {
                template = PayloadTemplate(bytes: object.encoded())
                size = template.fixedByteCount
            }
        } else {
            template = PayloadTemplate(bytes: Array((text ?? "").utf8))
            size = template.fixedByteCount
        }
        if size > PushProvider.webPush.payloadLimit {
            return tooLarge("Web Push", size: size, limit: PushProvider.webPush.payloadLimit,
                            detail: " (RFC 8291: 4096 octets of record less the 103 of encryption)")
        }
        return .push(RenderedPush(platform: context.platform,
                                  request: .webPush(WebPushRequestHeaders(ttl: seconds, urgency: urgency, topic: attributes.webPushTopic)),
                                  body: template, expiresAt: ttl.expiresAt(publishedAt: context.publishedAt)))
    }

    package static func isWebPushTopic(_ topic: String) -> Bool {
        !topic.isEmpty && topic.utf8.count <= webPushTopicLimit && topic.utf8.allSatisfy {
            ($0 >= 0x41 && $0 <= 0x5a) || ($0 >= 0x61 && $0 <= 0x7a) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2d || $0 == 0x5f
        }
    }
}
