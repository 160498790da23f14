import ClarionHTTP1

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
    /// The region the request acts in (its SigV4 credential scope's): its resources are this region's, its ARNs carry it.
    public let region: String
    public let requestID: String
    /// The underlying HTTP request (headers, remote address); rarely needed by actions.
    public let http: HTTPRequest
}

/// An action handler: parameters in, the `<{Action}Result>` content out, or an SNS error.
public typealias SNSActionHandler = @Sendable (SNSRequest) async throws(SNSError) -> XMLResponse

/// An action handler that answers through `reply`, exactly once, from whatever thread finishes the work
/// (Publish replies from the batcher's writer thread right after the commit, so no task is woken per message).
public typealias SNSCompletingHandler = @Sendable (SNSRequest, @escaping @Sendable (Result<XMLResponse, SNSError>) -> Void) async -> Void

public struct SNSAction: Sendable {
    public let name: String
    /// When set, the action refuses requests whose parameter values total more UTF-8 bytes (413,
    /// RequestEntityTooLarge). Publish and PublishBatch use SNS's 262,144.
    public let maxPayloadBytes: Int?
    public let handler: SNSActionHandler
    /// Set for actions registered with `registerCompleting`; `handler` then awaits it.
    public let completing: SNSCompletingHandler?
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
        actions[name] = SNSAction(name: name, maxPayloadBytes: maxPayloadBytes, handler: handler, completing: nil)
    }

    /// Registers a callback-style handler (see `SNSCompletingHandler`).
    public mutating func registerCompleting(_ name: String, maxPayloadBytes: Int? = nil,
                                            _ completing: @escaping SNSCompletingHandler) {
        let handler: SNSActionHandler = { request throws(SNSError) in
            let result: Result<XMLResponse, SNSError> = await withCheckedContinuation { continuation in
                Task.immediate { await completing(request) { continuation.resume(returning: $0) } }
            }
            return try result.get()
        }
        actions[name] = SNSAction(name: name, maxPayloadBytes: maxPayloadBytes, handler: handler, completing: completing)
    }

    public subscript(name: String) -> SNSAction? { actions[name] }

    public var names: [String] { actions.keys.sorted() }
}
