import ClarionCrypto
import ClarionTransport
import Foundation
import Testing
@testable import ClarionEmulator

/// APNs certificate-based auth in the emulator's logic (no sockets): the connection's TLS client certificate,
/// as the HTTP/2 server hands it over, decides when no provider token does (docs/providers.md A.2, A.6).
@Suite struct APNsCertificateEmulatorTests {
    typealias F = EmulatorFixture

    static let authority = try! CertificateAuthority.generate(commonName: "emulator test CA")
    static let stranger = try! CertificateAuthority.generate(commonName: "stranger CA")
    static let universal = try! issue(F.bundleID)

    static func issue(_ bundleID: String, authority: CertificateAuthority = Self.authority, markers: [String] = []) throws -> TLSIdentity {
        try authority.issueClientCertificate(subject: [("UID", bundleID), ("CN", "Apple Push Services: \(bundleID)")],
                                             markerOIDs: markers, validityDays: 3650)
    }

    /// What the HTTP/2 server would hand over for `identity`: verified when our CA issued it (the emulator's TLS
    /// server trusts only that CA).
    static func peer(_ identity: TLSIdentity, verified: Bool = true) throws -> TLSPeerCertificate {
        TLSPeerCertificate(certificate: try identity.leafCertificate(),
                           verificationError: verified ? nil : "unable to get local issuer certificate (X509 error 20)")
    }

    static func fixture(_ adjust: @escaping (inout EmulatorConfiguration) -> Void = { _ in }) throws -> F {
        try F {
            $0.apns.certificates.trustedCAPEM = Self.authority.certificatePEM
            adjust(&$0)
        }
    }

