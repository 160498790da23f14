import ClarionStore
import Foundation
import Synchronization
import Testing
@testable import ClarionAPI
@testable import ClarionWorkers

/// `x-clarion-signature: t=<unix seconds>,v1=<hex HMAC-SHA256(API token, t + "." + body)>` (issue "Hardening",
/// finding 11; docs/api.md), checked at a real HTTP receiver against Python's hmac module.
@Suite("Registration webhooks: x-clarion-signature", .serialized)
struct WebhookSignatureTests {
    /// Hex HMAC-SHA256(key, message) by Python's hmac module, independently of Clarion's crypto.
    static func pythonHexHMAC(key: String, message: String) async throws -> String {
        let result = try await run("/usr/bin/python3", ["-c", """
            import sys, hmac, hashlib
            print(hmac.new(sys.argv[1].encode(), sys.argv[2].encode(), hashlib.sha256).hexdigest())
            """, key, message])
        return String(decoding: result.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// `t` and `v1` of a header value, nil unless it is exactly `t=<digits>,v1=<64 hex digits>`.
    static func parse(_ header: String) -> (t: String, v1: String)? {
        let parts = header.split(separator: ",", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].hasPrefix("t="), parts[1].hasPrefix("v1=") else { return nil }
        let t = String(parts[0].dropFirst(2)), v1 = String(parts[1].dropFirst(3))
        guard !t.isEmpty, t.allSatisfy(\.isASCII), t.allSatisfy(\.isNumber), v1.count == 64,
              v1.allSatisfy({ "0123456789abcdef".contains($0) }) else { return nil }
        return (t, v1)
    }

    @Test("The header signs the received body and the attempt's time; a changed body or time does not verify; the body's Signature stays")
    func headerVerifiesAgainstPython() async throws {
        let receiver = try WebhookReceiver()
        defer { receiver.stop() }
        let now = Mutex(Date(timeIntervalSince1970: 1_796_032_800.75))
        try await RegistrationFixture.with(clock: { now.withLock { $0 } }) { f in
            let url = "http://127.0.0.1:\(receiver.port)/hooks/signed"
            _ = try await f.register(user: "u1", fcm: "signed-token", headers: ["x-ms-callback-url": url])
            await f.processAll()
            #expect(await f.sendWebhooks() == 1)
            let request = try #require(receiver.requests.first)
            let headers = try #require(request["headers"] as? [String: String])
            let body = try #require(request["body"] as? String)
            let header = try #require(headers["x-clarion-signature"])
            let (t, v1) = try #require(Self.parse(header), "\(header)")
            #expect(t == "1796032800", "the attempt's time in whole seconds")
            #expect(try await Self.pythonHexHMAC(key: f.apiToken, message: t + "." + body) == v1)

            // What a replay with another body, or an old signature with a new time, would need: neither verifies.
            let forged = body.replacingOccurrences(of: "\"Success\"", with: "\"Failed\"")
            #expect(forged != body)
            #expect(try await Self.pythonHexHMAC(key: f.apiToken, message: t + "." + forged) != v1)
            #expect(try await Self.pythonHexHMAC(key: f.apiToken, message: "1796032801." + body) != v1)
            #expect(try await Self.pythonHexHMAC(key: "cmt_another", message: t + "." + body) != v1)

            // The original spec's signature is unchanged: Base64 HMAC of the callback URL, in the body.
            let object = try #require(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
            #expect(object["Signature"] as? String == (try await pythonSignature(key: f.apiToken, message: url)))
        }
    }

    @Test("Each attempt is signed at its own time (a retry re-signs), and a caller's header of that name is replaced")
    func eachAttemptResigns() async throws {
        let receiver = try WebhookReceiver()
        defer { receiver.stop() }
        let now = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
        try await RegistrationFixture.with(clock: { now.withLock { $0 } }) { f in
            let webhook = OutboxWebhook(id: 1, url: "http://127.0.0.1:\(receiver.port)/again",
                                        headers: ["X-Clarion-Signature": "t=1,v1=forged", "X-Tenant": "7"],
                                        body: #"{"Status":"Success","Signature":"x","FailureReason":null}"#, signingKey: f.apiToken)
            let processor = f.processor
            for _ in 0..<2 {
                let sent = await withCheckedContinuation { continuation in
                    Thread { continuation.resume(returning: processor.deliver(webhook)) }.start()
                }
                #expect((try? sent.get()) != nil)
                now.withLock { $0 += 7 }
            }
            let requests = receiver.requests
            #expect(requests.count == 2)
            var times: [String] = []
            for request in requests {
                let headers = try #require(request["headers"] as? [String: String])
                #expect(headers["x-tenant"] == "7")
                let named = (request["header_list"] as? [[String]] ?? []).filter { $0.first?.lowercased() == "x-clarion-signature" }
                #expect(named.count == 1, "one signature header, ours: \(named)")
                let (t, v1) = try #require(Self.parse(headers["x-clarion-signature"] ?? ""), "\(headers)")
                #expect(try await Self.pythonHexHMAC(key: f.apiToken, message: t + "." + webhook.body) == v1)
                times.append(t)
            }
            #expect(times == ["1800000000", "1800000007"])

            // Without a key (the token row is gone) the webhook goes unsigned rather than not at all.
            let unsigned = OutboxWebhook(id: 2, url: webhook.url, headers: [:], body: webhook.body, signingKey: nil)
            let sent = await withCheckedContinuation { continuation in
                Thread { continuation.resume(returning: processor.deliver(unsigned)) }.start()
            }
            #expect((try? sent.get()) != nil)
            #expect((receiver.requests.last?["headers"] as? [String: String])?["x-clarion-signature"] == nil)
        }
    }

    @Test("A registration may not set x-clarion-signature among its callback headers")
    func callbackHeaderReserved() async throws {
        try await RegistrationFixture.with { f in
            let result = try await f.post(f.devices, f.item(user: "u", fcm: "t"), headers: [
                "x-ms-callback-url": "https://example.com/x", "x-ms-callback-url-headers": #"{"X-Clarion-Signature": "t=1,v1=00"}"#])
            #expect(result.status == 400)
            #expect(result.text.contains("x-ms-callback-url-headers"))
        }
    }
}
