import ClarionCore
import ClarionCrypto
import ClarionTransport
import Foundation
import Testing
@testable import ClarionEmulator

@Suite struct EmulatorConfigurationTests {
    static func scratch() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("emu-config-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    @Test("Configuration: a short JSON file fills every other member with defaults; relative paths resolve against the file")
    func loadsWithDefaults() throws {
        let dir = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let key = SigningKey.generateP256()
        try Data(key.pkcs8PEM.utf8).write(to: dir.appendingPathComponent("AuthKey_ABC.p8"))
        let json = #"""
        {"port": 8443,
         "apns": {"keys": [{"keyID": "ABC", "teamID": "T", "publicKeyPath": "AuthKey_ABC.p8"}], "teams": [{"teamID": "T", "bundleIDs": ["b"]}]},
         "faults": {"throttle": {"everyNth": 10}},
         "recordPath": "records.jsonl"}
        """#
        let path = dir.appendingPathComponent("emulator.json").path
        try Data(json.utf8).write(to: URL(fileURLWithPath: path))
        let configuration = try EmulatorConfiguration.load(path: path)
        #expect(configuration.port == 8443)
        #expect(configuration.host == "127.0.0.1")
        #expect(configuration.apns.maxConcurrentStreamsBeforeToken == 1)
        #expect(configuration.apns.maxConcurrentStreamsAfterToken == 1000)
        #expect(configuration.apns.keys[0].publicKeyPath == dir.appendingPathComponent("AuthKey_ABC.p8").path)
        #expect(configuration.recordPath == dir.appendingPathComponent("records.jsonl").path)
        #expect(configuration.faults.throttle == .every(10))
        #expect(configuration.faults.retryAfterSeconds == 1)
        #expect(configuration.tokenRules == EmulatorTokenRule.defaults)
        // The private .p8 works as a public key source.
        #expect(throws: Never.self) { _ = try ProviderEmulator(configuration: configuration) }
    }

    @Test("Configuration: JSON round trip through jsonData()")
    func roundTrip() throws {
        var configuration = EmulatorConfiguration()
        configuration.faults.unavailable = .fraction(0.25)
        configuration.adm.canonicalRegistrationIDs = ["a": "b"]
        let decoded = try JSONDecoder().decode(EmulatorConfiguration.self, from: configuration.jsonData())
        #expect(decoded.faults == configuration.faults)
        #expect(decoded.adm.canonicalRegistrationIDs == ["a": "b"])
    }

    @Test("Configuration: unusable keys are refused with the key named", arguments: ["garbage", "rsa", "missing"])
    func badKeys(kind: String) throws {
        var configuration = EmulatorConfiguration()
        switch kind {
        case "garbage": configuration.apns.keys = [.init(keyID: "K", teamID: "T", publicKeyPEM: "nope")]
        case "rsa": configuration.apns.keys = [.init(keyID: "K", teamID: "T", publicKeyPEM: try SigningKey.generateRSA().verifyingKey.pem)]
        default: configuration.apns.keys = [.init(keyID: "K", teamID: "T")]
        }
        do {
            _ = try ProviderEmulator(configuration: configuration)
            Issue.record("accepted \(kind)")
        } catch {
            #expect(error.message.contains("APNs key K"))
        }
    }

    @Test("Configuration: a token rule without prefix or suffix, and fault rates out of range, are refused")
    func badRulesAndRates() {
        var rule = EmulatorConfiguration()
        rule.tokenRules = [.init(provider: .fcm, outcome: "INTERNAL")]
        #expect(throws: EmulatorConfigurationError.self) { _ = try ProviderEmulator(configuration: rule) }
        var every = EmulatorConfiguration()
        every.faults.throttle = .every(0)
        #expect(throws: EmulatorConfigurationError.self) { _ = try ProviderEmulator(configuration: every) }
        var fraction = EmulatorConfiguration()
        fraction.faults.stall = .fraction(1.5)
        #expect(throws: EmulatorConfigurationError.self) { _ = try ProviderEmulator(configuration: fraction) }
    }

    @Test("Configuration: an FCM account needs an RSA key")
    func fcmNeedsRSA() {
        var configuration = EmulatorConfiguration()
        configuration.fcm.serviceAccounts = [.init(clientEmail: "a@b", projectID: "p", publicKeyPEM: SigningKey.generateP256().verifyingKey.pem)]
        #expect(throws: EmulatorConfigurationError.self) { _ = try ProviderEmulator(configuration: configuration) }
    }

    @Test("Demo credentials: the generated .p8, service-account JSON and ADM client all authenticate against the matching configuration")
    func demoCredentials() throws {
        let demo = try EmulatorDemoCredentials.generate(tokenURI: "http://127.0.0.1:8443/token")
        let clock = TestClock()
        let emulator = try ProviderEmulator(configuration: demo.configuration(), clock: { clock.now })
        let connection = emulator.makeConnectionState(id: 1)
        #expect(demo.apns.keyID.count == 10 && demo.apns.teamID.count == 10)

        // APNs with the .p8 exactly as written.
        let p8 = try SigningKey(pem: demo.apns.privateKeyPEM)
        let jwt = try JWT.sign(header: ["kid": .string(demo.apns.keyID)], claims: ["iss": .string(demo.apns.teamID), "iat": .double(clock.now)], key: p8)
        let push = EmulatorRequest(method: "POST", path: "/3/device/\(String(repeating: "0f", count: 32))",
                                   headers: [("authorization", "bearer \(jwt)"), ("apns-topic", demo.apns.bundleID)], body: Array("{}".utf8))
        #expect(emulator.handle(push, connection: connection).status == 200)

        // FCM: read the service-account JSON like a client would.
        let account = try #require((try? JSONValue.parse(demo.fcm.serviceAccountJSON)))
        #expect(account["type"] == "service_account")
        #expect(account["token_uri"] == "http://127.0.0.1:8443/token")
        let key = try SigningKey(pem: try #require(account["private_key"]?.stringValue))
        let assertion = try JWT.sign(
            header: ["typ": "JWT", "kid": try #require(account["private_key_id"])],
            claims: ["iss": try #require(account["client_email"]), "aud": try #require(account["token_uri"]),
                     "scope": "https://www.googleapis.com/auth/firebase.messaging", "iat": .double(clock.now), "exp": .double(clock.now + 3600)],
            key: key)
        let tokenRequest = EmulatorRequest(method: "POST", path: "/token", authority: "127.0.0.1:8443", scheme: "http",
                                           headers: [("content-type", "application/x-www-form-urlencoded")],
                                           body: Array("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)".utf8))
        let tokenAnswer = emulator.handle(tokenRequest, connection: connection)
        #expect(tokenAnswer.status == 200)
        let accessToken = try #require(tokenAnswer.json?["access_token"]?.stringValue)
        let send = EmulatorRequest(method: "POST", path: "/v1/projects/\(demo.fcm.projectID)/messages:send",
                                   headers: [("authorization", "Bearer \(accessToken)")], body: Array(#"{"message":{"token":"abc"}}"#.utf8))
        #expect(emulator.handle(send, connection: connection).status == 200)

        // ADM.
        let admToken = EmulatorRequest(method: "POST", path: "/auth/o2/token", headers: [("content-type", "application/x-www-form-urlencoded")],
                                       body: Array("grant_type=client_credentials&scope=messaging%3Apush&client_id=\(demo.adm.clientID)&client_secret=\(demo.adm.clientSecret)".utf8))
        #expect(emulator.handle(admToken, connection: connection).status == 200)
    }

    @Test("Demo credentials: write(to:) lays out the files (secrets 0600) and emulator.json loads back")
    func demoFiles() throws {
        let dir = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let demo = try EmulatorDemoCredentials.generate()
        let written = try demo.write(to: dir.path)
        let names = Set(written.map { URL(fileURLWithPath: $0).lastPathComponent })
        #expect(names == ["AuthKey_\(demo.apns.keyID).p8", "apns.json", "apns-certificate.json", "apns-client-certificate.pem",
                          "apns-client-key.pem", "apns-client-ca.pem", "fcm-service-account.json", "adm-client.json", "hms-client.json",
                          "emulator.json"])
        let hmsPath = dir.appendingPathComponent("hms-client.json").path
        #expect(try FileManager.default.attributesOfItem(atPath: hmsPath)[.posixPermissions] as? Int == 0o600)
        let keyPath = dir.appendingPathComponent("AuthKey_\(demo.apns.keyID).p8").path
        let mode = try FileManager.default.attributesOfItem(atPath: keyPath)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(try SigningKey(pem: String(contentsOfFile: keyPath, encoding: .utf8)).algorithm == .es256)
        // APNs certificate auth: the client key is a secret, the certificate and the CA are not; the pair matches,
        // the certificate names the bundle id as Apple's do, and the emulator trusts its CA.
        let clientKeyPath = dir.appendingPathComponent("apns-client-key.pem").path
        #expect(try FileManager.default.attributesOfItem(atPath: clientKeyPath)[.posixPermissions] as? Int == 0o600)
        let pair = TLSIdentity(certificateChainPEM: try String(contentsOfFile: dir.appendingPathComponent("apns-client-certificate.pem").path, encoding: .utf8),
                               privateKeyPEM: try String(contentsOfFile: clientKeyPath, encoding: .utf8))
        try pair.validate()
        #expect(try pair.leafCertificate().subjectUserID == demo.apns.bundleID)
        let info = try #require((try? JSONValue.parse(bytes: Array(try Data(contentsOf: dir.appendingPathComponent("apns-certificate.json"))))))
        #expect(info["bundleID"]?.stringValue == demo.apns.bundleID)
        #expect(info["certificateFile"]?.stringValue == "apns-client-certificate.pem")
        let configuration = try EmulatorConfiguration.load(path: dir.appendingPathComponent("emulator.json").path)
        #expect(configuration.apns.keys.first?.keyID == demo.apns.keyID)
        #expect(configuration.apns.certificates.trustedCAPEM == demo.apnsCertificate.caCertificatePEM)
        #expect(try ProviderEmulator(configuration: configuration).clientCertificateRequest?.trustedCAPEM == demo.apnsCertificate.caCertificatePEM)
        #expect(configuration.fcm.serviceAccounts.first?.clientEmail == demo.fcm.clientEmail)
        // A configuration can also point at the service-account file itself.
        var fromFile = EmulatorConfiguration()
        fromFile.fcm.serviceAccounts = [.init(clientEmail: demo.fcm.clientEmail, projectID: demo.fcm.projectID,
                                              serviceAccountPath: dir.appendingPathComponent("fcm-service-account.json").path)]
        let emulator = try ProviderEmulator(configuration: fromFile)
        #expect(emulator.fcm.accounts[demo.fcm.clientEmail]?.privateKeyID == demo.fcm.privateKeyID)
    }

    @Test("Token rules: prefixes and case-insensitive APNs suffixes; the first match wins")
    func ruleMatching() {
        let rules = TokenRuleSet([
            .init(provider: .apns, suffix: "dead0410", outcome: "Unregistered"),
            .init(provider: .apns, suffix: "0410", outcome: "ExpiredToken"),
            .init(provider: .fcm, prefix: "x-", outcome: "INTERNAL"),
        ], provider: .apns)
        #expect(rules.match("abcdDEAD0410")?.outcome == "Unregistered")
        #expect(rules.match("abcd00000410")?.outcome == "ExpiredToken")
        #expect(rules.match("x-abc") == nil)
        #expect(EmulatorTokenRule(provider: .fcm, outcome: "INTERNAL").matches("anything") == false)
    }
}
