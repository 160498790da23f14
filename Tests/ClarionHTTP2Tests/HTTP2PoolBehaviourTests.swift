@testable import ClarionHTTP2
@testable import ClarionTransport
import Foundation
import Synchronization
import Testing

/// The client pool against real servers on loopback (our `HTTP2Server`, or a silent socket).
@Suite struct HTTP2PoolBehaviourTests {
    private func requests(_ count: Int, path: String = "/", body: [UInt8] = Array("{\"a\":1}".utf8)) -> [HTTP2Request] {
        (0..<count).map { HTTP2Request(path: path, body: body, tag: UInt64($0)) }
    }

    private func expectEachTagOnceAndSuccessful(_ completions: [HTTP2Completion], count: Int,
                                                sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(completions.count == count, sourceLocation: sourceLocation)
        #expect(Set(completions.map(\.tag)) == Set((0..<count).map { UInt64($0) }), sourceLocation: sourceLocation)
        let failures = completions.compactMap { $0.result.error }
        #expect(failures.isEmpty, "\(failures.prefix(5))", sourceLocation: sourceLocation)
    }

    // MARK: GOAWAY

    @Test func goAwayMidFlightLosesNoRequest() async throws {
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        let perConnection = Mutex<[UInt64: Int]>([:])
        let handled = Counter()
        let goAways = Counter()
        let server = try HTTP2Server(configuration: .init(maxConcurrentStreams: 100), group: group) { _, context in
            handled.increment()
            let n = perConnection.withLock { counts -> Int in
                counts[context.connectionID, default: 0] += 1
                return counts[context.connectionID]!
            }
            // The first four connections leave with GOAWAY at their 40th request, with streams in flight.
            if context.connectionID <= 4 && n == 40 {
                goAways.increment()
                return .goAway
            }
            return .respondAfter(.milliseconds(2), okResponse)
        }
        let port = try server.start()
        var configuration = poolConfiguration(.http, port: port, connections: 2)
        configuration.maxRefusedRetries = 5
        let pool = try HTTP2ClientPool(configuration: configuration, group: group)
        let sink = CollectingSink()
        #expect(pool.submit(requests(1000), sink: sink) == 1000)
        let completions = await sink.wait(for: 1000)
        expectEachTagOnceAndSuccessful(completions, count: 1000)
        #expect(goAways.current == 4)
        // Each GOAWAY refused at least the request that triggered it, which was sent again.
        #expect(handled.current >= 1000 + 4)
        #expect(perConnection.withLock { $0.count } > 4)
        await pool.shutdown()
        await server.shutdown()
    }

    // MARK: SETTINGS_MAX_CONCURRENT_STREAMS

    @Test func serverLoweringMaxConcurrentStreamsIsHonoured() async throws {
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        let maximum = Maximum()
        let server = try HTTP2Server(configuration: .init(maxConcurrentStreams: 20), group: group) { request, context in
            if request.path == "/lower" {
                context.setMaxConcurrentStreams(3)
                return .respond(okResponse)
            }
            maximum.record(context.openStreamCount)
            return .respondAfter(.milliseconds(10), okResponse)
        }
        let port = try server.start()
        let pool = try HTTP2ClientPool(configuration: poolConfiguration(.http, port: port), group: group)

        let before = CollectingSink()
        pool.submit(requests(200), sink: before)
        expectEachTagOnceAndSuccessful(await before.wait(for: 200), count: 200)
        #expect(maximum.current <= 20)
        #expect(maximum.current > 3, "the first phase should use more than 3 streams")

        #expect(await pool.send(HTTP2Request(path: "/lower")).status == 200)
        maximum.reset()
        let after = CollectingSink()
        pool.submit(requests(200), sink: after)
        expectEachTagOnceAndSuccessful(await after.wait(for: 200), count: 200)
        #expect(maximum.current <= 3)
        #expect(maximum.current >= 1)
        #expect(await pool.statistics().maxConcurrentStreams == [3])
        await pool.shutdown()
        await server.shutdown()
    }

