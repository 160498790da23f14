import ClarionCore
import ClarionCrypto
import Foundation

/// FCM HTTP v1 as docs/providers.md section B describes it: the Google OAuth token endpoint for service
/// accounts (`POST /token`, B.2) and `POST /v1/projects/<project>/messages:send` (B.1, B.3, B.4).
///
/// Token endpoint (B.2; error texts are Google's as commonly seen, not from docs/providers.md):
/// - not form-encoded: 400 `invalid_request`; `grant_type` not jwt-bearer: 400 `unsupported_grant_type`;
///   no `assertion`: 400 `invalid_request`;
/// - assertion unreadable, not RS256, `kid` not the account's key id, or bad signature: 400
///   `invalid_grant` "Invalid JWT Signature."; unknown `iss`: 400 `invalid_grant` "Invalid grant: account
///   not found"; `aud` not the token URI: 400 `invalid_grant` "Invalid JWT: Failed audience check.";
///   `iat`/`exp` missing, `exp` more than an hour after `iat`, expired, or issued in the future: 400
///   `invalid_grant` (short-lived token text); no `scope`: 400 `invalid_scope`;
/// - otherwise `{"access_token", "expires_in", "token_type": "Bearer"}`. A token without the
///   `firebase.messaging` or `cloud-platform` scope is issued but sends with it get 403.
///
/// Send (B.1-B.4), in order:
/// - no bearer token: 401 UNAUTHENTICATED; unknown or expired token: 401 UNAUTHENTICATED (no FCM
///   detail, so a client refreshes, B.2); token without the messaging scope: 403 PERMISSION_DENIED;
///   token of another project's service account: 403 PERMISSION_DENIED;
/// - body not a JSON object, unknown field names (top level, `message`, `notification`, `android`,
///   `apns`, `webpush`, `fcm_options`), wrong value types: 400 INVALID_ARGUMENT with a
///   `google.rpc.BadRequest` field violation;
/// - not exactly one target of `token`/`topic`/`condition` (B.3): 400 INVALID_ARGUMENT;
/// - `data` (top level, `android.data`, `webpush.data`) values not strings, or reserved keys (`from`,
///   `message_type`, `google*`, `gcm*`): 400 INVALID_ARGUMENT;
/// - `android.priority` not NORMAL/HIGH (any case), `android.ttl` not a Duration like "3.5s" or over
///   2,419,200 s: 400 INVALID_ARGUMENT;
/// - token not made of `[A-Za-z0-9_:.-]`, topic not `[A-Za-z0-9-_.~%]+`: 400 INVALID_ARGUMENT with FCM
///   errorCode INVALID_ARGUMENT;
/// - keys + values over 4096 bytes (2048 for topic and condition messages) (B.3): 400 INVALID_ARGUMENT
///   with errorCode INVALID_ARGUMENT. Emulator rule: every key and scalar value under `message` counts,
///   except the target field;
/// - token rules (UNREGISTERED 404, SENDER_ID_MISMATCH 403, QUOTA_EXCEEDED 429 + Retry-After,
///   UNAVAILABLE 503 + Retry-After, INTERNAL 500, THIRD_PARTY_AUTH_ERROR 401, INVALID_ARGUMENT 400);
/// - 200 `{"name": "projects/<p>/messages/<id>"}`; with `validate_only: true` the id is
///   `fake_message_id` and nothing is "delivered".
struct FCMEmulator: Sendable {
    struct Account: Sendable {
        let clientEmail: String
        let projectID: String
        let privateKeyID: String?
        let key: VerifyingKey
    }

    static let grantType = "urn:ietf:params:oauth:grant-type:jwt-bearer"
    static let messagingScopes: Set<String> = [
        "https://www.googleapis.com/auth/firebase.messaging",
        "https://www.googleapis.com/auth/cloud-platform",
    ]
    static let maximumTTLSeconds: Int64 = 2_419_200
    static let tokenMessageLimit = 4096
    static let topicMessageLimit = 2048

    /// FCM error codes (B.4): HTTP status and canonical status.
    static let errorCodes: [String: (status: Int, canonical: String, message: String)] = [
        "UNREGISTERED": (404, "NOT_FOUND", "Requested entity was not found."),
        "INVALID_ARGUMENT": (400, "INVALID_ARGUMENT", "The registration token is not a valid FCM registration token"),
        "SENDER_ID_MISMATCH": (403, "PERMISSION_DENIED", "SenderId mismatch"),
        "QUOTA_EXCEEDED": (429, "RESOURCE_EXHAUSTED", "Quota exceeded for the project's message rate."),
        "UNAVAILABLE": (503, "UNAVAILABLE", "The service is currently unavailable."),
        "INTERNAL": (500, "INTERNAL", "Internal error encountered."),
        "THIRD_PARTY_AUTH_ERROR": (401, "UNAUTHENTICATED", "Auth error from APNS or Web Push Service"),
        "UNSPECIFIED_ERROR": (500, "UNKNOWN", "Unknown error."),
    ]

