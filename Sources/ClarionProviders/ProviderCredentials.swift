import ClarionCore
import ClarionCrypto
import ClarionTransport
import Foundation

/// Huawei Push Kit credentials (docs/providers.md E.1): the OAuth 2.0 client of the client-credentials grant and
/// the app the pushes are for.
public struct HMSCredentials: Sendable {
    public let appID: String
    public let clientID: String
    public let clientSecret: String
}

/// Web Push VAPID credentials (RFC 8292): the application server's P-256 key and its contact URI.
public struct VAPIDCredentials: Sendable {
    public let signingKey: SigningKey
    public let subject: String
    /// base64url of the uncompressed public key: `k=`, and the `applicationServerKey` of subscribing pages.
    public let publicKey: String
    /// Hex SHA-256 of the public key.
    public let keyFingerprint: String
}

/// APNs token-based auth (A.5): a P-256 `.p8` key, its key id, the team id and the bundle id.
public struct APNsTokenCredentials: Sendable {
    public let keyID: String
    public let teamID: String
    public let bundleID: String
    public let signingKey: SigningKey
    /// Hex SHA-256 of the key's public half: tells a replaced key from the old one under the same key id.
    public let keyFingerprint: String
}

/// APNs certificate-based auth: a TLS client certificate and its private key (PEM), presented on every connection
/// of the application's pool instead of a provider JWT (A.2: the certificate authenticates, no `authorization`).
public struct APNsCertificateCredentials: Sendable {
    /// The certificate (leaf first, then any intermediates), as given in `PlatformPrincipal`.
    public let certificatePEM: String
    public let privateKeyPEM: String
    /// `ApplePlatformBundleID` when given.
    public let bundleID: String?
    /// The leaf certificate: its SHA-256, subject and expiry.
    public let certificate: TLSCertificate
    /// Hex SHA-256 of the leaf certificate's DER: the credential's identity (a renewed certificate is a new one).
    public var certificateFingerprint: String { certificate.sha256 }
    /// When the leaf certificate expires (SNS shows it as `AppleCertificateExpiryDate`); nil if unreadable.
    public var expiresAt: Date? { certificate.notAfter.map { Date(timeIntervalSince1970: TimeInterval($0)) } }

    /// The base of `apns-topic`: `ApplePlatformBundleID`, else the certificate's topic, which Apple puts in the
    /// subject's UID. A.2/G.2: APNs falls back to the certificate's topic when the header is absent, but the
    /// gateway always sends it.
    public var topic: String? { bundleID ?? certificate.subjectUserID.flatMap { $0.isEmpty ? nil : $0 } }

    /// The pair as ClarionHTTP2 presents it.
    public var tlsIdentity: TLSIdentity { TLSIdentity(certificateChainPEM: certificatePEM, privateKeyPEM: privateKeyPEM) }
}

/// A Google service account (FCM HTTP v1, B.2).
public struct FCMServiceAccount: Sendable {
    public let projectID: String
    public let clientEmail: String
    /// `private_key_id`, sent as the assertion's `kid`.
    public let privateKeyID: String?
    public let signingKey: SigningKey
    public let tokenURI: String
    public let keyFingerprint: String
}

/// ADM client credentials (D.1).
public struct ADMClientCredentials: Sendable {
    public let clientID: String
    public let clientSecret: String
}

/// The credentials of one platform application, as SNS takes them in its attributes (docs/providers.md C.7).
public enum ProviderCredentials: Sendable {
    case apnsToken(APNsTokenCredentials)
    case apnsCertificate(APNsCertificateCredentials)
    case fcm(FCMServiceAccount)
    case adm(ADMClientCredentials)
    case webPush(VAPIDCredentials)
    case hms(HMSCredentials)

    /// Google's token endpoint, used when a service-account JSON has no `token_uri`.
    public static let googleTokenURI = "https://oauth2.googleapis.com/token"

