import ClarionStore
import Foundation
import Testing
@testable import ClarionAPI

/// `send_at` on the native publish and `POST /v1/messages/{id}/cancel` against a real server and PostgreSQL (no
/// dispatcher runs here: a scheduled message stays Scheduled, an enqueued one Enqueued).
@Suite("Scheduled sends and cancel (native API)", .serialized)
struct ScheduledSendAPITests {
    typealias F = NativeAPIFixture

    /// RFC 3339 section 5.6 (https://www.rfc-editor.org/rfc/rfc3339#section-5.6): `date-time = full-date "T"
    /// full-time`, `time-offset = "Z" / time-numoffset` (required), `time-secfrac` optional; section 5.7: month days by
    /// month and leap year; the NOTE of 5.6 allows lower-case `t` and `z`.
    @Test("send_at is an RFC 3339 date-time with an offset (section 5.6); day ranges per section 5.7")
    func rfc3339() {
        #expect(AWSTimestamp.parseRFC3339("2026-12-24T17:00:00Z") == 1_798_131_600)
        // 18:00 at +01:00 is 17:00 UTC; 12:00 at -05:00 is 17:00 UTC.
        #expect(AWSTimestamp.parseRFC3339("2026-12-24T18:00:00+01:00") == 1_798_131_600)
        #expect(AWSTimestamp.parseRFC3339("2026-12-24T12:00:00-05:00") == 1_798_131_600)
        #expect(AWSTimestamp.parseRFC3339("2026-12-24t17:00:00z") == 1_798_131_600)
        #expect(AWSTimestamp.parseRFC3339("2026-12-24T17:00:00.25Z") == 1_798_131_600.25)
        #expect(AWSTimestamp.parseRFC3339("2028-02-29T00:00:00Z") != nil)  // a leap year
        for bad in ["2026-12-24T17:00:00",  // no offset: a local time names no instant
                    "2026-12-24 17:00:00Z", "2026-12-24T17:00Z", "2026-12-24T17:00:00+0100", "2026-12-24T17:00:00+01",
                    "2026-02-29T00:00:00Z", "2026-04-31T00:00:00Z", "2026-13-01T00:00:00Z", "2026-12-24T24:00:00Z",
                    "2026-12-24T17:00:00.Z", "2026-12-24T17:00:00Zjunk", "tomorrow", "", "1798131600"] {
            #expect(AWSTimestamp.parseRFC3339(bad) == nil, "\(bad)")
        }
    }

