import ClarionCore
import ClarionStore
import Foundation

/// CreatePlatformApplication, Get/SetPlatformApplicationAttributes, ListPlatformApplications,
/// DeletePlatformApplication (docs/providers.md C.7).
enum PlatformApplicationActions {
    static let platforms: Set<String> = ["APNS", "APNS_SANDBOX", "GCM", "ADM", "WEBPUSH", "HMS"]
    static let secretAttributes: Set<String> = ["PlatformCredential", "PlatformPrincipal"]
    static let eventAttributes = ["EventEndpointCreated", "EventEndpointUpdated", "EventEndpointDeleted", "EventDeliveryFailure"]
    static let storedAttributes: Set<String> = Set(eventAttributes).union([
        "SuccessFeedbackRoleArn", "FailureFeedbackRoleArn", "SuccessFeedbackSampleRate", "ApplePlatformTeamID",
        "ApplePlatformBundleID", WebPushRules.subjectAttribute,
    ]).union(clarionAttributes)
    /// Clarion's own attributes: where the provider is (every provider base URL is configurable, so the same
    /// code talks to Apple, Google and Amazon in production and to the emulator in tests), extra trust, and
    /// the FCM project-id override, the Huawei app id (`HMSAppID`, default the client id), and the send-rate limit (`ClarionSendRate`, deliveries per second per
    /// gateway process; empty removes the limit).
    static let clarionAttributes: Set<String> = ["ProviderEndpoint", "ProviderAuthEndpoint", "ProviderCACertificate",
                                                 "FCMProjectID", "ClarionSendRate", ProviderAttribute.hmsAppID]
    static let settable = storedAttributes.union(secretAttributes).union(["Enabled"])