    /// Parses and checks the credentials of a `platform` application. Errors name the attribute.
    ///
    /// APNs: a `PlatformPrincipal` holding a PEM certificate selects certificate auth; anything else is
    /// token auth (key id + `.p8` key + team id + bundle id).
    public static func parse(platform: Platform, attributes: [String: String]) throws(ProviderError) -> ProviderCredentials {
        switch platform.provider {
        case .apns:
            let principal = try required(ProviderAttribute.platformPrincipal, attributes)
            if principal.contains("-----BEGIN") {
                return .apnsCertificate(try parseAPNsCertificate(principal, attributes))
            }
            return .apnsToken(try parseAPNsToken(principal, attributes))
        case .fcm:
            return .fcm(try parseServiceAccount(attributes))
        case .adm:
            let clientID = try required(ProviderAttribute.platformPrincipal, attributes)
            let secret = try required(ProviderAttribute.platformCredential, attributes)
            return .adm(ADMClientCredentials(clientID: clientID, clientSecret: secret))
        case .webPush:
            return .webPush(try parseVAPID(attributes))
        case .hms:
            return .hms(try parseHMS(attributes))
        }
    }

    /// What identifies these credentials to the provider, for pool keys and logs (never a secret).
    public var identity: String {
        switch self {
        case .apnsToken(let c): "apns-token:\(c.teamID):\(c.keyID):\(c.keyFingerprint.prefix(16))"
        case .apnsCertificate(let c): "apns-cert:\(c.certificateFingerprint)"
        case .fcm(let c): "fcm:\(c.projectID):\(c.clientEmail):\(c.keyFingerprint.prefix(16))"
        case .adm(let c): "adm:\(c.clientID)"
        case .webPush(let c): "webpush:\(c.keyFingerprint.prefix(16))"
        case .hms(let c): "hms:\(c.appID):\(c.clientID)"
        }
    }

    // MARK: - APNs

    static func parseAPNsToken(_ keyID: String, _ attributes: [String: String]) throws(ProviderError) -> APNsTokenCredentials {
        guard isAppleID(keyID) else {
            throw ProviderError(.invalidAttribute, attribute: ProviderAttribute.platformPrincipal,
                                "an APNs signing key id is 10 letters or digits (or give a PEM certificate for certificate auth)")
        }
        let pem = try required(ProviderAttribute.platformCredential, attributes)
        let key: SigningKey
        do {
            key = try SigningKey(pem: pem)
        } catch {
            throw ProviderError(.invalidAttribute, attribute: ProviderAttribute.platformCredential,
                                "not a readable .p8 signing key: \(error.message)")
        }
        guard key.algorithm == .es256 else {
            throw ProviderError(.invalidAttribute, attribute: ProviderAttribute.platformCredential,
                                "an APNs signing key is a P-256 (ES256) key, this is \(key.algorithm.rawValue)")
        }
        let teamID = try required(ProviderAttribute.appleTeamID, attributes)
        guard isAppleID(teamID) else {
            throw ProviderError(.invalidAttribute, attribute: ProviderAttribute.appleTeamID, "a team id is 10 letters or digits")
        }
        let bundleID = try required(ProviderAttribute.appleBundleID, attributes)
        guard !bundleID.contains(where: { $0.isWhitespace }) else {
            throw ProviderError(.invalidAttribute, attribute: ProviderAttribute.appleBundleID, "a bundle id has no spaces")
        }
        return APNsTokenCredentials(keyID: keyID, teamID: teamID, bundleID: bundleID, signingKey: key,
                                    keyFingerprint: Digest.sha256(key.verifyingKey.subjectPublicKeyInfoDER).hexString)
    }

