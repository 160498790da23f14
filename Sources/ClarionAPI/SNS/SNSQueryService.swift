import ClarionHTTP1

/// How SNS requests are authenticated.
public enum SNSAuthentication: Sendable {
    /// AWS Signature Version 4 against the accounts' access keys (production).
    case sigV4(SigV4Verifier)
    /// No authentication; every request acts for this account. For local development and tests only.
    case disabled(accountID: String)
}

/// The SNS-compatible AWS Query API at `/`: authentication, parameter decoding, Action/Version handling,
/// dispatch to action handlers and SNS's XML response and error shapes.
public struct SNSQueryService: Sendable {
    public static let apiVersion = "2010-03-31"

    /// The node's configured region: the region of every request when authentication is disabled (a signed request
    /// acts in the region of its credential scope, one the verifier serves).
    public let region: String
    public let actions: SNSActionTable
    public let authentication: SNSAuthentication
    /// The raw body limit on `/`. It is above SNS's 256 KB message limit on purpose: percent-encoding can
    /// triple a message's size on the wire; per-action limits apply to the decoded values instead.
    public let maxBodyBytes: Int

    public init(region: String, actions: SNSActionTable, authentication: SNSAuthentication,
                maxBodyBytes: Int = 1 << 20) {
        self.region = region
        self.actions = actions
        self.authentication = authentication
        self.maxBodyBytes = maxBodyBytes
    }

    /// Routes `POST /` and `GET /` to this service.
    public func register(on router: inout Router) {
        let service = self
        for method in [HTTPMethod.post, .get] {
            router.add(method, "/", maxBodyBytes: maxBodyBytes, errorFormat: .snsXML,
                       .suspending { request, responder in
                           // Starts on the server's thread and runs until it really waits (see handle(_:reply:));
                           // a body over `loopThreadBodyLimit` starts on the cooperative pool instead.
                           RouteHandler.startTask(for: request) { await service.handle(request) { responder.respond($0) } }
                       })
        }
    }

    public func handle(_ http: HTTPRequest) async -> HTTPResponse {
        await withCheckedContinuation { continuation in
            Task.immediate { await handle(http) { continuation.resume(returning: $0) } }
        }
    }

    /// Answers through `reply`, exactly once. Actions registered as completing (Publish) call back from the
    /// thread that finished their work, and the response is built and sent from there.
    public func handle(_ http: HTTPRequest, reply: @escaping @Sendable (HTTPResponse) -> Void) async {
        do throws(SNSError) {
            let (action, request) = try await prepare(http)
            if let completing = action.completing {
                let requestID = http.requestID
                await completing(request) { result in
                    switch result {
                    case .success(let response): reply(.xml(response.document(action: action.name, requestID: requestID)))
                    case .failure(let error): reply(error.response(requestID: requestID))
                    }
                }
                return
            }
            let result = try await action.handler(request)
            reply(.xml(result.document(action: action.name, requestID: http.requestID)))
        } catch {
            reply(error.response(requestID: http.requestID))
        }
    }

    /// Everything before the handler: authenticate, decode, find the action, check its limits.
    func prepare(_ http: HTTPRequest) async throws(SNSError) -> (SNSAction, SNSRequest) {
        let (caller, region) = try await authenticate(http)

        var form: FormParameters
        do {
            form = try FormParameters(decoding: Array(http.rawQuery.utf8))
            if http.method == .post && isFormBody(http) {
                form.append(contentsOf: try FormParameters(decoding: http.body))
            }
        } catch {
            throw SNSError.invalidParameter(message: "Invalid parameter: \(error.description)")
        }
        if case .sigV4 = authentication, form.contains(where: { SNSParameters.isAuthenticationParameter($0.name) }) {
            // Presigned requests carry their signature in the query; those names are not action parameters.
            form = FormParameters(form.pairs.filter { !SNSParameters.isAuthenticationParameter($0.name) }.map { ($0.name, $0.value) })
        }
        let parameters = try SNSParameters(form)

        guard let name = parameters["Action"], !name.isEmpty else { throw SNSError.missingAction }
        if let version = parameters["Version"], version != Self.apiVersion {
            throw SNSError.unsupportedVersion(action: name, version: version)
        }
        guard let action = actions[name] else { throw SNSError.invalidAction(name) }
        if let limit = action.maxPayloadBytes, parameters.payloadBytes > limit {
            throw SNSError(code: "RequestEntityTooLarge",
                           message: "Request parameters total more than \(limit) bytes.", status: 413)
        }
        return (action, SNSRequest(action: name, parameters: parameters, caller: caller, region: region,
                                   requestID: http.requestID, http: http))
    }

    /// The caller and the region the request acts in.
    private func authenticate(_ http: HTTPRequest) async throws(SNSError) -> (SNSCaller, String) {
        switch authentication {
        case .disabled(let accountID):
            return (SNSCaller(accountID: accountID, accessKeyID: nil), region)
        case .sigV4(let verifier):
            do {
                let caller = try await verifier.verify(http)
                return (SNSCaller(accountID: caller.accountID, accessKeyID: caller.accessKeyID), caller.region)
            } catch {
                throw Self.snsError(for: error)
            }
        }
    }

    static func snsError(for error: SigV4Error) -> SNSError {
        switch error.code {
        case .missingAuthentication: .missingAuthenticationToken
        case .incompleteSignature: .incompleteSignature(error.message)
        case .unknownAccessKey: .invalidClientTokenId
        case .signatureMismatch: .signatureDoesNotMatch(error.message)
        case .resolverFailed: .internalError(cause: "access key lookup: \(error.message)")
        case .resolverUnavailable: .serviceUnavailable(cause: "access key lookup: \(error.message)")
        }
    }

    /// A POST body is form data unless it says it is something else (curl and the SDKs label it; a bare body
    /// with no Content-Type is taken as form data too).
    private func isFormBody(_ http: HTTPRequest) -> Bool {
        guard let type = http.headers["Content-Type"] else { return true }
        return type.asciiLowercased().hasPrefix("application/x-www-form-urlencoded")
    }
}
