import ClarionCore
import ClarionCrypto
import Foundation
import Testing
@testable import ClarionProviders

@Suite struct ProviderCredentialsTests {
    static func apnsAttributes() -> [String: String] {
        [
            ProviderAttribute.platformCredential: Demo.apns.privateKeyPEM,
            ProviderAttribute.platformPrincipal: Demo.apns.keyID,
            ProviderAttribute.appleTeamID: Demo.apns.teamID,
            ProviderAttribute.appleBundleID: Demo.apns.bundleID,
        ]
    }

    @Test("C.7 APNs token auth: .p8 key in PlatformCredential, key id in PlatformPrincipal, team and bundle ids")
    func apnsToken() throws {
        let application = try ProviderApplication(id: "app", platform: .apns, attributes: Self.apnsAttributes())
        guard case .apnsToken(let credentials) = application.credentials else {
            Issue.record("expected token auth, got \(application.credentials)")
            return
        }
        #expect(credentials.keyID == Demo.apns.keyID)
        #expect(credentials.teamID == Demo.apns.teamID)
        #expect(credentials.bundleID == Demo.apns.bundleID)
        #expect(credentials.signingKey.algorithm == .es256)
        #expect(application.apnsBundleID == Demo.apns.bundleID)
        #expect(application.authURL == nil)
    }

    @Test("A.1 production hosts by default: APNS api.push.apple.com, APNS_SANDBOX api.sandbox.push.apple.com, FCM, ADM and its token URL")
    func defaultHosts() throws {
        let apns = try ProviderApplication(id: "a", platform: .apns, attributes: Self.apnsAttributes())
        let sandbox = try ProviderApplication(id: "s", platform: .apnsSandbox, attributes: Self.apnsAttributes())
        let voip = try ProviderApplication(id: "v", platform: .apnsVoIP, attributes: Self.apnsAttributes())
        let fcm = try ProviderApplication(id: "f", platform: .gcm,
                                          attributes: [ProviderAttribute.platformCredential: Demo.credentials.fcm.serviceAccountJSON])
        let adm = try ProviderApplication(id: "d", platform: .adm, attributes: [
            ProviderAttribute.platformPrincipal: "client", ProviderAttribute.platformCredential: "secret",
        ])
        #expect(apns.endpointURL == "https://api.push.apple.com")
        #expect(sandbox.endpointURL == "https://api.sandbox.push.apple.com")
        #expect(voip.endpointURL == "https://api.push.apple.com")
        #expect(fcm.endpointURL == "https://fcm.googleapis.com")
        #expect(fcm.authURL == "https://oauth2.googleapis.com/token")
        #expect(adm.endpointURL == "https://api.amazon.com")
        #expect(adm.authURL == "https://api.amazon.com/auth/o2/token")
        #expect(apns.trustedCAPEM == nil)
    }

    @Test("B.2 FCM: project id, client email and token_uri from the service-account JSON; FCMProjectID overrides the project")
    func fcmServiceAccount() throws {
        let json = Demo.credentials.fcm.serviceAccountJSON
        let plain = try ProviderApplication(id: "f", platform: .gcm, attributes: [ProviderAttribute.platformCredential: json])
        guard case .fcm(let account) = plain.credentials else {
            Issue.record("expected FCM credentials")
            return
        }
        #expect(account.projectID == Demo.credentials.fcm.projectID)
        #expect(account.clientEmail == Demo.credentials.fcm.clientEmail)
        #expect(account.privateKeyID == Demo.credentials.fcm.privateKeyID)
        #expect(account.tokenURI == Demo.credentials.fcm.tokenURI)
        #expect(account.signingKey.algorithm == .rs256)

        let overridden = try ProviderApplication(id: "f", platform: .gcm, attributes: [
            ProviderAttribute.platformCredential: json, ProviderAttribute.fcmProjectID: "other-project",
        ])
        guard case .fcm(let other) = overridden.credentials else {
            Issue.record("expected FCM credentials")
            return
        }
        #expect(other.projectID == "other-project")
        #expect(overridden.fingerprint != plain.fingerprint)
    }