    static func register(_ table: inout SNSActionTable, _ context: SNSActionContext) {
        table.register("CreatePlatformApplication") { request throws(SNSError) in
            let name = try request.parameters.required("Name")
            let platform = try request.parameters.required("Platform")
            let attributes = try request.parameters.stringMap("Attributes")
            guard name.utf8.count <= 256, !name.isEmpty,
                  name.utf8.allSatisfy({ isNameByte($0) || $0 == UInt8(ascii: ".") }) else {
                throw SNSError.invalidParameter("Name", reason: "must be 1 to 256 characters of A-Z, a-z, 0-9, '_', '-', '.'")
            }
            guard platforms.contains(platform) else {
                throw SNSError.invalidParameter("Platform", reason: "\(platform) is not one of ADM, APNS, APNS_SANDBOX, GCM, HMS, WEBPUSH")
            }
            var split = try validate(attributes, request: request, platform: platform)
            let account = try await context.accountKey(request.caller)
            try await checkEventTopics(split.stored, accountKey: account, context.topics)
            var credentials = PlatformCredentials(credential: attributes["PlatformCredential"], principal: attributes["PlatformPrincipal"])
            if platform == Platform.webPush.rawValue {
                let existing = try? await context.applications.get(accountKey: account, region: request.region, platform: platform, name: name)
                try webPushCredentials(&credentials, &split, existing: existing)
            }
            let expiresAt = try checkAPNsCertificate(credentials, platform: platform, context.settingsCheck)
            split.stored.merge(certificateExpiry(given: credentials, expiresAt: expiresAt, platform: platform)) { $1 }
            switch platform {
            case "GCM":
                guard credentials.credential?.isEmpty == false else {
                    throw SNSError.invalidParameter("Attributes", reason: "PlatformCredential is required for GCM (an API key or a service-account JSON)")
                }
            case "WEBPUSH":
                break  // the key is given or generated (webPushCredentials)
            default:
                guard credentials.credential?.isEmpty == false, credentials.principal?.isEmpty == false else {
                    throw SNSError.invalidParameter("Attributes", reason: "PlatformCredential and PlatformPrincipal are required for \(platform)")
                }
            }
            try checkConnection(platform: platform, attributes: split.stored, credentials: credentials, context.settingsCheck)
            let (record, _) = try await store {
                () async throws(StoreError) -> (PlatformApplicationRecord, created: Bool) in
                try await context.applications.createOrUpdate(accountKey: account, region: request.region, name: name, platform: platform,
                                                               credentials: credentials, attributes: split.stored)
            }
            if let enabled = split.enabled, enabled != record.enabled {
                _ = try await store { () async throws(StoreError) in
                    try await context.applications.update(applicationKey: record.key, enabled: enabled, disabledReason: "set by the API")
                }
            }
            let arn = SNSARN.application(request.region, request.caller.accountID, platform: platform, name: name)
            return XMLResponse { $0.element("PlatformApplicationArn", arn) }
        }

        table.register("GetPlatformApplicationAttributes") { request throws(SNSError) in
            let (record, _) = try await application(request, context)
            return XMLResponse { $0.entries("Attributes", visibleAttributes(record)) }
        }

        table.register("SetPlatformApplicationAttributes") { request throws(SNSError) in
            let (record, _) = try await application(request, context)
            let attributes = try request.parameters.stringMap("Attributes")
            var split = try validate(attributes, request: request, platform: record.platform)
            try await checkEventTopics(split.stored, accountKey: try await context.accountKey(request.caller), context.topics)
            var credentials = PlatformCredentials(credential: attributes["PlatformCredential"], principal: attributes["PlatformPrincipal"])
            if record.platform == Platform.webPush.rawValue {
                try webPushCredentials(&credentials, &split, existing: record)
            }
            let pair = try await store(notFound: notFound) { () async throws(StoreError) in
                try await completed(credentials, record, context.applications)
            }
            let expiresAt = try checkAPNsCertificate(pair, platform: record.platform, context.settingsCheck)
            split.stored.merge(certificateExpiry(given: credentials, expiresAt: expiresAt, platform: record.platform)) { $1 }
            let after = try await store(notFound: notFound) { () async throws(StoreError) in
                try await merged(credentials, record, context.applications)
            }
            try checkConnection(platform: record.platform, attributes: record.attributes.merging(split.stored) { $1 }, credentials: after,
                                context.settingsCheck)
            _ = try await store(notFound: notFound) { () async throws(StoreError) in
                try await context.applications.update(applicationKey: record.key, attributes: split.stored, credentials: credentials,
                                                       enabled: split.enabled, disabledReason: split.enabled == false ? "set by the API" : nil)
            }
            return .empty
        }

        table.register("ListPlatformApplications") { request throws(SNSError) in
            let account = try await context.accountKey(request.caller)
            let after = try request.nextToken()
            let page = try await store { () async throws(StoreError) in
                try await context.applications.list(accountKey: account, region: request.region, after: after, limit: 100)
            }
            return XMLResponse { xml in
                xml.members("PlatformApplications", page.items) { xml, app in
                    xml.element("PlatformApplicationArn",
                                SNSARN.application(app.region, request.caller.accountID, platform: app.platform, name: app.name))
                    xml.entries("Attributes", visibleAttributes(app))
                }
                xml.nextToken(page.next)
            }
        }

        table.register("DeletePlatformApplication") { request throws(SNSError) in
            let arn = try request.arn("PlatformApplicationArn")
            guard case .application(let platform, let name) = arn.resource else {
                throw SNSError.noSuchResource(parameter: "PlatformApplicationArn")
            }
            let account = try await context.accountKey(request.caller)
            // Idempotent, as SNS: deleting what does not exist succeeds.
            guard let record = try? await context.applications.get(accountKey: account, region: request.region, platform: platform, name: name) else {
                return .empty
            }
            _ = try await store { () async throws(StoreError) in try await context.applications.delete(applicationKey: record.key) }
            _ = try await store { () async throws(StoreError) in try await context.tags.removeAll(resourceARN: arn.text) }
            let endpoints = SNSARN.endpoint(request.region, request.caller.accountID, platform: platform, application: name, id: UUID())
            let endpointPrefix = String(endpoints.dropLast(36))
            _ = try await store { () async throws(StoreError) in try await context.tags.removeAll(resourceARNPrefix: endpointPrefix) }
            return .empty
        }
    }

    static let notFound = SNSError.notFound("PlatformApplication does not exist")

