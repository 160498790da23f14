import ClarionCore
import ClarionCrypto
import ClarionHTTP2
import ClarionTransport
import Foundation

/// APNs' HTTP/2 provider API as docs/providers.md section A describes it: `POST /3/device/<token>` with a
/// provider JWT, answered with APNs status codes and `{"reason": ...}` bodies.
///
/// Checks, in order (the first failure answers):
/// 1. `:method` POST (A.1) else 405 `MethodNotAllowed`; `:path` `/3/device/<token>` else 404 `BadPath`;
///    an empty token is 400 `MissingDeviceToken`.
/// 2. A header field sent twice: 400 `DuplicateHeaders` (A.2).
/// 3. Authentication. A TLS client certificate the emulator accepts (issued by `apns.certificates`' CA, or
///    listed there; in date; for this environment) authenticates the connection and `authorization` is
///    ignored (A.2). Otherwise, without a provider token: a certificate that is not accepted is 403
///    `BadCertificate`, one restricted to the other environment 403 `BadCertificateEnvironment` (A.6), and
///    no certificate at all 403 `MissingProviderToken` ("no cert and no token", A.6).
///    Provider token (A.5): absent or not `bearer` is 403 `MissingProviderToken`; unreadable, not ES256,
///    unknown `kid`, `iss` not the key's team, bad signature, no integer `iat`, or `iat` in the future is
///    403 `InvalidProviderToken`; `iat` more than an hour old is 403 `ExpiredProviderToken`; a key limited
///    to the other environment is 403 `BadEnvironmentKeyIdInToken`; on a connection already bound to a
///    team, another team is 403 `InvalidProviderToken` and an unrelated key 403 `UnrelatedKeyIdInToken`;
///    a new token whose `iat` is less than 20 minutes after the connection's current one is 429
///    `TooManyProviderTokenUpdates`. A token accepted on a connection is cached there: later requests
///    with the same `authorization` only have their age checked.
/// 4. `apns-id` not a UUID: 400 `BadMessageId` (A.2).
/// 5. `apns-push-type` not a known type (or absent when required): 400 `InvalidPushType` (A.2, A.3).
/// 6. `apns-topic` absent: 400 `MissingTopic`; not a bundle id the key's team (or the certificate's
///    subject UID) may push to (with any
///    suffix): 400 `TopicDisallowed`; a permitted bundle id with the wrong suffix for the push type
///    (A.3 table): 400 `BadTopic` (emulator choice: Apple does not say which reason a suffix mismatch gets).
/// 7. `apns-priority` not 10, 5 or 1: 400 `BadPriority`; `background` with anything but 5 (an absent
///    header means 10): 400 `BadPriority` (A.3).
/// 8. `apns-expiration` not a non-negative integer: 400 `BadExpirationDate` (A.2).
/// 9. `apns-collapse-id` over 64 bytes: 400 `BadCollapseId` (A.2).
/// 10. Empty body: 400 `PayloadEmpty`; over 4096 bytes (5120 for `voip`): 413 `PayloadTooLarge` (A.4).
///     The payload is not parsed: size and headers are all the hot path looks at.
/// 11. Token not even-length hex within the configured lengths: 400 `BadDeviceToken` (A.8).
/// 12. Configured unregistered tokens: 410 `Unregistered` with `timestamp` in ms (A.6); token rules.
/// 13. 200 with an empty body.
///
/// Every answer carries `apns-id` (the request's or a generated one, A.6); sandbox 200s also carry
/// `apns-unique-id`.
///
/// A final class (immutable, so `Sendable`): as a struct held by `ProviderEmulator`, every call copied it,
/// retaining and releasing each of its arrays and dictionaries per request.
final class APNsEmulator: Sendable {
    struct Key: Sendable {
        let keyID: String
        let teamID: String
        let verifyingKey: VerifyingKey
        let environment: EmulatorConfiguration.APNs.Environment?
        let bundleIDs: Set<String>?
        let relatedKeyIDs: Set<String>
    }

