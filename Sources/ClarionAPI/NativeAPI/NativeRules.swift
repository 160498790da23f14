import ClarionHTTP1
import ClarionCore
import ClarionStore
import Foundation

/// The SNS actions' input rules applied to native requests, so a resource is valid through one API exactly when
/// it is valid through the other: the SNS checks are called, and their refusal becomes `invalid_field` on the
/// native field with SNS's wording.
package enum NativeRules {
    /// Runs an SNS validator; its refusal becomes `invalid_field` on `field` with SNS's wording.
    static func sns<T>(field: String, _ body: () throws(SNSError) -> T) throws(JSONAPIError) -> T {
        do {
            return try body()
        } catch {
            throw JSONAPIError.invalidField(field, error.message)
        }
    }

    /// A device token as SNS stores it (APNs: hexadecimal, at most 400, lower-cased; others at most 4096 bytes).
    package static func token(_ token: String, platform: String) throws(JSONAPIError) -> String {
        try sns(field: "token") { () throws(SNSError) in try EndpointActions.normalizedToken(token, platform: platform) }
    }

    package static func customUserData(_ data: String?) throws(JSONAPIError) {
        try sns(field: "custom_user_data") { () throws(SNSError) in try EndpointActions.checkCustomUserData(data) }
    }

    /// Topic attributes: SNS's settable names and value checks; FIFO topics are refused as SNS's CreateTopic does here.
    /// - Parameter topicARN: the topic's ARN, which a `Policy` must name as its resource.
    package static func topicAttributes(_ attributes: [String: String], topicARN: String) throws(JSONAPIError) {
        for name in attributes.keys.sorted() where !TopicActions.settable.contains(name) {
            throw JSONAPIError.invalidField("attributes.\(name)", "Unknown topic attribute '\(name)'.")
        }
        for name in attributes.keys.sorted() {
            try sns(field: "attributes.\(name)") { () throws(SNSError) in try TopicActions.validate([name: attributes[name]!], topicARN: topicARN) }
        }
    }

    /// Platform-application attributes, checked by `PlatformApplicationActions.validate` itself (one attribute at
    /// a time, so the refusal names its attribute), then split as it splits them: what is stored, including the
    /// read-only AuthenticationMethod it derives from a GCM credential or an APNs principal. The credential pair is not an attribute
    /// here (`credential`, `principal`), nor is Enabled (`enabled`).
    package static func applicationAttributes(_ attributes: [String: String], _ caller: NativeCaller, platform: String,
                                      credential: String?, principal: String? = nil) throws(JSONAPIError) -> [String: String] {
        for name in attributes.keys.sorted() {
            let field = "attributes.\(name)"
            if PlatformApplicationActions.secretAttributes.contains(name) {
                let native = name == "PlatformCredential" ? "credential" : "principal"
                throw JSONAPIError.invalidField(field, "Give '\(name)' as the field '\(native)', not as an attribute.")
            }
            if name == "Enabled" { throw JSONAPIError.invalidField(field, "Use the field 'enabled'.") }
        }
        // The SNS rule reads only the caller's region and account from its request.
        let request = SNSRequest(action: "SetPlatformApplicationAttributes", parameters: SNSParameters([:]),
                                 caller: SNSCaller(accountID: caller.accountID, accessKeyID: nil), region: caller.region,
                                 requestID: "", http: HTTPRequest(method: .post, rawPath: "/", requestID: ""))
        for name in attributes.keys.sorted() {
            _ = try sns(field: "attributes.\(name)") { () throws(SNSError) in
                try PlatformApplicationActions.validate([name: attributes[name]!], request: request, platform: platform)
            }
        }
        var all = attributes
        all["PlatformCredential"] = credential
        all["PlatformPrincipal"] = principal
        let split = try sns(field: "attributes") { () throws(SNSError) in
            try PlatformApplicationActions.validate(all, request: request, platform: platform)
        }
        return split.stored
    }

    /// SNS's rule for the event attributes: each names an existing topic of the account (`invalid_field` on
    /// `attributes.<name>` otherwise).
    static func checkEventTopics(_ attributes: [String: String], _ caller: NativeCaller, _ topics: TopicRepository) async throws(JSONAPIError) {
        for name in PlatformApplicationActions.eventAttributes where !(attributes[name] ?? "").isEmpty {
            do throws(SNSError) {
                try await PlatformApplicationActions.checkEventTopics([name: attributes[name]!], accountKey: caller.accountKey, topics)
            } catch {
                if error.status >= 500 { throw JSONAPIError.serviceUnavailable(error.message) }
                throw JSONAPIError.invalidField("attributes.\(name)", error.message)
            }
        }
    }

    /// SNS's CreatePlatformApplication: GCM needs a credential; APNs and ADM need a credential and a principal.
    package static func requireCredentials(_ credentials: PlatformCredentials, platform: String) throws(JSONAPIError) {
        if credentials.credential?.isEmpty ?? true {
            throw JSONAPIError.missingField("credential")
        }
        if platform != "GCM", platform != "WEBPUSH", credentials.principal?.isEmpty ?? true {
            throw JSONAPIError.missingField("principal")
        }
    }

    /// APNs certificate auth: the certificate in `principal` and the key in `credential` must load and match
    /// (`PlatformApplicationActions.checkAPNsCertificate`); the refusal names the half at fault.
    @discardableResult
    static func checkAPNsCertificate(_ credentials: PlatformCredentials, platform: String,
                                     _ check: any PlatformSettingsCheck) throws(JSONAPIError) -> Date? {
        do {
            return try PlatformApplicationActions.checkAPNsCertificate(credentials, platform: platform, check)
        } catch {
            let field = error.message.contains("PlatformCredential") ? "credential" : "principal"
            throw JSONAPIError.invalidField(field, error.message)
        }
    }

    /// The settings a provider pool is built from must make one (`PlatformApplicationActions.checkConnection`); the
    /// refusal is `invalid_field` on the field at fault: `credential`, `principal`, or `attributes.<name>`.
    static func checkConnection(platform: String, attributes: [String: String], credentials: PlatformCredentials,
                                _ check: any PlatformSettingsCheck) throws(JSONAPIError) {
        do {
            try PlatformApplicationActions.connectionError(platform: platform, attributes: attributes, credentials: credentials, check)
        } catch {
            let field = switch error.attribute {
            case "PlatformCredential"?: "credential"
            case "PlatformPrincipal"?: "principal"
            case let name?: "attributes.\(name)"
            case nil: "attributes"
            }
            throw JSONAPIError.invalidField(field, error.description)
        }
    }

    /// A given credential or principal must not be empty (SNS refuses empty secrets).
    /// WEBPUSH: the SNS rules (`PlatformApplicationActions.webPushCredentials`: subject required, key given or
    /// generated, `VAPIDPublicKey` stored), refusals naming the native field.
    static func webPushCredentials(_ credentials: inout PlatformCredentials, _ attributes: inout [String: String],
                                   existing: PlatformApplicationRecord?) throws(JSONAPIError) {
        do throws(WebPushRules.RuleError) {
            if credentials.principal != nil {
                throw WebPushRules.RuleError(attribute: "principal", reason: "WEBPUSH takes no principal: the VAPID key is the credential")
            }
            try WebPushRules.checkSubject(attributes[WebPushRules.subjectAttribute] ?? existing?.attributes[WebPushRules.subjectAttribute])
            if credentials.credential != nil || existing == nil {
                let pair = try WebPushRules.keyPair(credential: credentials.credential)
                credentials.credential = pair.privateKeyPEM
                attributes[WebPushRules.publicKeyAttribute] = pair.publicKey
            }
        } catch {
            let field = switch error.attribute {
            case "PlatformCredential": "credential"
            case "principal": "principal"
            default: "attributes.\(error.attribute)"
            }
            throw JSONAPIError.invalidField(field, error.reason)
        }
    }

    package static func credentials(_ body: NativeFields) throws(JSONAPIError) -> PlatformCredentials {
        let credential = try body.string("credential"), principal = try body.string("principal")
        if credential?.isEmpty == true { throw JSONAPIError.invalidField("credential", "The field 'credential' must not be empty.") }
        if principal?.isEmpty == true { throw JSONAPIError.invalidField("principal", "The field 'principal' must not be empty.") }
        return PlatformCredentials(credential: credential, principal: principal)
    }
}
