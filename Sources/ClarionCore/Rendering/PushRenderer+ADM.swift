import Foundation

extension PushRenderer {
    static func renderADM(_ content: SNSMessage.Content, _ context: Context) -> RenderResult {
        var body: JSONObject
        switch content {
        case .payload(let object): body = object
        case .defaultText(let text), .text(let text): body = JSONObject([("data", ["message": .string(text)])])
        }

        // ADM wants `data` (string -> string, may be empty) on every message (D.2).
        var data = JSONObject()
        if let value = body["data"] {
            guard let object = value.objectValue else { return .invalid(reason: "ADM 'data' must be a JSON object") }
            data = stringMap(object)
        }
        body["data"] = .object(data)

        var payloadTTL: Int?
        if let value = body["expiresAfter"] {
            guard let seconds = PayloadTTL.seconds(value) else {
                return .invalid(reason: "ADM 'expiresAfter' must be a whole number of seconds")
            }
            payloadTTL = seconds
        }

        // TTL: attribute > expiresAfter > application default. A TTL of 0 has no meaning for ADM: dropped (C.5).
        let ttl = context.timeToLive(payload: payloadTTL)
        switch ttl.remaining(publishedAt: context.publishedAt, now: context.now, zeroMeansNowOrNever: false) {
        case .expired, .nowOrNever:
            return .expired
        case .seconds(let left):
            if ttl.isExplicit { body["expiresAfter"] = .number(JSONNumber(left)) }
        }

        let deliveryIDKey = context.settings.deliveryIDKey
        let namespace = context.attributes.namespace
        let template: PayloadTemplate
        let size: Int
        if deliveryIDKey != nil || namespace != nil {
            let members: [(String, JSONTemplateNode)] = body.members.map { member in
                member.key == "data"
                    ? ("data", dataNode(data, deliveryIDKey: deliveryIDKey, namespace: namespace)) : (member.key, .value(member.value))
            }
            template = JSONTemplateNode.object(members).template()
            size = template.sizeWithDeliveryIDs
        } else {
            template = PayloadTemplate(bytes: body.encoded())
            size = template.fixedByteCount
        }
        if size > PushProvider.adm.payloadLimit {
            return tooLarge("ADM", size: size, limit: PushProvider.adm.payloadLimit)
        }

        return .push(
            RenderedPush(
                platform: context.platform, request: .adm, body: template,
                expiresAt: ttl.expiresAt(publishedAt: context.publishedAt)))
    }
}
