@testable import ClarionHTTP2
@testable import ClarionTransport
import Foundation
import Synchronization
import Testing

/// The server's actions and lifecycle, driven by our client over real sockets.
@Suite struct HTTP2ServerBehaviourTests {
    @Test func respondAfterAddsLatencyWithoutBlockingTheLoop() async throws {
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        let server = try HTTP2Server(configuration: .init(maxConcurrentStreams: 200), group: group) { _, _ in
            .respondAfter(.milliseconds(300), okResponse)
        }
        let port = try server.start()
        let pool = try HTTP2ClientPool(configuration: poolConfiguration(.http, port: port), group: group)
        #expect(await pool.send(HTTP2Request(path: "/warm-up")).status == 200)
        let sink = CollectingSink()
        let clock = ContinuousClock()
        let started = clock.now
        pool.submit((0..<100).map { HTTP2Request(path: "/", tag: UInt64($0)) }, sink: sink)
        let completions = await sink.wait(for: 100)
        // Timed where the answers were delivered (the loop thread), not when this task resumed, which on a loaded
        // machine may be much later.
        let elapsed = (sink.lastArrival ?? clock.now) - started
        #expect(completions.count == 100 && completions.allSatisfy { $0.result.status == 200 })
        #expect(elapsed >= .milliseconds(300))
        #expect(elapsed < .seconds(3), "100 delayed answers overlapped (took \(elapsed))")
        await pool.shutdown()
        await server.shutdown()
    }

    @Test func responderAnswersAStalledStreamOnceAndIsHarmlessAfterTheClientGaveUp() async throws {
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        let responders = Mutex<[String: HTTP2ServerResponder]>([:])
        let server = try HTTP2Server(configuration: .init(), group: group) { request, context in
            if request.path == "/" { return .respond(okResponse) }
            let responder = context.responder()
            responders.withLock { $0[request.path] = responder }
            return .stall
        }
        let port = try server.start()
        let pool = try HTTP2ClientPool(configuration: poolConfiguration(.http, port: port), group: group)
        // Submitted, not sent from a child task: the request is on its way even if no task runs for a while.
        let sink = CollectingSink()
        pool.submit([HTTP2Request(path: "/held")], sink: sink)
        let responder = await sample(until: { $0 != nil }) { responders.withLock { $0["/held"] } }
        #expect(responder != nil)
        #expect(sink.completions.isEmpty, "held until answered")
        responder?.respond(HTTP2ServerResponse(status: 201))
        responder?.respond(HTTP2ServerResponse(status: 500))  // only the first answer counts
        let held = await sink.wait(for: 1)
        #expect(held.count == 1 && held.allSatisfy { $0.result.status == 201 }, "\(held)")
        // The client times out and resets the stream; an answer after that must not disturb the connection.
        #expect(await pool.send(HTTP2Request(path: "/gone", timeout: .milliseconds(200))).error == .timeout)
        let gone = await sample(until: { $0 != nil }) { responders.withLock { $0["/gone"] } }
        #expect(gone != nil)
        gone?.respond(okResponse)
        #expect(await pool.send(HTTP2Request(path: "/")).status == 200)
        #expect(await pool.statistics().connectionsOpened == 1)
        await pool.shutdown()
        await server.shutdown()
    }

    @Test func gracefulShutdownFinishesStreamsInFlightThenClosesConnections() async throws {
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        let received = Counter()
        let server = try HTTP2Server(configuration: .init(), group: group) { _, _ in
            received.increment()
            return .respondAfter(.milliseconds(300), okResponse)
        }
        let port = try server.start()
        let pool = try HTTP2ClientPool(configuration: poolConfiguration(.http, port: port), group: group)
        #expect(await pool.send(HTTP2Request(path: "/warm-up")).status == 200)
        let sink = CollectingSink()
        pool.submit((0..<20).map { HTTP2Request(path: "/", tag: UInt64($0)) }, sink: sink)
        // Every request reached the server (and is below GOAWAY's last-stream-id) before it shuts down.
        #expect(await eventually { received.current >= 21 })
        await server.shutdown()
        #expect(server.connectionCount == 0)
        let completions = await sink.wait(for: 20)
        #expect(completions.count == 20)
        #expect(completions.allSatisfy { $0.result.status == 200 }, "\(completions.compactMap { $0.result.error })")
        await pool.shutdown()
    }

