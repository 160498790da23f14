import ClarionCore
import ClarionCrypto
import ClarionTransport
import Foundation

/// A complete, freshly generated set of provider credentials that the emulator accepts: an APNs `.p8`
/// key with its key id, team id and bundle id; an APNs client certificate and key (certificate-based auth)
/// issued by a demo CA the emulator trusts; a Google service-account JSON with a new RSA key; an ADM client
/// id and secret. For tests, the demo and `clarion emulator --write-demo-credentials DIR`.
///
/// These are real keys (generated here, never issued by Apple, Google or Amazon); treat the files as
/// secrets anyway: they let anyone authenticate to an emulator configured with them.
public struct EmulatorDemoCredentials: Sendable {
    public struct APNs: Sendable {
        public var keyID: String
        public var teamID: String
        public var bundleID: String
        /// PKCS#8 PEM, exactly the shape of an `AuthKey_<keyID>.p8` file.
        public var privateKeyPEM: String
        public var publicKeyPEM: String
    }

    /// APNs certificate-based auth (SNS: the certificate in `PlatformPrincipal`, the key in
    /// `PlatformCredential`). Shaped like an Apple push certificate: subject UID = bundle id, CN "Apple Push
    /// Services: <bundle id>", OU = team id, RSA 2048, no environment marker (works in both).
    public struct APNsCertificate: Sendable {
        public var bundleID: String
        /// The demo CA that issued the certificate: what the emulator trusts. Its key is not kept.
        public var caCertificatePEM: String
        public var certificatePEM: String
        /// PEM (PKCS#8), unencrypted, as SNS takes it.
        public var privateKeyPEM: String
    }

    public struct FCM: Sendable {
        public var projectID: String
        public var clientEmail: String
        public var privateKeyID: String
        /// The token URI written into the service-account JSON (`token_uri`).
        public var tokenURI: String
        /// Google's service-account key file format (`type`, `project_id`, `private_key_id`,
        /// `private_key`, `client_email`, `token_uri`...).
        public var serviceAccountJSON: String
        public var publicKeyPEM: String
    }

    public struct ADM: Sendable {
        public var clientID: String
        public var clientSecret: String
    }