    /// WEBPUSH (docs/providers.md W.2): `VAPIDSubject` is required (given now or stored), `PlatformPrincipal` has no
    /// use, and the VAPID key is `PlatformCredential` (a P-256 PEM) or, for a new application given none, a new key
    /// pair. Either way the read-only `VAPIDPublicKey` is stored beside it. An existing application given no key keeps
    /// its own: replacing it would orphan every browser subscription made with the old public key.
    static func webPushCredentials(_ credentials: inout PlatformCredentials, _ split: inout Split,
                                   existing: PlatformApplicationRecord?) throws(SNSError) {
        do throws(WebPushRules.RuleError) {
            if credentials.principal != nil {
                throw WebPushRules.RuleError(attribute: "PlatformPrincipal", reason: "WEBPUSH takes no PlatformPrincipal: the VAPID key is PlatformCredential")
            }
            try WebPushRules.checkSubject(split.stored[WebPushRules.subjectAttribute] ?? existing?.attributes[WebPushRules.subjectAttribute])
            if credentials.credential != nil || existing == nil {
                let pair = try WebPushRules.keyPair(credential: credentials.credential)
                credentials.credential = pair.privateKeyPEM
                split.stored[WebPushRules.publicKeyAttribute] = pair.publicKey
            }
        } catch {
            throw SNSError.invalidParameter("Attributes", reason: "\(error.attribute): \(error.reason)")
        }
    }

    /// APNs certificate auth (a PEM certificate in `PlatformPrincipal`, its private key in `PlatformCredential`,
    /// docs/providers.md C.7): the pair must load into TLS and the key must be the certificate's, checked by the very
    /// code the HTTP/2 pool runs, so a bad pair is refused here rather than at the first send. Token auth, ADM and
    /// GCM credentials are only checked for presence, as before.
    /// Returns the certificate's expiry for certificate auth (nil otherwise).
    @discardableResult
    static func checkAPNsCertificate(_ credentials: PlatformCredentials, platform: String,
                                     _ check: any PlatformSettingsCheck) throws(SNSError) -> Date? {
        guard let platform = Platform(rawValue: platform), platform.provider == .apns,
              let principal = credentials.principal, principal.contains("-----BEGIN") else { return nil }
        var attributes = [ProviderAttribute.platformPrincipal: principal]
        attributes[ProviderAttribute.platformCredential] = credentials.credential
        do {
            return try check.apnsCertificateExpiry(platform: platform, attributes: attributes)
        } catch {
            throw SNSError.invalidParameter("Attributes", reason: error.description)
        }
    }

    static let certificateExpiryAttribute = "AppleCertificateExpiryDate"

    /// The read-only `AppleCertificateExpiryDate` (C.7) a create or update stores: the certificate's expiry
    /// (ISO 8601, UTC) when the call gives an APNs certificate principal; empty, which is not shown, when it gives a
    /// token-auth principal; nothing when it gives no principal (a new key alone keeps the certificate).
    static func certificateExpiry(given: PlatformCredentials, expiresAt: Date?, platform: String) -> [String: String] {
        guard Platform(rawValue: platform)?.provider == .apns, given.principal != nil else { return [:] }
        guard let expiresAt else { return [certificateExpiryAttribute: ""] }
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        return [certificateExpiryAttribute: formatter.string(from: expiresAt)]
    }

    /// What a provider pool of the application is built from must make one: settings the dispatcher would refuse at
    /// the first delivery (a `ProviderCACertificate` OpenSSL cannot load, an endpoint that is not a URL, an APNs
    /// certificate or key that TLS cannot use) are refused now, by the code the dispatcher runs
    /// (`ProviderApplication.checkSettings`). The reason names the attribute, as SNS's InvalidParameter does.
    /// `attributes`: the application's stored attributes as they will be; `credentials`: the pair as it will be.
    static func checkConnection(platform: String, attributes: [String: String], credentials: PlatformCredentials,
                                _ check: any PlatformSettingsCheck) throws(SNSError) {
        do {
            try connectionError(platform: platform, attributes: attributes, credentials: credentials, check)
        } catch {
            throw SNSError.invalidParameter("Attributes", reason: error.description)
        }
    }

