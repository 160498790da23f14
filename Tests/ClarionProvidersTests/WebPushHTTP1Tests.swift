import ClarionCore
import ClarionCrypto
import ClarionHTTP2
import ClarionTestSupport
import Foundation
import Testing
@testable import ClarionEmulator
@testable import ClarionProviders

/// Web Push to a push service that does not negotiate h2 (RFC 8030 section 1 recommends HTTP/2 but does not require
/// it): real TLS sockets to `HTTP1TestServer`, which selects ALPN "http/1.1" only. The first push finds out over the
/// HTTP/2 pool (`.http2NotNegotiated`, nothing sent), is resent over HTTP/1.1, and later pushes go there directly,
/// classified exactly as over HTTP/2 (docs/providers.md W.5).
@Suite("Web Push over HTTP/1.1", .serialized)
struct WebPushHTTP1Tests {
    /// The client and a subscription pointing at `server` (keys made by the emulator, which is all it is used for).
    private func setUp(_ server: HTTP1TestServer, port: Int) throws -> (Harness, ProviderClient, () -> String) {
        let harness = try Harness(tls: true)
        let client = try harness.client("wp-h1", .webPush, [
            ProviderAttribute.platformCredential: WebPushProviderTests.vapidKey.pkcs8PEM,
            ProviderAttribute.vapidSubject: "mailto:ops@example.com",
            ProviderAttribute.providerCACertificate: server.certificate.certificatePEM,
        ])
        let subscribe = {
            let json = String(decoding: harness.emulator.webPush.subscribe(authority: "127.0.0.1:\(port)"), as: UTF8.self)
            return try! WebPushSubscription.parse(json).canonicalToken
        }
        return (harness, client, subscribe)
    }

    @Test("an HTTP/1.1-only push service gets every push, serial pushes over one keep-alive connection")
    func keepAlive() async throws {
        let server = try HTTP1TestServer { _ in ("HTTP/1.1 201 Created\r\nLocation: /m/1\r\nContent-Length: 0\r\n\r\n", false) }
        defer { server.stop() }
        let port = try server.start()
        let (harness, client, subscribe) = try setUp(server, port: port)
        let token = subscribe()
        for n in 0..<4 {
            let outcome = await client.send(WebPushProviderTests.push(harness, "push \(n)"), token: token)
            #expect(outcome == .accepted(providerID: "/m/1"), "\(outcome)")
        }
        let requests = server.requests
        #expect(requests.count == 4, "each push sent once: the HTTP/2 attempt sent nothing")
        #expect(Set(requests.map(\.connection)).count == 1, "RFC 9112 9.3: one persistent connection for serial pushes")
        for request in requests {
            #expect(request.method == "POST")
            #expect(request.header("authorization")?.hasPrefix("vapid t=") == true)
            #expect(request.header("content-encoding") == "aes128gcm")
            #expect(request.header("ttl") != nil)
            // aes128gcm: 86-octet header, the padded record, the 16-octet tag (RFC 8188 section 2).
            let recordSize: Int = "push 0".utf8.count + 1 + 16
            #expect(request.body.count == 86 + recordSize)
        }
        // The batch path to the same origin goes straight to HTTP/1.1.
        let deliveries = (0..<6).map { ProviderDelivery(token: subscribe(), tag: UInt64($0)) }
        let sink = CollectingSink()
        #expect(client.submit(WebPushProviderTests.push(harness, "batch"), deliveries: deliveries, sink: sink) == 6)
        let results = try await sink.wait(for: 6)
        #expect(results.allSatisfy { $0.outcome == .accepted(providerID: "/m/1") }, "\(results.map(\.outcome))")
        #expect(server.requests.count == 10)
        await harness.close()
    }

    @Test("a first batch to an HTTP/1.1-only origin is delivered, not failed")
    func firstBatchIsResent() async throws {
        let server = try HTTP1TestServer { _ in ("HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n", false) }
        defer { server.stop() }
        let port = try server.start()
        let (harness, client, subscribe) = try setUp(server, port: port)
        let deliveries = (0..<5).map { ProviderDelivery(token: subscribe(), tag: UInt64(100 + $0)) }
        let sink = CollectingSink()
        #expect(client.submit(WebPushProviderTests.push(harness, "first"), deliveries: deliveries, sink: sink) == 5)
        let results = try await sink.wait(for: 5)
        #expect(Set(results.map(\.tag)) == Set(100..<105))
        #expect(results.allSatisfy { $0.outcome == .accepted(providerID: nil) }, "\(results.map(\.outcome))")
        #expect(server.requests.count == 5)
        await harness.close()
    }

    // RFC 8030 section 7.3 (W.5): 410 disables the endpoint with the reason, over HTTP/1.1 as over HTTP/2.
    @Test("410 from an HTTP/1.1 push service disables the endpoint with the reason")
    func gone() async throws {
        let server = try HTTP1TestServer { _ in
            ("HTTP/1.1 410 Gone\r\nContent-Type: text/plain\r\nContent-Length: 12\r\n\r\nunsubscribed", false)
        }
        defer { server.stop() }
        let port = try server.start()
        let (harness, client, subscribe) = try setUp(server, port: port)
        let outcome = await client.send(WebPushProviderTests.push(harness, "gone?"), token: subscribe())
        guard case .tokenInvalid(let reason, _) = outcome else { Issue.record("\(outcome)"); await harness.close(); return }
        #expect(reason.contains("410"))
        #expect(outcome.endpointAction != .none)
        await harness.close()
    }

    // RFC 8030 section 8.4 / RFC 9110 section 10.2.3 (W.5): 429 is retried after Retry-After; here the answer is
    // chunked, so the framing the parser reads is exercised through the provider too.
    @Test("429 with Retry-After, in a chunked answer, is retried after the given delay")
    func tooManyRequests() async throws {
        let server = try HTTP1TestServer { _ in
            ("HTTP/1.1 429 Too Many Requests\r\nRetry-After: 30\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nslow\r\n0\r\n\r\n", false)
        }
        defer { server.stop() }
        let port = try server.start()
        let (harness, client, subscribe) = try setUp(server, port: port)
        let outcome = await client.send(WebPushProviderTests.push(harness, "busy"), token: subscribe())
        guard case .retryable(_, let retryAfter) = outcome else { Issue.record("\(outcome)"); await harness.close(); return }
        #expect(retryAfter == 30)
        await harness.close()
    }
}