    let configuration: EmulatorConfiguration.FCM
    let accounts: [String: Account]
    let rules: TokenRuleSet
    let tokens: AccessTokenStore
    let retryAfterSeconds: Int

    init(configuration: EmulatorConfiguration.FCM, rules: [EmulatorTokenRule], retryAfterSeconds: Int) throws(EmulatorConfigurationError) {
        self.configuration = configuration
        var accounts: [String: Account] = [:]
        for account in configuration.serviceAccounts {
            let key: VerifyingKey
            var privateKeyID = account.privateKeyID
            do {
                if let pem = account.publicKeyPEM {
                    key = try VerifyingKey(pem: pem)
                } else if let path = account.publicKeyPath {
                    key = try VerifyingKey(pem: try String(contentsOfFile: path, encoding: .utf8))
                } else if let path = account.serviceAccountPath {
                    let file = try ServiceAccountFile(path: path)
                    guard file.clientEmail == account.clientEmail else {
                        throw EmulatorConfigurationError("\(path) is for \(file.clientEmail), not \(account.clientEmail)")
                    }
                    key = file.privateKey.verifyingKey
                    privateKeyID = privateKeyID ?? file.privateKeyID
                } else {
                    throw EmulatorConfigurationError("give publicKeyPEM, publicKeyPath or serviceAccountPath")
                }
            } catch {
                throw EmulatorConfigurationError("FCM service account \(account.clientEmail): \(error)")
            }
            guard key.algorithm == .rs256 else {
                throw EmulatorConfigurationError("FCM service account \(account.clientEmail): the key is not RSA (B.2: RS256)")
            }
            accounts[account.clientEmail] = Account(clientEmail: account.clientEmail, projectID: account.projectID,
                                                    privateKeyID: privateKeyID, key: key)
        }
        self.accounts = accounts
        self.rules = TokenRuleSet(rules, provider: .fcm)
        for rule in self.rules.rules where Self.errorCodes[rule.outcome] == nil {
            throw EmulatorConfigurationError("token rule outcome \(rule.outcome) is not an FCM error code")
        }
        self.tokens = AccessTokenStore(prefix: "ya29.emulator.")
        self.retryAfterSeconds = retryAfterSeconds
    }

    // MARK: - OAuth token endpoint (B.2)

    func handleToken(_ request: EmulatorRequest, now: Double) -> ProviderAnswer {
        func oauthError(_ status: Int, _ error: String, _ description: String) -> ProviderAnswer {
            let body = JSONValue.object(["error": .string(error), "error_description": .string(description)]).encodedSortingKeys()
            return ProviderAnswer(response: EmulatorResponse(status: status, headers: jsonHeaders, body: body), reason: error)
        }
        guard request.method == "POST" else { return oauthError(405, "invalid_request", "Method not allowed; use POST.") }
        guard mediaType(request.header("content-type")) == "application/x-www-form-urlencoded",
              let (form, repeated) = FormBody.parse(request.body), !repeated
        else { return oauthError(400, "invalid_request", "The request body must be form-encoded with each parameter once.") }
        guard let grant = form["grant_type"], grant == Self.grantType else {
            return oauthError(400, "unsupported_grant_type", "Invalid grant_type: \(form["grant_type"] ?? "")")
        }
        guard let assertion = form["assertion"], !assertion.isEmpty else {
            return oauthError(400, "invalid_request", "Missing required parameter: assertion")
        }
        guard let jwt = try? JWT.decode(assertion), jwt.algorithm == .rs256 else {
            return oauthError(400, "invalid_grant", "Invalid JWT Signature.")
        }
        guard let issuer = jwt.claimString("iss"), let account = accounts[issuer] else {
            return oauthError(400, "invalid_grant", "Invalid grant: account not found")
        }
        if let expected = account.privateKeyID, let kid = jwt.headerString("kid"), kid != expected {
            return oauthError(400, "invalid_grant", "Invalid JWT Signature.")
        }
        guard (try? jwt.verify(with: account.key)) != nil else {
            return oauthError(400, "invalid_grant", "Invalid JWT Signature.")
        }
        let ownURIs = ["https://\(request.authority)/token", "http://\(request.authority)/token"]
        guard let audience = jwt.claimString("aud"), configuration.acceptedAudiences.contains(audience) || ownURIs.contains(audience) else {
            return oauthError(400, "invalid_grant", "Invalid JWT: Failed audience check.")
        }
        let nowSeconds = Int64(now)
        guard let iat = jwt.claimInt64("iat"), let exp = jwt.claimInt64("exp"),
              exp > iat, exp - iat <= 3600, exp > nowSeconds, iat <= nowSeconds + 300
        else {
            return oauthError(400, "invalid_grant",
                              "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim.")
        }
        guard let scope = jwt.claimString("scope"), !scope.isBlank else {
            return oauthError(400, "invalid_scope", "Invalid oauth scope or ID token audience provided.")
        }
        let scopes = scope.split(separator: " ").map(String.init)
        let grantRecord = IssuedAccessToken(principal: account.clientEmail, projectID: account.projectID,
                                            allowsMessaging: scopes.contains(where: Self.messagingScopes.contains),
                                            expiresAt: now + Double(configuration.accessTokenLifetimeSeconds))
        let token = tokens.issue(grantRecord, now: now)
        let body = JSONValue.object([
            "access_token": .string(token),
            "expires_in": .number(JSONNumber(configuration.accessTokenLifetimeSeconds)),
            "token_type": "Bearer",
        ]).encodedSortingKeys()
        return ProviderAnswer(response: EmulatorResponse(status: 200, headers: jsonHeaders, body: body))
    }

