@testable import ClarionHTTP2
import ClarionCore
import ClarionTestSupport
import ClarionTransport
import Testing

/// `HTTP1ClientPool` over real sockets and TLS (a certificate the test makes, trusted as the pool's CA) against
/// `HTTP1TestServer`, which speaks HTTP/1.1 only: keep-alive reuse, `Connection: close`, chunked answers, the
/// connection bound, deadlines, the address policy; and the HTTP/2 pool's report that a server did not select h2.
@Suite(.serialized) struct HTTP1ClientPoolTests {
    static let created = "HTTP/1.1 201 Created\r\nLocation: https://push.example/m/1\r\nContent-Length: 0\r\n\r\n"

    private func configuration(_ server: HTTP1TestServer, port: Int, connections: Int = 1) -> HTTP2PoolConfiguration {
        var configuration = HTTP2PoolConfiguration(origin: HTTP2Origin(scheme: .https, host: "127.0.0.1", port: port),
                                                   identity: "vapid-key", connectionCount: connections,
                                                   requestTimeout: .seconds(10), trustedCAPEM: server.certificate.certificatePEM)
        configuration.tickInterval = .milliseconds(20)
        return configuration
    }

    @Test func keepAliveCarriesManyRequestsOverOneConnection() async throws {
        let server = try HTTP1TestServer { _ in (Self.created, false) }
        defer { server.stop() }
        let port = try server.start()
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        let pool = try HTTP1ClientPool(configuration: configuration(server, port: port), group: group)
        for i in 0..<10 {
            let result = await pool.send(HTTP2Request(path: "/push/\(i)", headers: [("ttl", "60")], body: Array("m\(i)".utf8)))
            #expect(result.response?.status == 201)
            #expect(result.response?.header("location") == "https://push.example/m/1")
        }
        // The batch path too: 20 at once, one connection, one request at a time on it.
        let sink = CollectingSink()
        let requests = (0..<20).map { HTTP2Request(path: "/batch/\($0)", body: [UInt8]("b\($0)".utf8), tag: UInt64($0)) }
        #expect(pool.submit(requests, sink: sink) == 20)
        let completions = await sink.wait(for: 20)
        #expect(completions.count == 20 && completions.allSatisfy { $0.result.response?.status == 201 })
        #expect(Set(completions.map(\.tag)) == Set(0..<20))
        #expect(server.connectionsAccepted == 1, "RFC 9112 9.3: HTTP/1.1 connections persist")
        #expect(server.requests.map(\.target) == (0..<10).map { "/push/\($0)" } + (0..<20).map { "/batch/\($0)" })
        #expect(server.requests[3].body == Array("m3".utf8))
        #expect(server.requests[0].header("host") == "127.0.0.1:\(port)")
        let statistics = await pool.statistics()
        #expect(statistics.connectionsOpened == 1 && statistics.responsesReceived == 30)
        await pool.shutdown()
    }

    @Test func connectionCloseIsHonouredAndNothingIsLost() async throws {
        // Every third answer says `Connection: close` and the server closes: the next request needs a new one.
        let server = try HTTP1TestServer { request in
            let n = Int(request.target.split(separator: "/").last!)!
            return n % 3 == 2 ? ("HTTP/1.1 201 Created\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", true) : (Self.created, false)
        }
        defer { server.stop() }
        let port = try server.start()
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        let pool = try HTTP1ClientPool(configuration: configuration(server, port: port), group: group)
        let sink = CollectingSink()
        let requests = (0..<10).map { HTTP2Request(path: "/p/\($0)", tag: UInt64($0)) }
        #expect(pool.submit(requests, sink: sink) == 10)
        let completions = await sink.wait(for: 10)
        #expect(completions.count == 10 && completions.allSatisfy { $0.result.response?.status == 201 }, "\(completions.map(\.result))")
        #expect(server.connectionsAccepted == 4, "closed after requests 2, 5 and 8: four connections for ten requests")
        await pool.shutdown()
    }