    public var apns: APNs
    public var apnsCertificate: APNsCertificate
    public var fcm: FCM
    public var adm: ADM
    public var hms: HMS = HMS(clientID: String(100_000_000 + Int(SecureRandom.bytes(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) } % 900_000_000)),
                              clientSecret: SecureRandom.bytes(32).hexString)

    /// A Huawei AppGallery Connect OAuth client, whose app id is its client id (as AGC issues them).
    public struct HMS: Sendable {
        public var clientID: String
        public var clientSecret: String
    }

    /// New keys and ids.
    /// - Parameter tokenURI: the FCM `token_uri`; point it at the emulator (`http://127.0.0.1:8443/token`)
    ///   so a client that follows the file talks to the emulator. The emulator accepts assertions whose
    ///   `aud` is its own `/token` URI or Google's.
    public static func generate(tokenURI: String = "https://oauth2.googleapis.com/token",
                                bundleID: String = "com.example.clarion.demo",
                                projectID: String = "clarion-demo") throws(CryptoError) -> EmulatorDemoCredentials {
        let apnsKey = SigningKey.generateP256()
        let keyID = randomID(length: 10)
        let teamID = randomID(length: 10)

        let rsaKey = try SigningKey.generateRSA(bits: 2048)
        let clientEmail = "clarion-emulator@\(projectID).iam.gserviceaccount.com"
        let privateKeyID = SecureRandom.bytes(20).hexString
        let clientNumber = String(SecureRandom.bytes(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) } % 1_000_000_000_000_000_000)
        let serviceAccount: JSONValue = .object([
            "type": "service_account",
            "project_id": .string(projectID),
            "private_key_id": .string(privateKeyID),
            "private_key": .string(rsaKey.pkcs8PEM),
            "client_email": .string(clientEmail),
            "client_id": .string(clientNumber),
            "auth_uri": "https://accounts.google.com/o/oauth2/auth",
            "token_uri": .string(tokenURI),
            "auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
            "client_x509_cert_url": .string("https://www.googleapis.com/robot/v1/metadata/x509/\(clientEmail.replacingOccurrences(of: "@", with: "%40"))"),
            "universe_domain": "googleapis.com",
        ])

        let apnsCertificate: APNsCertificate
        do {
            let authority = try CertificateAuthority.generate(commonName: "Clarion emulator APNs client CA")
            let issued = try authority.issueClientCertificate(
                subject: [("UID", bundleID), ("CN", "Apple Push Services: \(bundleID)"), ("OU", teamID), ("O", "Clarion demo")],
                keyType: .rsa2048)
            apnsCertificate = APNsCertificate(bundleID: bundleID, caCertificatePEM: authority.certificatePEM,
                                              certificatePEM: issued.certificateChainPEM, privateKeyPEM: issued.privateKeyPEM)
        } catch {
            throw CryptoError(.certificateFailed, "demo APNs client certificate: \(error.reason)")
        }

        return EmulatorDemoCredentials(
            apns: APNs(keyID: keyID, teamID: teamID, bundleID: bundleID, privateKeyPEM: apnsKey.pkcs8PEM,
                       publicKeyPEM: apnsKey.verifyingKey.pem),
            apnsCertificate: apnsCertificate,
            fcm: FCM(projectID: projectID, clientEmail: clientEmail, privateKeyID: privateKeyID, tokenURI: tokenURI,
                     serviceAccountJSON: serviceAccount.jsonText, publicKeyPEM: rsaKey.verifyingKey.pem),
            adm: ADM(clientID: "amzn1.application-oa2-client.\(SecureRandom.bytes(16).hexString)",
                     clientSecret: SecureRandom.bytes(32).hexString))
    }

    /// `base` with these credentials added: the APNs key (both environments) and team bundle id, the demo
    /// client CA for APNs certificate auth (it takes TLS), the FCM service account, the ADM client.
    public func configuration(base: EmulatorConfiguration = EmulatorConfiguration()) -> EmulatorConfiguration {
        var configuration = base
        configuration.apns.keys.append(.init(keyID: apns.keyID, teamID: apns.teamID, publicKeyPEM: apns.publicKeyPEM))
        configuration.apns.certificates.trustedCAPEM = [configuration.apns.certificates.trustedCAPEM, apnsCertificate.caCertificatePEM]
            .compactMap { $0 }.joined(separator: "\n")
        configuration.apns.teams.append(.init(teamID: apns.teamID, bundleIDs: [apns.bundleID]))
        configuration.fcm.serviceAccounts.append(.init(clientEmail: fcm.clientEmail, projectID: fcm.projectID,
                                                       privateKeyID: fcm.privateKeyID, publicKeyPEM: fcm.publicKeyPEM))
        configuration.adm.clients.append(.init(clientID: adm.clientID, clientSecret: adm.clientSecret))
        configuration.hms.clients.append(.init(clientID: hms.clientID, clientSecret: hms.clientSecret))
        return configuration
    }

    /// File names `write(to:)` uses.
    public enum FileName {
        public static func apnsKey(keyID: String) -> String { "AuthKey_\(keyID).p8" }
        public static let apns = "apns.json"
        public static let apnsCertificateInfo = "apns-certificate.json"
        public static let apnsClientCertificate = "apns-client-certificate.pem"
        public static let apnsClientKey = "apns-client-key.pem"
        public static let apnsClientCA = "apns-client-ca.pem"
        public static let fcmServiceAccount = "fcm-service-account.json"
        public static let adm = "adm-client.json"
        public static let hms = "hms-client.json"
        public static let emulatorConfiguration = "emulator.json"
    }

    /// Writes the credentials and a matching emulator configuration into `directory` (created if
    /// needed), private files with mode 0600:
    /// - `AuthKey_<keyID>.p8`: the APNs key; `apns.json`: `keyID`, `teamID`, `bundleID`, `keyFile`
    /// - `apns-client-certificate.pem` and `apns-client-key.pem` (0600): APNs certificate auth, for
    ///   `PlatformPrincipal` and `PlatformCredential`; `apns-client-ca.pem`: the CA that issued it;
    ///   `apns-certificate.json`: `bundleID`, `certificateFile`, `keyFile`, `caFile`
    /// - `fcm-service-account.json`: the Google service-account key file
    /// - `adm-client.json`: `clientID`, `clientSecret`
    /// - `hms-client.json`: `clientID` (also the app id), `clientSecret`
    /// - `emulator.json`: `configuration(base:)`, loadable with `EmulatorConfiguration.load(path:)`
    /// Returns the paths written.
    @discardableResult
    public func write(to directory: String, base: EmulatorConfiguration = EmulatorConfiguration()) throws(EmulatorConfigurationError) -> [String] {
        let manager = FileManager.default
        do {
            try manager.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw EmulatorConfigurationError("cannot create \(directory): \(error.localizedDescription)")
        }
        let root = URL(fileURLWithPath: directory)
        var written: [String] = []
        func put(_ name: String, _ text: String, secret: Bool) throws(EmulatorConfigurationError) {
            let path = root.appendingPathComponent(name).path
            guard manager.createFile(atPath: path, contents: Data(text.utf8),
                                     attributes: [.posixPermissions: secret ? 0o600 : 0o644]) else {
                throw EmulatorConfigurationError("cannot write \(path)")
            }
            // createFile keeps an existing file's mode: set it explicitly.
            try? manager.setAttributes([.posixPermissions: secret ? 0o600 : 0o644], ofItemAtPath: path)
            written.append(path)
        }
        let keyFile = FileName.apnsKey(keyID: apns.keyID)
        try put(keyFile, apns.privateKeyPEM, secret: true)
        let apnsInfo: JSONValue = [
            "keyID": .string(apns.keyID), "teamID": .string(apns.teamID), "bundleID": .string(apns.bundleID), "keyFile": .string(keyFile),
        ]
        try put(FileName.apns, apnsInfo.jsonText + "\n", secret: false)
        try put(FileName.apnsClientCertificate, apnsCertificate.certificatePEM, secret: false)
        try put(FileName.apnsClientKey, apnsCertificate.privateKeyPEM, secret: true)
        try put(FileName.apnsClientCA, apnsCertificate.caCertificatePEM, secret: false)
        let certificateInfo: JSONValue = [
            "bundleID": .string(apnsCertificate.bundleID), "certificateFile": .string(FileName.apnsClientCertificate),
            "keyFile": .string(FileName.apnsClientKey), "caFile": .string(FileName.apnsClientCA),
        ]
        try put(FileName.apnsCertificateInfo, certificateInfo.jsonText + "\n", secret: false)
        try put(FileName.fcmServiceAccount, fcm.serviceAccountJSON + "\n", secret: true)
        let admInfo: JSONValue = ["clientID": .string(adm.clientID), "clientSecret": .string(adm.clientSecret)]
        try put(FileName.adm, admInfo.jsonText + "\n", secret: true)
        let hmsInfo: JSONValue = ["clientID": .string(hms.clientID), "clientSecret": .string(hms.clientSecret)]
        try put(FileName.hms, hmsInfo.jsonText + "\n", secret: true)
        let data: Data
        do {
            data = try configuration(base: base).jsonData()
        } catch {
            throw EmulatorConfigurationError("cannot encode the emulator configuration: \(error)")
        }
        try put(FileName.emulatorConfiguration, String(decoding: data, as: UTF8.self) + "\n", secret: true)
        return written
    }

    /// Uppercase letters and digits, like Apple's key and team ids.
    static func randomID(length: Int) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789".utf8)
        let bytes = SecureRandom.bytes(length)
        return String(decoding: bytes.map { alphabet[Int($0) % alphabet.count] }, as: UTF8.self)
    }
}
