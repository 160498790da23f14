import ClarionHTTP1

extension ErrorFormat {
    /// The SNS Query API's ErrorResponse XML, with SNS's code for each failure the server detects.
    public static let snsXML = ErrorFormat(name: "sns-xml") { error, requestID in
        let fault: SNSError.Fault = error.status >= 500 ? .receiver : .sender
        return SNSError(code: snsCode(for: error), message: error.message, status: error.status, fault: fault)
            .response(requestID: requestID)
    }

    /// SNS has no codes for the HTTP-level refusals (417, 431, 505): they are malformed queries to it.
    static func snsCode(for error: HTTPError) -> String {
        switch error.code {
        case "not_found": "NotFound"
        case "method_not_allowed": "MethodNotAllowed"
        case "payload_too_large": "RequestEntityTooLarge"
        case "request_timeout": "RequestTimeout"
        case "internal_error": "InternalError"
        case "service_unavailable": "ServiceUnavailable"
        case "not_implemented": "NotImplemented"
        default: "MalformedQueryString"
        }
    }
}