    /// APNs rule (docs/providers.md A.7): one stream until the provider token was accepted, then what SETTINGS says.
    /// A connection's state in the next test: it presented a good token.
    final class Accepted {}

    @Test func apnsRuleConnectionStartsWithOneStreamUntilServerRaisesIt() async throws {
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        let beforeRaise = Maximum()
        let afterRaise = Maximum()
        let server = try HTTP2Server(configuration: .init(maxConcurrentStreams: 1), group: group) { request, context in
            if context.connectionState is Accepted {
                afterRaise.record(context.openStreamCount)
            } else {
                beforeRaise.record(context.openStreamCount)
                if request.header("authorization") == "bearer good" {
                    context.connectionState = Accepted()
                    context.setMaxConcurrentStreams(50)
                }
            }
            return .respondAfter(.milliseconds(5), okResponse)
        }
        let port = try server.start()
        let pool = try HTTP2ClientPool(configuration: poolConfiguration(.http, port: port), group: group)
        let sink = CollectingSink()
        let batch = (0..<300).map {
            HTTP2Request(path: "/3/device/x", headers: [("authorization", "bearer good")], tag: UInt64($0))
        }
        pool.submit(batch, sink: sink)
        expectEachTagOnceAndSuccessful(await sink.wait(for: 300), count: 300)
        #expect(beforeRaise.current == 1)
        #expect(afterRaise.current > 1)
        #expect(afterRaise.current <= 50)
        #expect(await pool.statistics().maxConcurrentStreams == [50])
        await pool.shutdown()
        await server.shutdown()
    }

    /// APNs rule (docs/providers.md A.7): when the server lowers its limit, in-flight streams may get RST_STREAM
    /// REFUSED_STREAM; retry them.
    @Test func apnsRuleRefusedStreamIsRetried() async throws {
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        let seen = Mutex<Set<String>>([])
        let server = try HTTP2Server(configuration: .init(), group: group) { request, _ in
            // Refuse each request the first time it arrives.
            let first = seen.withLock { $0.insert(request.path).inserted }
            return first ? .reset(errorCode: 7) : .respond(okResponse)
        }
        let port = try server.start()
        let pool = try HTTP2ClientPool(configuration: poolConfiguration(.http, port: port), group: group)
        let sink = CollectingSink()
        pool.submit((0..<50).map { HTTP2Request(path: "/\($0)", tag: UInt64($0)) }, sink: sink)
        expectEachTagOnceAndSuccessful(await sink.wait(for: 50), count: 50)
        #expect(seen.withLock { $0.count } == 50)
        // A request refused every time gives up after maxRefusedRetries.
        let always = try HTTP2Server(configuration: .init(), group: group) { _, _ in .reset(errorCode: 7) }
        let alwaysPool = try HTTP2ClientPool(configuration: poolConfiguration(.http, port: try always.start()), group: group)
        #expect(await alwaysPool.send(HTTP2Request(path: "/")).error == .goAwayRetryExhausted)
        await alwaysPool.shutdown()
        await always.shutdown()
        await pool.shutdown()
        await server.shutdown()
    }

    // MARK: Flow control

