@testable import ClarionHTTP2
@testable import ClarionTransport
import Foundation
import Synchronization
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

@Suite struct HTTP2ClientRegistryTests {
    /// Pools are keyed by origin + credential identity, never by host alone (docs/providers.md A.5, A.7).
    @Test func poolsAreKeyedByOriginAndCredentialIdentityNotByHostAlone() async throws {
        let group = try EventLoopGroup(threadCount: 2)
        defer { group.shutdown() }
        let seen = Mutex<Set<String>>([])
        let server = try HTTP2Server(configuration: .init(), group: group) { request, context in
            _ = seen.withLock { $0.insert("\(context.connectionID)|\(request.header("authorization") ?? "")") }
            return .respond(okResponse)
        }
        let port = try server.start()
        let client = HTTP2Client(group: group)
        let origin = HTTP2Origin(scheme: .http, host: "127.0.0.1", port: port)
        let teamA = try client.pool(for: HTTP2PoolConfiguration(origin: origin, identity: "TEAMA|KEY1|production"))
        let teamAAgain = try client.pool(for: HTTP2PoolConfiguration(origin: origin, identity: "TEAMA|KEY1|production"))
        let teamB = try client.pool(for: HTTP2PoolConfiguration(origin: origin, identity: "TEAMB|KEY9|production"))
        #expect(teamA === teamAAgain)
        #expect(teamA !== teamB)
        #expect(Set(client.poolKeys.map(\.identity)) == ["TEAMA|KEY1|production", "TEAMB|KEY9|production"])
        #expect(await teamA.send(HTTP2Request(path: "/", headers: [("authorization", "bearer a")])).status == 200)
        #expect(await teamB.send(HTTP2Request(path: "/", headers: [("authorization", "bearer b")])).status == 200)
        // Two identities never share a connection.
        let connections = seen.withLock { $0 }.map { $0.split(separator: "|")[0] }
        #expect(Set(connections).count == 2)
        await client.removePool(origin: origin, identity: "TEAMB|KEY9|production")
        #expect(client.existingPool(origin: origin, identity: "TEAMB|KEY9|production") == nil)
        await client.shutdown()
        #expect(client.poolKeys.isEmpty)
        await server.shutdown()
    }
}

@Suite struct HTTP2ResponseTests {
    @Test func headersRoundTripInOrderAndLookUpCaseInsensitively() {
        let long = String(repeating: "v", count: 70_000)
        var response = HTTP2Response(status: 410, headers: [("apns-id", "A-1"), ("x-empty", ""), ("apns-id", "A-2"),
                                                            ("x-long", long)], body: [1, 2])
        #expect(response.headers.map(\.0) == ["apns-id", "x-empty", "apns-id", "x-long"])
        #expect(response.headers.map(\.1) == ["A-1", "", "A-2", long])
        #expect(response.header("APNS-ID") == "A-1")
        #expect(response.header("x-empty") == "")
        #expect(response.header("x-long")?.count == 70_000)
        #expect(response.header("missing") == nil)
        response.headers = [("retry-after", "30")]
        #expect(response.header("retry-after") == "30")
        #expect(response.headers.count == 1)
        #expect(response.status == 410 && response.body == [1, 2])
    }
}

@Suite struct HTTP2ServerRequestHeaderTests {
    @Test func headersRoundTripAndAreReadAsBytesWithoutStrings() {
        let long = String(repeating: "v", count: 70_000)
        var request = HTTP2ServerRequest(method: "POST", path: "/3/device/ab",
                                         headers: [("authorization", "bearer x"), ("x-empty", ""), ("x-long", long)])
        #expect(request.headers.map(\.0) == ["authorization", "x-empty", "x-long"])
        #expect(request.header("authorization") == "bearer x")
        #expect(request.header("x-empty") == "")
        #expect(request.header("x-long")?.count == 70_000)
        #expect(request.header("Authorization") == nil)  // names are lowercase in HTTP/2
        #expect(!request.headerFields.hasRepeatedName)

        var seen: [String] = []
        let fields = request.headerFields
        fields.forEachField { name, value in
            if HTTP2HeaderFields.name(name, is: "authorization") {
                seen.append(String(decoding: fields[value], as: UTF8.self))
            } else {
                seen.append(String(decoding: name, as: UTF8.self) + "=\(value.count)")
            }
        }
        #expect(seen == ["bearer x", "x-empty=0", "x-long=70000"])

        request.headers.append(("x-empty", "again"))
        #expect(request.headerFields.hasRepeatedName)
        #expect(request.header("x-empty") == "")
        request.headers.removeAll { $0.0 == "x-empty" }
        #expect(!request.headerFields.hasRepeatedName)
        #expect(request.headers.map(\.0) == ["authorization", "x-long"])
    }

    @Test func repeatedNamesAreFoundAmongManyFields() {
        var headers = (0..<40).map { ("x-field-\($0)", "\($0)") }
        #expect(!HTTP2ServerRequest(method: "GET", path: "/", headers: headers).headerFields.hasRepeatedName)
        headers.append(("x-field-3", "again"))
        #expect(HTTP2ServerRequest(method: "GET", path: "/", headers: headers).headerFields.hasRepeatedName)
    }
}
