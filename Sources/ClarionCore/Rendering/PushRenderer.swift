import Foundation

/// Renders a published message for one platform, once; the dispatcher then fills in each endpoint's token.
///
/// Pure: the time comes in as `now`, the publish time as `publishedAt`. Per platform:
/// - APNs: the platform key's object (or `{"aps":{"alert":<default>}}`), compact, as the body; push type from
///   the attribute, else VoIP for VoIP platforms, else SNS's inference (C.6); topic, priority, expiration and
///   collapse id as headers.
/// - FCM v1: `{"message":{...,"token":<slot>}}` from the `fcmV1Message` form, the legacy GCM form mapped to
///   v1 fields (B.8), or `{"notification":{"body":<default>}}`.
/// - ADM: the platform key's object (or `{"data":{"message":<default>}}`) with `expiresAfter` set from the TTL.
public enum PushRenderer {
    public static func render(
        _ message: SNSMessage, attributes: MobilePushAttributes, platform: Platform, settings: RenderSettings,
        publishedAt: Date, now: Date
    ) -> RenderResult {
        guard let content = message.content(for: platform) else {
            return .invalid(reason: "the message has no '\(platform.messageKey.rawValue)' or 'default' entry")
        }
        let context = Context(
            attributes: attributes, platform: platform, settings: settings, publishedAt: publishedAt, now: now)
        switch platform.provider {
        case .apns: return renderAPNs(content, context)
        case .fcm: return renderFCM(content, context)
        case .adm: return renderADM(content, context)
        case .webPush: return renderWebPush(content, context)
        case .hms: return renderHMS(content, context)
        }
    }

    struct Context {
        let attributes: MobilePushAttributes
        let platform: Platform
        let settings: RenderSettings
        let publishedAt: Date
        let now: Date

        func timeToLive(payload: Int?) -> TimeToLive {
            TimeToLive.resolve(
                attribute: attributes.ttl(for: platform), payload: payload, applicationDefault: settings.defaultTTL)
        }

        /// UNIX seconds of publish time + TTL (rounded down), for `apns-expiration`.
        func absoluteExpiry(_ ttl: TimeToLive) -> Int {
            Int(ttl.expiresAt(publishedAt: publishedAt).timeIntervalSince1970.rounded(.down))
        }
    }

    /// Length of a delivery id in a payload (`DeliveryIDCodec.encodedLength`), for size checks.
    static var deliveryIDSlotLength: Int { DeliveryIDCodec.encodedLength }

    static func tooLarge(_ provider: String, size: Int, limit: Int, detail: String = "") -> RenderResult {
        .invalid(reason: "\(provider) payload is \(size) bytes\(detail), larger than the \(limit)-byte limit")
    }
}

// MARK: - Data maps

extension PushRenderer {
    /// FCM and ADM `data` maps are string to string (B.3, D.2). Publishers (and AWS's own examples) put
    /// numbers and booleans there; SNS delivers them, so they are turned into their JSON text
    /// (`3600` -> `"3600"`, `true` -> `"true"`, an object -> its compact JSON). Null members are dropped.
    static func stringMap(_ object: JSONObject) -> JSONObject {
        var out = JSONObject()
        for member in object {
            switch member.value {
            case .string: out[member.key] = member.value
            case .null: continue
            default: out[member.key] = .string(member.value.jsonText)
            }
        }
        return out
    }

    /// The object with its `data` member (if any) made a string map, and the delivery-id slot added to it,
    /// then the namespace's JSON-encoded string (`PayloadNamespace`), which wins over a same-named key.
    static func dataNode(_ data: JSONObject, deliveryIDKey: String?, namespace: PayloadNamespace? = nil) -> JSONTemplateNode {
        var members = data.members.map { ($0.key, JSONTemplateNode.value($0.value)) }
        if let key = deliveryIDKey {
            members.removeAll { $0.0 == key }
            members.append((key, .slot(.deliveryID)))
        }
        if let namespace { PayloadNamespace.place(namespace.stringNode, at: namespace.key, in: &members) }
        return .object(members)
    }

    /// Sum of key and value bytes, the way FCM counts its 4096-byte limit ("keys + values", B.3).
    static func keysAndValuesSize(_ value: JSONValue) -> Int {
        switch value {
        case .null: 0
        case .bool(let b): b ? 4 : 5
        case .number(let n): n.literal.utf8.count
        case .string(let s): s.utf8.count
        case .array(let items): items.reduce(0) { $0 + keysAndValuesSize($1) }
        case .object(let o): o.reduce(0) { $0 + $1.key.utf8.count + keysAndValuesSize($1.value) }
        }
    }
}