    @Test(arguments: [4096, 5120])
    func bodiesCrossFlowControlWindows(size: Int) async throws {
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        // Small stream windows on both sides, so every body is split across WINDOW_UPDATEs, and 40 bodies in
        // flight exceed the 64 KiB connection window as well.
        let server = try HTTP2Server(configuration: .init(initialWindowSize: 1000, connectionWindowSize: 65_535),
                                     group: group) { request, _ in
            .respond(status: 200, headers: [("x-length", String(request.body.count))], body: request.body)
        }
        let port = try server.start()
        var configuration = poolConfiguration(.http, port: port)
        configuration.initialWindowSize = 1500
        let pool = try HTTP2ClientPool(configuration: configuration, group: group)
        let sink = CollectingSink()
        let bodies = (0..<40).map { i in (0..<size).map { UInt8(truncatingIfNeeded: ($0 &* 7) &+ i) } }
        pool.submit((0..<40).map { HTTP2Request(path: "/", body: bodies[$0], tag: UInt64($0)) }, sink: sink)
        let completions = await sink.wait(for: 40)
        expectEachTagOnceAndSuccessful(completions, count: 40)
        for completion in completions {
            let response = try completion.result.get()
            #expect(response.header("x-length") == String(size))
            #expect(response.body == bodies[Int(completion.tag)])
        }
        await pool.shutdown()
        await server.shutdown()
    }

    // MARK: TLS verification

    @Test func untrustedSelfSignedCertificateIsReportedAsVerificationFailure() async throws {
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        let certificate = try SelfSignedCertificate.generate()
        let server = try HTTP2Server(configuration: .init(tls: certificate.identity), group: group) { _, _ in
            .respond(okResponse)
        }
        let port = try server.start()
        let pool = try HTTP2ClientPool(configuration: poolConfiguration(.https, port: port), group: group)
        let result = await pool.send(HTTP2Request(path: "/"))
        guard case .tlsVerificationFailed(let reason) = result.error else {
            Issue.record("expected tlsVerificationFailed, got \(result)")
            return
        }
        #expect(reason.contains("self-signed") || reason.contains("self signed"), "\(reason)")
        await pool.shutdown()
        await server.shutdown()
    }

    @Test func certificateForAnotherHostIsReportedAsVerificationFailure() async throws {
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        let certificate = try SelfSignedCertificate.generate(commonName: "example.com", dnsNames: ["example.com"],
                                                             ipAddresses: [])
        let server = try HTTP2Server(configuration: .init(tls: certificate.identity), group: group) { _, _ in
            .respond(okResponse)
        }
        let port = try server.start()
        let pool = try HTTP2ClientPool(
            configuration: poolConfiguration(.https, port: port, trusting: certificate.certificatePEM), group: group)
        let result = await pool.send(HTTP2Request(path: "/"))
        guard case .tlsVerificationFailed(let reason) = result.error else {
            Issue.record("expected tlsVerificationFailed, got \(result)")
            return
        }
        #expect(reason.lowercased().contains("mismatch"), "\(reason)")
        await pool.shutdown()
        await server.shutdown()
    }

    // MARK: Reconnect

    @Test func serverRestartReconnectsWithBackoff() async throws {
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        let first = try HTTP2Server(configuration: .init(), group: group) { _, _ in .respond(okResponse) }
        let port = try first.start()
        var configuration = poolConfiguration(.http, port: port)
        let backoff = Duration.milliseconds(300)
        configuration.backoff = HTTP2Backoff(initial: backoff, maximum: .seconds(2), jitter: 0)
        let pool = try HTTP2ClientPool(configuration: configuration, group: group)
        #expect(await pool.send(HTTP2Request(path: "/")).status == 200)

        await first.shutdown()
        // The server closed its side; wait until the pool has seen the GOAWAY and the close too. Until then a
        // request could still be written to the old connection and be lost with it, not fail to connect.
        let noticed = await sample(until: { $0.activeConnections == 0 && $0.drainingConnections == 0 }) {
            await pool.statistics()
        }
        #expect(noticed.activeConnections == 0 && noticed.drainingConnections == 0)
        // The server is gone: the attempt fails at once (nothing else could serve the request) and backs off.
        let clock = ContinuousClock()
        let failedAttemptStarted = clock.now
        let down = await pool.send(HTTP2Request(path: "/"))
        guard case .connectFailed = down.error else {
            Issue.record("expected connectFailed while the server is down, got \(down)")
            return
        }
        let second = try HTTP2Server(configuration: .init(port: port), group: group) { _, _ in .respond(okResponse) }
        try second.start()
        // The next request waits for the backoff to pass, then goes out on a new connection.
        #expect(await pool.send(HTTP2Request(path: "/")).status == 200)
        let waited = clock.now - failedAttemptStarted
        #expect(waited >= backoff, "reconnected \(waited) after the failed attempt began, before the backoff")
        let statistics = await pool.statistics()
        #expect(statistics.connectionsOpened == 2)
        #expect(statistics.connectAttemptsFailed == 1)
        await pool.shutdown()
        await second.shutdown()
    }

