import ClarionHTTP1

/// An SNS error as the AWS SDKs parse it: `<ErrorResponse><Error><Type/><Code/><Message/></Error><RequestId/>`
/// with the HTTP status SNS uses for that code (from the SNS service model; common AWS codes where the model
/// is silent). botocore raises the exception class named by `code`, so codes must match SNS's exactly.
public struct SNSError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Fault: String, Sendable {
        case sender = "Sender"
        case receiver = "Receiver"
    }

    public var code: String
    public var message: String
    public var status: Int
    public var fault: Fault
    /// Why a 5xx was answered, for the log only (the response says no more than `message`).
    public var cause: String?

    public init(code: String, message: String, status: Int, fault: Fault = .sender) {
        self.code = code
        self.message = message
        self.status = status
        self.fault = fault
    }

    public var description: String { "\(code) (\(status)): \(message)" }

    // MARK: Codes from the SNS model

    /// "Invalid parameter: <name>" plus " Reason: <reason>", SNS's usual wording.
    public static func invalidParameter(_ name: String, reason: String? = nil) -> SNSError {
        SNSError(code: "InvalidParameter",
                 message: "Invalid parameter: \(name)" + (reason.map { " Reason: \($0)" } ?? ""), status: 400)
    }

    public static func invalidParameter(message: String) -> SNSError {
        SNSError(code: "InvalidParameter", message: message, status: 400)
    }

    public static func parameterValueInvalid(_ message: String) -> SNSError {
        SNSError(code: "ParameterValueInvalid", message: message, status: 400)
    }

    public static func notFound(_ message: String) -> SNSError {
        SNSError(code: "NotFound", message: message, status: 404)
    }

    public static func endpointDisabled(_ message: String = "Endpoint is disabled") -> SNSError {
        SNSError(code: "EndpointDisabled", message: message, status: 400)
    }

    public static func platformApplicationDisabled(_ message: String = "Platform application is disabled") -> SNSError {
        SNSError(code: "PlatformApplicationDisabled", message: message, status: 400)
    }

    public static func authorizationError(_ message: String) -> SNSError {
        SNSError(code: "AuthorizationError", message: message, status: 403)
    }

    /// SNS's own throttling error (`ThrottledException`, 429).
    public static func throttled(_ message: String = "Rate exceeded") -> SNSError {
        SNSError(code: "Throttled", message: message, status: 429)
    }

    public static func internalError(_ message: String = "Internal Error", cause: String? = nil) -> SNSError {
        var error = SNSError(code: "InternalError", message: message, status: 500, fault: .receiver)
        error.cause = cause
        return error
    }

    /// The common AWS error for a temporary failure of the service (503; the SDKs retry it): here, the database
    /// is down, restarting or out of space. `cause` goes to the log only.
    public static func serviceUnavailable(cause: String) -> SNSError {
        var error = SNSError(code: "ServiceUnavailable", message: "The request has failed due to a temporary failure of the server.",
                             status: 503, fault: .receiver)
        error.cause = cause
        return error
    }

    public static func validationException(_ message: String) -> SNSError {
        SNSError(code: "ValidationException", message: message, status: 400)
    }

    public static func invalidSecurity(_ message: String) -> SNSError {
        SNSError(code: "InvalidSecurity", message: message, status: 403)
    }

    public static func topicLimitExceeded(_ message: String = "Topic limit exceeded") -> SNSError {
        SNSError(code: "TopicLimitExceeded", message: message, status: 403)
    }

    public static func subscriptionLimitExceeded(_ message: String = "Subscription limit exceeded") -> SNSError {
        SNSError(code: "SubscriptionLimitExceeded", message: message, status: 403)
    }

    public static func resourceNotFound(_ message: String) -> SNSError {
        SNSError(code: "ResourceNotFound", message: message, status: 404)
    }

    public static func tagLimitExceeded(_ message: String) -> SNSError {
        SNSError(code: "TagLimitExceeded", message: message, status: 400)
    }

    public static func tooManyEntriesInBatchRequest(_ message: String = "The batch request contains more entries than permissible.") -> SNSError {
        SNSError(code: "TooManyEntriesInBatchRequest", message: message, status: 400)
    }

    public static func batchEntryIdsNotDistinct(_ message: String = "Two or more batch entries in the request have the same Id.") -> SNSError {
        SNSError(code: "BatchEntryIdsNotDistinct", message: message, status: 400)
    }

    public static func batchRequestTooLong(_ message: String = "The length of all the messages put together is more than the limit.") -> SNSError {
        SNSError(code: "BatchRequestTooLong", message: message, status: 400)
    }

    public static func emptyBatchRequest(_ message: String = "The batch request doesn't contain any entries.") -> SNSError {
        SNSError(code: "EmptyBatchRequest", message: message, status: 400)
    }

    public static func invalidBatchEntryId(_ message: String = "The Id of a batch entry in a batch request doesn't abide by the specification.") -> SNSError {
        SNSError(code: "InvalidBatchEntryId", message: message, status: 400)
    }

    // MARK: Common AWS Query codes (not in the SNS model, returned by the AWS front end)

    /// A required member is absent. AWS's front end words it like this, with the member name in lowerCamel.
    public static func missingParameter(_ name: String) -> SNSError {
        let member = name.prefix(1).lowercased() + name.dropFirst()
        return SNSError(code: "ValidationError",
                        message: "1 validation error detected: Value null at '\(member)' failed to satisfy constraint: Member must not be null",
                        status: 400)
    }

    public static func validationError(_ message: String) -> SNSError {
        SNSError(code: "ValidationError", message: message, status: 400)
    }

    public static func invalidAction(_ action: String) -> SNSError {
        SNSError(code: "InvalidAction", message: "The action \(action) is not valid for this web service.", status: 400)
    }

    public static func unsupportedVersion(action: String, version: String) -> SNSError {
        SNSError(code: "InvalidAction", message: "Could not find operation \(action) for version \(version)", status: 400)
    }

    public static let missingAction = SNSError(code: "MissingAction", message: "The request must contain the parameter Action.",
                                               status: 400)

    /// The common AWS throttling error (400); SNS's modelled one is `throttled` (429).
    public static func throttling(_ message: String = "Rate exceeded") -> SNSError {
        SNSError(code: "Throttling", message: message, status: 400)
    }

    public static let missingAuthenticationToken = SNSError(code: "MissingAuthenticationToken",
                                                            message: "Request is missing Authentication Token", status: 403)

    public static let invalidClientTokenId = SNSError(code: "InvalidClientTokenId",
                                                      message: "The security token included in the request is invalid.", status: 403)

    public static let signatureMismatchMessage = "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details."

    public static func signatureDoesNotMatch(_ message: String = signatureMismatchMessage) -> SNSError {
        SNSError(code: "SignatureDoesNotMatch", message: message, status: 403)
    }

    public static func incompleteSignature(_ message: String) -> SNSError {
        SNSError(code: "IncompleteSignature", message: message, status: 400)
    }

    // MARK: Rendering

    public func response(requestID: String) -> HTTPResponse {
        var xml = XMLWriter()
        xml.open("ErrorResponse", namespace: SNSXML.namespace)
        xml.element("Error") { xml in
            xml.element("Type", fault.rawValue)
            xml.element("Code", code)
            xml.element("Message", message)
        }
        xml.element("RequestId", requestID)
        xml.close("ErrorResponse")
        var response = HTTPResponse.xml(xml.bytes, status: status)
        if status >= 500 { response.cause = cause ?? "\(code): \(message)" }
        return response
    }
}

extension SNSError {
    /// Two errors are the same answer whatever their log-only causes.
    public static func == (a: SNSError, b: SNSError) -> Bool {
        a.code == b.code && a.message == b.message && a.status == b.status && a.fault == b.fault
    }
}
