import ClarionCore
import ClarionCrypto

/// Huawei Push Kit, HMS Core (Android) v1, as docs/providers.md E.1 describes it: the OAuth token endpoint
/// (`POST /oauth2/v3/token`) and `POST /v1/<app id>/messages:send`.
///
/// Token endpoint: not form-encoded: 400 `invalid_request`; `grant_type` not `client_credentials`: 400
/// `unsupported_grant_type`; unknown client id or wrong secret: 400 `{"error":1101,"error_description":
/// "invalid client"}` (emulator choice of the numbers; Huawei answers numeric `error` codes); else
/// `{"access_token","expires_in","token_type":"Bearer"}`.
///
/// Send, in order (every answer is `{"code","msg","requestId"}`):
/// - no, unknown or expired bearer token: 401 `80200003` (OAuth token expired);
/// - a token issued to a client whose app is not the path's: 401 `80200001` (OAuth authentication error);
/// - body not a JSON object with a `message` object, `message.data` not a string, no `notification`, `data` or
///   `android.notification`, an `android.notification` without a `click_action` whose `type` is 1...4,
///   `android.collapse_key` outside -1...100, `android.urgency` not HIGH/NORMAL, `android.ttl` not `"<n>s"`, or a
///   `topic`/`condition` target: 400 `80100003`;
/// - `message.token` not an array of 1...1000 strings: 400 `80300010`;
/// - the body without its tokens larger than 4096 bytes: 400 `80300008`;
/// - token rules (provider `hms`): `IllegalToken` marks a token invalid, `FlowControl` answers the request with
///   503 and `Retry-After`. Some tokens invalid: 200 `80100000` whose `msg` is JSON text
///   `{"success":n,"failure":m,"illegal_tokens":[...]}`; all invalid: 400 `80300007`;
/// - else 200 `80000000` "Success".
struct HMSEmulator: Sendable {
    static let tokenPath = "/oauth2/v3/token"
    static let sendPrefix = "/v1/"
    static let sendSuffix = "/messages:send"

    let configuration: EmulatorConfiguration.HMS
    /// client id -> (secret, app id)
    let clients: [String: (secret: String, appID: String)]
    let rules: TokenRuleSet
    let tokens: AccessTokenStore
    let retryAfterSeconds: Int

    init(configuration: EmulatorConfiguration.HMS, rules: [EmulatorTokenRule], retryAfterSeconds: Int) throws(EmulatorConfigurationError) {
        self.configuration = configuration
        var clients: [String: (secret: String, appID: String)] = [:]
        for client in configuration.clients { clients[client.clientID] = (client.clientSecret, client.appID ?? client.clientID) }
        self.clients = clients
        self.rules = TokenRuleSet(rules, provider: .hms)
        for rule in self.rules.rules where rule.outcome != "IllegalToken" && rule.outcome != "FlowControl" {
            throw EmulatorConfigurationError("token rule outcome \(rule.outcome) is not an HMS outcome (IllegalToken, FlowControl)")
        }
        tokens = AccessTokenStore(prefix: "CgB6e3x9emulator")
        self.retryAfterSeconds = retryAfterSeconds
    }

    // MARK: - Token endpoint

