@testable import ClarionHTTP2
@testable import ClarionTransport
import Foundation
import Synchronization
import Testing

/// TLS client certificates (mutual TLS) over real sockets: the pool presents its `clientIdentity`, the server asks
/// for one and hands the handler what it saw; bad pairs fail when the pool is configured; pools are keyed by the
/// certificate.
@Suite struct TLSClientCertificateTests {
    /// The server's own certificate, trusted by every pool here.
    static let serverCertificate = try! SelfSignedCertificate.generate()
    static let authority = try! CertificateAuthority.generate(commonName: "client CA")
    static let stranger = try! CertificateAuthority.generate(commonName: "stranger CA")

    /// Peer certificates the server saw, per connection.
    final class Seen: Sendable {
        let entries = Mutex<[(connection: UInt64, peer: TLSPeerCertificate?)]>([])
        var all: [(connection: UInt64, peer: TLSPeerCertificate?)] { entries.withLock { $0 } }
    }

    static func server(_ group: EventLoopGroup, requireVerified: Bool = false, seen: Seen = Seen()) throws -> HTTP2Server {
        try HTTP2Server(
            configuration: .init(tls: serverCertificate.identity,
                                 clientCertificates: TLSClientCertificateRequest(trustedCAPEM: authority.certificatePEM,
                                                                                 requireVerified: requireVerified)),
            group: group) { _, context in
                seen.entries.withLock { $0.append((context.connectionID, context.peerCertificate)) }
                return .respond(okResponse)
            }
    }

    static func pool(_ group: EventLoopGroup, port: Int, identity: TLSIdentity?) throws -> HTTP2ClientPool {
        var configuration = poolConfiguration(.https, port: port, trusting: serverCertificate.certificatePEM)
        configuration.clientIdentity = identity
        return try HTTP2ClientPool(configuration: configuration, group: group)
    }

    @Test func clientCertificateIsPresentedAndVerifiedByTheServerForP256AndRSAKeys() async throws {
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        let seen = Seen()
        let server = try Self.server(group, seen: seen)
        let port = try server.start()
        for keyType in [CertificateAuthority.KeyType.p256, .rsa2048] {
            let identity = try Self.authority.issueClientCertificate(
                subject: [("UID", "com.example.app"), ("CN", "Apple Push Services: com.example.app"), ("OU", "TEAM123456")],
                keyType: keyType)
            let pool = try Self.pool(group, port: port, identity: identity)
            #expect(await pool.send(HTTP2Request(path: "/")).status == 200, "\(keyType)")
            await pool.shutdown()
            let peer = try #require(seen.all.last?.peer, "the server saw no client certificate (\(keyType))")
            #expect(peer.isVerified, "\(peer.verificationError ?? "")")
            #expect(peer.certificate.sha256 == (try identity.leafCertificate().sha256))
            #expect(peer.certificate.subjectUserID == "com.example.app")
            #expect(peer.certificate.subjectOrganizationalUnit == "TEAM123456")
            #expect(peer.certificate.sha256.count == 64)
        }
        // Without an identity the handshake still completes (the server only asks) and the handler sees nothing.
        let anonymous = try Self.pool(group, port: port, identity: nil)
        #expect(await anonymous.send(HTTP2Request(path: "/")).status == 200)
        #expect(seen.all.last.map { $0.peer == nil } == true)
        await anonymous.shutdown()
        await server.shutdown()
    }

    @Test func certificateFromAnotherCAOrExpiredReachesTheHandlerUnverified() async throws {
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        let seen = Seen()
        let server = try Self.server(group, seen: seen)
        let port = try server.start()
        let cases: [(TLSIdentity, String)] = [
            (try Self.stranger.issueClientCertificate(subject: [("CN", "stranger")]), "verify"),
            (try Self.authority.issueClientCertificate(subject: [("CN", "expired")], validityDays: 0), "expired"),
        ]
        for (identity, expected) in cases {
            let pool = try Self.pool(group, port: port, identity: identity)
            #expect(await pool.send(HTTP2Request(path: "/")).status == 200)
            await pool.shutdown()
            let peer = try #require(seen.all.last?.peer)
            #expect(!peer.isVerified)
            #expect(peer.verificationError?.contains(expected) == true, "\(peer.verificationError ?? "nil")")
            #expect(peer.certificate.sha256 == (try identity.leafCertificate().sha256))
        }
        await server.shutdown()
    }

    @Test func serverRequiringAVerifiedCertificateRefusesUnknownAndMissingOnesAsClientCertificateRejected() async throws {
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        let server = try Self.server(group, requireVerified: true)
        let port = try server.start()

        let good = try Self.pool(group, port: port, identity: try Self.authority.issueClientCertificate(subject: [("CN", "good")]))
        #expect(await good.send(HTTP2Request(path: "/")).status == 200)
        await good.shutdown()

        for identity in [try Self.stranger.issueClientCertificate(subject: [("CN", "stranger")]), nil] {
            let pool = try Self.pool(group, port: port, identity: identity)
            let result = await pool.send(HTTP2Request(path: "/"))
            guard case .tlsClientCertificateRejected(let reason) = result.error else {
                Issue.record("expected tlsClientCertificateRejected (\(identity == nil ? "none" : "stranger")), got \(result)")
                await pool.shutdown()
                continue
            }
            #expect(reason.contains("alert"), "\(reason)")
            await pool.shutdown()
        }
        await server.shutdown()
    }

