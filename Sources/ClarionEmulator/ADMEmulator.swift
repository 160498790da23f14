import ClarionCore
import ClarionCrypto

/// Amazon Device Messaging as docs/providers.md section D describes it: the Login with Amazon token
/// endpoint (`POST /auth/o2/token`, also spelled `/auth/O2/token`, D.1) and
/// `POST /messaging/registrations/<id>/messages` (D.2, D.3).
///
/// Token endpoint (D.1): not form-encoded: 400 `invalid_request`; `grant_type` not
/// `client_credentials`: 400 `unsupported_grant_type`; `scope` not `messaging:push`: 400
/// `invalid_scope`; unknown client or wrong secret: 401 `invalid_client`; else
/// `{"access_token", "expires_in", "scope", "token_type": "bearer"}`.
///
/// Send, in order:
/// - no, unknown or expired bearer token: 401 `{"reason":"AccessTokenExpired"}` (D.3 lists only this
///   401 reason; an unknown token gets it too);
/// - `X-Amzn-Type-Version` not `com.amazon.device.messaging.ADMMessage@1.0`, `X-Amzn-Accept-Type` not
///   `com.amazon.device.messaging.ADMSendResult@1.0`, or `Content-Type` not JSON (D.2): 400
///   `InvalidType` (emulator choice of reason);
/// - body over 6 KB: 413 `MessageTooLarge` (D.2);
/// - body not a JSON object, `data` not string -> string, neither `data` nor `notification`, or a
///   `notification` without string `title` and `body`: 400 `InvalidData`;
/// - `consolidationKey` not a string: 400 `InvalidConsolidationKey`; `expiresAfter` not an integer in
///   1...31 days: 400 `InvalidExpiration`; `md5` not a string: 400 `InvalidChecksum` (its value is not
///   verified: see the report);
/// - registration id not `[A-Za-z0-9._:|=+/-]`: 400 `InvalidRegistrationId`;
/// - token rules and configured canonical ids;
/// - 200 `{"registrationID": "<id or its canonical replacement>"}` with `X-Amzn-RequestId`.
struct ADMEmulator: Sendable {
    static let typeVersion = "com.amazon.device.messaging.ADMMessage@1.0"
    static let acceptType = "com.amazon.device.messaging.ADMSendResult@1.0"
    static let sendPrefix = "/messaging/registrations/"
    static let sendSuffix = "/messages"

    /// ADM reasons and their statuses (D.3); `ServiceUnavailable` and `InternalServerError` are the
    /// emulator's names for the reason-less 503 and 500.
    static let statusForReason: [String: Int] = [
        "InvalidRegistrationId": 400, "InvalidData": 400, "InvalidConsolidationKey": 400, "InvalidExpiration": 400,
        "InvalidChecksum": 400, "InvalidType": 400, "Unregistered": 400,
        "AccessTokenExpired": 401, "MessageTooLarge": 413, "MaxRateExceeded": 429,
        "InternalServerError": 500, "ServiceUnavailable": 503,
    ]

    let configuration: EmulatorConfiguration.ADM
    let secrets: [String: String]
    let rules: TokenRuleSet
    let tokens: AccessTokenStore
    let retryAfterSeconds: Int

    init(configuration: EmulatorConfiguration.ADM, rules: [EmulatorTokenRule], retryAfterSeconds: Int) throws(EmulatorConfigurationError) {
        self.configuration = configuration
        var secrets: [String: String] = [:]
        for client in configuration.clients { secrets[client.clientID] = client.clientSecret }
        self.secrets = secrets
        self.rules = TokenRuleSet(rules, provider: .adm)
        for rule in self.rules.rules where Self.statusForReason[rule.outcome] == nil && rule.outcome != "Canonical" {
            throw EmulatorConfigurationError("token rule outcome \(rule.outcome) is not an ADM reason or Canonical")
        }
        self.tokens = AccessTokenStore(prefix: "Atc|emulator.")
        self.retryAfterSeconds = retryAfterSeconds
    }

