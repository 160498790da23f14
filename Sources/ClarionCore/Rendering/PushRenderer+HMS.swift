import Foundation

extension PushRenderer {
    /// Push Kit's longest `android.ttl` (docs/providers.md E.1: default 86,400 s, at most 15 days). Longer TTLs are
    /// sent as this.
    public static let hmsMaximumTTL = 1_296_000
    /// `android.collapse_key` range (E.1): -1 (every message is kept) or 0...100 (a newer message of the same key
    /// replaces an undelivered older one).
    public static let hmsCollapseKeys = -1...100

    /// Target fields of a v1 message; Clarion sets `token` itself.
    static let hmsTargetKeys = ["token", "topic", "condition"]

    /// Huawei Push Kit, HMS Core (Android) v1 (docs/providers.md E.1):
    /// `{"message":{"notification"?, "data"? (a string), "android":{...}, "token":["<slot>"]}}`.
    ///
    /// - The `HMS` entry's object is the v1 `message` (without a target); text, or `default`, becomes
    ///   `{"notification":{"body":<text>},"android":{"notification":{"click_action":{"type":3}}}}` (type 3 opens the
    ///   app: an Android notification needs a `click_action`, E.1). A publisher's `android.notification` without a
    ///   `click_action` gets the same one.
    /// - `data` is a string (E.1); an object given there is sent as its JSON text. The delivery id and the
    ///   namespace go inside that text (`JSONTemplateNode.embedded`), so the app reads them from the same JSON.
    /// - TTL: attribute > `android.ttl` > application default, sent as `android.ttl` `"<n>s"`, at most 15 days; a
    ///   TTL of 0 is sent as `"1s"` (Push Kit documents no "now or never", 1 s is the nearest it can say).
    /// - Priority: `android.urgency` as given, else `HIGH` for `AWS.SNS.MOBILE.APNS.PRIORITY` 10 and `NORMAL` for
    ///   lower priorities.
    /// - `android.collapse_key` must be an integer in -1...100 (E.1).
    /// - Size: the body without its tokens is at most 4096 bytes (E.1), delivery ids counted.
    static func renderHMS(_ content: SNSMessage.Content, _ context: Context) -> RenderResult {
        var message: JSONObject
        switch content {
        case .payload(let object):
            message = object
        case .defaultText(let text), .text(let text):
            message = JSONObject([("notification", ["body": .string(text)])])
        }
        for key in hmsTargetKeys { message[key] = nil }

        var android = JSONObject()
        if let value = message["android"] {
            guard let object = value.objectValue else { return .invalid(reason: "HMS 'message.android' must be a JSON object") }
            android = object
        }
        var payloadTTL: Int?
        if let value = android["ttl"] {
            guard let seconds = PayloadTTL.durationSeconds(value) else {
                return .invalid(reason: "HMS 'android.ttl' must be a duration such as \"86400s\"")
            }
            payloadTTL = seconds
        }
        if let value = android["collapse_key"] {
            guard let key = value.numberValue?.intValue, hmsCollapseKeys.contains(key) else {
                return .invalid(reason: "HMS 'android.collapse_key' must be an integer from -1 to 100")
            }
        }
        if let value = android["urgency"] {
            guard let text = value.stringValue, text == "HIGH" || text == "NORMAL" else {
                return .invalid(reason: "HMS 'android.urgency' must be \"HIGH\" or \"NORMAL\"")
            }
        } else if let priority = context.attributes.apnsPriority {
            android["urgency"] = .string(priority >= 10 ? "HIGH" : "NORMAL")
        }
        if let value = android["notification"] {
            guard var notification = value.objectValue else {
                return .invalid(reason: "HMS 'android.notification' must be a JSON object")
            }
            if notification["click_action"] == nil { notification["click_action"] = ["type": 3] }
            android["notification"] = .object(notification)
        } else if message["notification"] != nil {
            android["notification"] = ["click_action": ["type": 3]]
        }

        // TTL: attribute > android.ttl > application default.
        let ttl = context.timeToLive(payload: payloadTTL)
        switch ttl.remaining(publishedAt: context.publishedAt, now: context.now, zeroMeansNowOrNever: true) {
        case .expired:
            return .expired
        case .nowOrNever:
            android["ttl"] = PayloadTTL.duration(1)
        case .seconds(let left):
            if ttl.isExplicit { android["ttl"] = PayloadTTL.duration(min(left, hmsMaximumTTL)) }
        }
        if !android.isEmpty { message["android"] = .object(android) }

        // data: a string holding JSON text. Delivery ids and the namespace need it to be a JSON object.
        let deliveryIDKey = context.settings.deliveryIDKey
        let namespace = context.attributes.namespace
        var dataObject: JSONObject?
        switch message["data"] {
        case nil:
            dataObject = (deliveryIDKey != nil || namespace != nil) ? JSONObject() : nil
        case .object(let object)?:
            dataObject = object
        case .string(let text)?:
            if deliveryIDKey != nil || namespace != nil {
                guard let object = (try? JSONValue.parse(text))?.objectValue else {
                    return .invalid(reason: "HMS 'data' must hold a JSON object when payloads carry delivery ids or a namespace")
                }
                dataObject = object
            }
        default:
            return .invalid(reason: "HMS 'data' must be a string (JSON text) or a JSON object")
        }

        var members: [(String, JSONTemplateNode)] = message.members.compactMap { member in
            guard member.key == "data" else { return (member.key, .value(member.value)) }
            return dataObject == nil ? (member.key, .value(member.value)) : nil
        }
        if let dataObject {
            var dataMembers = dataObject.members.map { ($0.key, JSONTemplateNode.value($0.value)) }
            if let key = deliveryIDKey {
                dataMembers.removeAll { $0.0 == key }
                dataMembers.append((key, .slot(.deliveryID)))
            }
            if let namespace { PayloadNamespace.place(namespace.objectNode, at: namespace.key, in: &dataMembers) }
            members.append(("data", .embedded(.object(dataMembers))))
        }
        members.append(("token", .tokenList))
        let template = JSONTemplateNode.object([("message", .object(members))]).template()
        let size = template.sizeWithDeliveryIDs
        if size > PushProvider.hms.payloadLimit {
            return tooLarge("HMS", size: size, limit: PushProvider.hms.payloadLimit, detail: " without its tokens")
        }
        return .push(
            RenderedPush(
                platform: context.platform, request: .hms, body: template,
                expiresAt: ttl.expiresAt(publishedAt: context.publishedAt)))
    }
}