    // MARK: Bounded queue

    @Test func fullQueuePushesBackInsteadOfGrowing() async throws {
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        let handled = Counter()
        // The first ten requests hold their streams until the test has looked; later ones are answered at once.
        let held = HeldResponses(answering: okResponse)
        let server = try HTTP2Server(configuration: .init(maxConcurrentStreams: 10), group: group) { _, context in
            handled.increment() <= 10 ? held.hold(context) : .respond(okResponse)
        }
        let port = try server.start()
        var configuration = poolConfiguration(.http, port: port)
        configuration.maxQueuedRequests = 50
        let pool = try HTTP2ClientPool(configuration: configuration, group: group)
        let sink = CollectingSink()
        #expect(pool.submit(requests(500), sink: sink) == 50)
        // Wait until 10 are on streams and 40 wait.
        let statistics = await sample(until: { $0.inFlightRequests >= 10 }) { await pool.statistics() }
        #expect(statistics.inFlightRequests == 10)
        #expect(statistics.queuedRequests == 40)
        // Only the free queue places are taken; the rest is refused at once.
        #expect(pool.submit(requests(100), sink: sink) == 10)
        #expect(await pool.send(HTTP2Request(path: "/")).error == .overloaded)
        #expect(pool.submit(requests(1), sink: sink) == 0)
        #expect(pool.waitingCount == 50)
        #expect(await pool.statistics().queuedRequests == 50)
        #expect(sink.completions.isEmpty, "nothing finished while the ten streams were held")
        held.release()
        let completions = await sink.wait(for: 60)
        #expect(completions.count == 60)
        #expect(completions.allSatisfy { $0.result.status == 200 })
        #expect(handled.current == 60)
        await pool.shutdown()
        await server.shutdown()
    }

    // MARK: Scale

    @Test func tenThousandConcurrentRequestsOverTwoConnectionsCompleteExactlyOnce() async throws {
        let group = try EventLoopGroup(threadCount: 2)
        defer { group.shutdown() }
        let handled = Counter()
        let server = try HTTP2Server(configuration: .init(maxConcurrentStreams: 100), group: group) { _, _ in
            handled.increment()
            return .respond(okResponse)
        }
        let port = try server.start()
        var configuration = poolConfiguration(.http, port: port, connections: 2)
        configuration.maxQueuedRequests = 20_000
        let pool = try HTTP2ClientPool(configuration: configuration, group: group)
        let sink = CollectingSink()
        let all = requests(10_000, body: Array(repeating: UInt8(ascii: "x"), count: 200))
        for start in stride(from: 0, to: 10_000, by: 1000) {
            #expect(pool.submit(Array(all[start..<start + 1000]), sink: sink) == 1000)
        }
        // Ordinary async callers share the pool at the same time.
        let asyncStatuses = await withTaskGroup(of: Int?.self) { tasks in
            for _ in 0..<200 { tasks.addTask { await pool.send(HTTP2Request(path: "/async")).status } }
            var statuses: [Int?] = []
            for await status in tasks { statuses.append(status) }
            return statuses
        }
        #expect(asyncStatuses.count == 200 && asyncStatuses.allSatisfy { $0 == 200 })
        let completions = await sink.wait(for: 10_000, timeout: .seconds(60))
        expectEachTagOnceAndSuccessful(completions, count: 10_000)
        #expect(sink.batches < 10_000, "completions arrive in batches")
        #expect(handled.current == 10_200)
        let statistics = await pool.statistics()
        #expect(statistics.connectionsOpened == 2)
        #expect(statistics.activeConnections == 2)
        // A sink per batch leaves nothing behind once its results are in.
        for round in 0..<20 {
            let oneShot = CollectingSink()
            pool.submit(requests(10), sink: oneShot)
            #expect(await oneShot.wait(for: 10).count == 10, "round \(round)")
        }
        #expect(await pool.batcherCount() == 0, "a sink per batch leaves nothing behind once its results are in")
        await pool.shutdown()
        await server.shutdown()
    }