    @Test("C.7 ADM: client id in PlatformPrincipal, secret in PlatformCredential; ProviderAuthEndpoint replaces the token URL")
    func admCredentials() throws {
        let application = try ProviderApplication(id: "d", platform: .adm, attributes: [
            ProviderAttribute.platformPrincipal: "amzn1.application-oa2-client.x",
            ProviderAttribute.platformCredential: "secret",
            ProviderAttribute.providerAuthEndpoint: "http://127.0.0.1:9/auth/o2/token",
            ProviderAttribute.providerEndpoint: "http://127.0.0.1:9",
        ])
        guard case .adm(let client) = application.credentials else {
            Issue.record("expected ADM credentials")
            return
        }
        #expect(client.clientID == "amzn1.application-oa2-client.x")
        #expect(client.clientSecret == "secret")
        #expect(application.authURL == "http://127.0.0.1:9/auth/o2/token")
        #expect(application.endpointURL == "http://127.0.0.1:9")
    }

    struct BadCase: Sendable, CustomTestStringConvertible {
        let name: String
        let platform: Platform
        let attributes: [String: String]
        let attribute: String
        var testDescription: String { name }
    }

    static let badCases: [BadCase] = {
        let apns = apnsAttributes()
        func with(_ base: [String: String], _ key: String, _ value: String?) -> [String: String] {
            var copy = base
            copy[key] = value
            return copy
        }
        let json = Demo.credentials.fcm.serviceAccountJSON
        let fcm = [ProviderAttribute.platformCredential: json]
        let rsaPEM = (try? ClarionCrypto.SigningKey.generateRSA(bits: 1024).pkcs8PEM) ?? ""
        let noEmail = json.replacingOccurrences(of: "\"client_email\"", with: "\"client_mail\"")
        let adm = [ProviderAttribute.platformPrincipal: "client", ProviderAttribute.platformCredential: "secret"]
        return [
            BadCase(name: "APNs without PlatformCredential", platform: .apns,
                    attributes: with(apns, ProviderAttribute.platformCredential, nil), attribute: ProviderAttribute.platformCredential),
            BadCase(name: "APNs key that is not PEM", platform: .apns,
                    attributes: with(apns, ProviderAttribute.platformCredential, "not a key"), attribute: ProviderAttribute.platformCredential),
            BadCase(name: "APNs RSA key (ES256 only)", platform: .apns,
                    attributes: with(apns, ProviderAttribute.platformCredential, rsaPEM), attribute: ProviderAttribute.platformCredential),
            BadCase(name: "APNs without PlatformPrincipal", platform: .apnsSandbox,
                    attributes: with(apns, ProviderAttribute.platformPrincipal, nil), attribute: ProviderAttribute.platformPrincipal),
            BadCase(name: "APNs key id not 10 characters", platform: .apns,
                    attributes: with(apns, ProviderAttribute.platformPrincipal, "KEY"), attribute: ProviderAttribute.platformPrincipal),
            BadCase(name: "APNs token auth without team id", platform: .apns,
                    attributes: with(apns, ProviderAttribute.appleTeamID, nil), attribute: ProviderAttribute.appleTeamID),
            BadCase(name: "APNs token auth without bundle id", platform: .apns,
                    attributes: with(apns, ProviderAttribute.appleBundleID, ""), attribute: ProviderAttribute.appleBundleID),
            BadCase(name: "APNs ProviderEndpoint with a path", platform: .apns,
                    attributes: with(apns, ProviderAttribute.providerEndpoint, "https://example.com/3/device"),
                    attribute: ProviderAttribute.providerEndpoint),
            BadCase(name: "APNs ProviderEndpoint not http(s)", platform: .apns,
                    attributes: with(apns, ProviderAttribute.providerEndpoint, "ftp://example.com"),
                    attribute: ProviderAttribute.providerEndpoint),
            BadCase(name: "ProviderCACertificate that is not a certificate", platform: .apns,
                    attributes: with(apns, ProviderAttribute.providerCACertificate, Demo.apns.privateKeyPEM),
                    attribute: ProviderAttribute.providerCACertificate),
            BadCase(name: "FCM legacy API key instead of a service account", platform: .gcm,
                    attributes: [ProviderAttribute.platformCredential: "AAAAxyz:legacy-server-key"], attribute: ProviderAttribute.platformCredential),
            BadCase(name: "FCM service account without client_email", platform: .gcm,
                    attributes: [ProviderAttribute.platformCredential: noEmail], attribute: ProviderAttribute.platformCredential),
            BadCase(name: "FCM project id with a slash", platform: .gcm,
                    attributes: with(fcm, ProviderAttribute.fcmProjectID, "a/b"), attribute: ProviderAttribute.fcmProjectID),
            BadCase(name: "ADM without client secret", platform: .adm,
                    attributes: with(adm, ProviderAttribute.platformCredential, nil), attribute: ProviderAttribute.platformCredential),
            BadCase(name: "ADM without client id", platform: .adm,
                    attributes: with(adm, ProviderAttribute.platformPrincipal, " "), attribute: ProviderAttribute.platformPrincipal),
            BadCase(name: "ADM ProviderAuthEndpoint not a URL", platform: .adm,
                    attributes: with(adm, ProviderAttribute.providerAuthEndpoint, "api.amazon.com/auth"),
                    attribute: ProviderAttribute.providerAuthEndpoint),
        ]
    }()