    /// `checkConnection`'s check, with the provider layer's refusal (which names the attribute at fault).
    static func connectionError(platform: String, attributes: [String: String], credentials: PlatformCredentials,
                                _ check: any PlatformSettingsCheck) throws(PlatformSettingsRefusal) {
        guard let platform = Platform(rawValue: platform) else { return }
        var all = attributes
        all[ProviderAttribute.platformCredential] = credentials.credential
        all[ProviderAttribute.platformPrincipal] = credentials.principal
        try check.check(platform: platform, attributes: all)
    }

    /// Both halves as they will be after an update: the given ones, the others from the store.
    static func merged(_ given: PlatformCredentials, _ record: PlatformApplicationRecord,
                       _ applications: PlatformApplicationRepository) async throws(StoreError) -> PlatformCredentials {
        guard given.credential == nil || given.principal == nil else { return given }
        let stored = try await applications.credentials(applicationKey: record.key)
        return PlatformCredentials(credential: given.credential ?? stored.credential, principal: given.principal ?? stored.principal)
    }

    /// The pair as it will be after an update that gives only one half: the other half from the store. Opened
    /// only when it matters (an APNs application and one half given).
    static func completed(_ given: PlatformCredentials, _ record: PlatformApplicationRecord,
                          _ applications: PlatformApplicationRepository) async throws(StoreError) -> PlatformCredentials {
        guard Platform(rawValue: record.platform)?.provider == .apns, (given.credential == nil) != (given.principal == nil) else {
            return given
        }
        let stored = try await applications.credentials(applicationKey: record.key)
        return PlatformCredentials(credential: given.credential ?? stored.credential, principal: given.principal ?? stored.principal)
    }

    static func isNameByte(_ b: UInt8) -> Bool {
        (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a) || b == UInt8(ascii: "_") || b == UInt8(ascii: "-")
    }

    /// The application named by `PlatformApplicationArn`, or NotFound.
    static func application(_ request: SNSRequest, _ context: SNSActionContext) async throws(SNSError) -> (PlatformApplicationRecord, SNSARN) {
        let arn = try request.arn("PlatformApplicationArn")
        guard case .application(let platform, let name) = arn.resource else {
            throw SNSError.noSuchResource(parameter: "PlatformApplicationArn")
        }
        let account = try await context.accountKey(request.caller)
        let record = try await store(notFound: notFound) { () async throws(StoreError) in
            try await context.applications.get(accountKey: account, region: request.region, platform: platform, name: name)
        }
        return (record, arn)
    }

    /// What Get/List show: stored attributes, Enabled, the read-only AuthenticationMethod, and while disabled
    /// Clarion's read-only DisabledReason and DisabledAt. Never the credential pair.
    static func visibleAttributes(_ record: PlatformApplicationRecord) -> [String: String] {
        var out = record.attributes.filter { !secretAttributes.contains($0.key) }
        if out[certificateExpiryAttribute]?.isEmpty == true { out[certificateExpiryAttribute] = nil }
        out["Enabled"] = record.enabled ? "true" : "false"
        out.merge(disabledAttributes(enabled: record.enabled, reason: record.disabledReason, at: record.disabledAt)) { $1 }
        switch record.platform {
        case "APNS", "APNS_SANDBOX":
            // Applications stored before the method was recorded from the principal: judged by the team id.
            if out["AuthenticationMethod"] == nil {
                out["AuthenticationMethod"] = record.attributes["ApplePlatformTeamID"] != nil ? "Token" : "Certificate"
            }
        default:
            break
        }
        return out
    }

    /// Clarion's read-only `DisabledReason` and `DisabledAt` (ISO 8601, UTC), shown only while the application or
    /// endpoint is disabled: why it is (the provider's reason when Clarion disabled it at a delivery, `set by the
    /// API`, ...) and since when. SNS has no such attributes (it only flips Enabled); SDKs read Attributes as an open
    /// map, so clients that do not know them ignore them, and an enabled resource shows exactly SNS's attributes.
    /// Like AuthenticationMethod they cannot be set.
    static func disabledAttributes(enabled: Bool, reason: String?, at: Date?) -> [String: String] {
        guard !enabled else { return [:] }
        var out = ["DisabledReason": reason ?? ""]
        if let at {
            let formatter = ISO8601DateFormatter()
            formatter.timeZone = TimeZone(identifier: "UTC")
            out["DisabledAt"] = formatter.string(from: at)
        }
        return out
    }

