/// A failure the server itself detects (no route, wrong method, body too large, shutting down), rendered in the
/// error format of the API family the path belongs to.
public struct HTTPError: Error, Sendable {
    public var status: Int
    /// The native API's code (`not_found`, `payload_too_large`, ...).
    public var code: String
    /// The SNS Query API's code for the same failure.
    public var snsCode: String
    public var message: String
    public var headers: HTTPHeaders

    public init(status: Int, code: String, snsCode: String, message: String, headers: HTTPHeaders = HTTPHeaders()) {
        self.status = status
        self.code = code
        self.snsCode = snsCode
        self.message = message
        self.headers = headers
    }

    public static func notFound(path: String) -> HTTPError {
        HTTPError(status: 404, code: "not_found", snsCode: "NotFound", message: "No resource at this path.")
    }

    public static func methodNotAllowed(allowed: [HTTPMethod]) -> HTTPError {
        HTTPError(status: 405, code: "method_not_allowed", snsCode: "MethodNotAllowed",
                  message: "Method not allowed; allowed: \(allowed.map(\.rawValue).joined(separator: ", ")).",
                  headers: ["Allow": allowed.map(\.rawValue).joined(separator: ", ")])
    }

    public static func payloadTooLarge(limit: Int) -> HTTPError {
        HTTPError(status: 413, code: "payload_too_large", snsCode: "RequestEntityTooLarge",
                  message: "Request body is larger than \(limit) bytes.")
    }

    public static func badRequest(_ message: String) -> HTTPError {
        HTTPError(status: 400, code: "bad_request", snsCode: "MalformedQueryString", message: message)
    }

    /// The request did not arrive in time (a head or body past its deadline).
    public static func requestTimeout(_ message: String) -> HTTPError {
        HTTPError(status: 408, code: "request_timeout", snsCode: "RequestTimeout", message: message)
    }

    public static let internalError = HTTPError(status: 500, code: "internal_error", snsCode: "InternalError",
                                                message: "The server could not complete the request.")

    public static let shuttingDown = HTTPError(status: 503, code: "service_unavailable", snsCode: "ServiceUnavailable",
                                               message: "The server is shutting down; retry on another node.")
}

/// How an API family spells its errors: SNS's ErrorResponse XML at `/`, the JSON envelope elsewhere.
public enum ErrorFormat: Sendable {
    case snsXML
    case json

    public func response(for error: HTTPError, requestID: String) -> HTTPResponse {
        var response: HTTPResponse
        switch self {
        case .json:
            response = JSONAPIError(status: error.status, code: error.code, message: error.message).response()
        case .snsXML:
            let type: SNSError.Fault = error.status >= 500 ? .receiver : .sender
            response = SNSError(code: error.snsCode, message: error.message, status: error.status, fault: type)
                .response(requestID: requestID)
        }
        for (name, value) in error.headers { response.headers.set(name, value) }
        return response
    }
}
