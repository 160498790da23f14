@testable import ClarionHTTP2
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