    // MARK: Per-request outcomes

    @Test func rstStreamIsReportedPerRequest() async throws {
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        let server = try HTTP2Server(configuration: .init(), group: group) { request, _ in
            request.path == "/reset" ? .reset(errorCode: 2) : .respondAfter(.milliseconds(20), okResponse)
        }
        let port = try server.start()
        let pool = try HTTP2ClientPool(configuration: poolConfiguration(.http, port: port), group: group)
        #expect(await pool.send(HTTP2Request(path: "/")).status == 200)  // SETTINGS in: many streams allowed
        async let slow = pool.send(HTTP2Request(path: "/slow"))
        async let reset = pool.send(HTTP2Request(path: "/reset"))
        #expect(await reset.error == .streamReset(2))
        #expect(await slow.status == 200)
        #expect(await pool.statistics().connectionsOpened == 1)
        await pool.shutdown()
        await server.shutdown()
    }

    @Test func stalledRequestTimesOutAndConnectionStaysUsable() async throws {
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        let server = try HTTP2Server(configuration: .init(), group: group) { request, _ in
            request.path == "/stall" ? .stall : .respond(okResponse)
        }
        let port = try server.start()
        let pool = try HTTP2ClientPool(configuration: poolConfiguration(.http, port: port), group: group)
        let clock = ContinuousClock()
        let started = clock.now
        let stalled = await pool.send(HTTP2Request(path: "/stall", timeout: .milliseconds(300)))
        #expect(stalled.error == .timeout)
        #expect(clock.now - started >= .milliseconds(300))
        #expect(await pool.send(HTTP2Request(path: "/")).status == 200)
        #expect(await pool.statistics().connectionsOpened == 1)
        await pool.shutdown()
        await server.shutdown()
    }

    @Test func droppedConnectionFailsInFlightRequestsAndNextRequestReconnects() async throws {
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        // "/slow" stays in flight until the connection drops (never released), however late the test looks.
        let held = HeldResponses(answering: okResponse)
        let server = try HTTP2Server(configuration: .init(), group: group) { request, context in
            switch request.path {
            case "/drop": .dropConnection
            case "/slow": held.hold(context)
            default: .respond(okResponse)
            }
        }
        let port = try server.start()
        let pool = try HTTP2ClientPool(configuration: poolConfiguration(.http, port: port), group: group)
        #expect(await pool.send(HTTP2Request(path: "/")).status == 200)
        // "/slow" is submitted (no child task that a loaded machine may start late), and must be on the connection
        // before "/drop" follows it there.
        let slow = CollectingSink()
        pool.submit([HTTP2Request(path: "/slow")], sink: slow)
        #expect(await sample(until: { $0 >= 1 }) { await pool.statistics().inFlightRequests } == 1)
        let dropped = await pool.send(HTTP2Request(path: "/drop"))
        let slowResult = await slow.wait(for: 1).first?.result
        guard case .connectionLost = dropped.error, case .connectionLost = slowResult?.error else {
            Issue.record("expected connectionLost for both, got \(dropped) and \(String(describing: slowResult))")
            return
        }
        #expect(await pool.send(HTTP2Request(path: "/")).status == 200)
        #expect(await pool.statistics().connectionsOpened == 2)
        await pool.shutdown()
        await server.shutdown()
    }

