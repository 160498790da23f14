/// A failure the server itself detects (no route, wrong method, body too large, a request too slow or malformed,
/// shutting down). The HTTP layer knows no API family: the route's `ErrorFormat` renders it the way its family
/// spells errors.
public struct HTTPError: Error, Sendable {
    public var status: Int
    /// What went wrong, in words a machine can switch on (`not_found`, `payload_too_large`, ...); a family maps it
    /// to its own code.
    public var code: String
    public var message: String
    /// Headers the response must carry whatever the format (`Allow` on a 405).
    public var headers: HTTPHeaders

    public init(status: Int, code: String, message: String, headers: HTTPHeaders = HTTPHeaders()) {
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers
    }

    public static func notFound(path: String) -> HTTPError {
        HTTPError(status: 404, code: "not_found", message: "No resource at this path.")
    }

    public static func methodNotAllowed(allowed: [HTTPMethod]) -> HTTPError {
        HTTPError(status: 405, code: "method_not_allowed",
                  message: "Method not allowed; allowed: \(allowed.map(\.rawValue).joined(separator: ", ")).",
                  headers: ["Allow": allowed.map(\.rawValue).joined(separator: ", ")])
    }

    public static func payloadTooLarge(limit: Int) -> HTTPError {
        HTTPError(status: 413, code: "payload_too_large", message: "Request body is larger than \(limit) bytes.")
    }

    public static func badRequest(_ message: String) -> HTTPError {
        HTTPError(status: 400, code: "bad_request", message: message)
    }

    /// The request did not arrive in time (a head or body past its deadline).
    public static func requestTimeout(_ message: String) -> HTTPError {
        HTTPError(status: 408, code: "request_timeout", message: message)
    }

    public static let internalError = HTTPError(status: 500, code: "internal_error",
                                                message: "The server could not complete the request.")

    public static let shuttingDown = HTTPError(status: 503, code: "service_unavailable",
                                               message: "The server is shutting down; retry on another node.")
}

/// How a route family spells the errors the server detects for it (as Hummingbird's `HTTPResponseError` renders
/// itself): each family (SNS Query API, native JSON API, ...) supplies its own; the HTTP layer only asks it to
/// render. `HTTPError.headers` are added to whatever it renders.
public struct ErrorFormat: Sendable, Equatable {
    /// Names the format: two formats are the same when their names are.
    public let name: String
    private let render: @Sendable (_ error: HTTPError, _ requestID: String) -> HTTPResponse

    public init(name: String, render: @escaping @Sendable (_ error: HTTPError, _ requestID: String) -> HTTPResponse) {
        self.name = name
        self.render = render
    }

    public static func == (lhs: ErrorFormat, rhs: ErrorFormat) -> Bool { lhs.name == rhs.name }

    public func response(for error: HTTPError, requestID: String) -> HTTPResponse {
        var response = render(error, requestID)
        for (name, value) in error.headers { response.headers.set(name, value) }
        return response
    }

    /// The message as plain text: what a router given no format of its family answers with.
    public static let plainText = ErrorFormat(name: "text/plain") { error, _ in
        HTTPResponse(status: error.status, headers: ["Content-Type": "text/plain; charset=utf-8"],
                     body: Array((error.message + "\n").utf8))
    }
}
