import ClarionCrypto

/// The FCM v1 request body checks (providers.md B.1, B.3): structure, field names, value types, one
/// target, string-only data, Duration TTL, priority enum, and the keys-plus-values size.
///
/// One parse of the body into `JWTValue` (ClarionCrypto's strict JSON parser) and one walk over it.
enum FCMMessageCheck {
    struct Target: Equatable {
        /// `token`, `topic`, `condition` or `fid`.
        var kind: String
        var value: String
    }

    struct Result: Equatable {
        var target: Target
        var validateOnly: Bool
        /// UTF-8 bytes of every key and scalar value under `message`, the target field excluded.
        var payloadSize: Int
    }

    enum Outcome: Equatable {
        case valid(Result)
        /// A field path (`message.android.ttl`) and Google-style description.
        case invalid(field: String, description: String)
    }

    /// Field names per object, in both the proto (snake_case) and JSON (lowerCamelCase) spellings.
    static let topLevelFields = names("validate_only", "message")
    static let messageFields = names("name", "data", "notification", "android", "webpush", "apns", "fcm_options",
                                     "token", "topic", "condition", "fid")
    static let notificationFields = names("title", "body", "image")
    static let androidFields = names("collapse_key", "priority", "ttl", "restricted_package_name", "data", "notification",
                                     "fcm_options", "direct_boot_ok", "bandwidth_constrained_ok", "restricted_satellite_ok")
    static let apnsFields = names("headers", "payload", "fcm_options", "live_activity_token")
    static let webpushFields = names("headers", "data", "notification", "fcm_options")
    static let fcmOptionsFields = names("analytics_label")
    static let androidFCMOptionsFields = names("analytics_label")
    static let apnsFCMOptionsFields = names("analytics_label", "image")
    static let webpushFCMOptionsFields = names("link", "analytics_label")
    static let targetKinds = ["token", "topic", "condition", "fid"]

    static func names(_ snake: String...) -> Set<String> {
        var all = Set(snake)
        for name in snake { all.insert(camelCase(name)) }
        return all
    }

    static func camelCase(_ snake: String) -> String {
        var out = ""
        var upper = false
        for character in snake {
            if character == "_" {
                upper = true
            } else {
                out.append(upper ? Character(character.uppercased()) : character)
                upper = false
            }
        }
        return out
    }

    /// The member named `snake` or its camelCase spelling.
    static func member(_ object: [String: JWTValue], _ snake: String) -> JWTValue? {
        object[snake] ?? object[camelCase(snake)]
    }

    static func check(body: [UInt8]) -> Outcome {
        guard let parsed = JWTValue(jsonBytes: body), case .object(let top) = parsed else {
            return .invalid(field: "", description: "Invalid JSON payload received. Expected a JSON object.")
        }
        if let problem = unknownField(top, allowed: topLevelFields, path: nil) { return problem }
        var validateOnly = false
        if let value = member(top, "validate_only") {
            guard case .bool(let flag) = value else { return typeError("validate_only", value, "TYPE_BOOL") }
            validateOnly = flag
        }
        guard let messageValue = top["message"] else {
            return .invalid(field: "message", description: "Request contains an invalid argument: message is required.")
        }
        guard case .object(let message) = messageValue else { return typeError("message", messageValue, "TYPE_MESSAGE") }
        if let problem = unknownField(message, allowed: messageFields, path: "message") { return problem }

        // Exactly one target (B.3).
        var target: Target?
        for kind in targetKinds {
            guard let value = message[kind] else { continue }
            guard case .string(let text) = value else { return typeError("message.\(kind)", value, "TYPE_STRING") }
            if target != nil {
                return .invalid(field: "message", description: "Invalid value at 'message' (oneof), oneof field 'target' is already set. Cannot set '\(kind)'")
            }
            target = Target(kind: kind, value: text)
        }
        guard let target else {
            return .invalid(field: "message", description: "Recipient of the message is not set.")
        }

        if let problem = checkStringMap(member(message, "data"), path: "message.data", reservedKeys: true) { return problem }
        if let value = message["notification"] {
            if let problem = checkStringFields(value, path: "message.notification", allowed: notificationFields) { return problem }
        }
        if let value = member(message, "fcm_options") {
            if let problem = checkStringFields(value, path: "message.fcm_options", allowed: fcmOptionsFields) { return problem }
        }
        if let value = message["android"], let problem = checkAndroid(value) { return problem }
        if let value = message["apns"], let problem = checkAPNs(value) { return problem }
        if let value = message["webpush"], let problem = checkWebpush(value) { return problem }

        var size = 0
        for (key, value) in message where key != target.kind {
            size += key.utf8.count + scalarBytes(value)
        }
        return .valid(Result(target: target, validateOnly: validateOnly, payloadSize: size))
    }

