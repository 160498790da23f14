import ClarionCore
import ClarionCrypto
import ClarionHTTP2
import ClarionTransport
import Foundation
import Testing
@testable import ClarionEmulator

/// The emulator over real HTTP/2 sockets: ClarionHTTP2's client pool, and `curl`/`nghttp` as clients
/// we did not write.
@Suite(.serialized) struct EmulatorServerTests {
    typealias F = EmulatorFixture

    /// A running emulator plus a client event loop; `close()` tears both down.
    final class Running: Sendable {
        let fixture: F
        let handle: EmulatorHandle
        let clientLoops: EventLoopGroup

        init(_ adjust: @escaping (inout EmulatorConfiguration) -> Void = { _ in }) throws {
            let fixture = try F(adjust)
            self.fixture = fixture
            let clock = fixture.clock
            handle = try runEmulator(configuration: fixture.emulator.configuration, clock: { clock.now })
            clientLoops = try EventLoopGroup(threadCount: 1)
        }

        func pool(connections: Int = 1, retries: Int = 3, trusted: String? = nil) throws -> HTTP2ClientPool {
            let origin = HTTP2Origin(scheme: handle.usesTLS ? .https : .http, host: "127.0.0.1", port: handle.port)
            return try HTTP2ClientPool(configuration: HTTP2PoolConfiguration(
                origin: origin, connectionCount: connections, requestTimeout: .seconds(10), trustedCAPEM: trusted,
                pingInterval: nil, maxRefusedRetries: retries), group: clientLoops)
        }

        func close(_ pools: HTTP2ClientPool...) async {
            for pool in pools { await pool.shutdown() }
            await handle.shutdown()
            clientLoops.shutdown()
        }
    }

    static func apnsRequest(_ f: F, token: String = F.validToken, jwt: String? = nil) -> HTTP2Request {
        let request = f.apnsRequest(token: token, jwt: jwt)
        return HTTP2Request(method: "POST", path: request.path, headers: request.headers, body: request.body)
    }

