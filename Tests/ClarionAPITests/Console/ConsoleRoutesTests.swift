import ClarionStore
import Foundation
import Testing
@testable import ClarionAPI

/// The web console's files and read-only routes (docs/api.md, "The web console") on a real server and real
/// PostgreSQL. The browser side is Tests/e2e/test_console.py.
@Suite struct ConsoleRoutesTests {
    typealias F = NativeAPIFixture

    @Test("console files: no key needed, a strict CSP, nosniff, no framing; the script never parses API data as HTML")
    func files() async throws {
        try await F.with { f in
            for (path, type) in [("/console", "text/html; charset=utf-8"), ("/console/", "text/html; charset=utf-8"),
                                 ("/console/console.js", "text/javascript; charset=utf-8"),
                                 ("/console/console.css", "text/css; charset=utf-8")] {
                let result = try await f.call("GET", path, key: "")
                #expect(result.status == 200, "\(path)")
                #expect(result.headers["content-type"] == type)
                #expect(result.headers["content-security-policy"] == ConsoleRoutes.contentSecurityPolicy)
                #expect(result.headers["x-content-type-options"] == "nosniff")
                #expect(result.headers["x-frame-options"] == "DENY")
                #expect(result.headers["referrer-policy"] == "no-referrer")
            }
            let policy = ConsoleRoutes.contentSecurityPolicy
            #expect(policy.hasPrefix("default-src 'self';") && policy.contains("frame-ancestors 'none'")
                    && !policy.contains("unsafe"))
            let page = try await f.call("GET", "/console", key: "").text
            #expect(!page.contains("<script>") && !page.contains(" style=") && !page.contains("//cdn"))
            let script = try await f.call("GET", "/console/console.js", key: "").text
            #expect(!script.contains(".innerHTML") && !script.contains("outerHTML") && !script.contains("insertAdjacentHTML")
                    && !script.contains("eval("))
            #expect(try await f.call("GET", "/console/other.js", key: "").status == 404)
        }
    }

    @Test("every console data route needs the key, and another account's resources are 404")
    func keys() async throws {
        try await F.with { f in
            _ = try await f.json("POST", "/v1/applications", #"{"name":"chat","platform":"GCM","credential":"c"}"#, expect: 201)
            for path in ["/v1/applications/GCM:chat/summary", "/v1/topics/news/summary", "/v1/endpoints?user_id=a", "/v1/campaigns",
                         "/v1/messages/0190a5d6-2f8e-7c3a-9b1d-2f8e7c3a9b1d/deliveries",
                         "/v1/endpoints/0190a5d6-2f8e-7c3a-9b1d-2f8e7c3a9b1d/deliveries"] {
                #expect(try await f.error("GET", path, key: "").status == 401, "\(path)")
                #expect(try await f.error("GET", path, key: "wrong-key-0123456789").code == "invalid_api_key", "\(path)")
            }
            #expect(try await f.error("GET", "/v1/applications/GCM:chat/summary", key: f.otherKey).status == 404)
        }
    }

    @Test("application summary: enabled, disabled and stale partition the endpoints; the last hour counts are exact (v23), reasons from the log")
    func applicationSummary() async throws {
        try await F.with { f in
            _ = try await f.json("POST", "/v1/applications",
                                 #"{"name":"chat","platform":"GCM","credential":"c","attributes":{"SuccessFeedbackSampleRate":"100"}}"#,
                                 expect: 201)
            var made: [String] = []
            for i in 0..<3 {
                let e = try await f.json("POST", "/v1/applications/GCM:chat/endpoints",
                                         #"{"token":"console-token-\#(i)-abcdefghijklmnop","user_id":"u\#(i)"}"#, expect: 201)
                made.append(try #require(e["id"] as? String))
            }
            let ids = made
            _ = try await f.json("PATCH", "/v1/endpoints/\(ids[1])", #"{"enabled":false}"#, expect: 200)
            // Stale: enabled, token not refreshed (nor the endpoint changed) for longer than CLARION_STALE_AFTER_DAYS (270).
            try await f.pool.withConnection { (c) throws(StoreError) -> Void in
                _ = try c.query("""
                    UPDATE endpoints SET token_refreshed_at = now() - interval '300 days', updated_at = now() - interval '300 days'
                    WHERE external_id = $1
                    """, [ids[2]])
            }
            let published = try await f.json("POST", "/v1/publish", #"{"targets":[{"endpoint":"\#(ids[0])"}],"message":"hi"}"#, expect: 202)
            let message = try #require((published["messages"] as? [[String: Any]])?.first?["id"] as? String)
            // What a shard worker's checkpoint writes: one failure and one sampled success, and one row two hours old.
            try await f.pool.withConnection { (c) throws(StoreError) -> Void in
                _ = try c.query("""
                    INSERT INTO delivery_log (logged_at, message, endpoint, status, provider_status, provider_response, attempts, dwell_ms)
                    SELECT t.at, m.id, e.id, t.status, t.ps, t.pr, 1, 12
                    FROM messages m, endpoints e,
                        (VALUES (now(), 'FAILURE', 404, 'token_invalid: UNREGISTERED'), (now() - interval '1 second', 'SUCCESS', 200, NULL),
                                (now() - interval '2 hours', 'FAILURE', 500, 'retryable: INTERNAL')) AS t(at, status, ps, pr)
                    WHERE m.external_id = $1 AND e.external_id = $2
                    """, [message, ids[0]])
            }
            // What checkpoints add to the exact counts (schema v23): this minute, the last one, and one outside the hour.
            try await f.pool.withConnection { (c) throws(StoreError) -> Void in
                _ = try c.query("""
                    INSERT INTO application_delivery_counts (application, minute, sent, accepted, token_invalid, retried, skipped, filtered)
                    SELECT a.id, date_trunc('minute', now()) - t.ago, t.sent, t.accepted, t.invalid, t.retried, t.skipped, t.filtered
                    FROM platform_applications a,
                        (VALUES (interval '0 minutes', 12, 9, 2, 1, 3, 4), (interval '1 minute', 6, 6, 0, 0, 0, 0),
                                (interval '61 minutes', 100, 100, 0, 0, 0, 0)) AS t(ago, sent, accepted, invalid, retried, skipped, filtered)
                    WHERE a.name = 'chat'
                    """)
            }
            let summary = try await f.json("GET", "/v1/applications/GCM:chat/summary", expect: 200)
            #expect((summary["application"] as? [String: Any])?["id"] as? String == "GCM:chat")
            #expect(summary["endpoints"] as? [String: Int] == ["enabled": 1, "disabled": 1, "stale": 1])
            let hour = try #require(summary["last_hour"] as? [String: Any])
            #expect(hour["success_sample_rate"] as? Int == 100)
            #expect(hour["logged_successes"] as? Int == 1 && hour["failures"] as? Int == 1)
            #expect(hour["failures_by_reason"] as? [String: Int] == ["token_invalid: UNREGISTERED": 1])
            #expect(hour["sent"] as? Int == 18 && hour["accepted"] as? Int == 15 && hour["failed"] as? Int == 2)
            #expect(hour["retried"] as? Int == 1 && hour["skipped"] as? Int == 3 && hour["filtered"] as? Int == 4)
            #expect(hour["expired"] as? Int == 0 && hour["held_out"] as? Int == 0)
            #expect(hour["failed_by_class"] as? [String: Int] == ["token_invalid": 2, "message_invalid": 0, "credentials_invalid": 0,
                                                                  "rejected": 0, "retry_exhausted": 0])
            let rate = try #require(hour["send_rate"] as? [String: Any])
            #expect(rate["last_minute"] as? Int == 6)
            let perMinute = try #require(rate["per_minute"] as? Double)
            #expect(perMinute >= 18.0 / 60 - 0.001 && perMinute <= 18.0 / 59 + 0.001)
            #expect(try await f.error("GET", "/v1/applications/GCM:chat/summary?limit=2").code == "invalid_field")

            // The message's log, newest first, with the token's prefix only (8 characters: at most half the token).
            let log = try await f.call("GET", "/v1/messages/\(message)/deliveries")
            #expect(!log.text.contains("console-token-0-abcdefghijklmnop"))
            let items = try #require(try JSONSerialization.jsonObject(with: Data(log.body)) as? [String: Any])["items"] as? [[String: Any]]
            #expect(items?.map { $0["status"] as? String } == ["FAILURE", "SUCCESS", "FAILURE"])
            #expect(items?.first?["token_prefix"] as? String == "console-")
            #expect(items?.first?["endpoint"] as? String == ids[0] && items?.first?["message"] as? String == message)
            #expect(items?.first?["provider_status"] as? Int == 404)
            #expect(try await f.error("GET", "/v1/messages/\(message)/deliveries", key: f.otherKey).status == 404)
            let limited = try await f.json("GET", "/v1/messages/\(message)/deliveries?limit=1", expect: 200)
            #expect((limited["items"] as? [[String: Any]])?.count == 1)

            // The endpoint's rows of the last 24 hours.
            let endpointLog = try await f.json("GET", "/v1/endpoints/\(ids[0])/deliveries", expect: 200)
            #expect((endpointLog["items"] as? [[String: Any]])?.count == 3)
            #expect(try await f.error("GET", "/v1/endpoints/\(ids[0])/deliveries", key: f.otherKey).status == 404)
        }
    }

    @Test("endpoint lookup: by user id or token prefix (exactly one), scoped to the account, token prefixes only")
    func lookup() async throws {
        try await F.with { f in
            _ = try await f.json("POST", "/v1/applications", #"{"name":"ios","platform":"APNS","credential":"k","principal":"ABCDE12345","enabled":false}"#, expect: 201)
            let token = String(repeating: "ab", count: 32)
            let e = try await f.json("POST", "/v1/applications/APNS:ios/endpoints", #"{"token":"\#(token)","user_id":"alice"}"#, expect: 201)
            let byUser = try await f.json("GET", "/v1/endpoints?user_id=alice", expect: 200)
            let found = try #require((byUser["items"] as? [[String: Any]])?.first)
            #expect(found["id"] as? String == e["id"] as? String && found["application"] as? String == "APNS:ios")
            #expect(found["token_prefix"] as? String == "abababab" && found["token"] == nil)
            // APNs tokens are stored lower-case: a prefix typed in capitals finds them.
            let byPrefix = try await f.json("GET", "/v1/endpoints?token_prefix=ABAB", expect: 200)
            #expect((byPrefix["items"] as? [[String: Any]])?.count == 1)
            #expect(((try await f.json("GET", "/v1/endpoints?token_prefix=cd", expect: 200))["items"] as? [Any])?.isEmpty == true)
            #expect(((try await f.json("GET", "/v1/endpoints?user_id=alice", expect: 200, key: f.otherKey))["items"] as? [Any])?.isEmpty == true)
            #expect(try await f.error("GET", "/v1/endpoints").code == "invalid_field")
            #expect(try await f.error("GET", "/v1/endpoints?user_id=a&token_prefix=b").code == "invalid_field")
            #expect(try await f.error("GET", "/v1/endpoints?user_id=").code == "invalid_field")
            #expect(try await f.error("GET", "/v1/endpoints?colour=red").field == "colour")
        }
    }

    @Test("topic summary: subscription counts and the latest messages, newest first")
    func topicSummary() async throws {
        try await F.with { f in
            _ = try await f.json("POST", "/v1/applications", #"{"name":"chat","platform":"GCM","credential":"c"}"#, expect: 201)
            _ = try await f.json("POST", "/v1/topics", #"{"name":"news"}"#, expect: 201)
            for i in 0..<2 {
                let e = try await f.json("POST", "/v1/applications/GCM:chat/endpoints", #"{"token":"topic-token-\#(i)"}"#, expect: 201)
                let id = try #require(e["id"] as? String)
                _ = try await f.json("POST", "/v1/topics/news/subscriptions", #"{"endpoint":"\#(id)"}"#, expect: 201)
            }
            var sent: [String] = []
            for _ in 0..<3 {
                let p = try await f.json("POST", "/v1/publish", #"{"targets":[{"topic":"news"}],"message":"hi"}"#, expect: 202)
                sent.append(try #require((p["messages"] as? [[String: Any]])?.first?["id"] as? String))
            }
            let summary = try await f.json("GET", "/v1/topics/news/summary?limit=2", expect: 200)
            #expect(summary["subscriptions"] as? [String: Int] == ["total": 2, "endpoints": 2, "pending_confirmation": 0])
            let recent = try #require(summary["recent_messages"] as? [[String: Any]])
            #expect(recent.map { $0["id"] as? String } == [sent[2], sent[1]])
            #expect(recent.first?["state"] as? String == "Enqueued" && recent.first?["targeted"] as? Int == 0)
            #expect(try await f.error("GET", "/v1/topics/news/summary?limit=0").field == "limit")
            #expect(try await f.error("GET", "/v1/topics/news/summary", key: f.otherKey).status == 404)
        }
    }

    @Test("campaign list: the account's campaigns, newest first, with their message counts")
    func campaigns() async throws {
        try await F.with { f in
            _ = try await f.json("POST", "/v1/applications", #"{"name":"chat","platform":"GCM","credential":"c"}"#, expect: 201)
            let e = try await f.json("POST", "/v1/applications/GCM:chat/endpoints", #"{"token":"campaign-token-1"}"#, expect: 201)
            let id = try #require(e["id"] as? String)
            for (campaign, copies) in [("spring", 2), ("summer", 1)] {
                for _ in 0..<copies {
                    _ = try await f.json("POST", "/v1/publish", #"""
                        {"targets":[{"endpoint":"\#(id)"}],"message":"hi","campaign":{"id":"\#(campaign)","name":"Sale","namespace":"acme"}}
                        """#, expect: 202)
                }
            }
            let list = try await f.json("GET", "/v1/campaigns", expect: 200)
            let items = try #require(list["items"] as? [[String: Any]])
            #expect(items.map { $0["id"] as? String } == ["summer", "spring"])
            #expect(items.map { $0["messages"] as? Int } == [1, 2])
            #expect(items.first?["namespace"] as? String == "acme" && items.first?["name"] as? String == "Sale")
            #expect(((try await f.json("GET", "/v1/campaigns?limit=1", expect: 200))["items"] as? [Any])?.count == 1)
            #expect(((try await f.json("GET", "/v1/campaigns", expect: 200, key: f.otherKey))["items"] as? [Any])?.isEmpty == true)
            #expect(try await f.error("GET", "/v1/campaigns?cursor=x").field == "cursor")
        }
    }
}