    func handleToken(_ request: EmulatorRequest, now: Double) -> ProviderAnswer {
        let headers = [("content-type", "application/json")]
        func oauthError(_ error: JSONValue, _ description: String, reason: String) -> ProviderAnswer {
            let body = JSONValue.object(["error": error, "error_description": .string(description)]).encodedSortingKeys()
            return ProviderAnswer(response: EmulatorResponse(status: 400, headers: headers, body: body), reason: reason)
        }
        guard request.method == "POST", mediaType(request.header("content-type")) == "application/x-www-form-urlencoded",
              let (form, repeated) = FormBody.parse(request.body), !repeated
        else { return oauthError("invalid_request", "the request body must be form-encoded with each parameter once", reason: "invalid_request") }
        guard form["grant_type"] == "client_credentials" else {
            return oauthError("unsupported_grant_type", "grant_type must be client_credentials", reason: "unsupported_grant_type")
        }
        guard let clientID = form["client_id"], let secret = form["client_secret"], let client = clients[clientID],
              Digest.constantTimeEquals(Array(secret.utf8), Array(client.secret.utf8))
        else {
            return oauthError(.number(JSONNumber(1101)), "invalid client", reason: "invalid_client")
        }
        let grant = IssuedAccessToken(principal: client.appID, projectID: nil, allowsMessaging: true,
                                      expiresAt: now + Double(configuration.accessTokenLifetimeSeconds))
        let token = tokens.issue(grant, now: now)
        let body = JSONValue.object([
            "access_token": .string(token),
            "expires_in": .number(JSONNumber(configuration.accessTokenLifetimeSeconds)),
            "token_type": "Bearer",
        ]).encodedSortingKeys()
        return ProviderAnswer(response: EmulatorResponse(status: 200, headers: headers, body: body))
    }

    // MARK: - Send

    static func appID(ofSendPath path: String) -> String? {
        guard path.hasPrefix(sendPrefix), path.hasSuffix(sendSuffix) else { return nil }
        let id = path.dropFirst(sendPrefix.count).dropLast(sendSuffix.count)
        guard !id.isEmpty, !id.utf8.contains(UInt8(ascii: "/")) else { return nil }
        return String(id)
    }

    /// What a send decided, with the tokens it named (a record each) and those refused.
    struct SendAnswer {
        var answer: ProviderAnswer
        var tokens: [String] = []
        var illegal: Set<String> = []
    }

    func handleSend(_ request: EmulatorRequest, appID: String, now: Double, ids: EmulatorIDs) -> SendAnswer {
        func answer(_ status: Int, _ code: String, _ message: String, tokens: [String] = [], retryAfter: Bool = false) -> SendAnswer {
            var headers: [(String, String)] = [("content-type", "application/json;charset=UTF-8")]
            if retryAfter { headers.append(("retry-after", String(retryAfterSeconds))) }
            let body = JSONValue.object(["code": .string(code), "msg": .string(message), "requestId": .string(ids.uuid())])
                .encodedSortingKeys()
            return SendAnswer(answer: ProviderAnswer(response: EmulatorResponse(status: status, headers: headers, body: body),
                                                     reason: code == "80000000" ? nil : code,
                                                     token: tokens.first),
                              tokens: tokens)
        }
        guard request.method == "POST" else { return answer(405, "80100003", "use POST") }
        guard let authorization = request.header("authorization"), let bearer = FCMEmulator.bearerToken(authorization),
              let grant = tokens.lookup(bearer), grant.expiresAt > now
        else { return answer(401, "80200003", "Request unauthorized: OAuth token expired or unknown") }
        guard grant.principal == appID else { return answer(401, "80200001", "OAuth authentication error: the token is not this app's") }
        guard mediaType(request.header("content-type")) == "application/json",
              let parsed = try? JSONValue.parse(bytes: request.body), let body = parsed.objectValue,
              let message = body["message"]?.objectValue
        else { return answer(400, "80100003", "Illegal payload: the body must be JSON with a message object") }

        guard let list = message["token"]?.arrayValue, (1...configuration.maximumTokens).contains(list.count),
              list.allSatisfy({ $0.stringValue?.isEmpty == false })
        else { return answer(400, "80300010", "The number of tokens in the message body exceeds the default value (1...\(configuration.maximumTokens))") }
        let tokenList = list.map { $0.stringValue! }
        if message["topic"] != nil || message["condition"] != nil {
            return answer(400, "80100003", "Illegal payload: a message has one target", tokens: tokenList)
        }
        if let problem = Self.structureProblem(message) { return answer(400, "80100003", "Illegal payload, \(problem)", tokens: tokenList) }
        // E.1: 4096 bytes excluding the tokens (each token's text and quotes, and the commas between them).
        let tokenBytes = tokenList.reduce(0) { $0 + $1.utf8.count + 2 } + tokenList.count - 1
        if request.body.count - tokenBytes > configuration.maximumPayloadBytes {
            return answer(400, "80300008", "The message body size exceeds the default value", tokens: tokenList)
        }

        var illegal: [String] = []
        for token in tokenList {
            guard let rule = rules.match(token) else { continue }
            if rule.outcome == "FlowControl" { return answer(503, "80000000", "flow control", tokens: tokenList, retryAfter: true).with503() }
            illegal.append(token)
        }
        if illegal.count == tokenList.count {
            var result = answer(400, "80300007", "All the tokens are invalid", tokens: tokenList)
            result.illegal = Set(illegal)
            return result
        }
        if !illegal.isEmpty {
            let detail = JSONValue.object(["success": .number(JSONNumber(tokenList.count - illegal.count)),
                                           "failure": .number(JSONNumber(illegal.count)),
                                           "illegal_tokens": .array(illegal.map { .string($0) })]).jsonText
            var result = answer(200, "80100000", detail, tokens: tokenList)
            result.illegal = Set(illegal)
            return result
        }
        return answer(200, "80000000", "Success", tokens: tokenList)
    }