    /// Runs a command line tool; returns (exit status, stdout + stderr).
    static func run(_ tool: String, _ arguments: [String]) throws -> (Int32, String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: output, as: UTF8.self))
    }

    @Test("Server APNs A.6/A.7: a push over h2c with ClarionHTTP2's client is 200 with apns-id, and the stream limit rises from 1 to 1000")
    func apnsOverH2C() async throws {
        let running = try Running()
        let pool = try running.pool()
        let result = await pool.send(Self.apnsRequest(running.fixture))
        let response = try result.get()
        #expect(response.status == 200)
        #expect(response.header("apns-id").map(APNsEmulator.isUUID) == true)
        // The SETTINGS change travels with the response; give the client loop a moment to apply it.
        var limits: [Int] = []
        for _ in 0..<50 {
            limits = await pool.statistics().maxConcurrentStreams
            if limits == [1000] { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(limits == [1000])
        await running.close(pool)
    }

    @Test("Server APNs A.7: nghttp (independent client) sees SETTINGS_MAX_CONCURRENT_STREAMS 1 on a new connection",
          .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/nghttp")))
    func initialSettingsSeenByNghttp() async throws {
        let running = try Running()
        let (status, output) = try Self.run("/usr/bin/nghttp", ["-nv", "\(running.handle.baseURL)/_emulator/health"])
        #expect(status == 0, "\(output)")
        // The server's first SETTINGS frame, as nghttp prints it: "recv SETTINGS frame" then one "[NAME(id):value]" per line.
        let received = output.components(separatedBy: "recv SETTINGS frame").dropFirst().first ?? ""
        let firstFrame = received.components(separatedBy: "\n[").first ?? ""
        #expect(firstFrame.contains("[SETTINGS_MAX_CONCURRENT_STREAMS(0x03):1]"), "\(output)")
        await running.close()
    }

    @Test("Server APNs A.6: curl --http2-prior-knowledge gets 410 Unregistered with a millisecond timestamp and apns-id",
          .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/curl")))
    func curlUnregistered() async throws {
        let running = try Running()
        let f = running.fixture
        let token = String(repeating: "ab", count: 28) + "dead0410"
        let (status, output) = try Self.run("/usr/bin/curl", [
            "-sS", "-i", "--http2-prior-knowledge", "-X", "POST",
            "-H", "authorization: bearer \(f.apnsJWT())", "-H", "apns-topic: \(F.bundleID)", "-H", "apns-push-type: alert",
            "--data", #"{"aps":{"alert":"hi"}}"#, "\(running.handle.baseURL)/3/device/\(token)",
        ])
        #expect(status == 0, "\(output)")
        #expect(output.hasPrefix("HTTP/2 410"), "\(output)")
        #expect(output.lowercased().contains("apns-id: "))
        #expect(output.contains(#""reason":"Unregistered""#))
        #expect(output.contains(#""timestamp":\#(Int64(f.clock.now * 1000))"#))
        #expect(running.handle.stats()["apns"].statuses["410"] == 1)
        await running.close()
    }

    @Test("Server FCM B.2/B.1: over TLS with a generated certificate the client trusts: token exchange then send")
    func fcmOverTLS() async throws {
        let certificatePath = FileManager.default.temporaryDirectory.appendingPathComponent("emu-cert-\(UUID().uuidString).pem").path
        defer { try? FileManager.default.removeItem(atPath: certificatePath) }
        let running = try Running {
            $0.tls.enabled = true
            $0.tls.writeCertificateTo = certificatePath
        }
        let written = try String(contentsOfFile: certificatePath, encoding: .utf8)
        #expect(written == running.handle.certificatePEM)
        #expect(running.handle.baseURL.hasPrefix("https://127.0.0.1:"))
        let pool = try running.pool(trusted: written)
        let f = running.fixture
        let form = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(f.fcmAssertion(audience: running.handle.fcmTokenURI))"
        let tokenResponse = try await pool.send(HTTP2Request(method: "POST", path: "/token",
                                                             headers: [("content-type", "application/x-www-form-urlencoded")], body: Array(form.utf8))).get()
        #expect(tokenResponse.status == 200)
        let accessToken = try #require((try? JSONValue.parse(bytes: tokenResponse.body))?["access_token"]?.stringValue)
        let send = try await pool.send(HTTP2Request(method: "POST", path: "/v1/projects/\(F.project)/messages:send",
                                                    headers: [("authorization", "Bearer \(accessToken)"), ("content-type", "application/json")],
                                                    body: Array(FCMEmulatorTests.message().utf8))).get()
        #expect(send.status == 200)
        #expect((try? JSONValue.parse(bytes: send.body))?["name"]?.stringValue?.hasPrefix("projects/\(F.project)/messages/") == true)
        await running.close(pool)
    }

    @Test("Server APNs A.2/A.6 over TLS: the demo client certificate (files from write(to:), emulator.json loaded back) is accepted with no JWT; no certificate is 403 MissingProviderToken; a certificate from another CA is 403 BadCertificate")
    func apnsCertificateOverTLS() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("emu-demo-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let demo = try EmulatorDemoCredentials.generate()
        var base = EmulatorConfiguration()
        base.tls.enabled = true
        base.tls.writeCertificateTo = dir.appendingPathComponent("emulator-cert.pem").path
        try demo.write(to: dir.path, base: base)
        let configuration = try EmulatorConfiguration.load(path: dir.appendingPathComponent("emulator.json").path)
        let handle = try runEmulator(configuration: configuration)
        let loops = try EventLoopGroup(threadCount: 1)
        let serverCA = try String(contentsOfFile: dir.appendingPathComponent("emulator-cert.pem").path, encoding: .utf8)
        func pool(_ identity: TLSIdentity?) throws -> HTTP2ClientPool {
            try HTTP2ClientPool(configuration: HTTP2PoolConfiguration(
                origin: HTTP2Origin(scheme: .https, host: "127.0.0.1", port: handle.port), requestTimeout: .seconds(10),
                trustedCAPEM: serverCA, clientIdentity: identity, pingInterval: nil), group: loops)
        }
        let push = HTTP2Request(method: "POST", path: "/3/device/\(F.validToken)",
                                headers: [("apns-topic", demo.apns.bundleID), ("apns-push-type", "alert")],
                                body: Array(#"{"aps":{"alert":"hi"}}"#.utf8))
        func reason(_ response: HTTP2Response) -> String? { (try? JSONValue.parse(bytes: response.body))?["reason"]?.stringValue }

        let written = TLSIdentity(
            certificateChainPEM: try String(contentsOfFile: dir.appendingPathComponent("apns-client-certificate.pem").path, encoding: .utf8),
            privateKeyPEM: try String(contentsOfFile: dir.appendingPathComponent("apns-client-key.pem").path, encoding: .utf8))
        let certified = try pool(written)
        let accepted = try await certified.send(push).get()
        #expect(accepted.status == 200, "\(reason(accepted) ?? "")")
        #expect(accepted.header("apns-id").map(APNsEmulator.isUUID) == true)

        let anonymous = try pool(nil)
        let missing = try await anonymous.send(push).get()
        #expect(missing.status == 403)
        #expect(reason(missing) == "MissingProviderToken")

        let strangerIdentity = try CertificateAuthority.generate().issueClientCertificate(subject: [("UID", demo.apns.bundleID)])
        let stranger = try pool(strangerIdentity)
        let refused = try await stranger.send(push).get()
        #expect(refused.status == 403)
        #expect(reason(refused) == "BadCertificate")

        #expect(handle.stats()["apns"].statuses == ["200": 1, "403": 2])
        for p in [certified, anonymous, stranger] { await p.shutdown() }
        await handle.shutdown()
        loops.shutdown()
    }

    @Test("Server APNs over h2c: no client certificate can exist, so with certificates configured a push without a JWT is still 403 MissingProviderToken")
    func apnsCertificateNeedsTLS() async throws {
        let authority = try CertificateAuthority.generate()
        let running = try Running { $0.apns.certificates.trustedCAPEM = authority.certificatePEM }
        #expect(!running.handle.usesTLS)
        let pool = try running.pool()
        let push = HTTP2Request(method: "POST", path: "/3/device/\(F.validToken)", headers: [("apns-topic", F.bundleID)],
                                body: Array(#"{"aps":{"alert":"hi"}}"#.utf8))
        let response = try await pool.send(push).get()
        #expect(response.status == 403)
        #expect((try? JSONValue.parse(bytes: response.body))?["reason"]?.stringValue == "MissingProviderToken")
        await running.close(pool)
    }

    @Test("Server: a client that does not trust the emulator's certificate fails verification")
    func untrustedCertificate() async throws {
        let running = try Running { $0.tls.enabled = true }
        let pool = try running.pool(trusted: nil)
        let result = await pool.send(HTTP2Request(method: "GET", path: "/_emulator/health"))
        guard case .failure = result else {
            Issue.record("an untrusted self-signed certificate was accepted")
            await running.close(pool)
            return
        }
        await running.close(pool)
    }

    @Test("Server: GET /_emulator/stats over HTTP/2 serves the counters; POST /_emulator/reset clears them")
    func statsOverHTTP() async throws {
        let running = try Running()
        let pool = try running.pool()
        for _ in 0..<3 { _ = await pool.send(Self.apnsRequest(running.fixture)) }
        let stats = try await pool.send(HTTP2Request(method: "GET", path: "/_emulator/stats")).get()
        #expect(stats.status == 200)
        #expect((try? JSONValue.parse(bytes: stats.body))?["endpoints"]?["apns"]?["statuses"]?["200"]?.numberValue?.int64Value == 3)
        let reset = try await pool.send(HTTP2Request(method: "POST", path: "/_emulator/reset")).get()
        #expect(reset.status == 204)
        #expect(running.handle.stats().totalRequests == 0)
        await running.close(pool)
    }

    @Test("Server faults: GOAWAY after 2 streams: every request still completes (the client retries on a new connection), the GOAWAY is counted")
    func goAwayOverTheWire() async throws {
        let running = try Running { $0.faults.goAwayAfterStreams = 2 }
        let pool = try running.pool()
        for _ in 0..<5 {
            let response = try await pool.send(Self.apnsRequest(running.fixture)).get()
            #expect(response.status == 200)
        }
        let stats = running.handle.stats()
        #expect(stats["apns"].statuses["200"] == 5)
        #expect((stats["apns"].statuses["goAway"] ?? 0) >= 2)
        #expect(await pool.statistics().connectionsOpened >= 3)
        await running.close(pool)
    }

    @Test("Server faults: added latency delays each answer by at least the configured time")
    func latencyOverTheWire() async throws {
        let running = try Running { $0.faults.latencyMilliseconds = 150 }
        let pool = try running.pool()
        _ = try await pool.send(Self.apnsRequest(running.fixture)).get()  // connect and lift the stream limit
        let start = ContinuousClock.now
        let response = try await pool.send(Self.apnsRequest(running.fixture)).get()
        let elapsed = ContinuousClock.now - start
        #expect(response.status == 200)
        #expect(elapsed >= .milliseconds(150))
        await running.close(pool)
    }

    @Test("Server faults: a dropped connection fails or retries the request, and the emulator counts the drop")
    func dropOverTheWire() async throws {
        let running = try Running { $0.faults.dropConnection = .every(2) }
        let pool = try running.pool(retries: 0)
        #expect(try await pool.send(Self.apnsRequest(running.fixture)).get().status == 200)
        _ = await pool.send(Self.apnsRequest(running.fixture))
        #expect(running.handle.stats()["apns"].faults["dropConnection"] == 1)
        await running.close(pool)
    }

    @Test("Server APNs A.7: once the limit is lifted, 200 pushes in flight on one connection all succeed")
    func concurrentPushes() async throws {
        let running = try Running()
        let pool = try running.pool()
        _ = try await pool.send(Self.apnsRequest(running.fixture)).get()
        let statuses = await withTaskGroup(of: Int.self) { group -> [Int] in
            for _ in 0..<200 {
                group.addTask { (try? await pool.send(Self.apnsRequest(running.fixture)).get().status) ?? -1 }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(statuses.count == 200)
        #expect(statuses.allSatisfy { $0 == 200 })
        #expect(await pool.statistics().connectionsOpened == 1)
        #expect(running.handle.stats()["apns"].statuses["200"] == 201)
        await running.close(pool)
    }

    @Test("Server ADM D.2/D.3: token then send with the required headers over HTTP/2, canonical id in the body")
    func admOverTheWire() async throws {
        let running = try Running()
        let pool = try running.pool()
        let f = running.fixture
        let tokenRequest = f.admTokenRequest()
        let token = try await pool.send(HTTP2Request(method: "POST", path: tokenRequest.path, headers: tokenRequest.headers, body: tokenRequest.body)).get()
        #expect(token.status == 200)
        let accessToken = try #require((try? JSONValue.parse(bytes: token.body))?["access_token"]?.stringValue)
        let send = f.admSend(registrationID: "canonical-abc", accessToken: accessToken)
        let response = try await pool.send(HTTP2Request(method: "POST", path: send.path, headers: send.headers, body: send.body)).get()
        #expect(response.status == 200)
        #expect((try? JSONValue.parse(bytes: response.body))?["registrationID"] == "renewed-abc")
        await running.close(pool)
    }
}
