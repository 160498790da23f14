import ClarionCore
import ClarionHTTP1
/// A message attribute as Publish carries it (`MessageAttributes.entry.N.Name` / `.Value.DataType` /
/// `.Value.StringValue` / `.Value.BinaryValue`).
public struct SNSMessageAttribute: Sendable, Equatable {
    /// `String`, `String.Array`, `Number` or `Binary`, optionally with a custom suffix (`Number.int`).
    public let dataType: String
    public let stringValue: String?
    /// Decoded from the base64 the client sent.
    public let binaryValue: [UInt8]?

    public init(dataType: String, stringValue: String? = nil, binaryValue: [UInt8]? = nil) {
        self.dataType = dataType
        self.stringValue = stringValue
        self.binaryValue = binaryValue
    }
}

public struct SNSTag: Sendable, Equatable {
    public let key: String
    public let value: String

    public init(key: String, value: String) {
        self.key = key
        self.value = value
    }
}

/// The parameters of one SNS Query request (or of one entry of a structure list), with the Query protocol's
/// flattening undone on demand: `Attributes.entry.N.key/value`, `X.member.N`, `X.member.N.Field`.
///
/// Every name appears at most once (the service refuses a request that repeats a name); indices N start at 1
/// and may have gaps; lists come back ordered by N.
public struct SNSParameters: Sendable {
    private let values: [String: String]
    private let prefix: String

    /// Names that are part of request authentication, not of the action.
    static func isAuthenticationParameter(_ name: String) -> Bool { name.hasPrefix("X-Amz-") }

    public init(_ form: FormParameters) throws(SNSError) {
        var values: [String: String] = [:]
        values.reserveCapacity(form.count)
        for (name, value) in form {
            // PostgreSQL text cannot hold U+0000 and C strings end at it: `tok\0x` and `tok` would become one
            // token. Refused in every parameter, so nothing is cut short silently.
            if name.utf8Contains(where: { $0 == 0 }) || value.utf8Contains(where: { $0 == 0 }) {
                throw SNSError.invalidParameter(name.utf8Contains(where: { $0 == 0 }) ? "a parameter name" : name,
                                                reason: "must not contain the character U+0000 (NUL)")
            }
            if values.updateValue(value, forKey: name) != nil {
                throw SNSError.invalidParameter(name, reason: "The parameter is specified more than once.")
            }
        }
        self.values = values
        self.prefix = ""
    }

    public init(_ pairs: [String: String]) {
        values = pairs
        prefix = ""
    }

    private init(values: [String: String], prefix: String) {
        self.values = values
        self.prefix = prefix
    }

    /// The value of a parameter (relative to this scope), or nil.
    public subscript(name: String) -> String? { values[prefix + name] }

