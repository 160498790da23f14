import Foundation

extension PushRenderer {
    /// FCM's largest `android.ttl` (B.3): 28 days. Longer TTLs are sent as this.
    public static let fcmMaximumTTL = 2_419_200

    /// Target fields of a v1 message; Clarion sets `token` itself, so publisher-given targets are removed.
    static let fcmTargetKeys = ["token", "topic", "condition", "fid"]

    static func renderFCM(_ content: SNSMessage.Content, _ context: Context) -> RenderResult {
        var message: JSONObject
        var validateOnly = false
        var payloadTTL: Int?
        var isLegacy = false

        switch content {
        case .defaultText(let text), .text(let text):
            message = JSONObject([("notification", ["body": .string(text)])])
        case .payload(let object):
            if let v1 = object["fcmV1Message"] {
                // SNS's opt-in v1 form (C.3): {"fcmV1Message": {"validate_only": bool?, "message": {...}}}.
                guard let envelope = v1.objectValue else {
                    return .invalid(reason: "GCM 'fcmV1Message' must be a JSON object")
                }
                guard let inner = envelope["message"]?.objectValue else {
                    return .invalid(reason: "GCM 'fcmV1Message.message' must be a JSON object")
                }
                if let flag = envelope["validate_only"] {
                    guard let b = flag.boolValue else {
                        return .invalid(reason: "GCM 'fcmV1Message.validate_only' must be true or false")
                    }
                    validateOnly = b
                }
                message = inner
                if let android = message["android"] {
                    guard let androidObject = android.objectValue else {
                        return .invalid(reason: "GCM 'message.android' must be a JSON object")
                    }
                    if let ttlValue = androidObject["ttl"] {
                        guard let seconds = PayloadTTL.durationSeconds(ttlValue) else {
                            return .invalid(reason: "GCM 'message.android.ttl' must be a duration such as \"3600s\"")
                        }
                        payloadTTL = seconds
                    }
                }
            } else {
                switch LegacyGCMPayload.convert(object) {
                case .failure(let failure): return .invalid(reason: failure.reason)
                case .success(let legacy):
                    message = legacy.message
                    validateOnly = legacy.validateOnly
                    payloadTTL = legacy.ttl
                    isLegacy = true
                }
            }
        }

        for key in fcmTargetKeys { message[key] = nil }

        // Data maps are string -> string in v1.
        var data = JSONObject()
        if let value = message["data"] {
            guard let object = value.objectValue else { return .invalid(reason: "GCM 'message.data' must be a JSON object") }
            data = stringMap(object)
            message["data"] = .object(data)
        }
        var android = JSONObject()
        if let value = message["android"] {
            guard let object = value.objectValue else {
                return .invalid(reason: "GCM 'message.android' must be a JSON object")
            }
            android = object
            if let androidData = android["data"] {
                guard let object = androidData.objectValue else {
                    return .invalid(reason: "GCM 'message.android.data' must be a JSON object")
                }
                android["data"] = .object(stringMap(object))
            }
        }

        // TTL: attribute > payload (android.ttl or legacy time_to_live) > application default.
        let ttl = context.timeToLive(payload: payloadTTL)
        var androidTTL: Int?
        var apnsExpiration: Int?
        switch ttl.remaining(publishedAt: context.publishedAt, now: context.now, zeroMeansNowOrNever: true) {
        case .expired:
            return .expired
        case .nowOrNever:
            androidTTL = 0
            apnsExpiration = 0
        case .seconds(let left):
            if ttl.isExplicit {
                androidTTL = min(left, fcmMaximumTTL)
                apnsExpiration = context.absoluteExpiry(ttl)
            }
        }
        if let androidTTL {
            android["ttl"] = PayloadTTL.duration(androidTTL)
        }
        if !android.isEmpty { message["android"] = .object(android) }
        if isLegacy, let apnsExpiration {
            // B.8: the legacy time_to_live also bounds iOS deliveries through FCM.
            var apns = message["apns"]?.objectValue ?? JSONObject()
            var headers = apns["headers"]?.objectValue ?? JSONObject()
            headers["apns-expiration"] = .string(String(apnsExpiration))
            apns["headers"] = .object(headers)
            message["apns"] = .object(apns)
        }

        // Size: FCM counts keys + values of the notification and data payloads (B.3).
        let deliveryIDKey = context.settings.deliveryIDKey
        var size = 0
        for part in [message["notification"], message["data"], android["notification"], android["data"]] {
            if let part { size += keysAndValuesSize(part) }
        }
        if let deliveryIDKey {
            if let existing = data[deliveryIDKey] { size -= deliveryIDKey.utf8.count + keysAndValuesSize(existing) }
            size += deliveryIDKey.utf8.count + deliveryIDSlotLength
        }
        let namespace = context.attributes.namespace
        if let namespace {
            if namespace.key == deliveryIDKey {
                size -= namespace.key.utf8.count + deliveryIDSlotLength
            } else if let existing = data[namespace.key] {
                size -= namespace.key.utf8.count + keysAndValuesSize(existing)
            }
            size += namespace.dataEntrySize
        }
        if size > PushProvider.fcm.payloadLimit {
            return tooLarge("FCM", size: size, limit: PushProvider.fcm.payloadLimit, detail: " of keys and values")
        }

        // Body: {"message":{...,"token":<slot>}} (+ "validate_only":true).
        var members: [(String, JSONTemplateNode)] = message.members.map { member in
            if member.key == "data" { return ("data", dataNode(data, deliveryIDKey: deliveryIDKey, namespace: namespace)) }
            return (member.key, .value(member.value))
        }
        if (deliveryIDKey != nil || namespace != nil) && message["data"] == nil {
            members.append(("data", dataNode(JSONObject(), deliveryIDKey: deliveryIDKey, namespace: namespace)))
        }
        members.append(("token", .slot(.token)))
        var envelope: [(String, JSONTemplateNode)] = [("message", .object(members))]
        if validateOnly { envelope.append(("validate_only", .value(true))) }

        return .push(
            RenderedPush(
                platform: context.platform, request: .fcm, body: JSONTemplateNode.object(envelope).template(),
                expiresAt: ttl.expiresAt(publishedAt: context.publishedAt)))
    }
}