    // MARK: - Send (B.1, B.3, B.4)

    static let sendPrefix = "/v1/projects/"
    static let sendSuffix = "/messages:send"

    /// The project of a send path, or nil when `path` is not one.
    static func project(ofSendPath path: String) -> String? {
        guard path.hasPrefix(sendPrefix), path.hasSuffix(sendSuffix) else { return nil }
        let project = path.dropFirst(sendPrefix.count).dropLast(sendSuffix.count)
        guard !project.isEmpty, !project.utf8.contains(UInt8(ascii: "/")) else { return nil }
        return String(project)
    }

    func handleSend(_ request: EmulatorRequest, project: String, connection: EmulatorConnectionState, now: Double, ids: EmulatorIDs) -> ProviderAnswer {
        guard request.method == "POST" else {
            return googleError(405, "METHOD_NOT_ALLOWED", "Method not allowed; use POST.")
        }
        // Access token: the connection's last accepted one skips the shared store.
        guard let authorization = request.header("authorization"), !authorization.isBlank else {
            return googleError(401, "UNAUTHENTICATED", "Request is missing required authentication credential. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.")
        }
        let grant: IssuedAccessToken?
        if authorization == connection.fcmAccessToken, let cached = connection.fcmGrant {
            grant = cached
        } else if let token = Self.bearerToken(authorization), let found = tokens.lookup(token) {
            connection.fcmAccessToken = authorization
            connection.fcmGrant = found
            grant = found
        } else {
            grant = nil
        }
        guard let grant, grant.expiresAt > now else {
            return googleError(401, "UNAUTHENTICATED", "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.")
        }
        guard grant.allowsMessaging else {
            return googleError(403, "PERMISSION_DENIED", "Request had insufficient authentication scopes.")
        }
        guard grant.projectID == project else {
            return googleError(403, "PERMISSION_DENIED", "Permission 'cloudmessaging.messages.create' denied on resource '//cloudresourcemanager.googleapis.com/projects/\(project)' (or it may not exist).")
        }

        let checked: FCMMessageCheck.Result
        switch FCMMessageCheck.check(body: request.body) {
        case .invalid(let field, let description):
            return googleError(400, "INVALID_ARGUMENT", description, fieldViolation: field)
        case .valid(let result):
            checked = result
        }
        let target = checked.target
        if target.kind == "token" {
            guard Self.isWellFormedToken(target.value) else { return fcmError("INVALID_ARGUMENT", token: target.value) }
        } else if target.kind == "topic" {
            guard Self.isWellFormedTopic(target.value) else {
                return googleError(400, "INVALID_ARGUMENT", "Invalid topic name: \(target.value)", fieldViolation: "message.topic", token: target.value)
            }
        }
        let limit = (target.kind == "topic" || target.kind == "condition") ? Self.topicMessageLimit : Self.tokenMessageLimit
        if checked.payloadSize > limit {
            return fcmError("INVALID_ARGUMENT", message: "Message is too big: \(checked.payloadSize) bytes of keys and values, the limit is \(limit).",
                            token: target.value)
        }
        if target.kind == "token" || target.kind == "fid", let rule = rules.match(target.value) {
            return fcmError(rule.outcome, token: target.value)
        }
        let messageID = checked.validateOnly ? "fake_message_id" : "0:\(ids.next())%emulator"
        var body: [UInt8] = Array(#"{"name":"#.utf8)
        JSONText.appendQuoted("projects/\(project)/messages/\(messageID)", to: &body)
        body.append(UInt8(ascii: "}"))
        return ProviderAnswer(response: EmulatorResponse(status: 200, headers: jsonHeaders, body: body), token: target.value)
    }

    /// The answer for an injected fault on a request that would have been accepted.
    func faultResponse(_ fault: InjectedFault, accepted: ProviderAnswer) -> (EmulatorResponse, String) {
        let code: String
        switch fault {
        case .throttle: code = "QUOTA_EXCEEDED"
        case .internalError: code = "INTERNAL"
        default: code = "UNAVAILABLE"
        }
        return (fcmError(code, token: accepted.token.map(String.init)).response, code)
    }

    // MARK: - Errors (B.4)

    var jsonHeaders: [(String, String)] { [("content-type", "application/json; charset=UTF-8")] }

    /// Google's envelope without an FCM detail (authentication, permission, JSON-level problems).
    func googleError(_ status: Int, _ canonical: String, _ message: String, fieldViolation: String? = nil, token: String? = nil) -> ProviderAnswer {
        var error: JSONObject = ["code": .number(JSONNumber(status)), "message": .string(message), "status": .string(canonical)]
        if let fieldViolation {
            error["details"] = [[
                "@type": "type.googleapis.com/google.rpc.BadRequest",
                "fieldViolations": [["field": .string(fieldViolation), "description": .string(message)]],
            ]]
        }
        let body = JSONValue.object(["error": .object(error)]).encodedSortingKeys()
        return ProviderAnswer(response: EmulatorResponse(status: status, headers: jsonHeaders, body: body), reason: canonical, token: token)
    }

    /// Google's envelope with a `google.firebase.fcm.v1.FcmError` detail carrying `code`.
    func fcmError(_ code: String, message: String? = nil, token: String?) -> ProviderAnswer {
        let entry = Self.errorCodes[code] ?? Self.errorCodes["UNSPECIFIED_ERROR"]!
        let error: JSONObject = [
            "code": .number(JSONNumber(entry.status)),
            "message": .string(message ?? entry.message),
            "status": .string(entry.canonical),
            "details": [["@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": .string(code)]],
        ]
        var headers = jsonHeaders
        if code == "QUOTA_EXCEEDED" || code == "UNAVAILABLE" { headers.append(("retry-after", String(retryAfterSeconds))) }
        let body = JSONValue.object(["error": .object(error)]).encodedSortingKeys()
        return ProviderAnswer(response: EmulatorResponse(status: entry.status, headers: headers, body: body), reason: code, token: token)
    }

    // MARK: - Formats

    static func bearerToken(_ authorization: String) -> String? {
        guard authorization.utf8.count > 7,
              authorization.utf8.prefix(7).elementsEqual("bearer ".utf8, by: { ($0 | 0x20) == $1 }) else { return nil }
        let token = authorization.dropFirst(7).trimmingCharacters(in: .whitespaces)
        return token.isEmpty ? nil : token
    }

    /// Registration tokens are opaque; the emulator accepts 1-4096 characters of `[A-Za-z0-9_:.-]`.
    static func isWellFormedToken(_ token: String) -> Bool {
        let count = token.utf8.count
        guard count > 0, count <= 4096 else { return false }
        return token.utf8.allSatisfy { byte in
            (0x30...0x39).contains(byte) || (0x41...0x5a).contains(byte) || (0x61...0x7a).contains(byte)
                || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ":") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
        }
    }