    /// Parameter names in this scope, relative to it, sorted.
    public var names: [String] {
        values.keys.filter { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) }.sorted()
    }

    /// Total UTF-8 bytes of the values in this scope (authentication parameters excluded): the measure SNS's
    /// size limits apply to, independent of how much percent-encoding inflated the body.
    public var payloadBytes: Int {
        values.reduce(0) { sum, pair in
            guard pair.key.hasPrefix(prefix), !Self.isAuthenticationParameter(pair.key) else { return sum }
            return sum + pair.value.utf8.count
        }
    }

    /// A parameter the action cannot do without: absent gives ValidationError, as AWS's front end answers.
    public func required(_ name: String) throws(SNSError) -> String {
        guard let value = self[name] else { throw SNSError.missingParameter(name) }
        return value
    }

    /// `true` / `false` (any case); anything else is InvalidParameter.
    public func bool(_ name: String) throws(SNSError) -> Bool? {
        guard let value = self[name] else { return nil }
        switch value.lowercased() {
        case "true": return true
        case "false": return false
        default: throw SNSError.invalidParameter(name, reason: "Must be true or false.")
        }
    }

    public func int(_ name: String) throws(SNSError) -> Int? {
        guard let value = self[name] else { return nil }
        guard let number = Int(value) else { throw SNSError.invalidParameter(name, reason: "Must be an integer.") }
        return number
    }

    /// A string map, `Name.entry.N.key` / `Name.entry.N.value` (endpoint, application, topic and subscription
    /// attributes). A repeated key is InvalidParameter.
    public func stringMap(_ name: String) throws(SNSError) -> [String: String] {
        var map: [String: String] = [:]
        for (_, entry) in try indexed("\(name).entry") {
            guard let key = entry["key"] else {
                throw SNSError.invalidParameter(name, reason: "An entry has no key.")
            }
            guard let value = entry["value"] else {
                throw SNSError.invalidParameter(name, reason: "The entry for '\(key)' has no value.")
            }
            guard map.updateValue(value, forKey: key) == nil else {
                throw SNSError.invalidParameter(name, reason: "The key '\(key)' appears more than once.")
            }
        }
        return map
    }

    /// `MessageAttributes.entry.N.Name` + `.Value.DataType` + `.Value.StringValue` / `.Value.BinaryValue`,
    /// checked the way SNS checks them (ParameterValueInvalid with SNS's wording).
    public func messageAttributes(_ name: String = "MessageAttributes") throws(SNSError) -> [String: SNSMessageAttribute] {
        var attributes: [String: SNSMessageAttribute] = [:]
        let entries = try indexed("\(name).entry")
        guard entries.count <= MessageAttributeRules.maximumCount else {
            throw SNSError.parameterValueInvalid("Number of message attributes [\(entries.count)] exceeds the allowed maximum [\(MessageAttributeRules.maximumCount)].")
        }
        for (_, entry) in entries {
            guard let attributeName = entry["Name"], !attributeName.isEmpty else {
                throw SNSError.parameterValueInvalid("The message attribute name must not be empty.")
            }
            try Self.checkAttributeName(attributeName)
            guard let dataType = entry["Value.DataType"], !dataType.isEmpty else {
                throw SNSError.parameterValueInvalid("The message attribute '\(attributeName)' must contain non-empty message attribute type.")
            }
            let base = dataType.split(separator: ".", maxSplits: 1).first.map(String.init) ?? ""
            let attribute: SNSMessageAttribute
            switch base {
            case "String", "Number":
                guard let value = entry["Value.StringValue"], !value.isEmpty else {
                    throw SNSError.parameterValueInvalid("The message attribute '\(attributeName)' must contain non-empty message attribute value for message attribute type '\(base)'.")
                }
                if let problem = MessageAttributeRules.problem(dataType: dataType, value: value) {
                    throw SNSError.parameterValueInvalid("The message attribute '\(attributeName)' has an invalid value for type '\(dataType)': \(problem).")
                }
                attribute = SNSMessageAttribute(dataType: dataType, stringValue: value)
            case "Binary":
                guard let encoded = entry["Value.BinaryValue"], !encoded.isEmpty else {
                    throw SNSError.parameterValueInvalid("The message attribute '\(attributeName)' must contain non-empty message attribute value for message attribute type 'Binary'.")
                }
                guard let bytes = Base64.decode(encoded) else {
                    throw SNSError.parameterValueInvalid("The message attribute '\(attributeName)' has an invalid Binary value (not base64).")
                }
                attribute = SNSMessageAttribute(dataType: dataType, binaryValue: bytes)
            default:
                throw SNSError.parameterValueInvalid("The message attribute '\(attributeName)' has an invalid message attribute type, the set of supported type prefixes is Binary, Number, and String.")
            }
            guard attributes.updateValue(attribute, forKey: attributeName) == nil else {
                throw SNSError.parameterValueInvalid("Message attribute name '\(attributeName)' is not unique.")
            }
        }
        return attributes
    }

    /// `Tags.member.N.Key` / `.Value`, in order.
    public func tags(_ name: String = "Tags") throws(SNSError) -> [SNSTag] {
        var tags: [SNSTag] = []
        for (_, member) in try indexed("\(name).member") {
            guard let key = member["Key"] else { throw SNSError.missingParameter("\(name).member.Key") }
            guard let value = member["Value"] else { throw SNSError.missingParameter("\(name).member.Value") }
            tags.append(SNSTag(key: key, value: value))
        }
        return tags
    }

    /// `Name.member.N` strings, in order (e.g. `TagKeys.member.N`, `AttributeNames.member.N`).
    public func stringList(_ name: String) throws(SNSError) -> [String] {
        let scope = "\(prefix)\(name).member."
        var items: [(Int, String)] = []
        for (key, value) in values where key.hasPrefix(scope) {
            let index = key.dropFirst(scope.count)
            guard let n = Self.index(index) else {
                throw SNSError.invalidParameter(name, reason: "'\(key)' is not a valid list member.")
            }
            items.append((n, value))
        }
        return items.sorted { $0.0 < $1.0 }.map(\.1)
    }

    /// `Name.member.N.*` as one scoped parameter set per member, in order (e.g. PublishBatchRequestEntries).
    public func structList(_ name: String) throws(SNSError) -> [SNSParameters] {
        try indexed("\(name).member").map(\.1)
    }

    /// Groups `<scope>.N.<rest>` by N, each group scoped to `<scope>.N.`.
    private func indexed(_ scope: String) throws(SNSError) -> [(Int, SNSParameters)] {
        let full = "\(prefix)\(scope)."
        var seen: Set<Int> = []
        for key in values.keys where key.hasPrefix(full) {
            let rest = key.dropFirst(full.count)
            guard let dot = rest.firstIndex(of: "."), let n = Self.index(rest[..<dot]) else {
                throw SNSError.invalidParameter(String(scope.split(separator: ".").first ?? ""),
                                                reason: "'\(key)' is not a valid entry.")
            }
            seen.insert(n)
        }
        return seen.sorted().map { ($0, SNSParameters(values: values, prefix: "\(full)\($0).")) }
    }

    /// A 1-based decimal index without sign or leading zeros.
    private static func index(_ text: Substring) -> Int? {
        guard let first = text.first, first != "0", text.utf8.count <= 9,
              text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
        return Int(text)
    }

    /// SNS's name rules: ≤ 256 characters of `[A-Za-z0-9_.-]`, no leading, trailing or doubled dot.
    static func checkAttributeName(_ name: String) throws(SNSError) {
        let allowed = name.utf8.allSatisfy { b in
            AWSPercentEncoding.isUnreserved(b) && b != UInt8(ascii: "~")
        }
        guard name.utf8.count <= 256, allowed, !name.hasPrefix("."), !name.hasSuffix("."), !name.contains("..") else {
            throw SNSError.parameterValueInvalid("The message attribute name '\(name)' is invalid: use up to 256 characters of A-Z, a-z, 0-9, '_', '-', '.', without a leading, trailing or repeated '.'.")
        }
        guard !MessageAttributeRules.isReservedPrefix(name) else {
            throw SNSError.parameterValueInvalid("The message attribute name '\(name)' is invalid: names beginning with 'AWS.' or 'Amazon.' are reserved.")
        }
    }
}

/// Standard base64 with padding (what botocore sends for blobs).
enum Base64 {
    static func decode(_ text: String) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count * 3 / 4)
        var buffer: UInt32 = 0, bits = 0, padding = 0, count = 0
        for c in text.utf8 {
            let value: UInt32
            switch c {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = UInt32(c - UInt8(ascii: "A"))
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = UInt32(c - UInt8(ascii: "a") + 26)
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = UInt32(c - UInt8(ascii: "0") + 52)
            case UInt8(ascii: "+"): value = 62
            case UInt8(ascii: "/"): value = 63
            case UInt8(ascii: "="):
                padding += 1
                count += 1
                continue
            default: return nil
            }
            guard padding == 0 else { return nil }
            count += 1
            buffer = buffer << 6 | value
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: buffer >> UInt32(bits)))
            }
        }
        guard count % 4 == 0, padding <= 2 else { return nil }
        return out
    }
}
