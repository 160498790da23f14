/// Who is calling: the account the verified access key belongs to.
public struct SNSCaller: Sendable, Equatable {
    public let accountID: String
    /// nil when authentication is disabled (development only).
    public let accessKeyID: String?

    public init(accountID: String, accessKeyID: String?) {
        self.accountID = accountID
        self.accessKeyID = accessKeyID
    }
}

/// One authenticated SNS Query request, ready for its action handler.
public struct SNSRequest: Sendable {
    /// The action name, e.g. `CreateTopic`.
    public let action: String
    /// Query string and form body parameters, merged (a name in both is refused as repeated).
    public let parameters: SNSParameters
    public let caller: SNSCaller
    /// The configured region, for ARNs.
    public let region: String
    public let requestID: String
    /// The underlying HTTP request (headers, remote address); rarely needed by actions.
    public let http: HTTPRequest
}

/// An action handler: parameters in, the `<{Action}Result>` content out, or an SNS error.
public typealias SNSActionHandler = @Sendable (SNSRequest) async throws(SNSError) -> XMLResponse

public struct SNSAction: Sendable {
    public let name: String
    /// When set, the action refuses requests whose parameter values total more UTF-8 bytes (413,
    /// RequestEntityTooLarge). Publish and PublishBatch use SNS's 262,144.
    public let maxPayloadBytes: Int?
    public let handler: SNSActionHandler
}

/// The dispatch table: action name -> handler.
///
///     var actions = SNSActionTable()
///     actions.register("CreateTopic") { request throws(SNSError) in
///         let name = try request.parameters.required("Name")
///         let arn = try await topics.create(name, account: request.caller.accountID)
///         return XMLResponse { $0.element("TopicArn", arn) }
///     }
public struct SNSActionTable: Sendable {
    /// SNS's size limit for a message and its attributes (Publish, and the sum of a PublishBatch).
    public static let publishPayloadLimit = 262_144

    private var actions: [String: SNSAction] = [:]

    public init() {}

    public mutating func register(_ name: String, maxPayloadBytes: Int? = nil, _ handler: @escaping SNSActionHandler) {
        actions[name] = SNSAction(name: name, maxPayloadBytes: maxPayloadBytes, handler: handler)
    }

    public subscript(name: String) -> SNSAction? { actions[name] }

    public var names: [String] { actions.keys.sorted() }
}