    /// Certificate auth: the certificate in `PlatformPrincipal`, its unencrypted private key in `PlatformCredential`.
    /// The pair is loaded into an OpenSSL context exactly as the HTTP/2 pool will load it, so a key that is not the
    /// certificate's, or a certificate OpenSSL cannot use, is refused here (CreatePlatformApplication) rather than
    /// at the first send.
    static func parseAPNsCertificate(_ certificatePEM: String, _ attributes: [String: String]) throws(ProviderError) -> APNsCertificateCredentials {
        let blocks: [PEMBlock]
        do {
            blocks = try PEMBlock.parseAll(certificatePEM)
        } catch {
            throw ProviderError(.invalidAttribute, attribute: ProviderAttribute.platformPrincipal, "not PEM: \(error.message)")
        }
        guard blocks.first?.label == "CERTIFICATE" else {
            throw ProviderError(.invalidAttribute, attribute: ProviderAttribute.platformPrincipal,
                                "expected a PEM CERTIFICATE first, found \(blocks.first?.label ?? "none")")
        }
        guard blocks.allSatisfy({ $0.label == "CERTIFICATE" }) else {
            throw ProviderError(.invalidAttribute, attribute: ProviderAttribute.platformPrincipal,
                                "only CERTIFICATE blocks belong here (the private key goes in PlatformCredential)")
        }
        let keyPEM = try required(ProviderAttribute.platformCredential, attributes)
        let identity = TLSIdentity(certificateChainPEM: certificatePEM, privateKeyPEM: keyPEM)
        let certificate: TLSCertificate
        do {
            certificate = try identity.leafCertificate()
            try identity.validate()
        } catch {
            switch error.code {
            case .certificate:
                throw ProviderError(.invalidAttribute, attribute: ProviderAttribute.platformPrincipal,
                                    "not a readable certificate: \(error.reason)")
            case .privateKey:
                throw ProviderError(.invalidAttribute, attribute: ProviderAttribute.platformCredential,
                                    "not a readable unencrypted private key (PEM)")
            case .keyMismatch:
                throw ProviderError(.invalidAttribute, attribute: ProviderAttribute.platformCredential,
                                    "the private key does not match the certificate in PlatformPrincipal")
            case .trustedCA, .openSSL:
                throw ProviderError(.invalidAttribute, attribute: ProviderAttribute.platformPrincipal, error.reason)
            }
        }
        let bundleID = attributes[ProviderAttribute.appleBundleID].flatMap { $0.isEmpty ? nil : $0 }
        if let bundleID, bundleID.contains(where: { $0.isWhitespace }) {
            throw ProviderError(.invalidAttribute, attribute: ProviderAttribute.appleBundleID, "a bundle id has no spaces")
        }
        return APNsCertificateCredentials(certificatePEM: certificatePEM, privateKeyPEM: keyPEM, bundleID: bundleID,
                                          certificate: certificate)
    }

