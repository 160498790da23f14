@testable import ClarionHTTP2
@testable import ClarionTransport
import ClarionTestSupport
internal import COpenSSL
import Foundation
import Synchronization
import Testing

/// OpenSSL's per-thread error queue on a loop thread that many connections share.
@Suite struct OpenSSLErrorQueueTests {
    /// Puts an entry on this thread's OpenSSL error queue, the way any failed OpenSSL call does (here a DER parse
    /// of bytes that are not DER), and leaves it there.
    static func pushStaleOpenSSLError() {
        let garbage: [UInt8] = [0x30, 0x82, 0xFF, 0xFF, 0x01, 0x02]
        garbage.withUnsafeBufferPointer { buffer in
            var pointer = buffer.baseAddress
            if let certificate = d2i_X509(nil, &pointer, buffer.count) { X509_free(certificate) }
        }
        precondition(ERR_peek_error() != 0, "expected an error on the queue")
    }

    /// Rule: SSL_get_error reads the thread's whole error queue, so the queue must be empty before SSL_read,
    /// SSL_write and SSL_do_handshake. A stale entry (from any other OpenSSL call on the loop thread) turned a
    /// healthy connection's "want read" into a fatal error.
    @Test func aStaleErrorOnTheThreadDoesNotFailAHealthySession() throws {
        let certificate = TLSSessionTests.certificate
        let client = try TLSSession(context: TLSContext(clientTrusting: certificate.certificatePEM, alpn: "h2"), serverName: "localhost")
        let server = try TLSSession(context: TLSContext(server: certificate.identity, alpn: "h2"), serverName: nil)
        #expect(PEMInputLifetimeTests.handshake(client, server, beforeEachStep: Self.pushStaleOpenSSLError))

        let plaintext = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 1)
        defer { plaintext.deallocate() }
        for round in 0..<3 {
            let message = Array("message \(round)".utf8)
            Self.pushStaleOpenSSLError()
            #expect(message.withUnsafeBytes { client.write($0.baseAddress!, $0.count) })
            var received: [UInt8] = []
            var outcomes: [String] = []
            TLSSessionTests.deliver(from: client, to: server, piece: 4096) { session in
                while true {
                    Self.pushStaleOpenSSLError()
                    switch session.read(into: plaintext) {
                    case .bytes(let n): received += plaintext[0..<n]; continue
                    case .needMoreInput: outcomes.append("needMoreInput")
                    case .closed: outcomes.append("closed")
                    case .failed(let error): outcomes.append("failed: \(error)")
                    }
                    break
                }
            }
            #expect(received == message)
            #expect(outcomes.allSatisfy { $0 == "needMoreInput" }, "\(outcomes)")
        }
        ERR_clear_error()
    }

    /// Rule: SSL_set_tlsext_host_name can fail (a name over 255 bytes): check it, and leave no error behind.
    @Test func anUnusableServerNameFailsTheSessionAndLeavesNoError() throws {
        ERR_clear_error()
        let context = try TLSContext(clientTrusting: TLSSessionTests.certificate.certificatePEM, alpn: "h2")
        let name = String(repeating: "a", count: 63) + "." + String(repeating: "b", count: 63) + "."
            + String(repeating: "c", count: 63) + "." + String(repeating: "d", count: 63) + ".example"
        #expect(throws: TransportError.self) { try TLSSession(context: context, serverName: name) }
        #expect(ERR_peek_error() == 0, "an error left on the loop thread's queue")
        ERR_clear_error()
    }

    /// Rule: SSL_get_error reads the thread's whole error queue. End to end: a stale error put on the loop thread
    /// between two requests (client and server share the thread) does not drop the TLS connection.
    @Test func aStaleErrorOnTheLoopThreadDoesNotDropTheConnection() async throws {
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        let certificate = try SelfSignedCertificate.generate()
        let server = try HTTP2Server(configuration: .init(tls: certificate.identity), group: group) { _, context in
            .respond(status: 200, body: Array(String(context.connectionID).utf8))
        }
        let port = try server.start()
        let pool = try HTTP2ClientPool(
            configuration: poolConfiguration(.https, port: port, trusting: certificate.certificatePEM), group: group)
        let first = try await pool.send(HTTP2Request(path: "/")).get()
        #expect(first.status == 200)
        for _ in 0..<3 {
            group.loops[0].execute { Self.pushStaleOpenSSLError() }
            let again = await pool.send(HTTP2Request(path: "/"))
            #expect(again.status == 200, "\(String(describing: again.error))")
            #expect(try again.get().body == first.body, "the same connection carried it")
        }
        await pool.shutdown()
        await server.shutdown()
    }
}
