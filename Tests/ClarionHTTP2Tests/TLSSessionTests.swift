@testable import ClarionTransport
import Testing

/// `TLSSession` without sockets: a client and a server session hand each other their `ciphertextOut` through
/// `withCiphertext`, in pieces of any size. Records split across pieces must be kept (the session's `unread`) and
/// finished from the next piece, because the caller reuses its buffer as soon as `withCiphertext` returns.
@Suite struct TLSSessionTests {
    static let certificate = try! SelfSignedCertificate.generate()

    /// Moves everything `from` wrote to `to`, lent in pieces of `piece` bytes from a buffer that is overwritten
    /// after each piece; `body` runs for each piece (`handshake` or `read`).
    static func deliver(from: TLSSession, to: TLSSession, piece: Int, _ body: (TLSSession) -> Void) {
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: piece, alignment: 1)
        defer { buffer.deallocate() }
        while !from.ciphertextOut.isEmpty {
            let n = min(piece, from.ciphertextOut.readableBytes)
            buffer.copyMemory(from: from.ciphertextOut.readPointer, byteCount: n)
            from.ciphertextOut.consume(n)
            to.withCiphertext(buffer, n) { body(to) }
            buffer.initializeMemory(as: UInt8.self, repeating: 0xEE, count: piece)  // the caller reuses it
        }
    }

    static func handshake(piece: Int) throws -> (client: TLSSession, server: TLSSession) {
        let client = try TLSSession(context: TLSContext(clientTrusting: certificate.certificatePEM, alpn: "h2"),
                                    serverName: "localhost")
        let server = try TLSSession(context: TLSContext(server: certificate.identity, alpn: "h2"), serverName: nil)
        var clientDone = false
        var serverDone = false
        func step(_ session: TLSSession, _ done: inout Bool) {
            guard !done else { return }
            switch session.handshake() {
            case .done: done = true
            case .inProgress: break
            case .failed(let error): Issue.record("handshake failed: \(error)")
            }
        }
        step(client, &clientDone)  // ClientHello
        for _ in 0..<20 where !(clientDone && serverDone) {
            deliver(from: client, to: server, piece: piece) { step($0, &serverDone) }
            deliver(from: server, to: client, piece: piece) { step($0, &clientDone) }
        }
        #expect(clientDone && serverDone)
        return (client, server)
    }

    /// Everything the session can decrypt from pieces of `piece` bytes, appended to `into`.
    static func readAll(from: TLSSession, to: TLSSession, piece: Int, into received: inout [UInt8]) {
        let plaintext = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 1)
        defer { plaintext.deallocate() }
        var got: [UInt8] = []
        deliver(from: from, to: to, piece: piece) { session in
            while case .bytes(let n) = session.read(into: plaintext) {
                got.append(contentsOf: plaintext[0..<n])
            }
        }
        received += got
    }

    @Test(arguments: [1, 7, 100, 16 * 1024 + 29, 64 * 1024])
    func recordsSplitAcrossLentPiecesArriveWhole(piece: Int) throws {
        let (client, server) = try Self.handshake(piece: piece)
        // Three writes: one small, one of several full records, one odd-sized.
        let messages: [[UInt8]] = [
            Array("PRI * HTTP/2.0".utf8),
            (0..<40_000).map { UInt8(truncatingIfNeeded: $0 &* 31) },
            (0..<5_001).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) },
        ]
        for message in messages {
            #expect(message.withUnsafeBytes { client.write($0.baseAddress!, $0.count) })
        }
        var received: [UInt8] = []
        Self.readAll(from: client, to: server, piece: piece, into: &received)
        let sent = messages.flatMap { $0 }
        let arrivedWhole = received == sent  // compared outside #expect: a failure would print 45 KB of bytes
        #expect(arrivedWhole, "server got \(received.count) of \(sent.count) bytes, or different ones")

        // And back, server to client.
        let answer = (0..<20_000).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        #expect(answer.withUnsafeBytes { server.write($0.baseAddress!, $0.count) })
        var back: [UInt8] = []
        Self.readAll(from: server, to: client, piece: piece, into: &back)
        let answerArrivedWhole = back == answer
        #expect(answerArrivedWhole, "client got \(back.count) of \(answer.count) bytes, or different ones")
    }

    @Test func aWrongServerNameFailsVerificationThroughTheSameBIO() throws {
        let client = try TLSSession(context: TLSContext(clientTrusting: Self.certificate.certificatePEM, alpn: "h2"),
                                    serverName: "not-the-server.example")
        let server = try TLSSession(context: TLSContext(server: Self.certificate.identity, alpn: "h2"), serverName: nil)
        var failure: TransportError?
        _ = client.handshake()
        for _ in 0..<10 where failure == nil {
            Self.deliver(from: client, to: server, piece: 512) { _ = $0.handshake() }
            Self.deliver(from: server, to: client, piece: 512) {
                if case .failed(let error) = $0.handshake() { failure = error }
            }
        }
        guard failure?.code == .tlsVerificationFailed else {
            Issue.record("expected a verification failure, got \(String(describing: failure))")
            return
        }
        #expect(!client.ciphertextOut.isEmpty, "the client's alert is queued for the socket")
    }
}