    /// A push with no `authorization` header at all.
    static func request(topic: String = F.bundleID, pushType: String? = nil, authorization: String? = nil) -> EmulatorRequest {
        var headers: [(String, String)] = [("apns-topic", topic)]
        if let pushType { headers.append(("apns-push-type", pushType)) }
        if let authorization { headers.append(("authorization", authorization)) }
        return EmulatorRequest(method: "POST", path: "/3/device/\(F.validToken)", headers: headers, body: Array(#"{"aps":{"alert":"hi"}}"#.utf8))
    }

    static func connection(_ f: F, _ peer: TLSPeerCertificate?) -> EmulatorConnectionState {
        f.emulator.makeConnectionState(id: 1, peerCertificate: peer)
    }

    @Test("APNs A.2: a connection whose client certificate the configured CA issued is accepted with no provider token, and an authorization header on it is ignored")
    func certificateAuthenticates() throws {
        let f = try Self.fixture()
        let connection = Self.connection(f, try Self.peer(Self.universal))
        let first = f.emulator.handle(Self.request(), connection: connection)
        #expect(first.status == 200)
        #expect(connection.isAPNsCertificateAuthenticated)
        #expect(f.emulator.handle(Self.request(authorization: "bearer not-a-jwt"), connection: connection).status == 200)
        #expect(f.emulator.handle(Self.request(authorization: "bearer \(f.apnsJWT())"), connection: connection).status == 200)
        #expect(connection.boundAPNsKeyID == nil, "the token was ignored, not bound")
    }

    @Test("APNs A.6: with no provider token, a certificate the emulator does not accept is 403 BadCertificate, and no certificate at all is 403 MissingProviderToken")
    func missingOrUnknownCertificate() throws {
        let f = try Self.fixture()
        let unknown = Self.connection(f, try Self.peer(try Self.issue(F.bundleID, authority: Self.stranger), verified: false))
        let refused = f.emulator.handle(Self.request(), connection: unknown)
        #expect(refused.status == 403)
        #expect(refused.reason == "BadCertificate")
        let none = f.emulator.handle(Self.request(), connection: Self.connection(f, nil))
        #expect(none.status == 403)
        #expect(none.reason == "MissingProviderToken")
        #expect(f.emulator.stats()["apns"].reasons == ["BadCertificate": 1, "MissingProviderToken": 1])
    }

    @Test("APNs A.5 unchanged: on a connection with an unknown certificate a valid provider token still authenticates")
    func unknownCertificateWithToken() throws {
        let f = try Self.fixture()
        let connection = Self.connection(f, try Self.peer(try Self.issue(F.bundleID, authority: Self.stranger), verified: false))
        #expect(f.emulator.handle(f.apnsRequest(), connection: connection).status == 200)
        #expect(connection.boundAPNsKeyID == F.keyID)
        #expect(!connection.isAPNsCertificateAuthenticated)
    }

    @Test("APNs A.6: a certificate listed as accepted (no CA) is accepted until it expires by the emulator's clock, then 403 BadCertificate")
    func pinnedCertificate() throws {
        let selfSigned = try CertificateAuthority.generate(commonName: "pinned").issueClientCertificate(
            subject: [("UID", F.bundleID)], validityDays: 10)
        let f = try F { $0.apns.certificates.acceptedCertificatePEMs = [selfSigned.certificateChainPEM] }
        // The fixture's clock starts in 2027; start it now so the 10-day certificate is in date.
        let now = Date().timeIntervalSince1970
        f.clock.advance(now - f.clock.now)
        #expect(f.emulator.clientCertificateRequest?.trustedCAPEM == nil, "asks for certificates, trusts no CA")
        let peer = try Self.peer(selfSigned, verified: false)  // no CA: OpenSSL cannot verify it; the hash decides
        #expect(f.emulator.handle(Self.request(), connection: Self.connection(f, peer)).status == 200)
        f.clock.advance(11 * 86_400)
        let expired = f.emulator.handle(Self.request(), connection: Self.connection(f, peer))
        #expect(expired.reason == "BadCertificate")
    }

    @Test("APNs A.6: a development-only certificate on production, or a production-only one on the sandbox, is 403 BadCertificateEnvironment; a universal one works on both")
    func certificateEnvironment() throws {
        let development = try Self.issue(F.bundleID, markers: [APNsEmulator.developmentMarkerOID])
        let production = try Self.issue(F.bundleID, markers: [APNsEmulator.productionMarkerOID])
        let both = try Self.issue(F.bundleID, markers: [APNsEmulator.developmentMarkerOID, APNsEmulator.productionMarkerOID])
        let onProduction = try Self.fixture()
        let onSandbox = try Self.fixture { $0.apns.environment = .sandbox }
        func reason(_ f: F, _ identity: TLSIdentity) throws -> String? {
            f.emulator.handle(Self.request(), connection: Self.connection(f, try Self.peer(identity))).reason
        }
        #expect(try reason(onProduction, development) == "BadCertificateEnvironment")
        #expect(try reason(onSandbox, production) == "BadCertificateEnvironment")
        for identity in [both, Self.universal] {
            #expect(try reason(onProduction, identity) == nil)
            #expect(try reason(onSandbox, identity) == nil)
        }
        #expect(try reason(onProduction, production) == nil)
        #expect(try reason(onSandbox, development) == nil)
    }

    @Test("APNs A.3: a certificate may push to the bundle id in its subject UID, with the push types' suffixes; another bundle id is 400 TopicDisallowed")
    func certificateTopics() throws {
        let f = try Self.fixture()
        let connection = Self.connection(f, try Self.peer(Self.universal))
        #expect(f.emulator.handle(Self.request(topic: F.bundleID + ".voip", pushType: "voip"), connection: connection).status == 200)
        #expect(f.emulator.handle(Self.request(topic: F.bundleID, pushType: "alert"), connection: connection).status == 200)
        #expect(f.emulator.handle(Self.request(topic: F.otherBundleID), connection: connection).reason == "TopicDisallowed")
        // The team's other bundle ids (token auth) mean nothing to a certificate.
        let noUID = try Self.authority.issueClientCertificate(subject: [("CN", "no uid")])
        #expect(f.emulator.handle(Self.request(), connection: Self.connection(f, try Self.peer(noUID))).reason == "TopicDisallowed")
    }

    @Test("APNs A.7: a certificate connection starts at one stream, raised once its first push is accepted")
    func certificateStreamLimit() throws {
        let f = try Self.fixture()
        let connection = Self.connection(f, try Self.peer(Self.universal))
        #expect(connection.advertisedMaxConcurrentStreams == 1)
        #expect(f.emulator.handle(Self.request(), connection: connection).maxConcurrentStreams == 1000)
        #expect(f.emulator.handle(Self.request(), connection: connection).maxConcurrentStreams == nil)
    }

    @Test("Emulator configuration: certificates from files (trustedCAPath, acceptedCertificatePaths) load; unreadable or non-certificate PEM is refused")
    func certificateConfiguration() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("emu-certs-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        try Self.authority.certificatePEM.write(to: dir.appendingPathComponent("ca.pem"), atomically: true, encoding: .utf8)
        try Self.universal.certificateChainPEM.write(to: dir.appendingPathComponent("one.pem"), atomically: true, encoding: .utf8)
        let json = #"{"tls":{"enabled":true},"apns":{"certificates":{"trustedCAPath":"ca.pem","acceptedCertificatePaths":["one.pem"]}}}"#
        try json.write(to: dir.appendingPathComponent("emulator.json"), atomically: true, encoding: .utf8)
        let configuration = try EmulatorConfiguration.load(path: dir.appendingPathComponent("emulator.json").path)
        #expect(configuration.apns.certificates.trustedCAPath == dir.appendingPathComponent("ca.pem").path)
        let emulator = try ProviderEmulator(configuration: configuration)
        #expect(emulator.clientCertificateRequest?.trustedCAPEM == Self.authority.certificatePEM)
        #expect(emulator.apns.acceptedCertificateHashes == [try Self.universal.leafCertificate().sha256])

        var missing = EmulatorConfiguration()
        missing.apns.certificates.trustedCAPath = dir.appendingPathComponent("absent.pem").path
        #expect(throws: EmulatorConfigurationError.self) { _ = try ProviderEmulator(configuration: missing) }
        var notPEM = EmulatorConfiguration()
        notPEM.apns.certificates.acceptedCertificatePEMs = [Self.universal.privateKeyPEM]
        #expect(throws: EmulatorConfigurationError.self) { _ = try ProviderEmulator(configuration: notPEM) }
        #expect(try ProviderEmulator(configuration: EmulatorConfiguration()).clientCertificateRequest == nil)
    }
}