    // MARK: - Token endpoint (D.1)

    static func isTokenPath(_ path: String) -> Bool {
        path == "/auth/o2/token" || path == "/auth/O2/token"
    }

    func handleToken(_ request: EmulatorRequest, now: Double) -> ProviderAnswer {
        let headers = [("content-type", "application/json")]
        func oauthError(_ status: Int, _ error: String, _ description: String) -> ProviderAnswer {
            let body = JSONValue.object(["error": .string(error), "error_description": .string(description)]).encodedSortingKeys()
            return ProviderAnswer(response: EmulatorResponse(status: status, headers: headers, body: body), reason: error)
        }
        guard request.method == "POST" else { return oauthError(405, "invalid_request", "Method not allowed; use POST.") }
        guard mediaType(request.header("content-type")) == "application/x-www-form-urlencoded",
              let (form, repeated) = FormBody.parse(request.body), !repeated
        else { return oauthError(400, "invalid_request", "The request body must be form-encoded with each parameter once.") }
        guard form["grant_type"] == "client_credentials" else {
            return oauthError(400, "unsupported_grant_type", "The authorization grant type is not supported by the authorization server.")
        }
        guard form["scope"] == "messaging:push" else {
            return oauthError(400, "invalid_scope", "The request has an invalid parameter: scope")
        }
        guard let clientID = form["client_id"], let secret = form["client_secret"], let expected = secrets[clientID],
              Digest.constantTimeEquals(Array(secret.utf8), Array(expected.utf8))
        else {
            return oauthError(401, "invalid_client", "Client authentication failed")
        }
        let grant = IssuedAccessToken(principal: clientID, projectID: nil, allowsMessaging: true,
                                      expiresAt: now + Double(configuration.accessTokenLifetimeSeconds))
        let token = tokens.issue(grant, now: now)
        let body = JSONValue.object([
            "access_token": .string(token),
            "expires_in": .number(JSONNumber(configuration.accessTokenLifetimeSeconds)),
            "scope": "messaging:push",
            "token_type": "bearer",
        ]).encodedSortingKeys()
        return ProviderAnswer(response: EmulatorResponse(status: 200, headers: headers, body: body))
    }

    // MARK: - Send (D.2, D.3)

    static func registrationID(ofSendPath path: String) -> String? {
        guard path.hasPrefix(sendPrefix), path.hasSuffix(sendSuffix) else { return nil }
        let id = path.dropFirst(sendPrefix.count).dropLast(sendSuffix.count)
        guard !id.utf8.contains(UInt8(ascii: "/")) else { return nil }
        return String(id)
    }