    /// Apple key and team ids: 10 ASCII letters or digits.
    static func isAppleID(_ text: String) -> Bool {
        text.utf8.count == 10 && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x41...0x5a).contains($0) || (0x61...0x7a).contains($0) }
    }

    // MARK: - FCM

    static func parseServiceAccount(_ attributes: [String: String]) throws(ProviderError) -> FCMServiceAccount {
        let attribute = ProviderAttribute.platformCredential
        let text = try required(attribute, attributes)
        let json: JSONObject
        do {
            guard let object = try JSONValue.parse(text).objectValue else {
                throw ProviderError(.invalidAttribute, attribute: attribute, "the service-account JSON is not an object")
            }
            json = object
        } catch let error as ProviderError {
            throw error
        } catch {
            throw ProviderError(.invalidAttribute, attribute: attribute,
                                "not a service-account JSON (a legacy FCM server key is not supported): \(error)")
        }
        func field(_ name: String) throws(ProviderError) -> String {
            guard let value = json[name]?.stringValue, !value.isEmpty else {
                throw ProviderError(.invalidAttribute, attribute: attribute, "the service-account JSON has no \(name)")
            }
            return value
        }
        if let type = json["type"]?.stringValue, type != "service_account" {
            throw ProviderError(.invalidAttribute, attribute: attribute, "the JSON's type is \(type), not service_account")
        }
        let clientEmail = try field("client_email")
        let keyPEM = try field("private_key")
        let key: SigningKey
        do {
            key = try SigningKey(pem: keyPEM)
        } catch {
            throw ProviderError(.invalidAttribute, attribute: attribute, "private_key is not a readable key: \(error.message)")
        }
        guard key.algorithm == .rs256 else {
            throw ProviderError(.invalidAttribute, attribute: attribute, "private_key is not an RSA key (RS256)")
        }
        let tokenURI = json["token_uri"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 } ?? googleTokenURI
        try checkURL(tokenURI, attribute: attribute, what: "token_uri")
        let projectID: String
        if let override = attributes[ProviderAttribute.fcmProjectID], !override.isEmpty {
            projectID = override
        } else if let fromJSON = json["project_id"]?.stringValue, !fromJSON.isEmpty {
            projectID = fromJSON
        } else {
            throw ProviderError(.missingAttribute, attribute: ProviderAttribute.fcmProjectID,
                                "the service-account JSON has no project_id: give \(ProviderAttribute.fcmProjectID)")
        }
        guard projectID.utf8.allSatisfy({ $0 > 0x20 && $0 != UInt8(ascii: "/") && $0 < 0x7f }) else {
            throw ProviderError(.invalidAttribute, attribute: ProviderAttribute.fcmProjectID, "a project id has no spaces or slashes")
        }
        return FCMServiceAccount(
            projectID: projectID, clientEmail: clientEmail, privateKeyID: json["private_key_id"]?.stringValue,
            signingKey: key, tokenURI: tokenURI,
            keyFingerprint: Digest.sha256(key.verifyingKey.subjectPublicKeyInfoDER).hexString)
    }

    // MARK: - Web Push

    static func parseVAPID(_ attributes: [String: String]) throws(ProviderError) -> VAPIDCredentials {
        let pem = try required(ProviderAttribute.platformCredential, attributes)
        let key: SigningKey
        do {
            key = try SigningKey(pem: pem)
        } catch {
            throw ProviderError(.invalidAttribute, attribute: ProviderAttribute.platformCredential,
                                "not a readable VAPID private key: \(error.message)")
        }
        guard let point = key.uncompressedPublicKey else {
            throw ProviderError(.invalidAttribute, attribute: ProviderAttribute.platformCredential,
                                "a VAPID key is a P-256 (ES256) key, this is \(key.algorithm.rawValue)")
        }
        let subject = try required(ProviderAttribute.vapidSubject, attributes)
        let lower = subject.lowercased()
        guard lower.hasPrefix("mailto:") || lower.hasPrefix("https:") else {
            throw ProviderError(.invalidAttribute, attribute: ProviderAttribute.vapidSubject, "must be a mailto: or https: URI (RFC 8292 section 2.1)")
        }
        return VAPIDCredentials(signingKey: key, subject: subject, publicKey: Base64URL.encode(point),
                                keyFingerprint: Digest.sha256(point).hexString)
    }

    // MARK: - Huawei Push Kit

    /// Client id and app id go into a form and a URL path: printable ASCII without `/`, `?`, `#`, `%` or spaces (AGC
    /// issues digits). The secret may be anything printable (it is form-encoded).
    static func parseHMS(_ attributes: [String: String]) throws(ProviderError) -> HMSCredentials {
        let clientID = try required(ProviderAttribute.platformPrincipal, attributes)
        guard isPathSafe(clientID) else {
            throw ProviderError(.invalidAttribute, attribute: ProviderAttribute.platformPrincipal,
                                "an HMS client id is printable ASCII without spaces, '/', '?', '#' or '%' (AppGallery Connect gives digits)")
        }
        let secret = try required(ProviderAttribute.platformCredential, attributes)
        guard secret.utf8.allSatisfy({ $0 >= 0x20 && $0 != 0x7f }) else {
            throw ProviderError(.invalidAttribute, attribute: ProviderAttribute.platformCredential, "an HMS client secret has no control characters")
        }
        var appID = clientID
        if let given = attributes[ProviderAttribute.hmsAppID]?.trimmingCharacters(in: .whitespaces), !given.isEmpty {
            guard isPathSafe(given) else {
                throw ProviderError(.invalidAttribute, attribute: ProviderAttribute.hmsAppID,
                                    "an HMS app id is printable ASCII without spaces, '/', '?', '#' or '%' (AppGallery Connect gives digits)")
            }
            appID = given
        }
        return HMSCredentials(appID: appID, clientID: clientID, clientSecret: secret)
    }

    static func isPathSafe(_ text: String) -> Bool {
        text.utf8.count <= 128 && text.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7f && !"/?#%".utf8.contains($0) }
    }

    // MARK: - Helpers

    static func required(_ name: String, _ attributes: [String: String]) throws(ProviderError) -> String {
        guard let value = attributes[name]?.trimmingCharacters(in: .whitespacesAndNewlines), !value.isEmpty else {
            throw ProviderError(.missingAttribute, attribute: name, "required for this platform")
        }
        return value
    }

    /// An absolute http(s) URL with a host.
    static func checkURL(_ text: String, attribute: String, what: String) throws(ProviderError) {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "https" || scheme == "http",
              let host = url.host, !host.isEmpty
        else {
            throw ProviderError(.invalidAttribute, attribute: attribute, "\(what) must be an https:// (or http://) URL with a host")
        }
    }
}