    @Test func perRequestHeadersReachTheServer() async throws {
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        let server = try HTTP2Server(configuration: .init(), group: group) { request, _ in
            .respond(status: 200, headers: [("x-seen", request.header("authorization") ?? "none"),
                                            ("x-authority", request.authority)])
        }
        let port = try server.start()
        let pool = try HTTP2ClientPool(configuration: poolConfiguration(.http, port: port), group: group)
        let one = try await pool.send(HTTP2Request(path: "/", authority: "api.example", headers: [("authorization", "bearer A")])).get()
        let two = try await pool.send(HTTP2Request(path: "/", headers: [("authorization", "bearer B")])).get()
        #expect(one.header("x-seen") == "bearer A")
        #expect(one.header("x-authority") == "api.example")
        #expect(two.header("x-seen") == "bearer B")
        #expect(two.header("x-authority") == "127.0.0.1:\(port)")
        await pool.shutdown()
        await server.shutdown()
    }

    @Test func theServerSeesRepeatedHeaderNamesAsTheyArrived() async throws {
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        let server = try HTTP2Server(configuration: .init(), group: group) { request, _ in
            .respond(status: 200, headers: [("x-repeated", request.headerFields.hasRepeatedName ? "yes" : "no"),
                                            ("x-count", "\(request.headers.count)")])
        }
        let port = try server.start()
        let pool = try HTTP2ClientPool(configuration: poolConfiguration(.http, port: port), group: group)
        let distinct = (0..<40).map { ("x-field-\($0)", "\($0)") }
        let cases: [([(String, String)], String)] = [
            ([], "no"), ([("apns-topic", "a"), ("apns-id", "b")], "no"), (distinct, "no"),
            ([("apns-topic", "a"), ("apns-topic", "b")], "yes"), (distinct + [("x-field-7", "again")], "yes"),
        ]
        for (headers, expected) in cases {
            let response = try await pool.send(HTTP2Request(path: "/", headers: headers)).get()
            #expect(response.header("x-repeated") == expected)
            #expect(response.header("x-count") == "\(headers.count)")
        }
        await pool.shutdown()
        await server.shutdown()
    }

    // MARK: Liveness and lifecycle

    @Test func silentPeerIsDeclaredDeadAfterPingTimeout() async throws {
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        let silent = try SilentListener()  // completes TCP handshakes, never reads or writes
        defer { silent.close() }
        var configuration = poolConfiguration(.http, port: silent.port)
        configuration.pingInterval = .milliseconds(200)
        configuration.pingTimeout = .milliseconds(300)
        configuration.requestTimeout = .seconds(10)
        let pool = try HTTP2ClientPool(configuration: configuration, group: group)
        let sink = CollectingSink()
        let started = ContinuousClock.now
        pool.submit([HTTP2Request(path: "/")], sink: sink)
        let completions = await sink.wait(for: 1)
        guard completions.count == 1, case .connectionLost(let reason) = completions[0].result.error,
              let failedAt = sink.lastArrival else {
            Issue.record("expected connectionLost, got \(completions)")
            return
        }
        #expect(reason.contains("PING"), "\(reason)")
        // Timed where the result was delivered: the test task itself may resume much later on a loaded machine.
        #expect(failedAt - started < .seconds(5))
        await pool.shutdown()
    }