    @Test func chunkedAnswersAreRead() async throws {
        let server = try HTTP1TestServer { _ in
            ("HTTP/1.1 429 Too Many Requests\r\nRetry-After: 30\r\nTransfer-Encoding: chunked\r\n\r\n"
             + "6\r\nslow d\r\n4\r\nown!\r\n0\r\n\r\n", false)
        }
        defer { server.stop() }
        let port = try server.start()
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        let pool = try HTTP1ClientPool(configuration: configuration(server, port: port), group: group)
        for _ in 0..<3 {
            let response = await pool.send(HTTP2Request(path: "/p")).response
            #expect(response?.status == 429)
            #expect(response?.header("retry-after") == "30")
            #expect(response.map { String(decoding: $0.body, as: UTF8.self) } == "slow down!")
        }
        #expect(server.connectionsAccepted == 1)
        await pool.shutdown()
    }

    @Test func connectionsPerOriginAreBounded() async throws {
        let server = try HTTP1TestServer { _ in (Self.created, false) }
        defer { server.stop() }
        let port = try server.start()
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        let pool = try HTTP1ClientPool(configuration: configuration(server, port: port, connections: 2), group: group)
        let sink = CollectingSink()
        #expect(pool.submit((0..<50).map { HTTP2Request(path: "/p/\($0)", tag: UInt64($0)) }, sink: sink) == 50)
        let completions = await sink.wait(for: 50)
        #expect(completions.allSatisfy { $0.result.response?.status == 201 })
        #expect((1...2).contains(server.connectionsAccepted))
        await pool.shutdown()
    }

    @Test func aServerThatNeverAnswersTimesOut() async throws {
        let server = try HTTP1TestServer { _ in ("", false) }
        defer { server.stop() }
        let port = try server.start()
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        let pool = try HTTP1ClientPool(configuration: configuration(server, port: port), group: group)
        let result = await pool.send(HTTP2Request(path: "/p", timeout: .milliseconds(300)))
        #expect(result.error == .timeout)
        await pool.shutdown()
    }

    @Test func garbageFromTheServerIsAProtocolError() async throws {
        let server = try HTTP1TestServer { _ in ("SSH-2.0-OpenSSH_9.6\r\n\r\n", false) }
        defer { server.stop() }
        let port = try server.start()
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        let pool = try HTTP1ClientPool(configuration: configuration(server, port: port), group: group)
        guard case .protocolError(let reason) = await pool.send(HTTP2Request(path: "/p")).error else {
            Issue.record("expected a protocol error")
            return
        }
        #expect(reason.contains("malformed_status_line"), "\(reason)")
        await pool.shutdown()
    }

    @Test func theOutboundAddressPolicyAppliesToEveryConnection() async throws {
        let server = try HTTP1TestServer { _ in (Self.created, false) }
        defer { server.stop() }
        let port = try server.start()
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        var refusing = configuration(server, port: port)
        refusing.addressPolicy = .publicOnly
        let pool = try HTTP1ClientPool(configuration: refusing, group: group)
        guard case .connectFailed(let reason) = await pool.send(HTTP2Request(path: "/p")).error else {
            Issue.record("expected the policy to refuse 127.0.0.1")
            return
        }
        #expect(reason.contains("outbound address policy"))
        #expect(server.connectionsAccepted == 0)
        await pool.shutdown()
    }

    /// The HTTP/2 pool that offers http/1.1 reports what the server selected, before sending anything.
    @Test(arguments: [("http/1.1", "http/1.1"), (nil, "none")] as [(String?, String)])
    func anHTTP2PoolReportsAServerWithoutH2(serverALPN: String?, reported: String) async throws {
        let server = try HTTP1TestServer(alpn: serverALPN) { _ in (Self.created, false) }
        defer { server.stop() }
        let port = try server.start()
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        var offering = configuration(server, port: port)
        offering.offersHTTP1 = true
        let pool = try HTTP2ClientPool(configuration: offering, group: group)
        #expect(await pool.send(HTTP2Request(path: "/p")).error == .http2NotNegotiated(reported))
        #expect(server.requests.isEmpty, "nothing was sent over the HTTP/2 attempt")
        await pool.shutdown()
        // Without the offer, the same server fails the handshake (the h2-only providers keep that behaviour).
        let strict = try HTTP2ClientPool(configuration: configuration(server, port: port), group: group)
        guard case .tlsHandshakeFailed = await strict.send(HTTP2Request(path: "/p")).error else {
            Issue.record("expected the h2-only pool to refuse the server")
            return
        }
        await strict.shutdown()
    }
}