    // MARK: - Parts

    static func checkAndroid(_ value: JWTValue) -> Outcome? {
        guard case .object(let android) = value else { return typeError("message.android", value, "TYPE_MESSAGE") }
        if let problem = unknownField(android, allowed: androidFields, path: "message.android") { return problem }
        for name in ["collapse_key", "restricted_package_name"] {
            if let field = member(android, name), field.stringValue == nil { return typeError("message.android.\(name)", field, "TYPE_STRING") }
        }
        for name in ["direct_boot_ok", "bandwidth_constrained_ok", "restricted_satellite_ok"] {
            if let field = member(android, name), field.boolValue == nil { return typeError("message.android.\(name)", field, "TYPE_BOOL") }
        }
        if let priority = android["priority"] {
            // Proto enum AndroidMessagePriority; Google's own examples write it lower-case (B.3).
            guard let text = priority.stringValue, ["NORMAL", "HIGH"].contains(text.uppercased()) else {
                return .invalid(field: "message.android.priority",
                                description: "Invalid value at 'message.android.priority' (type.googleapis.com/google.firebase.fcm.v1.AndroidMessagePriority), \(literal(priority))")
            }
        }
        if let ttl = android["ttl"] {
            guard let text = ttl.stringValue, let seconds = durationSeconds(text) else {
                return .invalid(field: "message.android.ttl",
                                description: "Invalid value at 'message.android.ttl' (type.googleapis.com/google.protobuf.Duration), \(literal(ttl))")
            }
            guard seconds <= FCMEmulator.maximumTTLSeconds else {
                return .invalid(field: "message.android.ttl",
                                description: "Invalid value at 'message.android.ttl': the TTL must be between 0s and \(FCMEmulator.maximumTTLSeconds)s")
            }
        }
        if let problem = checkStringMap(android["data"], path: "message.android.data", reservedKeys: true) { return problem }
        if let notification = android["notification"], notification.objectValue == nil {
            return typeError("message.android.notification", notification, "TYPE_MESSAGE")
        }
        if let options = member(android, "fcm_options") {
            if let problem = checkStringFields(options, path: "message.android.fcm_options", allowed: androidFCMOptionsFields) { return problem }
        }
        return nil
    }

    static func checkAPNs(_ value: JWTValue) -> Outcome? {
        guard case .object(let apns) = value else { return typeError("message.apns", value, "TYPE_MESSAGE") }
        if let problem = unknownField(apns, allowed: apnsFields, path: "message.apns") { return problem }
        if let problem = checkStringMap(apns["headers"], path: "message.apns.headers", reservedKeys: false) { return problem }
        if let payload = apns["payload"], payload.objectValue == nil { return typeError("message.apns.payload", payload, "TYPE_MESSAGE") }
        if let token = member(apns, "live_activity_token"), token.stringValue == nil {
            return typeError("message.apns.live_activity_token", token, "TYPE_STRING")
        }
        if let options = member(apns, "fcm_options") {
            if let problem = checkStringFields(options, path: "message.apns.fcm_options", allowed: apnsFCMOptionsFields) { return problem }
        }
        return nil
    }

