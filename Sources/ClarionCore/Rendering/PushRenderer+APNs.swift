import Foundation

extension PushRenderer {
    /// APNs collapse ids longer than this are refused with BadCollapseId (A.2).
    public static let apnsCollapseIDLimit = 64

    static func renderAPNs(_ content: SNSMessage.Content, _ context: Context) -> RenderResult {
        let payload: JSONObject
        switch content {
        case .payload(let object): payload = object
        case .defaultText(let text), .text(let text): payload = JSONObject([("aps", ["alert": .string(text)])])
        }
        let attributes = context.attributes

        let pushType = attributes.apnsPushType ?? context.platform.fixedAPNsPushType
            ?? APNsPushType.inferred(fromPayload: payload)

        let priority: APNsPriority
        if let raw = attributes.apnsPriority {
            guard let p = APNsPriority(rawValue: raw) else {
                return .invalid(reason: "APNs priority \(raw) is not one APNs accepts (10, 5 or 1)")
            }
            priority = p
        } else {
            priority = pushType.defaultPriority
        }

        if let collapseID = attributes.apnsCollapseID, collapseID.utf8.count > apnsCollapseIDLimit {
            return .invalid(
                reason: "APNs collapse id is \(collapseID.utf8.count) bytes, longer than \(apnsCollapseIDLimit)")
        }

        let topic = attributes.apnsTopic ?? context.settings.apnsBundleID.map { pushType.topic(bundleID: $0) }

        // APNs has no TTL in the payload: attribute > application default > SNS default.
        let ttl = context.timeToLive(payload: nil)
        let expiration: Int?
        switch ttl.remaining(publishedAt: context.publishedAt, now: context.now, zeroMeansNowOrNever: true) {
        case .expired: return .expired
        case .nowOrNever: expiration = 0
        case .seconds: expiration = ttl.isExplicit ? context.absoluteExpiry(ttl) : nil
        }

        let body: PayloadTemplate
        let size: Int
        let namespace = attributes.namespace
        if context.settings.deliveryIDKey != nil || namespace != nil {
            var members = payload.members.map { ($0.key, JSONTemplateNode.value($0.value)) }
            if let key = context.settings.deliveryIDKey { PayloadNamespace.place(.slot(.deliveryID), at: key, in: &members) }
            if let namespace { PayloadNamespace.place(namespace.objectNode, at: namespace.key, in: &members) }
            body = JSONTemplateNode.object(members).template()
            size = body.sizeWithDeliveryIDs
        } else {
            body = PayloadTemplate(bytes: payload.encoded())
            size = body.fixedByteCount
        }
        if size > pushType.payloadLimit {
            return tooLarge("APNs", size: size, limit: pushType.payloadLimit, detail: " for a \(pushType.rawValue) push")
        }

        let headers = APNsRequestHeaders(
            pushType: pushType, topic: topic, priority: priority, expiration: expiration,
            collapseID: attributes.apnsCollapseID)
        return .push(
            RenderedPush(
                platform: context.platform, request: .apns(headers), body: body,
                expiresAt: ttl.expiresAt(publishedAt: context.publishedAt)))
    }
}
