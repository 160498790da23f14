import ClarionCore
import ClarionHTTP1

/// The native API's error: `{"error": {"code": ..., "message": ..., "field": ...}}`, with `field` null when the
/// error is not about one input field. Codes are stable snake_case strings that clients switch on.
public struct JSONAPIError: Error, Sendable, Equatable, CustomStringConvertible {
    public var status: Int
    public var code: String
    public var message: String
    /// The offending input, as a dotted path into the body (`message.apns.priority`, `tokens[3]`) or a parameter name.
    public var field: String?
    public var headers: [String: String]
    /// Why a 5xx was answered, for the log only.
    public var cause: String?

    public init(status: Int, code: String, message: String, field: String? = nil, headers: [String: String] = [:]) {
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.headers = headers
    }

    public var description: String { "\(code) (\(status)): \(message)" + (field.map { " [\($0)]" } ?? "") }

    public func response() -> HTTPResponse {
        let field = self.field.map(JSONText.quote) ?? "null"
        let body = "{\"error\":{\"code\":\(JSONText.quote(code)),\"message\":\(JSONText.quote(message)),\"field\":\(field)}}"
        var response = HTTPResponse.json(Array(body.utf8), status: status)
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { response.headers.set(name, value) }
        if status >= 500 { response.cause = cause ?? "\(code): \(message)" }
        return response
    }

    public static func invalidJSON(_ message: String) -> JSONAPIError {
        JSONAPIError(status: 400, code: "invalid_json", message: message)
    }

    /// A request body the JSON parser refused: `invalid_json` saying what and at which byte (bad syntax, bytes
    /// that are not UTF-8, an unpaired surrogate escape, or a JSON limit of docs/api.md); a repeated key is
    /// `invalid_field` naming it.
    public static func invalidJSON(_ error: JSONParseError) -> JSONAPIError {
        if error.code == .duplicateKey, let key = error.key {
            return .invalidField(key, "The field '\(key)' appears more than once.")
        }
        if error.isLimit { return .invalidJSON("The request body is over a JSON limit: \(error.reason).") }
        return .invalidJSON("The request body is not valid JSON: \(error.reason).")
    }

    public static func missingField(_ field: String) -> JSONAPIError {
        JSONAPIError(status: 400, code: "missing_field", message: "The field '\(field)' is required.", field: field)
    }

    public static func invalidField(_ field: String, _ message: String) -> JSONAPIError {
        JSONAPIError(status: 400, code: "invalid_field", message: message, field: field)
    }

    public static func unsupportedMediaType(_ contentType: String) -> JSONAPIError {
        JSONAPIError(status: 415, code: "unsupported_media_type",
                     message: "Expected Content-Type application/json, got '\(contentType)'.")
    }

    public static let unauthorized = JSONAPIError(status: 401, code: "unauthorized",
                                                  message: "Missing 'Authorization: Bearer <api key>' header.",
                                                  headers: ["WWW-Authenticate": "Bearer"])

    public static let invalidAPIKey = JSONAPIError(status: 401, code: "invalid_api_key",
                                                   message: "The API key is not valid.",
                                                   headers: ["WWW-Authenticate": "Bearer error=\"invalid_token\""])

    public static func forbidden(_ message: String) -> JSONAPIError {
        JSONAPIError(status: 403, code: "forbidden", message: message)
    }

    public static func notFound(_ message: String, field: String? = nil) -> JSONAPIError {
        JSONAPIError(status: 404, code: "not_found", message: message, field: field)
    }

    public static func conflict(_ message: String, field: String? = nil) -> JSONAPIError {
        JSONAPIError(status: 409, code: "conflict", message: message, field: field)
    }

    public static let internalError = JSONAPIError(status: 500, code: "internal_error",
                                                   message: "The server could not complete the request.")

    public static func serviceUnavailable(_ message: String) -> JSONAPIError {
        JSONAPIError(status: 503, code: "service_unavailable", message: message)
    }
}

extension JSONAPIError {
    /// `internalError` with the cause the log gets.
    public static func internalError(cause: String) -> JSONAPIError {
        var error = JSONAPIError.internalError
        error.cause = cause
        return error
    }
}

extension JSONAPIError {
    /// Two errors are the same answer whatever their log-only causes.
    public static func == (a: JSONAPIError, b: JSONAPIError) -> Bool {
        a.status == b.status && a.code == b.code && a.message == b.message && a.field == b.field && a.headers == b.headers
    }
}
