import ClarionCore
import ClarionHTTP1
import ClarionStore
import Foundation

/// A JSON object of a request body, read field by field so every refusal names its field as a path
/// (`targets[0].user.app`).
///
/// Why not `Decodable`: the native API must tell an absent field from an explicit `null` (PATCH clears with
/// null), refuse unknown fields by name, and keep message maps in document order for SNS's rules; ClarionCore's
/// `JSONValue` does all three.
package struct NativeFields {
    package let object: JSONObject
    /// The path of this object in the body; "" for the body itself.
    let path: String

    init(_ object: JSONObject, path: String = "") {
        self.object = object
        self.path = path
    }

    /// The body of a request as a JSON object.
    package static func body(_ request: HTTPRequest) throws(JSONAPIError) -> NativeFields {
        if let contentType = request.headers["Content-Type"] {
            let media = String(Substring(contentType).cut(at: UInt8(ascii: ";"))[0].trimmingSpaces()).asciiLowercased()
            guard media == "application/json" || media.hasSuffix("+json") else {
                throw JSONAPIError.unsupportedMediaType(contentType)
            }
        }
        guard !request.body.isEmpty else { throw JSONAPIError.invalidJSON("The request body is empty; expected a JSON object.") }
        let value: JSONValue
        do throws(JSONParseError) {
            value = try JSONValue.parse(bytes: request.body, duplicateKeys: .reject)
        } catch {
            throw JSONAPIError.invalidJSON(error)
        }
        guard let object = value.objectValue else { throw JSONAPIError.invalidJSON("The request body must be a JSON object.") }
        return NativeFields(object)
    }

    func name(_ key: String) -> String { path.isEmpty ? key : path + "." + key }

    /// Refuses members this object does not define.
    package func allowOnly(_ keys: Set<String>) throws(JSONAPIError) {
        for member in object where !keys.contains(member.key) {
            throw JSONAPIError.invalidField(name(member.key), "Unknown field '\(name(member.key))'.")
        }
    }

    /// nil when absent; a present `null` is refused.
    private func present(_ key: String) throws(JSONAPIError) -> JSONValue? {
        guard let value = object[key] else { return nil }
        if value == .null {
            throw JSONAPIError(status: 400, code: "missing_field", message: "The field '\(name(key))' must not be null.",
                               field: name(key))
        }
        return value
    }

    package func string(_ key: String, maxBytes: Int? = nil) throws(JSONAPIError) -> String? {
        guard let value = try present(key) else { return nil }
        guard let text = value.stringValue else { throw typeError(key, "a string") }
        try check(key, text, maxBytes: maxBytes)
        return text
    }

    func requiredString(_ key: String, maxBytes: Int? = nil) throws(JSONAPIError) -> String {
        guard let text = try string(key, maxBytes: maxBytes) else { throw JSONAPIError.missingField(name(key)) }
        return text
    }

    /// Absent: nil. `null`: `.some(nil)` (clear). A string: `.some(text)`.
    package func nullableString(_ key: String, maxBytes: Int? = nil) throws(JSONAPIError) -> String?? {
        guard let value = object[key] else { return nil }
        if value == .null { return .some(nil) }
        guard let text = value.stringValue else { throw typeError(key, "a string or null") }
        try check(key, text, maxBytes: maxBytes)
        return .some(text)
    }

    package func bool(_ key: String) throws(JSONAPIError) -> Bool? {
        guard let value = try present(key) else { return nil }
        guard let flag = value.boolValue else { throw typeError(key, "a boolean") }
        return flag
    }

    func int(_ key: String, in range: ClosedRange<Int>) throws(JSONAPIError) -> Int? {
        guard let value = try present(key) else { return nil }
        guard let number = value.intValue else { throw typeError(key, "an integer") }
        guard range.contains(number) else {
            throw JSONAPIError.invalidField(name(key), "The field '\(name(key))' must be from \(range.lowerBound) to \(range.upperBound).")
        }
        return number
    }

    func object(_ key: String) throws(JSONAPIError) -> NativeFields? {
        guard let value = try present(key) else { return nil }
        guard let nested = value.objectValue else { throw typeError(key, "an object") }
        return NativeFields(nested, path: name(key))
    }

    func requiredObject(_ key: String) throws(JSONAPIError) -> NativeFields {
        guard let nested = try object(key) else { throw JSONAPIError.missingField(name(key)) }
        return nested
    }

    /// An object whose values are all strings (attribute maps).
    package func stringMap(_ key: String) throws(JSONAPIError) -> [String: String]? {
        guard let nested = try object(key) else { return nil }
        var out: [String: String] = [:]
        for member in nested.object {
            guard let text = member.value.stringValue else { throw nested.typeError(member.key, "a string") }
            try Self.checkStorable(nested.name(member.key), member.key)
            try Self.checkStorable(nested.name(member.key), text)
            out[member.key] = text
        }
        return out
    }

    func typeError(_ key: String, _ kind: String) -> JSONAPIError {
        JSONAPIError.invalidField(name(key), "The field '\(name(key))' must be \(kind).")
    }

    /// PostgreSQL text (and jsonb) cannot hold U+0000: refuse it here rather than fail in the store.
    static func checkStorable(_ field: String, _ text: String) throws(JSONAPIError) {
        if text.utf8Contains(where: { $0 == 0 }) {
            throw JSONAPIError.invalidField(field, "The field '\(field)' must not contain the character U+0000.")
        }
    }

    /// The same for JSON text bound for a jsonb column, where the escape `\u0000` is refused too.
    static func checkStorableJSON(_ field: String, _ json: String) throws(JSONAPIError) {
        if containsEscapedNUL(json) {
            throw JSONAPIError.invalidField(field, "The field '\(field)' must not contain the character U+0000.")
        }
    }

    /// Whether `json` holds the six bytes `\u0000` (a byte scan: Foundation's `contains` bridged through NSString).
    static func containsEscapedNUL(_ json: String) -> Bool {
        var text = json
        return text.withUTF8 { bytes in
            guard bytes.count >= 6 else { return false }
            for i in 0...(bytes.count - 6) where bytes[i] == UInt8(ascii: "\\") && bytes[i + 1] == UInt8(ascii: "u")
                && bytes[i + 2] == UInt8(ascii: "0") && bytes[i + 3] == UInt8(ascii: "0")
                && bytes[i + 4] == UInt8(ascii: "0") && bytes[i + 5] == UInt8(ascii: "0") {
                return true
            }
            return false
        }
    }

    private func check(_ key: String, _ text: String, maxBytes: Int?) throws(JSONAPIError) {
        try Self.checkStorable(name(key), text)
        if let maxBytes, text.utf8.count > maxBytes {
            throw JSONAPIError.invalidField(name(key), "The field '\(name(key))' must be at most \(maxBytes) bytes of UTF-8.")
        }
    }
}

