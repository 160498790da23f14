@testable import ClarionTransport
import ClarionTestSupport
import Foundation
import Testing

/// Regression tests for memory that OpenSSL reads after Swift lent it. They only show in optimised builds: run them
/// with `swift build -c release --build-tests -Xswiftc -enable-testing` too (docs/testing.md).
@Suite struct PEMInputLifetimeTests {
    /// PEM inputs above glibc's per-thread cache size (about 1 KiB), so freed copies of them get poisoned.
    static let authorities = try! (0..<4).map { try CertificateAuthority.generate(commonName: "Clarion interop CA \($0)") }
    static let bundle = authorities.map(\.certificatePEM).joined()
    static let rsaIdentity = try! authorities[0].issueClientCertificate(subject: [("CN", "interop")], keyType: .rsa2048)

    /// Rule: BIO_new_mem_buf does not copy its input: the bytes must stay alive until the BIO is read and freed.
    /// (Release builds freed the array as soon as `withUnsafeBytes` returned: "no certificate in PEM".)
    @Test func pemParsingReadsInputThatIsStillAlive() throws {
        #expect(Self.bundle.utf8.count > 1100 && Self.rsaIdentity.privateKeyPEM.utf8.count > 1100)
        try FreedMemoryPoisoning.with {
            var churn: [[UInt8]] = []
            for round in 0..<200 {
                // The extra trusted CAs (readCertificates) and a certificate + key (readCertificates, readPrivateKey).
                _ = try TLSContext(clientTrusting: Self.bundle, alpn: "h2")
                try Self.rsaIdentity.validate()
                let leaf = try TLSCertificate(pem: Self.bundle)
                #expect(leaf.subjectCommonName == "Clarion interop CA 0")
                // Allocation churn of many sizes between rounds, so freed blocks are handed out again.
                churn.append([UInt8](repeating: UInt8(truncatingIfNeeded: round), count: 900 + (round * 131) % 4000))
                if churn.count > 24 { churn.removeFirst(12) }
            }
        }
    }

    /// Rule: BIO_new_mem_buf does not copy its input. A client that trusts an extra CA bundle completes a handshake
    /// with a server whose certificate is in that bundle.
    @Test func aHandshakeVerifiesAgainstAnExtraTrustedCABundle() throws {
        let server = try SelfSignedCertificate.generate()
        let trusted = Self.bundle + server.certificatePEM
        try FreedMemoryPoisoning.with {
            for _ in 0..<20 {
                let client = try TLSSession(context: TLSContext(clientTrusting: trusted, alpn: "h2"), serverName: "localhost")
                let peer = try TLSSession(context: TLSContext(server: server.identity, alpn: "h2"), serverName: nil)
                #expect(Self.handshake(client, peer))
            }
        }
    }

    /// Drives both handshakes to the end in memory; true when both finished.
    static func handshake(_ client: TLSSession, _ server: TLSSession, beforeEachStep: () -> Void = {}) -> Bool {
        var clientDone = false
        var serverDone = false
        func step(_ session: TLSSession, _ done: inout Bool) {
            guard !done else { return }
            beforeEachStep()
            switch session.handshake() {
            case .done: done = true
            case .inProgress: break
            case .failed(let error): Issue.record("handshake failed: \(error)")
            }
        }
        step(client, &clientDone)
        for _ in 0..<20 where !(clientDone && serverDone) {
            TLSSessionTests.deliver(from: client, to: server, piece: 4096) { step($0, &serverDone) }
            TLSSessionTests.deliver(from: server, to: client, piece: 4096) { step($0, &clientDone) }
        }
        return clientDone && serverDone
    }
}
