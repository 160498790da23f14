import ClarionCore
import ClarionCrypto
import ClarionHTTP2
import Foundation

/// One platform application as the provider layer needs it: checked credentials, where to send, where to
/// get access tokens and which extra CA to trust. Built from the application's attributes; the SNS and native APIs
/// check CreatePlatformApplication / SetPlatformApplicationAttributes with `checkSettings`, which builds it too.
public struct ProviderApplication: Sendable {
    /// Default send hosts (A.1, B.1, D.2).
    public static let apnsProductionURL = "https://api.push.apple.com"
    public static let apnsSandboxURL = "https://api.sandbox.push.apple.com"
    public static let fcmURL = "https://fcm.googleapis.com"
    public static let admURL = "https://api.amazon.com"
    /// ADM's Login with Amazon token URL (D.1).
    public static let admTokenURL = "https://api.amazon.com/auth/o2/token"
    /// Web Push has no send host of its own: every subscription names its push service. This reserved name
    /// (RFC 2606 `.invalid`) stands for "per subscription" where an application needs one origin; nothing connects to it.
    public static let webPushNominalURL = "https://push-service.invalid"
    /// Huawei Push Kit v1 send host and OAuth token URL (E.1).
    public static let hmsURL = "https://push-api.cloud.huawei.com"
    public static let hmsTokenURL = "https://oauth-login.cloud.huawei.com/oauth2/v3/token"

    public let id: String
    public let platform: Platform
    public let credentials: ProviderCredentials
    /// Base URL of the send API: `ProviderEndpoint`, else the provider's production host for the platform.
    public let endpointURL: String
    /// Token URL: FCM the service account's `token_uri`, ADM Login with Amazon, HMS Huawei's OAuth (any replaced by
    /// `ProviderAuthEndpoint`); nil for APNs.
    public let authURL: String?
    /// `ProviderCACertificate` plus the server-wide CA, PEM; nil when neither is set.
    public let trustedCAPEM: String?
    /// Changes whenever anything above changes: the registry rebuilds a client whose fingerprint differs.
    public let fingerprint: String
    let origin: HTTP2Origin

    /// - Parameters:
    ///   - serverTrustedCAPEM: the server-wide extra CA (`CLARION_PROVIDER_CA_FILE`), trusted for every application.
    public init(id: String, platform: Platform, attributes: [String: String], serverTrustedCAPEM: String? = nil) throws(ProviderError) {
        self.id = id
        self.platform = platform
        credentials = try ProviderCredentials.parse(platform: platform, attributes: attributes)
        let connection = try ProviderConnectionSettings(platform: platform, attributes: attributes, serverTrustedCAPEM: serverTrustedCAPEM)
        endpointURL = connection.endpointURL
        origin = connection.origin
        trustedCAPEM = connection.trustedCAPEM
        if case .apnsCertificate = credentials, origin.scheme == .http {
            // A client certificate lives in TLS: over h2c there is nothing to present it in.
            throw ProviderError(.invalidAttribute, attribute: ProviderAttribute.providerEndpoint,
                                "APNs certificate authentication needs TLS: use an https:// endpoint, not h2c")
        }
        switch credentials {
        case .apnsToken, .apnsCertificate: authURL = nil
        case .fcm(let account): authURL = connection.authOverride ?? account.tokenURI
        case .adm: authURL = connection.authOverride ?? Self.admTokenURL
        case .webPush: authURL = nil
        case .hms: authURL = connection.authOverride ?? Self.hmsTokenURL
        }

        var print = [platform.rawValue, credentials.identity, endpointURL, authURL ?? "", trustedCAPEM ?? ""]
        if case .adm(let adm) = credentials { print.append(Digest.sha256(adm.clientSecret).hexString) }
        if case .apnsToken(let apns) = credentials { print.append(apns.bundleID) }
        if case .apnsCertificate(let apns) = credentials { print.append(apns.topic ?? "") }
        if case .webPush(let vapid) = credentials { print.append(vapid.subject) }
        if case .hms(let hms) = credentials { print.append(Digest.sha256(hms.clientSecret).hexString) }
        fingerprint = Digest.sha256(print.joined(separator: "\u{1}")).hexString
    }

    /// Checks attributes without keeping the result (CreatePlatformApplication validation).
    public static func validate(platform: Platform, attributes: [String: String]) throws(ProviderError) {
        _ = try ProviderApplication(id: "validation", platform: platform, attributes: attributes)
    }

    /// The attributes that say where and how to connect (`ProviderConnectionSettings`), as opposed to credentials.
    static let connectionAttributes: Set<String> = [ProviderAttribute.providerEndpoint, ProviderAttribute.providerAuthEndpoint,
                                                    ProviderAttribute.providerCACertificate]