    /// `apns-push-type` values and the topic suffix each requires (A.3). `mdm` takes the MDM topic
    /// as is; the emulator treats it like a bare bundle id.
    static let topicSuffixes: [String: String] = [
        "alert": "", "background": "", "mdm": "",
        "voip": ".voip",
        "complication": ".complication",
        "fileprovider": ".pushkit.fileprovider",
        "location": ".location-query",
        "liveactivity": ".push-type.liveactivity",
        "pushtotalk": ".voip-ptt",
        "controls": ".push-type.controls",
        "widgets": ".push-type.widgets",
    ]
    /// Non-empty suffixes, longest first, to infer a push type from a topic.
    static let suffixesLongestFirst: [(suffix: String, pushType: String)] = topicSuffixes
        .filter { !$0.value.isEmpty }
        .map { (suffix: $0.value, pushType: $0.key) }
        .sorted { $0.suffix.count > $1.suffix.count }

    /// APNs reasons and their statuses (A.6).
    static let statusForReason: [String: Int] = [
        "BadCollapseId": 400, "BadDeviceToken": 400, "BadExpirationDate": 400, "BadMessageId": 400,
        "BadPriority": 400, "BadTopic": 400, "DeviceTokenNotForTopic": 400, "DuplicateHeaders": 400,
        "IdleTimeout": 400, "InvalidPushType": 400, "MissingDeviceToken": 400, "MissingTopic": 400,
        "PayloadEmpty": 400, "TopicDisallowed": 400,
        "BadCertificate": 403, "BadCertificateEnvironment": 403, "ExpiredProviderToken": 403, "Forbidden": 403,
        "InvalidProviderToken": 403, "MissingProviderToken": 403, "UnrelatedKeyIdInToken": 403,
        "BadEnvironmentKeyIdInToken": 403,
        "BadPath": 404, "MethodNotAllowed": 405,
        "ExpiredToken": 410, "Unregistered": 410,
        "PayloadTooLarge": 413,
        "TooManyProviderTokenUpdates": 429, "TooManyRequests": 429,
        "InternalServerError": 500, "ServiceUnavailable": 503, "Shutdown": 503,
    ]

    static let pathPrefix: StaticString = "/3/device/"
    static let maximumPayload = 4096
    static let maximumVoIPPayload = 5120
    static let maximumCollapseIDBytes = 64

    let configuration: EmulatorConfiguration.APNs
    let keys: [String: Key]
    let bundlesByTeam: [String: Set<String>]
    let rules: TokenRuleSet
    /// `{"reason":"..."}` per reason, built once.
    let reasonBodies: [String: [UInt8]]
    /// Certificate auth: the CA certificates (PEM) client certificates are verified against, for the TLS server.
    let trustedClientCAPEM: String?
    /// Certificate auth: SHA-256 of each certificate accepted as it is.
    let acceptedCertificateHashes: Set<String>