    /// Why a v1 message is malformed, or nil.
    static func structureProblem(_ message: JSONObject) -> String? {
        if let data = message["data"], data.stringValue == nil { return "data must be a string" }
        if let notification = message["notification"], notification.objectValue == nil { return "notification must be an object" }
        var androidNotification: JSONObject?
        if let value = message["android"] {
            guard let android = value.objectValue else { return "android must be an object" }
            if let key = android["collapse_key"] {
                guard let n = key.numberValue?.intValue, (-1...100).contains(n) else { return "collapse_key must be -1...100" }
            }
            if let urgency = android["urgency"] {
                guard urgency.stringValue == "HIGH" || urgency.stringValue == "NORMAL" else { return "urgency must be HIGH or NORMAL" }
            }
            if let ttl = android["ttl"] {
                guard let text = ttl.stringValue, text.hasSuffix("s"), Double(text.dropLast()) != nil else { return "ttl must be like \"86400s\"" }
            }
            if let data = android["data"], data.stringValue == nil { return "android.data must be a string" }
            if let value = android["notification"] {
                guard let object = value.objectValue else { return "android.notification must be an object" }
                guard let type = object["click_action"]?.objectValue?["type"]?.numberValue?.intValue, (1...4).contains(type) else {
                    return "android.notification.click_action.type must be 1...4"
                }
                androidNotification = object
            }
        }
        if message["data"] == nil, message["notification"] == nil, androidNotification == nil {
            return "the message has neither data nor a notification"
        }
        if message["notification"] != nil, androidNotification == nil {
            return "a notification message needs android.notification.click_action"
        }
        return nil
    }

    func faultResponse(_ fault: InjectedFault, accepted: ProviderAnswer, ids: EmulatorIDs) -> (EmulatorResponse, String) {
        let status = fault == .throttle ? 429 : fault == .internalError ? 500 : 503
        var headers: [(String, String)] = [("content-type", "application/json;charset=UTF-8")]
        if status != 500 { headers.append(("retry-after", String(retryAfterSeconds))) }
        let body = JSONValue.object(["msg": status == 500 ? "internal error" : "flow control", "requestId": .string(ids.uuid())])
            .encodedSortingKeys()
        return (EmulatorResponse(status: status, headers: headers, body: body), status == 500 ? "InternalError" : "FlowControl")
    }
}

private extension HMSEmulator.SendAnswer {
    /// Flow control has no result code of its own in what we found (E.1: "HTTP 503 = flow control"): the body says so
    /// in `msg` only.
    func with503() -> Self {
        var copy = self
        copy.answer.response.body = JSONValue.object(["msg": "flow control"]).encodedSortingKeys()
        copy.answer.reason = "FlowControl"
        return copy
    }
}