    @Test func idleConnectionIsClosedAndReopenedOnDemand() async throws {
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        let answered = Mutex<ContinuousClock.Instant?>(nil)
        let server = try HTTP2Server(configuration: .init(), group: group) { _, _ in
            answered.withLock { $0 = $0 ?? .now }  // the connection's last stream ended after this
            return .respond(okResponse)
        }
        let port = try server.start()
        var configuration = poolConfiguration(.http, port: port)
        configuration.idleTimeout = .seconds(1)
        let pool = try HTTP2ClientPool(configuration: configuration, group: group)
        // The server's connection count is read on the loop thread as the answer is delivered. Read after the test
        // task resumes, it may already be 0 on a loaded machine (the task resumed more than the idle timeout later).
        let sink = CollectingSink(probe: { server.connectionCount })
        pool.submit(requests(1), sink: sink)
        let first = await sink.wait(for: 1)
        #expect(first.count == 1 && first.allSatisfy { $0.result.status == 200 }, "\(first)")
        #expect(sink.observed == [1], "the connection stays open after its stream ended")
        #expect(await eventually { server.connectionCount == 0 })
        let closedBy = ContinuousClock.now
        let answeredAt = try #require(answered.withLock { $0 })
        #expect(closedBy - answeredAt >= .seconds(1), "closed only after the idle timeout")
        #expect(await pool.statistics().activeConnections == 0)
        #expect(await pool.send(HTTP2Request(path: "/")).status == 200)
        #expect(await pool.statistics().connectionsOpened == 2)
        await pool.shutdown()
        await server.shutdown()
    }

    @Test func recycleConnectionsReplacesConnections() async throws {
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        let connectionIDs = Mutex<Set<UInt64>>([])
        let server = try HTTP2Server(configuration: .init(), group: group) { _, context in
            _ = connectionIDs.withLock { $0.insert(context.connectionID) }
            return .respond(okResponse)
        }
        let port = try server.start()
        let pool = try HTTP2ClientPool(configuration: poolConfiguration(.http, port: port), group: group)
        #expect(await pool.send(HTTP2Request(path: "/")).status == 200)
        pool.recycleConnections()
        #expect(await pool.send(HTTP2Request(path: "/")).status == 200)
        #expect(connectionIDs.withLock { $0.count } == 2)
        // The replaced connection closes once drained; the new one stays.
        #expect(await sample(until: { $0 <= 1 }) { server.connectionCount } == 1)
        await pool.shutdown()
        await server.shutdown()
    }

    @Test func shutdownFailsQueuedRequestsAndRefusesNewOnes() async throws {
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        // The one stream allowed stays in flight until the test releases it, so the other four stay queued.
        let held = HeldResponses(answering: okResponse)
        let server = try HTTP2Server(configuration: .init(maxConcurrentStreams: 1), group: group) { _, context in
            held.hold(context)
        }
        let port = try server.start()
        let pool = try HTTP2ClientPool(configuration: poolConfiguration(.http, port: port), group: group)
        let sink = CollectingSink()
        pool.submit(requests(5), sink: sink)
        let statistics = await sample(until: { $0.inFlightRequests >= 1 }) { await pool.statistics() }
        #expect(statistics.inFlightRequests == 1 && statistics.queuedRequests == 4)
        async let stopped: Void = pool.shutdown()
        // The four queued behind the 1-stream limit fail at once, while the one in flight is still held.
        let failed = await sink.wait(for: 4)
        #expect(failed.count == 4)
        #expect(failed.allSatisfy { $0.result.error == .shutdown }, "\(failed.map(\.result))")
        // Shutdown waits for the stream in flight, which then finishes normally.
        held.release()
        await stopped
        let completions = await sink.wait(for: 5)
        #expect(completions.count == 5)
        // One was in flight and finished; the four queued behind the 1-stream limit were failed.
        #expect(completions.filter { $0.result.status == 200 }.count == 1)
        #expect(completions.filter { $0.result.error == .shutdown }.count == 4)
        #expect(await pool.send(HTTP2Request(path: "/")).error == .shutdown)
        await server.shutdown()
    }
}

/// A listening socket nobody accepts from: the kernel completes handshakes, and nothing is ever read or written.
final class SilentListener {
    let fd: Int32
    let port: Int

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 16) == 0 else { throw HTTP2ServerError(reason: "silent listener") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        self.fd = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    func close() {
        _ = Glibc.close(fd)
    }
}