    /// For CreatePlatformApplication and SetPlatformApplicationAttributes (SNS and native): throws what would
    /// otherwise disable the application at its first delivery and can be known now, by the code the dispatcher
    /// runs: the application as `ProviderRegistryDirectory` builds it (this type), its pool configuration from
    /// `ProviderRegistry.poolConfiguration(for:options:)`, checked by `ProviderRegistry.checkPoolConfiguration`, which
    /// is what pool creation runs (a CA PEM OpenSSL cannot load, an APNs certificate or key it cannot read, a key
    /// that is not the certificate's). Opens no connection. The error names the attribute.
    ///
    /// Credentials that do not parse are not judged here: the API has always taken what only the provider can judge
    /// (and tests and demos give placeholders); a bad key is found at the first send, which disables the
    /// application with the provider's or the parser's reason, logged. The connection settings are still checked,
    /// with a pool configuration built without the credentials.
    public static func checkSettings(platform: Platform, attributes: [String: String], serverTrustedCAPEM: String? = nil,
                                     options: ProviderOptions = ProviderOptions()) throws(ProviderError) {
        let configuration: HTTP2PoolConfiguration
        do {
            let application = try ProviderApplication(id: "validation", platform: platform, attributes: attributes,
                                                      serverTrustedCAPEM: serverTrustedCAPEM)
            configuration = ProviderRegistry.poolConfiguration(for: application, options: options)
        } catch where !connectionAttributes.contains(error.attribute ?? "") {
            let connection = try ProviderConnectionSettings(platform: platform, attributes: attributes, serverTrustedCAPEM: serverTrustedCAPEM)
            configuration = ProviderRegistry.poolConfiguration(platform: platform, origin: connection.origin,
                                                               trustedCAPEM: connection.trustedCAPEM, credentials: nil, options: options)
        }
        try ProviderRegistry.checkPoolConfiguration(configuration)
    }

    /// The base of `apns-topic`, for `RenderSettings.apnsBundleID`: `ApplePlatformBundleID`, or with certificate
    /// auth and no bundle id the certificate's topic (its subject UID); nil for other providers.
    public var apnsBundleID: String? {
        switch credentials {
        case .apnsToken(let c): c.bundleID
        case .apnsCertificate(let c): c.topic
        default: nil
        }
    }

    /// Reads the server-wide CA file named by `CLARION_PROVIDER_CA_FILE` (nil when the variable is unset).
    public static func serverTrustedCAPEM(environment: [String: String] = ProcessInfo.processInfo.environment) throws(ProviderError) -> String? {
        guard let path = environment["CLARION_PROVIDER_CA_FILE"], !path.isEmpty else { return nil }
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw ProviderError(.invalidAttribute, attribute: "CLARION_PROVIDER_CA_FILE", "cannot read \(path)")
        }
        try checkCertificates(text, attribute: "CLARION_PROVIDER_CA_FILE")
        return text
    }

    static func checkCertificates(_ pem: String, attribute: String) throws(ProviderError) {
        let blocks: [PEMBlock]
        do {
            blocks = try PEMBlock.parseAll(pem)
        } catch {
            throw ProviderError(.invalidAttribute, attribute: attribute, "not PEM: \(error.message)")
        }
        guard !blocks.isEmpty, blocks.allSatisfy({ $0.label == "CERTIFICATE" || $0.label == "TRUSTED CERTIFICATE" }) else {
            throw ProviderError(.invalidAttribute, attribute: attribute, "expected PEM CERTIFICATE blocks only")
        }
    }
}

/// What a platform application's attributes say about where and how to connect, apart from its credentials: the
/// send API's base URL, the token URL override and the extra trusted CA. Part of every `ProviderApplication`; on its
/// own it lets the API check an application whose credentials only the provider can judge
/// (`ProviderApplication.checkSettings`).
public struct ProviderConnectionSettings: Sendable {
    /// Base URL of the send API: `ProviderEndpoint`, else the provider's production host for the platform.
    public let endpointURL: String
    let origin: HTTP2Origin
    /// `ProviderAuthEndpoint` when given (checked to be an http(s) URL with a host).
    let authOverride: String?
    /// `ProviderCACertificate` plus the server-wide CA, PEM; nil when neither is set.
    public let trustedCAPEM: String?

    public init(platform: Platform, attributes: [String: String], serverTrustedCAPEM: String? = nil) throws(ProviderError) {
        let endpointAttribute = ProviderAttribute.providerEndpoint
        if let custom = attributes[endpointAttribute].map({ $0.trimmingCharacters(in: .whitespaces) }), !custom.isEmpty {
            endpointURL = custom
        } else {
            switch platform.provider {
            case .apns:
                endpointURL = platform.apnsEnvironment == .sandbox ? ProviderApplication.apnsSandboxURL : ProviderApplication.apnsProductionURL
            case .fcm: endpointURL = ProviderApplication.fcmURL
            case .adm: endpointURL = ProviderApplication.admURL
            case .webPush: endpointURL = ProviderApplication.webPushNominalURL
            case .hms: endpointURL = ProviderApplication.hmsURL
            }
        }
        do {
            origin = try HTTP2Origin(endpointURL)
        } catch {
            throw ProviderError(.invalidAttribute, attribute: endpointAttribute,
                                "must be https://host[:port] or http://host[:port] (h2c), without a path")
        }

        authOverride = attributes[ProviderAttribute.providerAuthEndpoint].map { $0.trimmingCharacters(in: .whitespaces) }
            .flatMap { $0.isEmpty ? nil : $0 }
        if let authOverride {
            try ProviderCredentials.checkURL(authOverride, attribute: ProviderAttribute.providerAuthEndpoint, what: "the token URL")
        }

        var caParts: [String] = []
        if let appCA = attributes[ProviderAttribute.providerCACertificate], !appCA.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
            try ProviderApplication.checkCertificates(appCA, attribute: ProviderAttribute.providerCACertificate)
            caParts.append(appCA)
        }
        if let serverTrustedCAPEM, !serverTrustedCAPEM.isEmpty { caParts.append(serverTrustedCAPEM) }
        trustedCAPEM = caParts.isEmpty ? nil : caParts.joined(separator: "\n")
    }
}