    static let disabledAttributeNames: Set<String> = ["DisabledReason", "DisabledAt"]

    struct Split {
        var stored: [String: String] = [:]
        var enabled: Bool?
    }

    /// The event attributes (EventEndpointCreated, ...) must name an existing topic of the account: the events are
    /// published to it (docs/providers.md C.12). An empty value turns the event off.
    static func checkEventTopics(_ stored: [String: String], accountKey: Int64, _ topics: TopicRepository) async throws(SNSError) {
        for name in eventAttributes {
            guard let value = stored[name], !value.isEmpty, let arn = SNSARN.parse(value), case .topic(let topic) = arn.resource else {
                continue
            }
            do {
                _ = try await topics.get(accountKey: accountKey, region: arn.region, name: topic)
            } catch where error.code == .notFound {
                throw SNSError.invalidParameter("Attributes", reason: "\(name): topic \(value) does not exist")
            } catch {
                throw error.isTransient ? SNSError.serviceUnavailable(cause: error.logText) : SNSError.internalError(cause: error.logText)
            }
        }
    }

    /// Checks names and values; splits the non-secret attributes (stored in clear) from Enabled.
    static func validate(_ attributes: [String: String], request: SNSRequest, platform: String) throws(SNSError) -> Split {
        try SNSAttributes.requireKnown(attributes, settable)
        var split = Split()
        for (name, value) in attributes {
            switch name {
            case "Enabled":
                split.enabled = try SNSAttributes.bool(name, value)
            case "SuccessFeedbackSampleRate":
                guard let rate = Int(value), (0...100).contains(rate) else {
                    throw SNSError.invalidParameter("Attributes", reason: "SuccessFeedbackSampleRate must be an integer from 0 to 100")
                }
                split.stored[name] = String(rate)
            case "ClarionSendRate":
                if !value.isEmpty {
                    guard let rate = Double(value), rate.isFinite, rate > 0, rate <= 10_000_000 else {
                        throw SNSError.invalidParameter(
                            "Attributes", reason: "ClarionSendRate must be a positive number of deliveries per second (empty: no limit)")
                    }
                }
                split.stored[name] = value
            case _ where eventAttributes.contains(name):
                if !value.isEmpty {
                    guard let arn = SNSARN.parse(value), case .topic = arn.resource, arn.region == request.region,
                          arn.account == request.caller.accountID else {
                        throw SNSError.invalidParameter("Attributes", reason: "\(name) must be a topic ARN of this account and region")
                    }
                }
                split.stored[name] = value
            case "ProviderEndpoint", "ProviderAuthEndpoint":
                guard let url = URL(string: value), let scheme = url.scheme, scheme == "https" || scheme == "http",
                      url.host?.isEmpty == false else {
                    throw SNSError.invalidParameter("Attributes", reason: "\(name) must be an https:// (or http:// for h2c) URL")
                }
                split.stored[name] = value
            case "ProviderCACertificate":
                guard value.contains("-----BEGIN CERTIFICATE-----") else {
                    throw SNSError.invalidParameter("Attributes", reason: "ProviderCACertificate must be a PEM certificate")
                }
                split.stored[name] = value
            case _ where secretAttributes.contains(name):
                if value.isEmpty { throw SNSError.invalidParameter("Attributes", reason: "\(name) must not be empty") }
            default:
                split.stored[name] = value
            }
        }
        // C.3: a GCM application authenticates with a legacy API key or a service-account JSON (token); the
        // read-only AuthenticationMethod says which, without revealing the credential.
        if platform == "GCM", let credential = attributes["PlatformCredential"], !credential.isEmpty {
            split.stored["AuthenticationMethod"] = credential.trimmingCharacters(in: .whitespacesAndNewlines).hasPrefix("{") ? "Token" : "Key"
        }
        // APNs: a PEM certificate as the principal is certificate auth (C.7), a key id token auth.
        if platform == "APNS" || platform == "APNS_SANDBOX", let principal = attributes["PlatformPrincipal"], !principal.isEmpty {
            split.stored["AuthenticationMethod"] = principal.contains("-----BEGIN") ? "Certificate" : "Token"
        }
        return split
    }
}