    func handleSend(_ request: EmulatorRequest, registrationID: String, connection: EmulatorConnectionState, now: Double, ids: EmulatorIDs) -> ProviderAnswer {
        func reject(_ reason: String) -> ProviderAnswer {
            let status = Self.statusForReason[reason] ?? 400
            var headers: [(String, String)] = [("content-type", "application/json"), ("x-amzn-requestid", ids.uuid())]
            if status == 429 || status == 503 { headers.append(("retry-after", String(retryAfterSeconds))) }
            let body: [UInt8] = status >= 500 ? [] : JSONValue.object(["reason": .string(reason)]).encodedSortingKeys()
            return ProviderAnswer(response: EmulatorResponse(status: status, headers: headers, body: body), reason: reason, token: registrationID)
        }
        guard request.method == "POST" else { return reject("InvalidType") }

        let authorization = request.header("authorization")
        let grant: IssuedAccessToken?
        if let authorization, authorization == connection.admAccessToken, let cached = connection.admGrant {
            grant = cached
        } else if let authorization, let token = FCMEmulator.bearerToken(authorization), let found = tokens.lookup(token) {
            connection.admAccessToken = authorization
            connection.admGrant = found
            grant = found
        } else {
            grant = nil
        }
        guard let grant, grant.expiresAt > now else { return reject("AccessTokenExpired") }

        guard request.header("x-amzn-type-version") == Self.typeVersion,
              request.header("x-amzn-accept-type") == Self.acceptType,
              mediaType(request.header("content-type")) == "application/json"
        else { return reject("InvalidType") }
        guard request.body.count <= configuration.maximumPayloadBytes else { return reject("MessageTooLarge") }
        guard let parsed = (try? JSONValue.parse(bytes: request.body)), case .object(let message) = parsed else { return reject("InvalidData") }

        let data = message["data"]
        if let data {
            guard case .object(let map) = data, map.allSatisfy({ $0.value.stringValue != nil }) else { return reject("InvalidData") }
        }
        let notification = message["notification"]
        if let notification {
            guard notification["title"]?.stringValue != nil, notification["body"]?.stringValue != nil else { return reject("InvalidData") }
        }
        guard data != nil || notification != nil else { return reject("InvalidData") }
        if let key = message["consolidationKey"], key.stringValue == nil { return reject("InvalidConsolidationKey") }
        if let expires = message["expiresAfter"] {
            guard let seconds = expires.numberValue?.int64Value, seconds >= 1, seconds <= configuration.maximumExpiresAfterSeconds else {
                return reject("InvalidExpiration")
            }
        }
        if let md5 = message["md5"], md5.stringValue == nil { return reject("InvalidChecksum") }
        guard Self.isWellFormed(registrationID: registrationID) else { return reject("InvalidRegistrationId") }

        var canonical = configuration.canonicalRegistrationIDs[registrationID] ?? registrationID
        if let rule = rules.match(registrationID) {
            if rule.outcome == "Canonical" {
                let rest = rule.prefix.map { registrationID.dropFirst($0.count) } ?? Substring(registrationID)
                canonical = (rule.canonicalPrefix ?? "renewed-") + rest
            } else {
                return reject(rule.outcome)
            }
        }
        var body: [UInt8] = Array(#"{"registrationID":"#.utf8)
        JSONText.appendQuoted(canonical, to: &body)
        body.append(UInt8(ascii: "}"))
        let headers: [(String, String)] = [("content-type", "application/json"), ("x-amzn-requestid", ids.uuid())]
        return ProviderAnswer(response: EmulatorResponse(status: 200, headers: headers, body: body),
                              reason: canonical == registrationID ? nil : "CanonicalRegistrationID", token: registrationID)
    }

    func faultResponse(_ fault: InjectedFault, accepted: ProviderAnswer, ids: EmulatorIDs) -> (EmulatorResponse, String) {
        let reason: String
        switch fault {
        case .throttle: reason = "MaxRateExceeded"
        case .internalError: reason = "InternalServerError"
        default: reason = "ServiceUnavailable"
        }
        let status = Self.statusForReason[reason]!
        var headers: [(String, String)] = [("content-type", "application/json"), ("x-amzn-requestid", ids.uuid())]
        if status == 429 || status == 503 { headers.append(("retry-after", String(retryAfterSeconds))) }
        let body: [UInt8] = status >= 500 ? [] : JSONValue.object(["reason": .string(reason)]).encodedSortingKeys()
        return (EmulatorResponse(status: status, headers: headers, body: body), reason)
    }

    static func isWellFormed(registrationID: String) -> Bool {
        !registrationID.isEmpty && registrationID.utf8.count <= 4096 && registrationID.utf8.allSatisfy { byte in
            (0x30...0x39).contains(byte) || (0x41...0x5a).contains(byte) || (0x61...0x7a).contains(byte)
                || [UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: ":"), UInt8(ascii: "|"), UInt8(ascii: "="),
                    UInt8(ascii: "+"), UInt8(ascii: "/"), UInt8(ascii: "-")].contains(byte)
        }
    }
}