    @Test func aKeyThatIsNotTheCertificatesFailsWhenThePoolIsConfigured() throws {
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        let one = try Self.authority.issueClientCertificate(subject: [("CN", "one")])
        let two = try Self.authority.issueClientCertificate(subject: [("CN", "two")], keyType: .rsa2048)
        let origin = HTTP2Origin(scheme: .https, host: "127.0.0.1", port: 1)
        let cases: [(TLSIdentity, TLSConfigurationError.Code)] = [
            (TLSIdentity(certificateChainPEM: one.certificateChainPEM, privateKeyPEM: two.privateKeyPEM), .keyMismatch),
            (TLSIdentity(certificateChainPEM: two.certificateChainPEM, privateKeyPEM: one.privateKeyPEM), .keyMismatch),
            (TLSIdentity(certificateChainPEM: "not a certificate", privateKeyPEM: one.privateKeyPEM), .certificate),
            (TLSIdentity(certificateChainPEM: one.certificateChainPEM, privateKeyPEM: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"), .privateKey),
            (TLSIdentity(certificateChainPEM: one.certificateChainPEM, privateKeyPEM: one.certificateChainPEM), .privateKey),
        ]
        for (identity, code) in cases {
            #expect(throws: TLSConfigurationError.self) { try identity.validate() }
            do {
                _ = try HTTP2ClientPool(configuration: HTTP2PoolConfiguration(origin: origin, identity: "x", clientIdentity: identity),
                                        group: group)
                Issue.record("a pool was built with a bad identity (\(code))")
            } catch {
                #expect(error.code == code, "\(error)")
                if code == .keyMismatch { #expect(error.description.contains("does not match")) }
            }
        }
        // The good pairs pass the same check.
        try one.validate()
        try two.validate()
    }

    @Test func poolsAreKeyedByTheClientCertificateNotOnlyByOriginAndIdentity() async throws {
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        let seen = Seen()
        let server = try Self.server(group, seen: seen)
        let port = try server.start()
        let client = HTTP2Client(group: group)
        let first = try Self.authority.issueClientCertificate(subject: [("CN", "first")])
        let second = try Self.authority.issueClientCertificate(subject: [("CN", "second")])
        func configuration(_ identity: TLSIdentity?) -> HTTP2PoolConfiguration {
            var configuration = poolConfiguration(.https, port: port, trusting: Self.serverCertificate.certificatePEM)
            configuration.identity = "same-label"  // a careless caller gives both the same identity label
            configuration.clientIdentity = identity
            return configuration
        }
        let a = try client.pool(for: configuration(first))
        let aAgain = try client.pool(for: configuration(first))
        let b = try client.pool(for: configuration(second))
        let none = try client.pool(for: configuration(nil))
        #expect(a === aAgain)
        #expect(a !== b && a !== none && b !== none)
        #expect(a.key.clientCertificateSHA256 == (try first.leafCertificate().sha256))
        #expect(none.key.clientCertificateSHA256 == nil)
        #expect(client.existingPool(a.key) === a)
        #expect(await a.send(HTTP2Request(path: "/")).status == 200)
        #expect(await b.send(HTTP2Request(path: "/")).status == 200)
        let hashes = Set(seen.all.compactMap { $0.peer?.certificate.sha256 })
        #expect(hashes == [try first.leafCertificate().sha256, try second.leafCertificate().sha256])
        #expect(Set(seen.all.map(\.connection)).count == 2, "two certificates never share a connection")
        await client.removePool(b.key)
        #expect(client.existingPool(b.key) == nil)
        await client.shutdown()
        await server.shutdown()
    }

    @Test func issuedCertificatesCarryTheirSubjectExpiryAndMarkerExtensions() throws {
        let identity = try Self.authority.issueClientCertificate(
            subject: [("UID", "com.example.app"), ("CN", "Apple Development IOS Push Services: com.example.app")],
            markerOIDs: ["1.2.840.113635.100.6.3.1"], validityDays: 2)
        let certificate = try identity.leafCertificate()
        #expect(certificate.subjectUserID == "com.example.app")
        #expect(certificate.subjectCommonName == "Apple Development IOS Push Services: com.example.app")
        #expect(certificate.extensionOIDs.contains("1.2.840.113635.100.6.3.1"))
        #expect(!certificate.extensionOIDs.contains("1.2.840.113635.100.6.3.2"))
        #expect(certificate.extensionOIDs.contains("2.5.29.37"), "extended key usage (clientAuth)")
        let now = Int64(Date().timeIntervalSince1970)
        let notAfter = try #require(certificate.notAfter)
        #expect(abs(notAfter - (now + 2 * 86_400)) < 120)
        #expect(certificate.der.count > 100)
        #expect(throws: TLSConfigurationError.self) { _ = try TLSCertificate(pem: "nothing here") }
    }
}