    init(configuration: EmulatorConfiguration.APNs, rules: [EmulatorTokenRule]) throws(EmulatorConfigurationError) {
        self.configuration = configuration
        var keys: [String: Key] = [:]
        for key in configuration.keys {
            let pem: String
            if let inline = key.publicKeyPEM {
                pem = inline
            } else if let path = key.publicKeyPath {
                guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                    throw EmulatorConfigurationError("APNs key \(key.keyID): cannot read \(path)")
                }
                pem = text
            } else {
                throw EmulatorConfigurationError("APNs key \(key.keyID): give publicKeyPEM or publicKeyPath")
            }
            let verifyingKey: VerifyingKey
            do {
                verifyingKey = try VerifyingKey(pem: pem)
            } catch {
                throw EmulatorConfigurationError("APNs key \(key.keyID): \(error)")
            }
            guard verifyingKey.algorithm == .es256 else {
                throw EmulatorConfigurationError("APNs key \(key.keyID) is not a P-256 key (A.5: ES256 only)")
            }
            guard keys[key.keyID] == nil else {
                throw EmulatorConfigurationError("APNs key id \(key.keyID) is configured twice")
            }
            keys[key.keyID] = Key(keyID: key.keyID, teamID: key.teamID, verifyingKey: verifyingKey, environment: key.environment,
                                  bundleIDs: key.bundleIDs.map(Set.init), relatedKeyIDs: Set(key.relatedKeyIDs ?? []))
        }
        self.keys = keys
        var bundles: [String: Set<String>] = [:]
        for team in configuration.teams { bundles[team.teamID, default: []].formUnion(team.bundleIDs) }
        self.bundlesByTeam = bundles
        (trustedClientCAPEM, acceptedCertificateHashes) = try Self.loadCertificates(configuration.certificates)
        self.rules = TokenRuleSet(rules, provider: .apns)
        for rule in self.rules.rules where Self.statusForReason[rule.outcome] == nil {
            throw EmulatorConfigurationError("token rule outcome \(rule.outcome) is not an APNs reason")
        }
        var bodies: [String: [UInt8]] = [:]
        for reason in Self.statusForReason.keys {
            bodies[reason] = JSONValue.object(["reason": .string(reason)]).encodedSortingKeys()
        }
        self.reasonBodies = bodies
    }

    // MARK: - Handling

    func handle(_ request: EmulatorRequest, connection: EmulatorConnectionState, now: Double, ids: EmulatorIDs) -> ProviderAnswer {
        // One pass over the header bytes: pick out ours. Values stay bytes (slices of the request's one header
        // buffer) on the hot path: the checks compare bytes, and strings are made only where an answer needs one.
        var apnsID: ArraySlice<UInt8>?
        var authorization: ArraySlice<UInt8>?
        var topic: ArraySlice<UInt8>?
        var pushType: ArraySlice<UInt8>?
        var priority: ArraySlice<UInt8>?
        var expiration: ArraySlice<UInt8>?
        var collapseID: ArraySlice<UInt8>?
        let fields = request.headerFields
        fields.forEachField { name, value in
            typealias Fields = HTTP2HeaderFields
            switch name.count {
            case 13:
                if Fields.name(name, is: "authorization") {
                    authorization = fields[value]
                } else if Fields.name(name, is: "apns-priority") {
                    priority = fields[value]
                }
            case 10: if Fields.name(name, is: "apns-topic") { topic = fields[value] }
            case 14: if Fields.name(name, is: "apns-push-type") { pushType = fields[value] }
            case 15: if Fields.name(name, is: "apns-expiration") { expiration = fields[value] }
            case 16: if Fields.name(name, is: "apns-collapse-id") { collapseID = fields[value] }
            case 7: if Fields.name(name, is: "apns-id") { apnsID = fields[value] }
            default: break
            }
        }
        // A.2 DuplicateHeaders: any field name sent twice.
        let duplicate = fields.hasRepeatedName
        let validID = apnsID.map(Self.isUUID(bytes:)) ?? true
        let responseID = validID ? apnsID.map { String(decoding: $0, as: UTF8.self) } ?? ids.uuid() : ids.uuid()
        func reject(_ reason: String, token: Substring? = nil, maxStreams: UInt32? = nil) -> ProviderAnswer {
            let status = Self.statusForReason[reason] ?? 400
            return ProviderAnswer(
                response: EmulatorResponse(status: status, headers: [("apns-id", responseID)], body: reasonBodies[reason] ?? []),
                reason: reason, token: token, maxConcurrentStreams: maxStreams)
        }

        guard request.method == "POST" else { return reject("MethodNotAllowed") }
        guard request.path.hasASCIIPrefix(Self.pathPrefix) else { return reject("BadPath") }
        // A slice of the path: no copy unless the answer is recorded. (Indexed by UTF-8 offset: the prefix is ASCII,
        // and `dropFirst` would walk grapheme clusters.)
        let path = request.path
        let token = path[path.utf8.index(path.utf8.startIndex, offsetBy: Self.pathPrefix.utf8CodeUnitCount)...]
        guard !token.isEmpty else { return reject("MissingDeviceToken") }
        guard !duplicate else { return reject("DuplicateHeaders", token: token) }

        // A.5 provider token.
        var newLimit: UInt32?
        switch authenticate(authorization, connection: connection, now: now) {
        case .rejected(let reason):
            return reject(reason, token: token)
        case .accepted(let firstOnConnection):
            if firstOnConnection, connection.advertisedMaxConcurrentStreams != configuration.maxConcurrentStreamsAfterToken {
                newLimit = configuration.maxConcurrentStreamsAfterToken
            }
        }
        func rejectAuthenticated(_ reason: String) -> ProviderAnswer { reject(reason, token: token, maxStreams: newLimit) }

        guard validID else { return rejectAuthenticated("BadMessageId") }

        // A.3 push type and topic.
        guard let topic else { return rejectAuthenticated("MissingTopic") }
        let resolvedType: String
        if let known = connection.apnsCheckedResolvedType, let checkedTopic = connection.apnsCheckedTopic,
           topic.isSame(as: checkedTopic), Self.same(pushType, connection.apnsCheckedPushType) {
            // Hot path: the same topic and push type as the connection's last accepted check.
            resolvedType = known
        } else {
            let topicText = String(decoding: topic, as: UTF8.self)
            let allowed = allowedBundles(connection: connection)
            if let pushType {
                let pushTypeText = String(decoding: pushType, as: UTF8.self)
                guard Self.topicSuffixes[pushTypeText] != nil else { return rejectAuthenticated("InvalidPushType") }
                resolvedType = pushTypeText
            } else {
                if configuration.requirePushType { return rejectAuthenticated("InvalidPushType") }
                resolvedType = Self.inferPushType(topic: topicText, allowed: allowed)
            }
            if let problem = Self.checkTopic(topicText, pushType: resolvedType, allowed: allowed) {
                return rejectAuthenticated(problem)
            }
            connection.apnsCheckedTopic = Array(topic)
            connection.apnsCheckedPushType = pushType.map(Array.init)
            connection.apnsCheckedResolvedType = resolvedType
        }

        // A.2/A.3 priority: 10 (default), 5, 1; background must be 5.
        let effectivePriority: Int
        if let priority {
            // Bytes compared directly: `elementsEqual` against a `String.UTF8View` walks both generically, on every
            // request.
            let first = priority.first ?? 0
            if priority.count == 2 && first == UInt8(ascii: "1") && priority.last == UInt8(ascii: "0") {
                effectivePriority = 10
            } else if priority.count == 1 && first == UInt8(ascii: "5") {
                effectivePriority = 5
            } else if priority.count == 1 && first == UInt8(ascii: "1") {
                effectivePriority = 1
            } else {
                return rejectAuthenticated("BadPriority")
            }
        } else {
            effectivePriority = 10
        }
        if resolvedType == "background", effectivePriority != 5 { return rejectAuthenticated("BadPriority") }

        // A.2 expiration: UNIX epoch seconds, 0 allowed.
        if let expiration {
            guard !expiration.isEmpty, expiration.count <= 18, expiration.allSatisfy({ (0x30...0x39).contains($0) }) else {
                return rejectAuthenticated("BadExpirationDate")
            }
        }
        // A.2 collapse id.
        if let collapseID, collapseID.count > Self.maximumCollapseIDBytes { return rejectAuthenticated("BadCollapseId") }

        // A.4 payload.
        guard !request.body.isEmpty else { return rejectAuthenticated("PayloadEmpty") }
        let limit = resolvedType == "voip" ? Self.maximumVoIPPayload : Self.maximumPayload
        guard request.body.count <= limit else { return rejectAuthenticated("PayloadTooLarge") }

        // A.8 token format, and the token rules (applied below, after the configured 410s): both read the token's
        // bytes in place, in the path's storage.
        var pathBytes = path
        let (wellFormed, rule) = pathBytes.withUTF8 { all -> (Bool, EmulatorTokenRule?) in
            let bytes = UnsafeBufferPointer(rebasing: all[Self.pathPrefix.utf8CodeUnitCount...])
            guard isWellFormed(bytes) else { return (false, nil) }
            return (true, rules.match(bytes: bytes))
        }
        guard wellFormed else { return rejectAuthenticated("BadDeviceToken") }

        // A.6 410 for configured tokens, then the token rules.
        if !configuration.unregisteredTokens.isEmpty {
            let text = String(token)
            if let stamp = configuration.unregisteredTokens[text] ?? configuration.unregisteredTokens[text.lowercased()] {
                return gone("Unregistered", timestamp: stamp == 0 ? Int64(now * 1000) : stamp, token: token, id: responseID,
                            maxStreams: newLimit)
            }
        }
        if let rule {
            if Self.statusForReason[rule.outcome] == 410 {
                return gone(rule.outcome, timestamp: Int64(now * 1000), token: token, id: responseID, maxStreams: newLimit)
            }
            return rejectAuthenticated(rule.outcome)
        }

        var headers = [("apns-id", responseID)]
        if configuration.environment == .sandbox { headers.append(("apns-unique-id", ids.uuid())) }
        return ProviderAnswer(response: EmulatorResponse(status: 200, headers: headers), reason: nil, token: token, maxConcurrentStreams: newLimit)
    }

    /// Both absent, or both the same bytes.
    private static func same(_ value: ArraySlice<UInt8>?, _ cached: [UInt8]?) -> Bool {
        switch (value, cached) {
        case (nil, nil): return true
        case (let value?, let cached?): return value.isSame(as: cached)
        default: return false
        }
    }

    /// 410 with `{"reason": ..., "timestamp": <ms>}` (A.6: milliseconds since the epoch).
    private func gone(_ reason: String, timestamp: Int64, token: Substring, id: String, maxStreams: UInt32?) -> ProviderAnswer {
        let body = JSONValue.object(["reason": .string(reason), "timestamp": .number(JSONNumber(timestamp))]).encodedSortingKeys()
        return ProviderAnswer(response: EmulatorResponse(status: 410, headers: [("apns-id", id)], body: body),
                              reason: reason, token: token, maxConcurrentStreams: maxStreams)
    }

    /// The answer for an injected fault on a request that would have been accepted.
    func faultResponse(_ fault: InjectedFault, accepted: ProviderAnswer) -> (EmulatorResponse, String) {
        let reason: String
        switch fault {
        case .throttle: reason = "TooManyRequests"
        case .internalError: reason = "InternalServerError"
        default: reason = "ServiceUnavailable"
        }
        let id = accepted.response.header("apns-id") ?? ""
        return (EmulatorResponse(status: Self.statusForReason[reason]!, headers: [("apns-id", id)], body: reasonBodies[reason]!), reason)
    }

    // MARK: - Provider token (A.5)

    enum Authentication {
        case accepted(firstOnConnection: Bool)
        case rejected(String)
    }

    func authenticate(_ authorizationBytes: ArraySlice<UInt8>?, connection: EmulatorConnectionState,
                      now: Double) -> Authentication {
        // A.2: a connection the TLS client certificate authenticates needs no provider token (`authorization` is
        // ignored). Judged once per connection: the certificate cannot change under it.
        let certificate: CertificateVerdict
        if let known = connection.apnsCertificateVerdict {
            certificate = known
        } else {
            certificate = judge(connection.peerCertificate, now: now)
            connection.apnsCertificateVerdict = certificate
        }
        if case .accepted = certificate {
            let first = !connection.apnsCertificateAuthenticated
            connection.apnsCertificateAuthenticated = true
            return .accepted(firstOnConnection: first)
        }
        guard let authorizationBytes, !authorizationBytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) else {
            switch certificate {
            case .notAccepted: return .rejected("BadCertificate")
            case .wrongEnvironment: return .rejected("BadCertificateEnvironment")
            case .none, .accepted: return .rejected("MissingProviderToken")
            }
        }
        // Hot path: the token this connection already presented (compared as bytes, no string made).
        if let accepted = connection.apnsAcceptedAuthorization, authorizationBytes.isSame(as: accepted) {
            if Int64(now) - connection.apnsTokenIssuedAt > configuration.tokenMaximumAgeSeconds {
                return .rejected("ExpiredProviderToken")
            }
            return .accepted(firstOnConnection: false)
        }
        let authorization = String(decoding: authorizationBytes, as: UTF8.self)
        guard authorization.utf8.count > 7,
              authorization.utf8.prefix(7).elementsEqual("bearer ".utf8, by: { ($0 | 0x20) == $1 })
        else { return .rejected("MissingProviderToken") }
        let jwt = authorization.dropFirst(7).trimmingCharacters(in: .whitespaces)
        guard !jwt.isEmpty else { return .rejected("MissingProviderToken") }

        guard let decoded = try? JWT.decode(jwt), decoded.algorithm == .es256,
              let kid = decoded.headerString("kid"), let key = keys[kid],
              decoded.claimString("iss") == key.teamID,
              (try? decoded.verify(with: key.verifyingKey)) != nil,
              let iat = decoded.claimInt64("iat"),
              iat <= Int64(now) + configuration.tokenClockSkewSeconds
        else { return .rejected("InvalidProviderToken") }
        if Int64(now) - iat > configuration.tokenMaximumAgeSeconds { return .rejected("ExpiredProviderToken") }
        if let environment = key.environment, environment != configuration.environment {
            return .rejected("BadEnvironmentKeyIdInToken")
        }
        if let boundTeam = connection.apnsTeamID, let boundKey = connection.apnsKeyID {
            guard boundTeam == key.teamID else { return .rejected("InvalidProviderToken") }
            if boundKey != kid {
                let related = key.relatedKeyIDs.contains(boundKey) || (keys[boundKey]?.relatedKeyIDs.contains(kid) ?? false)
                guard related else { return .rejected("UnrelatedKeyIdInToken") }
            }
        }
        // A.5: a new token at most once per 20 minutes on a connection, judged by the tokens' `iat`
        // (emulator choice: a connection opened late in a shared token's life may take the next token
        // at once, as Clarion's shared-token design does; pushy #811 suggests Apple can be stricter).
        if connection.apnsAcceptedAuthorization != nil, iat - connection.apnsTokenIssuedAt < configuration.tokenMinimumRefreshSeconds {
            return .rejected("TooManyProviderTokenUpdates")
        }
        let first = connection.apnsAcceptedAuthorization == nil
        connection.apnsAcceptedAuthorization = Array(authorizationBytes)
        connection.apnsTokenIssuedAt = iat
        if connection.apnsKeyID != kid {
            // Another key may allow other topics: forget the cached topic check.
            connection.apnsCheckedTopic = nil
            connection.apnsCheckedPushType = nil
            connection.apnsCheckedResolvedType = nil
        }
        connection.apnsKeyID = kid
        connection.apnsTeamID = key.teamID
        return .accepted(firstOnConnection: first)
    }

    // MARK: - Client certificate (A.2, A.6)

    /// What a connection's client certificate is worth.
    enum CertificateVerdict: Sendable, Equatable {
        /// No certificate (h2c, or the client sent none).
        case none
        /// Accepted; it may push to these bundle ids (its subject UID).
        case accepted(bundleIDs: Set<String>)
        /// Not issued by the configured CA nor listed, or out of date: `BadCertificate`.
        case notAccepted
        /// Accepted, but marked for the other environment: `BadCertificateEnvironment`.
        case wrongEnvironment
    }

    /// Apple's environment markers in push certificates (obs: OIDs as third-party APNs clients read them, e.g.
    /// SwiftyAPNS; Apple's pages read here name only the topic extension 1.2.840.113635.100.6.3.6, A.3). A
    /// certificate with only the development marker is sandbox-only, with only the production marker
    /// production-only; with both or neither ("universal") it works in both.
    static let developmentMarkerOID = "1.2.840.113635.100.6.3.1"
    static let productionMarkerOID = "1.2.840.113635.100.6.3.2"

    var acceptsCertificates: Bool { trustedClientCAPEM != nil || !acceptedCertificateHashes.isEmpty }

    func judge(_ peer: TLSPeerCertificate?, now: Double) -> CertificateVerdict {
        guard let peer else { return .none }
        let certificate = peer.certificate
        // OpenSSL has checked a CA-issued certificate's dates (against the real clock) in the handshake; a
        // certificate accepted as it is has its expiry checked here, against the emulator's clock.
        let issued = trustedClientCAPEM != nil && peer.isVerified
        let pinned = acceptedCertificateHashes.contains(certificate.sha256) && (certificate.notAfter ?? .max) >= Int64(now)
        guard issued || pinned else { return .notAccepted }
        let development = certificate.extensionOIDs.contains(Self.developmentMarkerOID)
        let production = certificate.extensionOIDs.contains(Self.productionMarkerOID)
        if development != production {
            let environment: EmulatorConfiguration.APNs.Environment = development ? .sandbox : .production
            if environment != configuration.environment { return .wrongEnvironment }
        }
        let bundleIDs = certificate.subjectUserID.map { Set([$0]) } ?? []
        return .accepted(bundleIDs: bundleIDs)
    }

    static func loadCertificates(_ certificates: EmulatorConfiguration.APNs.Certificates) throws(EmulatorConfigurationError) -> (String?, Set<String>) {
        func read(_ path: String) throws(EmulatorConfigurationError) -> String {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw EmulatorConfigurationError("APNs certificates: cannot read \(path)")
            }
            return text
        }
        var caParts: [String] = []
        if let inline = certificates.trustedCAPEM { caParts.append(inline) }
        if let path = certificates.trustedCAPath { caParts.append(try read(path)) }
        let caPEM = caParts.isEmpty ? nil : caParts.joined(separator: "\n")
        if let caPEM {
            do {
                _ = try TLSCertificate(pem: caPEM)
            } catch {
                throw EmulatorConfigurationError("APNs certificates: trustedCA is not a PEM certificate")
            }
        }
        var hashes = Set<String>()
        var accepted = certificates.acceptedCertificatePEMs
        for path in certificates.acceptedCertificatePaths { accepted.append(try read(path)) }
        for pem in accepted {
            do {
                hashes.insert(try TLSCertificate(pem: pem).sha256)
            } catch {
                throw EmulatorConfigurationError("APNs certificates: an accepted certificate is not a PEM certificate")
            }
        }
        return (caPEM, hashes)
    }

    // MARK: - Topic (A.3)

    private func allowedBundles(connection: EmulatorConnectionState) -> Set<String> {
        if connection.apnsCertificateAuthenticated, case .accepted(let bundleIDs) = connection.apnsCertificateVerdict {
            return bundleIDs
        }
        guard let kid = connection.apnsKeyID, let key = keys[kid] else { return [] }
        return key.bundleIDs ?? bundlesByTeam[key.teamID] ?? []
    }

    static func inferPushType(topic: String, allowed: Set<String>) -> String {
        for (suffix, pushType) in suffixesLongestFirst where topic.hasSuffix(suffix) {
            if allowed.contains(String(topic.dropLast(suffix.count))) { return pushType }
        }
        return "alert"
    }

    /// nil when `topic` is right for `pushType`, else the reason.
    static func checkTopic(_ topic: String, pushType: String, allowed: Set<String>) -> String? {
        guard !topic.isBlank else { return "BadTopic" }
        let suffix = topicSuffixes[pushType] ?? ""
        if topic.hasSuffix(suffix), allowed.contains(String(topic.dropLast(suffix.count))) { return nil }
        if allowed.contains(topic) { return "BadTopic" }
        for (other, _) in suffixesLongestFirst where topic.hasSuffix(other) {
            if allowed.contains(String(topic.dropLast(other.count))) { return "BadTopic" }
        }
        return "TopicDisallowed"
    }

    // MARK: - Formats

    /// Even-length hex within the configured lengths.
    func isWellFormed(_ token: UnsafeBufferPointer<UInt8>) -> Bool {
        let count = token.count
        guard count % 2 == 0, count >= configuration.minimumTokenLength, count <= configuration.maximumTokenLength else { return false }
        return Self.hexDigitTable.withUnsafeBufferPointer { table in
            var notHex: UInt8 = 0
            for byte in token { notHex |= table[Int(byte)] }  // no branch per byte
            return notHex == 0
        }
    }

    /// 0 at the byte values of `0-9a-fA-F`, 1 elsewhere.
    private static let hexDigitTable: [UInt8] = (0..<256).map { byte in
        (0x30...0x39).contains(byte) || (0x61...0x66).contains(byte) || (0x41...0x46).contains(byte) ? 0 : 1
    }

    /// 8-4-4-4-12 hex digits (either case).
    static func isUUID(_ text: String) -> Bool {
        isUUID(bytes: Array(text.utf8)[...])
    }

    static func isUUID(bytes: ArraySlice<UInt8>) -> Bool {
        guard bytes.count == 36 else { return false }
        for (index, byte) in bytes.enumerated() {
            if index == 8 || index == 13 || index == 18 || index == 23 {
                guard byte == 0x2d else { return false }
            } else {
                guard (0x30...0x39).contains(byte) || (0x61...0x66).contains(byte) || (0x41...0x46).contains(byte) else { return false }
            }
        }
        return true
    }
}

extension ArraySlice<UInt8> {
    /// Byte equality with one `memcmp` (the generic `elementsEqual` goes byte by byte through the iterator).
    func isSame(as other: [UInt8]) -> Bool {
        guard count == other.count else { return false }
        return withUnsafeBufferPointer { mine in
            other.withUnsafeBufferPointer { theirs in
                mine.isEmpty || memcmp(mine.baseAddress!, theirs.baseAddress!, mine.count) == 0
            }
        }
    }
}