    /// Closing a socket with unread input sends RST, which can destroy the GOAWAY still on its way: a client that
    /// was sending when the server left must still read the GOAWAY and then a clean end of stream.
    @Test func gracefulShutdownReachesAClientThatIsStillSending() async throws {
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        let server = try HTTP2Server(configuration: .init(), group: group) { _, _ in .respond(okResponse) }
        let port = try server.start()
        let client = SendingClient.start(port: port)
        #expect(await eventually { client.isSending && server.connectionCount == 1 })
        await server.shutdown()
        let result = await client.outcome()
        #expect(result.sawGoAway, "\(result)")
        #expect(result.endedCleanly && result.error == nil, "\(result)")
    }

    @Test func goAwayWithDebugDataClosesAfterEarlierStreamsAndLaterOnesAreRetried() async throws {
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        let perConnection = Mutex<[UInt64: Int]>([:])
        let server = try HTTP2Server(configuration: .init(), group: group) { request, context in
            let n = perConnection.withLock { counts -> Int in
                counts[context.connectionID, default: 0] += 1
                return counts[context.connectionID]!
            }
            if context.connectionID == 1 && n == 3 {
                return .goAwayWith(errorCode: 0, debugData: Array(#"{"reason":"Shutdown"}"#.utf8))
            }
            return .respondAfter(.milliseconds(50), .init(status: 200, headers: [("x-connection", String(context.connectionID))]))
        }
        let port = try server.start()
        let goAways = Mutex<[HTTP2GoAway]>([])
        var configuration = poolConfiguration(.http, port: port)
        configuration.onGoAway = { goAway in goAways.withLock { $0.append(goAway) } }
        let pool = try HTTP2ClientPool(configuration: configuration, group: group)
        #expect(await pool.send(HTTP2Request(path: "/warm-up")).status == 200)  // connection 1, request 1
        let sink = CollectingSink()
        pool.submit((0..<10).map { HTTP2Request(path: "/", tag: UInt64($0)) }, sink: sink)
        let completions = await sink.wait(for: 10)
        #expect(completions.count == 10)
        let answeredBy = completions.compactMap { try? $0.result.get().header("x-connection") }
        #expect(answeredBy.count == 10)
        // Request 2 on connection 1 was below last-stream-id and completed there; the rest moved to connection 2.
        #expect(answeredBy.filter { $0 == "1" }.count == 1)
        #expect(answeredBy.filter { $0 == "2" }.count == 9)
        #expect(goAways.withLock { $0 } == [HTTP2GoAway(errorCode: 0, lastStreamID: 3,
                                                        debugData: Array(#"{"reason":"Shutdown"}"#.utf8))])
        // Connection 1 closes once its last stream finished; connection 2 stays.
        #expect(await sample(until: { $0 <= 1 }) { server.connectionCount } == 1)
        await pool.shutdown()
        await server.shutdown()
    }

    /// One connection, a large batch of requests in one read: the first answers must go out while the server is
    /// still working through the rest (`HTTP2ServerConnection.inputSlice`), or client and server take turns idling.
    /// The handler of the batch's last request looks at the client's socket: answers to earlier requests are
    /// already there. No timing: `poll` waits for bytes that were written before, or for 10 s if none were.
    @Test func answersToALargeBatchStartBeforeTheWholeBatchIsProcessed() async throws {
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        let clientFD = Atomic<Int32>(-1)
        let seen = Mutex<(readable: Bool, frameType: UInt8)?>(nil)
        let looked = DispatchSemaphore(value: 0)
        let server = try HTTP2Server(configuration: .init(maxConcurrentStreams: 1000), group: group) { request, _ in
            if request.path == "/last" {
                var waiting = pollfd(fd: clientFD.load(ordering: .acquiring), events: Int16(POLLIN), revents: 0)
                let readable = poll(&waiting, 1, 10_000) == 1
                var header = [UInt8](repeating: 0, count: 9)
                let peeked = recv(waiting.fd, &header, 9, Int32(MSG_PEEK | MSG_DONTWAIT))
                seen.withLock { $0 = (readable, peeked == 9 ? header[3] : 0xff) }
                looked.signal()
            }
            return .respond(HTTP2ServerResponse(status: 200))
        }
        let port = try server.start()
        let streams = 400  // about 53 KB of HEADERS frames: more than six input slices, less than one loopback packet
        let answered = await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(returning: sendBatch(port: port, streams: streams, fd: clientFD) {
                    _ = looked.wait(timeout: .now() + 30)
                })
            }
        }
        let observed = seen.withLock { $0 }
        #expect(observed?.readable == true, "no answer had been written when the last request was handled")
        #expect(observed?.frameType == 1, "the first frame waiting was a response's HEADERS")
        #expect(answered == streams)
        await server.shutdown()
    }

    @Test func startReportsTheBoundEphemeralPortAndRejectsABusyPort() async throws {
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        let server = try HTTP2Server(configuration: .init(port: 0), group: group) { _, _ in .respond(okResponse) }
        let port = try server.start()
        #expect(port > 0 && server.port == port)
        let second = try HTTP2Server(configuration: .init(port: port), group: group) { _, _ in .respond(okResponse) }
        #expect(throws: HTTP2ServerError.self) { try second.start() }
        await server.shutdown()
    }

    @Test func badTLSIdentityIsRejectedAtConstruction() throws {
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        let certificate = try SelfSignedCertificate.generate()
        let other = try SelfSignedCertificate.generate()
        let mismatched = TLSIdentity(certificateChainPEM: certificate.certificatePEM, privateKeyPEM: other.privateKeyPEM)
        #expect(throws: TLSConfigurationError.self) {
            _ = try HTTP2Server(configuration: .init(tls: mismatched), group: group) { _, _ in .respond(okResponse) }
        }
        #expect(throws: TLSConfigurationError.self) {
            _ = try HTTP2ClientPool(configuration: poolConfiguration(.https, port: 1, trusting: "not a PEM"), group: group)
        }
    }
}

