import ClarionCore
import ClarionStore
import Foundation

/// Helpers shared by the action handlers.
extension SNSRequest {
    /// The ARN in parameter `name` (required), in this region and the caller's account.
    func arn(_ name: String) throws(SNSError) -> SNSARN {
        try arn(name, value: try parameters.required(name))
    }

    /// - Parameter otherAccounts: accept an ARN of another account (a topic whose policy the caller will be held to);
    ///   otherwise such an ARN is AuthorizationError.
    func arn(_ name: String, value: String, otherAccounts: Bool = false) throws(SNSError) -> SNSARN {
        guard let arn = SNSARN.parse(value) else {
            // An SNS ARN whose partition is not its region's (`arn:aws:sns:cn-north-1:...`) is not one SNS writes.
            if SNSARN.parse(value, checkingPartition: false) != nil {
                throw SNSError.invalidParameter(name, reason: "The ARN's partition must be its region's")
            }
            // A well-formed ARN of another service (`arn:aws:sqs:...:queue`) names nothing here: NotFound, as in SNS.
            if SNSRequest.isWellFormedARN(value) { throw SNSError.noSuchResource(parameter: name) }
            throw SNSError.invalidParameter(name, reason: "An ARN must have the form arn:\(AWSPartition(region: region).rawValue):sns:<region>:<account>:<resource>")
        }
        guard arn.region == region else {
            throw SNSError.invalidParameter(name, reason: "The ARN is not in region \(region)")
        }
        guard arn.account == caller.accountID || otherAccounts else {
            throw SNSError.authorizationError("The caller is not authorized to access \(value)")
        }
        return arn
    }

    /// `arn:<partition>:<service>:<region>:<account>:<resource>` with a partition, service and resource.
    static func isWellFormedARN(_ text: String) -> Bool {
        let parts = text.split(separator: ":", maxSplits: 5, omittingEmptySubsequences: false)
        return parts.count == 6 && parts[0] == "arn" && !parts[1].isEmpty && !parts[2].isEmpty && !parts[5].isEmpty
    }

    /// A NextToken as the key to continue after; tokens are the decimal key of the last item of a page.
    func nextToken() throws(SNSError) -> Int64? {
        guard let token = parameters["NextToken"], !token.isEmpty else { return nil }
        guard let key = Int64(token), key > 0 else { throw SNSError.invalidParameter("NextToken") }
        return key
    }
}

extension SNSError {
    /// What SNS answers for a well-formed ARN of the wrong kind in `parameter` (an SQS queue's where a subscription's
    /// is expected, a topic's where an endpoint's is): the NotFound (404) of the resource the parameter names.
    static func noSuchResource(parameter: String) -> SNSError {
        switch parameter {
        case "TopicArn": SNSError.notFound("Topic does not exist")
        case "SubscriptionArn": SNSError.notFound("Subscription does not exist")
        case "EndpointArn": SNSError.notFound("Endpoint does not exist")
        case "PlatformApplicationArn": SNSError.notFound("PlatformApplication does not exist")
        case "TargetArn": SNSError.notFound("Invalid parameter: TargetArn Reason: No endpoint found for the target arn specified")
        case "ResourceArn": SNSError.resourceNotFound("Resource does not exist")
        default: SNSError.notFound("\(parameter) does not exist")
        }
    }
}

/// Runs a store call and turns its failure into an SNS error: `.notFound` becomes `notFound` when given, a
/// database that is down or full ServiceUnavailable (503), everything unexpected InternalError (the store's
/// message stays out of the response).
func store<T: Sendable>(notFound: SNSError? = nil, _ body: () async throws(StoreError) -> T) async throws(SNSError) -> T {
    do {
        return try await body()
    } catch {
        if error.code == .notFound, let notFound { throw notFound }
        if error.isTransient { throw SNSError.serviceUnavailable(cause: error.logText) }
        throw SNSError.internalError(cause: error.logText)
    }
}

enum SNSAttributes {
    static func bool(_ name: String, _ value: String) throws(SNSError) -> Bool {
        switch value.lowercased() {
        case "true": return true
        case "false": return false
        default: throw SNSError.invalidParameter("Attributes", reason: "\(name) must be true or false")
        }
    }

    static func requireKnown(_ attributes: [String: String], _ known: Set<String>) throws(SNSError) {
        for name in attributes.keys.sorted() where !known.contains(name) {
            throw SNSError.invalidParameter("Attributes", reason: "Unknown attribute name: \(name)")
        }
    }

    /// A JSON object text, as FilterPolicy and Policy must be.
    static func isJSONObject(_ text: String) -> Bool {
        guard let data = text.data(using: .utf8),
              let object = try? JSONSerialization.jsonObject(with: data) else { return false }
        return object is [String: Any]
    }
}

extension XMLWriter {
    /// `<NextToken>` for a page that has one.
    mutating func nextToken(_ key: Int64?) {
        element("NextToken", ifPresent: key.map(String.init))
    }
}