    @Test("C.7 validation errors name the attribute", arguments: badCases)
    func validationNamesAttribute(_ bad: BadCase) {
        do {
            try ProviderApplication.validate(platform: bad.platform, attributes: bad.attributes)
            Issue.record("\(bad.name) was accepted")
        } catch {
            #expect(error.attribute == bad.attribute, "\(bad.name): \(error)")
            #expect(!error.message.isEmpty)
        }
    }

    @Test("Server-wide CLARION_PROVIDER_CA_FILE is trusted for every application, with the application's own CA")
    func serverWideCA() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("prov-ca-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let serverCA = try TestCertificates.make(in: directory, name: "server-ca")
        let appCA = try TestCertificates.make(in: directory, name: "app-ca")
        let path = directory.appendingPathComponent("server-ca.pem").path
        try serverCA.certificatePEM.write(toFile: path, atomically: true, encoding: .utf8)

        let loaded = try ProviderApplication.serverTrustedCAPEM(environment: ["CLARION_PROVIDER_CA_FILE": path])
        #expect(loaded == serverCA.certificatePEM)
        #expect(try ProviderApplication.serverTrustedCAPEM(environment: [:]) == nil)
        #expect(throws: ProviderError.self) {
            _ = try ProviderApplication.serverTrustedCAPEM(environment: ["CLARION_PROVIDER_CA_FILE": directory.appendingPathComponent("missing").path])
        }

