@testable import ClarionHTTP2
import Foundation
import Testing

@Suite struct HTTP2ClientTests {
    @Test func sendRoundTripsOverH2C() async throws {
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        let server = try HTTP2Server(configuration: .init(), group: group) { request, _ in
            .respond(status: 201, headers: [("x-path", request.path), ("x-method", request.method)], body: request.body)
        }
        let port = try server.start()
        let pool = try HTTP2ClientPool(configuration: poolConfiguration(.http, port: port), group: group)
        let result = await pool.send(HTTP2Request(path: "/echo", headers: [("x-a", "b")], body: Array("hello".utf8)))
        let response = try result.get()
        #expect(response.status == 201)
        #expect(response.header("x-path") == "/echo")
        #expect(response.header("x-method") == "POST")
        #expect(response.body == Array("hello".utf8))
        await pool.shutdown()
        await server.shutdown()
    }

    @Test func sendRoundTripsOverTLSWithTrustedSelfSignedCertificate() async throws {
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        let certificate = try SelfSignedCertificate.generate()
        let server = try HTTP2Server(configuration: .init(tls: certificate.identity), group: group) { request, _ in
            .respond(status: 200, headers: [("x-authority", request.authority)], body: request.body)
        }
        let port = try server.start()
        let pool = try HTTP2ClientPool(
            configuration: poolConfiguration(.https, port: port, trusting: certificate.certificatePEM), group: group)
        let response = try await pool.send(HTTP2Request(path: "/", body: Array("tls".utf8))).get()
        #expect(response.status == 200)
        #expect(response.body == Array("tls".utf8))
        #expect(response.header("x-authority") == "127.0.0.1:\(port)")
        await pool.shutdown()
        await server.shutdown()
    }
}