    static func checkWebpush(_ value: JWTValue) -> Outcome? {
        guard case .object(let webpush) = value else { return typeError("message.webpush", value, "TYPE_MESSAGE") }
        if let problem = unknownField(webpush, allowed: webpushFields, path: "message.webpush") { return problem }
        if let problem = checkStringMap(webpush["headers"], path: "message.webpush.headers", reservedKeys: false) { return problem }
        if let problem = checkStringMap(webpush["data"], path: "message.webpush.data", reservedKeys: false) { return problem }
        if let notification = webpush["notification"], notification.objectValue == nil {
            return typeError("message.webpush.notification", notification, "TYPE_MESSAGE")
        }
        if let options = member(webpush, "fcm_options") {
            if let problem = checkStringFields(options, path: "message.webpush.fcm_options", allowed: webpushFCMOptionsFields) { return problem }
        }
        return nil
    }

    /// A `map<string, string>`: an object whose values are all strings (B.3: "string -> string").
    static func checkStringMap(_ value: JWTValue?, path: String, reservedKeys: Bool) -> Outcome? {
        guard let value else { return nil }
        guard case .object(let map) = value else { return typeError(path, value, "TYPE_MESSAGE") }
        for key in map.keys.sorted() {
            let entry = map[key]!
            guard entry.stringValue != nil else {
                return .invalid(field: "\(path)[\"\(key)\"].value",
                                description: "Invalid value at '\(path)[\"\(key)\"].value' (TYPE_STRING), \(literal(entry))")
            }
            if reservedKeys, isReservedDataKey(key) {
                return .invalid(field: path, description: "Invalid data payload key: \(key) (reserved: from, message_type, google*, gcm*)")
            }
        }
        return nil
    }

    /// An object of known string fields (`notification`, `fcm_options`).
    static func checkStringFields(_ value: JWTValue, path: String, allowed: Set<String>) -> Outcome? {
        guard case .object(let object) = value else { return typeError(path, value, "TYPE_MESSAGE") }
        if let problem = unknownField(object, allowed: allowed, path: path) { return problem }
        for key in object.keys.sorted() where object[key]!.stringValue == nil {
            return typeError("\(path).\(key)", object[key]!, "TYPE_STRING")
        }
        return nil
    }

    static func isReservedDataKey(_ key: String) -> Bool {
        key == "from" || key == "message_type" || key.hasPrefix("google") || key.hasPrefix("gcm")
    }

    static func unknownField(_ object: [String: JWTValue], allowed: Set<String>, path: String?) -> Outcome? {
        for key in object.keys.sorted() where !allowed.contains(key) {
            let at = path.map { " at '\($0)'" } ?? ""
            return .invalid(field: path ?? "", description: "Invalid JSON payload received. Unknown name \"\(key)\"\(at): Cannot find field.")
        }
        return nil
    }

    static func typeError(_ path: String, _ value: JWTValue, _ type: String) -> Outcome {
        .invalid(field: path, description: "Invalid value at '\(path)' (\(type)), \(literal(value))")
    }

    static func literal(_ value: JWTValue) -> String {
        value.jsonString
    }

    /// Seconds of a protobuf Duration in JSON form: digits, up to 9 fractional digits, then `s`
    /// ("3.5s" is 3 s: FCM rounds down, B.3). Negative durations are refused (a TTL cannot be).
    static func durationSeconds(_ text: String) -> Int64? {
        let bytes = Array(text.utf8)
        guard bytes.count >= 2, bytes.last == UInt8(ascii: "s") else { return nil }
        let number = bytes.dropLast()
        let parts = number.split(separator: UInt8(ascii: "."), maxSplits: 1, omittingEmptySubsequences: false)
        let whole = parts[0]
        guard !whole.isEmpty, whole.count <= 12, whole.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        if parts.count == 2 {
            let fraction = parts[1]
            guard !fraction.isEmpty, fraction.count <= 9, fraction.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        }
        return Int64(String(decoding: whole, as: UTF8.self))
    }

    /// Bytes of keys and scalar values (strings as their text, numbers and booleans as JSON text).
    static func scalarBytes(_ value: JWTValue) -> Int {
        switch value {
        case .string(let text): return text.utf8.count
        case .number: return value.jsonBytes.count
        case .bool(let flag): return flag ? 4 : 5
        case .null: return 0
        case .array(let elements): return elements.reduce(0) { $0 + scalarBytes($1) }
        case .object(let members): return members.reduce(0) { $0 + $1.key.utf8.count + scalarBytes($1.value) }
        }
    }
}