/// A bare blocking h2c client: preface and SETTINGS, waits for the server's SETTINGS ACK (so nothing else is due
/// from the server), then sends `streams` GET requests in one `send` (each with a 100-byte header field, so the
/// batch spans several of the server's input slices; the last one's path is "/last"), calls `sent`, and counts the
/// response HEADERS frames. Returns that count (-1 if the connection failed).
private func sendBatch(port: Int, streams: Int, fd published: borrowing Atomic<Int32>, sent: () -> Void) -> Int {
    guard let fd = connectLoopback(port: port, receiveTimeout: 30) else { return -1 }
    defer { _ = Glibc.close(fd) }
    func sendAll(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL)) }
            if n > 0 { offset += n } else if n < 0 && errno == EINTR { continue } else { return false }
        }
        return true
    }
    var input: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 64 * 1024)
    /// Reads frames until `done` says stop (given type, flags and stream id); false if the connection ended first.
    func readFrames(until done: (UInt8, UInt8, Int) -> Bool) -> Bool {
        while true {
            while input.count >= 9 {
                let length = Int(input[0]) << 16 | Int(input[1]) << 8 | Int(input[2])
                guard input.count >= 9 + length else { break }
                let stream = Int(input[5] & 0x7f) << 24 | Int(input[6]) << 16 | Int(input[7]) << 8 | Int(input[8])
                let stop = done(input[3], input[4], stream)
                input.removeFirst(9 + length)
                if stop { return true }
            }
            let n = recv(fd, &buffer, buffer.count, 0)
            if n > 0 { input += buffer[0..<n] } else if n < 0 && errno == EINTR { continue } else { return false }
        }
    }
    let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8) + [0, 0, 0, 4, 0, 0, 0, 0, 0]  // + empty SETTINGS
    guard sendAll(preface), readFrames(until: { type, flags, _ in type == 4 && flags & 1 != 0 }) else { return -1 }
    var batch: [UInt8] = []
    let authority = Array("localhost".utf8)
    let padding = [UInt8](repeating: UInt8(ascii: "x"), count: 100)
    for i in 0..<streams {
        let path = Array((i == streams - 1 ? "/last" : "/").utf8)
        // HPACK: :method GET and :scheme http indexed; :path and :authority literal with an indexed name; x-pad a
        // literal with a new name; none of them indexed.
        let block = [0x82, 0x86, 0x04, UInt8(path.count)] + path + [0x01, UInt8(authority.count)] + authority
            + [0x00, 5] + Array("x-pad".utf8) + [UInt8(padding.count)] + padding
        let stream = 2 * i + 1
        batch += [UInt8(block.count >> 16), UInt8(block.count >> 8 & 0xff), UInt8(block.count & 0xff), 1, 0x05,
                  UInt8(stream >> 24), UInt8(stream >> 16 & 0xff), UInt8(stream >> 8 & 0xff), UInt8(stream & 0xff)]
        batch += block
    }
    published.store(fd, ordering: .releasing)
    guard sendAll(batch) else { return -1 }
    sent()
    var answered = 0
    _ = readFrames { type, _, _ in
        if type == 1 { answered += 1 }
        return answered == streams
    }
    return answered
}