/// Responses and shared formatting of the native API.
enum NativeResponse {
    static func json(_ value: JSONValue, status: Int = 200) -> HTTPResponse {
        .json(value.encoded(), status: status)
    }

    static let noContent = HTTPResponse(status: 204)

    /// RFC 3339 / ISO 8601 in UTC, whole seconds.
    static func time(_ date: Date) -> JSONValue { .string(date.formatted(.iso8601)) }

    static func time(_ date: Date?) -> JSONValue { date.map(time) ?? .null }

    static func text(_ text: String?) -> JSONValue { text.map(JSONValue.string) ?? .null }

    static func map(_ map: [String: String]) -> JSONValue {
        .object(JSONObject(map.sorted { $0.key < $1.key }.map { ($0.key, JSONValue.string($0.value)) }))
    }

    /// `{"items": [...], "next_cursor": "..." | null}`.
    static func page<Item: Sendable>(_ page: Page<Item>, _ render: (Item) -> JSONValue) -> HTTPResponse {
        json(["items": .array(page.items.map(render)), "next_cursor": text(page.next.map(NativePaging.cursor))])
    }
}

/// Cursor paging: `?limit=1..100&cursor=<opaque>`. The cursor is the last key of the previous page in a form
/// clients should not read (base64url of "k<key>"), so the encoding can change without breaking them.
package struct NativePaging {
    static let maximumLimit = 100

    package var limit: Int
    package var after: Int64?

    package static func parse(_ request: HTTPRequest) throws(JSONAPIError) -> NativePaging {
        let query: FormParameters
        do throws(FormDecodingError) {
            query = try request.queryParameters()
        } catch {
            throw JSONAPIError(status: 400, code: "invalid_query", message: "The query string is malformed.")
        }
        var paging = NativePaging(limit: maximumLimit, after: nil)
        for (name, value) in query.pairs {
            switch name {
            case "limit":
                guard let limit = Int(value), (1...maximumLimit).contains(limit) else {
                    throw JSONAPIError.invalidField("limit", "The parameter 'limit' must be an integer from 1 to \(maximumLimit).")
                }
                paging.limit = limit
            case "cursor":
                guard let key = decodeCursor(value) else {
                    throw JSONAPIError.invalidField("cursor", "The parameter 'cursor' is not a cursor this API returned.")
                }
                paging.after = key
            default:
                throw JSONAPIError.invalidField(name, "Unknown query parameter '\(name)'.")
            }
        }
        return paging
    }

    package static func cursor(_ key: Int64) -> String {
        Data("k\(key)".utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    package static func decodeCursor(_ text: String) -> Int64? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        guard let data = Data(base64Encoded: base64) else { return nil }
        let decoded = String(decoding: data, as: UTF8.self)
        guard decoded.hasPrefix("k"), let key = Int64(decoded.dropFirst()), key >= 0 else { return nil }
        return key
    }
}

extension JSONAPIError {
    /// A store failure at the API edge. `notFound` is the caller's to phrase (it knows which field named the
    /// resource); constraint violations that reach here are the client's input, everything else is ours.
    static func store(_ error: StoreError, notFound: JSONAPIError? = nil) -> JSONAPIError {
        switch error.code {
        case .notFound: return notFound ?? .notFound("The resource does not exist.")
        case .uniqueViolation: return .conflict("The resource conflicts with an existing one.")
        case .checkViolation: return JSONAPIError(status: 400, code: "invalid_field", message: "A value is outside its allowed range.")
        default:
            guard error.isTransient else { return .internalError(cause: error.logText) }
            var unavailable = JSONAPIError.serviceUnavailable("The store is unavailable; retry later.")
            unavailable.cause = error.logText
            return unavailable
        }
    }
}