    @Test("a future send_at stores the publish Scheduled (202 with its state); status shows send_at; bad ones name the field")
    func scheduledPublish() async throws {
        try await F.with { f in
            _ = try await f.json("POST", "/v1/applications", #"{"name":"chat","platform":"APNS","credential":"k","principal":"ABCDE12345"}"#, expect: 201)
            let endpoint = try #require(try await f.json("POST", "/v1/applications/APNS:chat/endpoints", #"{"token":"a1"}"#, expect: 201)["id"] as? String)
            _ = try await f.json("POST", "/v1/topics", #"{"name":"news"}"#, expect: 201)
            let at = Date().addingTimeInterval(3_600)
            let text = at.formatted(.iso8601)
            let body = """
                {"targets":[{"endpoint":"\(endpoint)"},{"topic":"news"}],"message":"hi","ttl":60,"send_at":"\(text)"}
                """
            let accepted = try await f.json("POST", "/v1/publish", body, expect: 202)
            let items = try #require(accepted["messages"] as? [[String: Any]])
            #expect(items.count == 2)
            for item in items {
                #expect(item["state"] as? String == "Scheduled")
                #expect(item["send_at"] as? String == text)
                let id = try #require(item["id"] as? String)
                let status = try await f.json("GET", "/v1/messages/\(id)", expect: 200)
                #expect(status["state"] as? String == "Scheduled")
                #expect(status["send_at"] as? String == text)
                // The TTL counts from send_at, not from the publish.
                let expires = try #require(ISO8601DateFormatter().date(from: status["expires_at"] as? String ?? ""))
                #expect(abs(expires.timeIntervalSince(at) - 60) < 2)
                let stored = try await f.context.messages.get(externalID: try #require(UUID(uuidString: id)))
                #expect(stored.state == "Scheduled" && !stored.planned)
            }

            // A time in the past is now: stored Enqueued, no send_at.
            let past = try await f.json("POST", "/v1/publish", """
                {"targets":[{"topic":"news"}],"message":"hi","send_at":"2020-01-01T00:00:00+02:00"}
                """, expect: 202)
            let pastItem = try #require((past["messages"] as? [[String: Any]])?.first)
            #expect(pastItem["state"] as? String == "Enqueued")
            #expect(pastItem["send_at"] is NSNull)
            let pastStatus = try await f.json("GET", "/v1/messages/\(pastItem["id"] as? String ?? "")", expect: 200)
            #expect(pastStatus["state"] as? String == "Enqueued" && pastStatus["send_at"] is NSNull)

            // Malformed, without an offset, not a string, more than 365 days ahead: 400 naming send_at; nothing stored.
            let tooFar = Date().addingTimeInterval(366 * 86_400).formatted(.iso8601)
            for value in [#""next tuesday""#, #""2026-12-24T17:00:00""#, "1798131600", quoted(tooFar)] {
                let refused = try await f.error("POST", "/v1/publish", #"{"targets":[{"topic":"news"}],"message":"hi","send_at":\#(value)}"#)
                #expect(refused.status == 400 && refused.code == "invalid_field" && refused.field == "send_at", "\(value)")
            }
            let count = try await f.pool.withConnection { (c) throws(StoreError) -> Int64 in
                try c.query("SELECT count(*) FROM messages").first?.int64(0) ?? -1
            }
            #expect(count == 3)
        }
    }

    @Test("pace on a topic publish: stored and shown in status; other targets and bad shapes are 400 naming the field")
    func pace() async throws {
        try await F.with { f in
            _ = try await f.json("POST", "/v1/applications", #"{"name":"chat","platform":"APNS","credential":"k","principal":"ABCDE12345"}"#, expect: 201)
            let endpoint = try #require(try await f.json("POST", "/v1/applications/APNS:chat/endpoints", #"{"token":"a1"}"#, expect: 201)["id"] as? String)
            _ = try await f.json("POST", "/v1/topics", #"{"name":"news"}"#, expect: 201)
            let accepted = try await f.json("POST", "/v1/publish", #"{"targets":[{"topic":"news"}],"message":"hi","pace":{"over_seconds":3600}}"#, expect: 202)
            let id = try #require((accepted["messages"] as? [[String: Any]])?.first?["id"] as? String)
            let status = try await f.json("GET", "/v1/messages/\(id)", expect: 200)
            let pace = try #require(status["pace"] as? [String: Any])
            #expect(pace["over_seconds"] as? Int == 3600)
            #expect(pace["effective_per_second"] is NSNull)  // not planned yet: its targets are not counted
            #expect(pace["started_at"] is NSNull && pace["granted"] as? Int == 0)
            let rated = try await f.json("POST", "/v1/publish", #"{"targets":[{"topic":"news"}],"message":"hi","pace":{"per_second":2.5}}"#, expect: 202)
            let ratedID = try #require((rated["messages"] as? [[String: Any]])?.first?["id"] as? String)
            let ratedPace = try #require(try await f.json("GET", "/v1/messages/\(ratedID)", expect: 200)["pace"] as? [String: Any])
            #expect(ratedPace["per_second"] as? Double == 2.5 && ratedPace["effective_per_second"] as? Double == 2.5)
            // Not paced: "pace": null.
            let plain = try await f.json("POST", "/v1/publish", #"{"targets":[{"topic":"news"}],"message":"hi"}"#, expect: 202)
            let plainID = try #require((plain["messages"] as? [[String: Any]])?.first?["id"] as? String)
            #expect(try await f.json("GET", "/v1/messages/\(plainID)", expect: 200)["pace"] is NSNull)

            let direct = try await f.error("POST", "/v1/publish", #"{"targets":[{"topic":"news"},{"endpoint":"\#(endpoint)"}],"message":"hi","pace":{"per_second":1}}"#)
            #expect(direct.status == 400 && direct.field == "targets[1]")
            for (value, field) in [(#"{"over_seconds":0}"#, "pace.over_seconds"), (#"{"per_second":-1}"#, "pace.per_second"),
                                   (#"{"over_seconds":10,"per_second":1}"#, "pace"), (#""fast""#, "pace"),
                                   (#"{"over_seconds":2592001}"#, "pace.over_seconds")] {
                let refused = try await f.error("POST", "/v1/publish", #"{"targets":[{"topic":"news"}],"message":"hi","pace":\#(value)}"#)
                #expect(refused.status == 400 && refused.field == field, "\(value)")
            }
        }
    }

    @Test("cancel: a scheduled message is Cancelled (200 with its status), again the same; unknown 404; finished 409")
    func cancel() async throws {
        try await F.with { f in
            _ = try await f.json("POST", "/v1/topics", #"{"name":"news"}"#, expect: 201)
            let at = Date().addingTimeInterval(600).formatted(.iso8601)
            let accepted = try await f.json("POST", "/v1/publish", """
                {"targets":[{"topic":"news"}],"message":"hi","send_at":"\(at)"}
                """, expect: 202)
            let id = try #require((accepted["messages"] as? [[String: Any]])?.first?["id"] as? String)

            let cancelled = try await f.json("POST", "/v1/messages/\(id)/cancel", expect: 200)
            #expect(cancelled["id"] as? String == id)
            #expect(cancelled["state"] as? String == "Cancelled")
            #expect(cancelled["completed_at"] is String)
            #expect(cancelled["send_at"] as? String == at)
            // Idempotent: the same answer, the same cancellation time.
            let again = try await f.json("POST", "/v1/messages/\(id)/cancel", expect: 200)
            #expect(again["state"] as? String == "Cancelled" && again["completed_at"] as? String == cancelled["completed_at"] as? String)
            #expect(try await f.json("GET", "/v1/messages/\(id)", expect: 200)["state"] as? String == "Cancelled")

            // Another account does not see it; an unknown or malformed id is 404.
            #expect(try await f.error("POST", "/v1/messages/\(id)/cancel", key: f.otherKey).status == 404)
            #expect(try await f.error("POST", "/v1/messages/\(UUID().uuidString.lowercased())/cancel").status == 404)
            #expect(try await f.error("POST", "/v1/messages/nope/cancel").status == 404)

            // A finished message: 409 in the native error format, and it stays as it was.
            let done = try await f.json("POST", "/v1/publish", #"{"targets":[{"topic":"news"}],"message":"hi"}"#, expect: 202)
            let doneID = try #require((done["messages"] as? [[String: Any]])?.first?["id"] as? String)
            try await f.pool.withConnection { (c) throws(StoreError) -> Void in
                _ = try c.query("UPDATE messages SET state = 'Completed', planned = true, completed_at = now() WHERE external_id = $1",
                            [UUID(uuidString: doneID)!])
            }
            let refused = try await f.error("POST", "/v1/messages/\(doneID)/cancel")
            #expect(refused.status == 409 && refused.code == "message_finished" && refused.field == "id")
            #expect(try await f.json("GET", "/v1/messages/\(doneID)", expect: 200)["state"] as? String == "Completed")
        }
    }
}