    /// Topic names: `[a-zA-Z0-9-_.~%]+`, no `/topics/` prefix in v1 (B.3).
    static func isWellFormedTopic(_ topic: String) -> Bool {
        !topic.isEmpty && topic.utf8.allSatisfy { byte in
            (0x30...0x39).contains(byte) || (0x41...0x5a).contains(byte) || (0x61...0x7a).contains(byte)
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".")
                || byte == UInt8(ascii: "~") || byte == UInt8(ascii: "%")
        }
    }
}

/// A Google service-account JSON file (the fields the emulator and the demo need).
struct ServiceAccountFile {
    let clientEmail: String
    let projectID: String
    let privateKeyID: String?
    let privateKey: SigningKey

    init(path: String) throws(EmulatorConfigurationError) {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw EmulatorConfigurationError("cannot read \(path)")
        }
        guard let json = (try? JSONValue.parse(bytes: [UInt8](data))),
              let email = json["client_email"]?.stringValue, let project = json["project_id"]?.stringValue,
              let pem = json["private_key"]?.stringValue
        else {
            throw EmulatorConfigurationError("\(path) is not a service-account JSON (client_email, project_id, private_key)")
        }
        do {
            privateKey = try SigningKey(pem: pem)
        } catch {
            throw EmulatorConfigurationError("\(path): private_key: \(error)")
        }
        clientEmail = email
        projectID = project
        privateKeyID = json["private_key_id"]?.stringValue
    }
}