        var attributes = Self.apnsAttributes()
        let serverOnly = try ProviderApplication(id: "a", platform: .apns, attributes: attributes, serverTrustedCAPEM: loaded)
        #expect(serverOnly.trustedCAPEM == serverCA.certificatePEM)
        attributes[ProviderAttribute.providerCACertificate] = appCA.certificatePEM
        let both = try ProviderApplication(id: "a", platform: .apns, attributes: attributes, serverTrustedCAPEM: loaded)
        #expect(both.trustedCAPEM?.contains(appCA.certificatePEM) == true)
        #expect(both.trustedCAPEM?.contains(serverCA.certificatePEM) == true)
    }

    @Test("C.7 APNs certificate auth: certificate PEM in PlatformPrincipal and its key in PlatformCredential (openssl-made); a key of another certificate, a bad PEM or an h2c endpoint is refused naming the attribute; the pair builds a client")
    func apnsCertificate() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("prov-cert-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let push = try TestCertificates.make(in: directory, name: "push")
        let other = try TestCertificates.make(in: directory, name: "other")

        let attributes = [
            ProviderAttribute.platformPrincipal: push.certificatePEM,
            ProviderAttribute.platformCredential: push.privateKeyPEM,
            ProviderAttribute.appleBundleID: "com.example.cert",
            ProviderAttribute.providerEndpoint: "https://127.0.0.1:1",
        ]
        let application = try ProviderApplication(id: "cert", platform: .apns, attributes: attributes)
        guard case .apnsCertificate(let credentials) = application.credentials else {
            Issue.record("expected certificate auth")
            return
        }
        #expect(credentials.bundleID == "com.example.cert")
        #expect(application.apnsBundleID == "com.example.cert")
        // The identity is the certificate's SHA-256 (of its DER), never the host.
        #expect(application.credentials.identity == "apns-cert:\(credentials.certificate.sha256)")
        #expect(credentials.certificate.subjectCommonName == "push")

        func refusal(_ change: (inout [String: String]) -> Void) -> ProviderError? {
            var changed = attributes
            change(&changed)
            do {
                try ProviderApplication.validate(platform: .apns, attributes: changed)
                return nil
            } catch {
                return error
            }
        }
        let mismatched = refusal { $0[ProviderAttribute.platformCredential] = other.privateKeyPEM }
        #expect(mismatched?.attribute == ProviderAttribute.platformCredential)
        #expect(mismatched?.message.contains("does not match") == true, "\(String(describing: mismatched))")
        #expect(refusal { $0[ProviderAttribute.platformCredential] = nil }?.attribute == ProviderAttribute.platformCredential)
        #expect(refusal { $0[ProviderAttribute.platformCredential] = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----" }?.attribute
                == ProviderAttribute.platformCredential)
        #expect(refusal { $0[ProviderAttribute.platformPrincipal] = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----" }?.attribute
                == ProviderAttribute.platformPrincipal)
        #expect(refusal { $0[ProviderAttribute.platformPrincipal] = push.certificatePEM + push.privateKeyPEM }?.attribute
                == ProviderAttribute.platformPrincipal, "a key pasted with the certificate")
        let h2c = refusal { $0[ProviderAttribute.providerEndpoint] = "http://127.0.0.1:1" }
        #expect(h2c?.attribute == ProviderAttribute.providerEndpoint)
        #expect(h2c?.message.contains("TLS") == true)

        // Valid and sendable: the registry builds a client whose pool presents the certificate.
        let registry = try ProviderRegistry(options: Harness.options)
        let client = try registry.client(for: application)
        #expect(client.apnsTokenSigner == nil)
        #expect(client.pool.configuration.clientIdentity?.certificateChainPEM == push.certificatePEM.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(client.pool.key.clientCertificateSHA256 == credentials.certificate.sha256)
        await registry.shutdown()
    }
}

/// Self-signed certificates made with the `openssl` tool (an implementation independent of ours).
enum TestCertificates {
    struct Pair {
        let certificatePEM: String
        let privateKeyPEM: String
    }

    static func make(in directory: URL, name: String) throws -> Pair {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.currentDirectoryURL = directory
        process.arguments = ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                             "-keyout", "\(name).key", "-out", "\(name).crt", "-days", "2", "-subj", "/CN=\(name)"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw ProviderError(.invalidAttribute, "openssl req failed") }
        return Pair(certificatePEM: try String(contentsOf: directory.appendingPathComponent("\(name).crt"), encoding: .utf8),
                    privateKeyPEM: try String(contentsOf: directory.appendingPathComponent("\(name).key"), encoding: .utf8))
    }
}
