/// The FCM v1 request body checks (docs/providers.md B.1, B.3): structure, field names, value types, one
/// target, string-only data, Duration TTL, priority enum, and the keys-plus-values size.
///
/// Runs on every FCM send, so it works on a `JSONTape` (byte ranges, no dictionaries) and builds
/// strings only for the target and for error messages.
package enum FCMMessageCheck {
    package struct Target: Equatable {
        /// `token`, `topic`, `condition` or `fid`.
        package var kind: String
        package var value: String
    }

    package struct Result: Equatable {
        package var target: Target
        package var validateOnly: Bool
        /// UTF-8 bytes of every key and scalar value under `message`, the target field excluded.
        package var payloadSize: Int
    }

    package enum Outcome: Equatable {
        case valid(Result)
        /// A field path (`message.android.ttl`) and Google-style description.
        case invalid(field: String, description: String)
    }

    /// A proto field name in both JSON spellings (snake_case and lowerCamelCase), as bytes.
    struct Name: Sendable {
        let text: String
        let snake: [UInt8]
        let camel: [UInt8]

        init(_ snake: String) {
            text = snake
            self.snake = Array(snake.utf8)
            camel = Array(FCMMessageCheck.camelCase(snake).utf8)
        }
    }

    static func names(_ list: String...) -> [Name] { list.map(Name.init) }

    static let topLevelFields = names("validate_only", "message")
    static let messageFields = names("name", "data", "notification", "android", "webpush", "apns", "fcm_options",
                                     "token", "topic", "condition", "fid")
    static let notificationFields = names("title", "body", "image")
    static let androidFields = names("collapse_key", "priority", "ttl", "restricted_package_name", "data", "notification",
                                     "fcm_options", "direct_boot_ok", "bandwidth_constrained_ok", "restricted_satellite_ok")
    static let apnsFields = names("headers", "payload", "fcm_options", "live_activity_token")
    static let webpushFields = names("headers", "data", "notification", "fcm_options")
    static let fcmOptionsFields = names("analytics_label")
    static let apnsFCMOptionsFields = names("analytics_label", "image")
    static let webpushFCMOptionsFields = names("link", "analytics_label")
    static let targetKinds = names("token", "topic", "condition", "fid")

    static let validateOnly = Name("validate_only")
    static let message = Name("message")
    static let data = Name("data")
    static let notification = Name("notification")
    static let android = Name("android")
    static let apns = Name("apns")
    static let webpush = Name("webpush")
    static let fcmOptions = Name("fcm_options")
    static let priority = Name("priority")
    static let ttl = Name("ttl")
    static let headers = Name("headers")
    static let payload = Name("payload")
    static let liveActivityToken = Name("live_activity_token")
    static let fromKey = Array("from".utf8)
    static let messageTypeKey = Array("message_type".utf8)
    static let googlePrefix = Array("google".utf8)
    static let gcmPrefix = Array("gcm".utf8)
    static let androidStringFields = names("collapse_key", "restricted_package_name")
    static let androidBoolFields = names("direct_boot_ok", "bandwidth_constrained_ok", "restricted_satellite_ok")

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

    package static func check(body: [UInt8]) -> Outcome {
        guard let tape = JSONTape(body), tape.kind(tape.root) == .object else {
            return .invalid(field: "", description: "Invalid JSON payload received. Expected a JSON object.")
        }
        return Checker(tape: tape).check()
    }

    /// The checks over one parsed body.
    struct Checker {
        let tape: JSONTape

        func member(_ object: Int, _ name: Name) -> Int? {
            for child in tape.children(object) where tape.keyEquals(child, name.snake) || tape.keyEquals(child, name.camel) {
                return child
            }
            return nil
        }

        func check() -> Outcome {
            let top = tape.root
            if let problem = unknownField(top, allowed: topLevelFields, path: nil) { return problem }
            var validateOnlyFlag = false
            if let value = member(top, validateOnly) {
                switch tape.kind(value) {
                case .true: validateOnlyFlag = true
                case .false: validateOnlyFlag = false
                default: return typeError("validate_only", value, "TYPE_BOOL")
                }
            }
            guard let messageIndex = member(top, message) else {
                return .invalid(field: "message", description: "Request contains an invalid argument: message is required.")
            }
            guard tape.kind(messageIndex) == .object else { return typeError("message", messageIndex, "TYPE_MESSAGE") }
            if let problem = unknownField(messageIndex, allowed: messageFields, path: "message") { return problem }

            // Exactly one target (B.3).
            var target: (kind: Name, entry: Int)?
            for kind in targetKinds {
                guard let value = member(messageIndex, kind) else { continue }
                guard tape.kind(value) == .string else { return typeError("message.\(kind.text)", value, "TYPE_STRING") }
                if target != nil {
                    return .invalid(field: "message", description: "Invalid value at 'message' (oneof), oneof field 'target' is already set. Cannot set '\(kind.text)'")
                }
                target = (kind, value)
            }
            guard let target else {
                return .invalid(field: "message", description: "Recipient of the message is not set.")
            }

            if let problem = checkStringMap(member(messageIndex, data), path: "message.data", reservedKeys: true) { return problem }
            if let value = member(messageIndex, notification),
               let problem = checkStringFields(value, path: "message.notification", allowed: notificationFields) { return problem }
            if let value = member(messageIndex, fcmOptions),
               let problem = checkStringFields(value, path: "message.fcm_options", allowed: fcmOptionsFields) { return problem }
            if let value = member(messageIndex, android), let problem = checkAndroid(value) { return problem }
            if let value = member(messageIndex, apns), let problem = checkAPNs(value) { return problem }
            if let value = member(messageIndex, webpush), let problem = checkWebpush(value) { return problem }

            var size = 0
            for child in tape.children(messageIndex) where child != target.entry {
                size += keyLength(child) + scalarBytes(child)
            }
            return .valid(Result(target: Target(kind: target.kind.text, value: tape.string(target.entry) ?? ""),
                                 validateOnly: validateOnlyFlag, payloadSize: size))
        }

        func checkAndroid(_ value: Int) -> Outcome? {
            guard tape.kind(value) == .object else { return typeError("message.android", value, "TYPE_MESSAGE") }
            if let problem = unknownField(value, allowed: androidFields, path: "message.android") { return problem }
            for name in androidStringFields {
                if let field = member(value, name), tape.kind(field) != .string { return typeError("message.android.\(name.text)", field, "TYPE_STRING") }
            }
            for name in androidBoolFields {
                if let field = member(value, name), tape.kind(field) != .true, tape.kind(field) != .false {
                    return typeError("message.android.\(name.text)", field, "TYPE_BOOL")
                }
            }
            if let field = member(value, priority) {
                // Proto enum AndroidMessagePriority; Google's own examples write it lower-case (B.3).
                guard tape.stringEqualsIgnoringASCIICase(field, "NORMAL") || tape.stringEqualsIgnoringASCIICase(field, "HIGH") else {
                    return .invalid(field: "message.android.priority",
                                    description: "Invalid value at 'message.android.priority' (type.googleapis.com/google.firebase.fcm.v1.AndroidMessagePriority), \(tape.literal(field))")
                }
            }
            if let field = member(value, ttl) {
                guard let text = tape.string(field), let seconds = durationSeconds(text) else {
                    return .invalid(field: "message.android.ttl",
                                    description: "Invalid value at 'message.android.ttl' (type.googleapis.com/google.protobuf.Duration), \(tape.literal(field))")
                }
                guard seconds <= FCMEmulator.maximumTTLSeconds else {
                    return .invalid(field: "message.android.ttl",
                                    description: "Invalid value at 'message.android.ttl': the TTL must be between 0s and \(FCMEmulator.maximumTTLSeconds)s")
                }
            }
            if let problem = checkStringMap(member(value, data), path: "message.android.data", reservedKeys: true) { return problem }
            if let field = member(value, notification), tape.kind(field) != .object {
                return typeError("message.android.notification", field, "TYPE_MESSAGE")
            }
            if let field = member(value, fcmOptions),
               let problem = checkStringFields(field, path: "message.android.fcm_options", allowed: fcmOptionsFields) { return problem }
            return nil
        }

        func checkAPNs(_ value: Int) -> Outcome? {
            guard tape.kind(value) == .object else { return typeError("message.apns", value, "TYPE_MESSAGE") }
            if let problem = unknownField(value, allowed: apnsFields, path: "message.apns") { return problem }
            if let problem = checkStringMap(member(value, headers), path: "message.apns.headers", reservedKeys: false) { return problem }
            if let field = member(value, payload), tape.kind(field) != .object { return typeError("message.apns.payload", field, "TYPE_MESSAGE") }
            if let field = member(value, liveActivityToken), tape.kind(field) != .string {
                return typeError("message.apns.live_activity_token", field, "TYPE_STRING")
            }
            if let field = member(value, fcmOptions),
               let problem = checkStringFields(field, path: "message.apns.fcm_options", allowed: apnsFCMOptionsFields) { return problem }
            return nil
        }

        func checkWebpush(_ value: Int) -> Outcome? {
            guard tape.kind(value) == .object else { return typeError("message.webpush", value, "TYPE_MESSAGE") }
            if let problem = unknownField(value, allowed: webpushFields, path: "message.webpush") { return problem }
            if let problem = checkStringMap(member(value, headers), path: "message.webpush.headers", reservedKeys: false) { return problem }
            if let problem = checkStringMap(member(value, data), path: "message.webpush.data", reservedKeys: false) { return problem }
            if let field = member(value, notification), tape.kind(field) != .object {
                return typeError("message.webpush.notification", field, "TYPE_MESSAGE")
            }
            if let field = member(value, fcmOptions),
               let problem = checkStringFields(field, path: "message.webpush.fcm_options", allowed: webpushFCMOptionsFields) { return problem }
            return nil
        }

        /// A `map<string, string>`: an object whose values are all strings (B.3: "string -> string").
        /// On failure the first offending key in sorted order is reported, so the answer is deterministic.
        func checkStringMap(_ value: Int?, path: String, reservedKeys: Bool) -> Outcome? {
            guard let value else { return nil }
            guard tape.kind(value) == .object else { return typeError(path, value, "TYPE_MESSAGE") }
            var bad: [(key: String, entry: Int)] = []
            for child in tape.children(value) {
                if tape.kind(child) != .string || (reservedKeys && isReservedDataKey(child)) { bad.append((tape.key(child), child)) }
            }
            guard let first = bad.min(by: { $0.key < $1.key }) else { return nil }
            if tape.kind(first.entry) != .string {
                return .invalid(field: "\(path)[\"\(first.key)\"].value",
                                description: "Invalid value at '\(path)[\"\(first.key)\"].value' (TYPE_STRING), \(tape.literal(first.entry))")
            }
            return .invalid(field: path, description: "Invalid data payload key: \(first.key) (reserved: from, message_type, google*, gcm*)")
        }

        /// An object of known string fields (`notification`, `fcm_options`).
        func checkStringFields(_ value: Int, path: String, allowed: [Name]) -> Outcome? {
            guard tape.kind(value) == .object else { return typeError(path, value, "TYPE_MESSAGE") }
            if let problem = unknownField(value, allowed: allowed, path: path) { return problem }
            let bad = tape.children(value).filter { tape.kind($0) != .string }.map { (key: tape.key($0), entry: $0) }
            guard let first = bad.min(by: { $0.key < $1.key }) else { return nil }
            return typeError("\(path).\(first.key)", first.entry, "TYPE_STRING")
        }

        func isReservedDataKey(_ entry: Int) -> Bool {
            tape.keyEquals(entry, FCMMessageCheck.fromKey) || tape.keyEquals(entry, FCMMessageCheck.messageTypeKey)
                || tape.keyHasPrefix(entry, FCMMessageCheck.googlePrefix) || tape.keyHasPrefix(entry, FCMMessageCheck.gcmPrefix)
        }

        func unknownField(_ object: Int, allowed: [Name], path: String?) -> Outcome? {
            var unknown: [String] = []
            for child in tape.children(object) where !allowed.contains(where: { tape.keyEquals(child, $0.snake) || tape.keyEquals(child, $0.camel) }) {
                unknown.append(tape.key(child))
            }
            guard let key = unknown.min() else { return nil }
            let at = path.map { " at '\($0)'" } ?? ""
            return .invalid(field: path ?? "", description: "Invalid JSON payload received. Unknown name \"\(key)\"\(at): Cannot find field.")
        }

        func typeError(_ path: String, _ value: Int, _ type: String) -> Outcome {
            .invalid(field: path, description: "Invalid value at '\(path)' (\(type)), \(tape.literal(value))")
        }

        func keyLength(_ entry: Int) -> Int {
            let e = tape.entries[entry]
            return e.keyEscaped ? tape.key(entry).utf8.count : Int(e.keyEnd - e.keyStart)
        }

        /// Bytes of keys and scalar values (strings as their text, numbers and booleans as JSON text).
        func scalarBytes(_ entry: Int) -> Int {
            switch tape.kind(entry) {
            case .string: return tape.stringLength(entry)
            case .number: return tape.rawLength(entry)
            case .true: return 4
            case .false: return 5
            case .null: return 0
            case .array: return tape.children(entry).reduce(0) { $0 + scalarBytes($1) }
            case .object: return tape.children(entry).reduce(0) { $0 + keyLength($1) + scalarBytes($1) }
            }
        }
    }

    /// Seconds of a protobuf Duration in JSON form: digits, up to 9 fractional digits, then `s`
    /// ("3.5s" is 3 s: FCM rounds down, B.3). Negative durations are refused (a TTL cannot be).
    static func durationSeconds(_ text: String) -> Int64? {
        let bytes = text.utf8
        guard bytes.count >= 2, bytes.last == UInt8(ascii: "s") else { return nil }
        var whole: Int64 = 0
        var wholeDigits = 0
        var fractionDigits = 0
        var inFraction = false
        for byte in bytes.dropLast() {
            if byte == UInt8(ascii: ".") {
                guard !inFraction, wholeDigits > 0 else { return nil }
                inFraction = true
            } else if (0x30...0x39).contains(byte) {
                if inFraction {
                    fractionDigits += 1
                } else {
                    wholeDigits += 1
                    guard wholeDigits <= 12 else { return nil }
                    whole = whole * 10 + Int64(byte - 0x30)
                }
            } else {
                return nil
            }
        }
        guard wholeDigits > 0, !inFraction || (1...9).contains(fractionDigits) else { return nil }
        return whole
    }
}
