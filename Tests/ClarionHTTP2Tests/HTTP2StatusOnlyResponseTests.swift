@testable import ClarionHTTP2
@testable import ClarionTransport
import Foundation
import Synchronization
import Testing

/// `HTTP2Request.ResponseParts.statusOnly`: the response keeps its status and drops header fields and body, and
/// everything that is not a response is reported exactly as for a full response.
@Suite struct HTTP2StatusOnlyResponseTests {
    static let bigBody = (0..<5_000).map { UInt8(truncatingIfNeeded: $0) }  // several DATA frames
    static let richResponse = HTTP2ServerResponse(
        status: 201, headers: [("content-type", "application/json"), ("apns-id", "1234"), ("x-extra", "yes")],
        body: bigBody)

    @Test func statusOnlyKeepsTheStatusAndDropsFieldsAndBody() async throws {
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        let server = try HTTP2Server(configuration: .init(), group: group) { _, _ in .respond(Self.richResponse) }
        let port = try server.start()
        let pool = try HTTP2ClientPool(configuration: poolConfiguration(.http, port: port), group: group)

        let full = try await pool.send(HTTP2Request(path: "/")).get()
        #expect(full.status == 201)
        #expect(full.header("apns-id") == "1234")
        #expect(full.body == Self.bigBody)

        let statusOnly = try await pool.send(HTTP2Request(path: "/", responseParts: .statusOnly)).get()
        #expect(statusOnly.status == 201)
        #expect(statusOnly.headers.isEmpty)
        #expect(statusOnly.header("apns-id") == nil)
        #expect(statusOnly.body.isEmpty)

        // Mixed on one connection, in flight together, on the batch path: each keeps what it asked for.
        let sink = CollectingSink()
        let batch = (0..<200).map { i in
            HTTP2Request(path: "/", tag: UInt64(i), responseParts: i % 2 == 0 ? .statusOnly : .all)
        }
        #expect(pool.submit(batch, sink: sink) == 200)
        for completion in await sink.wait(for: 200) {
            guard case .success(let response) = completion.result else {
                Issue.record("request \(completion.tag) failed: \(completion.result)")
                continue
            }
            #expect(response.status == 201)
            let keepsAll = completion.tag % 2 == 1
            #expect(response.body.count == (keepsAll ? Self.bigBody.count : 0))
            #expect((response.header("x-extra") != nil) == keepsAll)
        }
        #expect(await pool.statistics().connectionsOpened == 1)
        await pool.shutdown()
        await server.shutdown()
    }

    @Test func statusOnlyStillReportsResetTimeoutAndLostConnection() async throws {
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        let server = try HTTP2Server(configuration: .init(), group: group) { request, _ in
            switch request.path {
            case "/reset": .reset(errorCode: 2)
            case "/stall": .stall
            case "/drop": .dropConnection
            default: .respond(Self.richResponse)
            }
        }
        let port = try server.start()
        let pool = try HTTP2ClientPool(configuration: poolConfiguration(.http, port: port), group: group)
        #expect(await pool.send(HTTP2Request(path: "/", responseParts: .statusOnly)).status == 201)
        #expect(await pool.send(HTTP2Request(path: "/reset", responseParts: .statusOnly)).error == .streamReset(2))
        let stalled = await pool.send(HTTP2Request(path: "/stall", timeout: .milliseconds(200), responseParts: .statusOnly))
        #expect(stalled.error == .timeout)
        let dropped = await pool.send(HTTP2Request(path: "/drop", responseParts: .statusOnly))
        guard case .connectionLost = dropped.error else {
            Issue.record("expected connectionLost, got \(dropped)")
            return
        }
        #expect(await pool.send(HTTP2Request(path: "/", responseParts: .statusOnly)).status == 201)
        await pool.shutdown()
        await server.shutdown()
    }

    @Test func statusOnlyRequestsAboveAGoAwayAreRetriedAndNoneIsLost() async throws {
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        let perConnection = Mutex<[UInt64: Int]>([:])
        let goAways = Counter()
        let observedGoAways = Counter()
        let server = try HTTP2Server(configuration: .init(maxConcurrentStreams: 100), group: group) { _, context in
            let n = perConnection.withLock { counts -> Int in
                counts[context.connectionID, default: 0] += 1
                return counts[context.connectionID]!
            }
            if context.connectionID <= 3 && n == 30 {
                goAways.increment()
                return .goAway
            }
            return .respondAfter(.milliseconds(2), Self.richResponse)
        }
        let port = try server.start()
        var configuration = poolConfiguration(.http, port: port, connections: 2)
        configuration.maxRefusedRetries = 5
        configuration.onGoAway = { _ in _ = observedGoAways.increment() }
        let pool = try HTTP2ClientPool(configuration: configuration, group: group)
        let sink = CollectingSink()
        let batch = (0..<600).map { HTTP2Request(path: "/", tag: UInt64($0), responseParts: .statusOnly) }
        #expect(pool.submit(batch, sink: sink) == 600)
        let completions = await sink.wait(for: 600)
        #expect(Set(completions.map(\.tag)) == Set((0..<600).map { UInt64($0) }))
        let statuses = completions.map { $0.result.status }
        #expect(statuses.allSatisfy { $0 == 201 }, "\(completions.compactMap { $0.result.error }.prefix(5))")
        #expect(goAways.current == 3)
        #expect(observedGoAways.current == 3)
        await pool.shutdown()
        await server.shutdown()
    }
}
