/// The legacy FCM (GCM) HTTP body that SNS still accepts in the "GCM" key, mapped onto FCM HTTP v1 fields
/// (docs/providers.md B.8, C.3). AWS never published its exact conversion (G.11); this follows Firebase's own
/// legacy -> v1 field correspondence:
///
/// | legacy | v1 |
/// |---|---|
/// | `notification.title/body/image` | `message.notification.*` |
/// | `notification.icon/color/sound/tag/click_action/*_loc_*` | `android.notification.*` |
/// | `notification.android_channel_id` | `android.notification.channel_id` |
/// | `notification.sound`, `.badge`, `.click_action` | also `apns.payload.aps.sound/badge/category` |
/// | `data` | `message.data` (values made strings) |
/// | `time_to_live` | `android.ttl` and `apns-expiration` (set by the renderer after TTL precedence) |
/// | `collapse_key` | `android.collapse_key`, `apns-collapse-id` |
/// | `priority` high/normal | `android.priority` HIGH/NORMAL, `apns-priority` 10/5 |
/// | `content_available: true` | `aps.content-available: 1`, `apns-push-type: background`, `apns-priority: 5` |
/// | `mutable_content: true` | `aps.mutable-content: 1` |
/// | `restricted_package_name` | `android.restricted_package_name` |
/// | `dry_run` | `validate_only` |
///
/// Target fields (`to`, `registration_ids`, `condition`, `notification_key`) are ignored: Clarion targets the
/// endpoint's token. Fields v1 has no place for (`delay_while_idle`, unknown notification keys) are dropped,
/// because FCM v1 refuses unknown fields.
struct LegacyGCMPayload {
    var message: JSONObject
    var validateOnly: Bool
    /// `time_to_live`, seconds.
    var ttl: Int?

    private static let sharedNotificationKeys = ["title", "body", "image"]
    private static let androidNotificationKeys = [
        "icon", "color", "sound", "tag", "click_action", "body_loc_key", "body_loc_args", "title_loc_key",
        "title_loc_args",
    ]
    private static let locArgsKeys: Set<String> = ["body_loc_args", "title_loc_args"]

    /// Maps the legacy body; the error is the reason the delivery is invalid.
    static func convert(_ legacy: JSONObject) -> Result<LegacyGCMPayload, PushRenderer.RenderFailure> {
        var notification = JSONObject()
        var android = JSONObject()
        var androidNotification = JSONObject()
        var apnsHeaders = JSONObject()
        var aps = JSONObject()
        var message = JSONObject()
        var data: JSONObject?

        if let value = legacy["notification"] {
            guard let legacyNotification = value.objectValue else {
                return .failure(.init("GCM 'notification' must be a JSON object"))
            }
            for member in legacyNotification {
                let key = member.key
                if sharedNotificationKeys.contains(key) {
                    notification[key] = .string(text(member.value))
                } else if key == "android_channel_id" {
                    androidNotification["channel_id"] = .string(text(member.value))
                } else if locArgsKeys.contains(key) {
                    guard let args = locArgs(member.value) else {
                        return .failure(.init("GCM 'notification.\(key)' must be an array of strings"))
                    }
                    androidNotification[key] = args
                } else if androidNotificationKeys.contains(key) {
                    androidNotification[key] = .string(text(member.value))
                } else if key == "badge" {
                    guard let badge = integer(member.value) else {
                        return .failure(.init("GCM 'notification.badge' must be an integer"))
                    }
                    aps["badge"] = .number(JSONNumber(badge))
                }
                if key == "sound" { aps["sound"] = .string(text(member.value)) }
                if key == "click_action" { aps["category"] = .string(text(member.value)) }
            }
        }

        if let value = legacy["data"] {
            guard let object = value.objectValue else {
                return .failure(.init("GCM 'data' must be a JSON object"))
            }
            data = object
        }

        var ttl: Int?
        if let value = legacy["time_to_live"] {
            guard let seconds = PayloadTTL.seconds(value) else {
                return .failure(.init("GCM 'time_to_live' must be a whole number of seconds, 0 or more"))
            }
            ttl = seconds
        }

        if let value = legacy["collapse_key"] {
            android["collapse_key"] = .string(text(value))
            apnsHeaders["apns-collapse-id"] = .string(text(value))
        }

        if let value = legacy["priority"] {
            switch value.stringValue?.lowercased() {
            case "high":
                android["priority"] = "HIGH"
                apnsHeaders["apns-priority"] = "10"
            case "normal":
                android["priority"] = "NORMAL"
                apnsHeaders["apns-priority"] = "5"
            default:
                return .failure(.init("GCM 'priority' must be \"high\" or \"normal\""))
            }
        }

        if legacy["content_available"]?.boolValue == true {
            aps["content-available"] = 1
            apnsHeaders["apns-push-type"] = "background"
            apnsHeaders["apns-priority"] = "5"
        }
        if legacy["mutable_content"]?.boolValue == true {
            aps["mutable-content"] = 1
        }
        if let value = legacy["restricted_package_name"] {
            android["restricted_package_name"] = .string(text(value))
        }

        if !notification.isEmpty { message["notification"] = .object(notification) }
        if let data { message["data"] = .object(data) }
        if !androidNotification.isEmpty { android["notification"] = .object(androidNotification) }
        if !android.isEmpty { message["android"] = .object(android) }
        var apns = JSONObject()
        if !apnsHeaders.isEmpty { apns["headers"] = .object(apnsHeaders) }
        if !aps.isEmpty { apns["payload"] = ["aps": .object(aps)] }
        if !apns.isEmpty { message["apns"] = .object(apns) }

        let validateOnly = legacy["dry_run"]?.boolValue ?? false
        return .success(LegacyGCMPayload(message: message, validateOnly: validateOnly, ttl: ttl))
    }

    /// A scalar as text: strings as they are, other values as their JSON.
    private static func text(_ value: JSONValue) -> String {
        value.stringValue ?? value.jsonText
    }

    private static func integer(_ value: JSONValue) -> Int? {
        if let i = value.intValue { return i }
        if let s = value.stringValue { return Int(s) }
        return nil
    }

    /// Legacy loc args came as a JSON array or as a string holding one; v1 wants an array of strings.
    private static func locArgs(_ value: JSONValue) -> JSONValue? {
        var items: [JSONValue]
        if let array = value.arrayValue {
            items = array
        } else if let s = value.stringValue, let parsed = try? JSONValue.parse(s), let array = parsed.arrayValue {
            items = array
        } else {
            return nil
        }
        items = items.map { .string(text($0)) }
        return .array(items)
    }
}

extension PushRenderer {
    /// A reason a message cannot be rendered for a platform.
    struct RenderFailure: Error {
        let reason: String
        init(_ reason: String) { self.reason = reason }
    }
}
