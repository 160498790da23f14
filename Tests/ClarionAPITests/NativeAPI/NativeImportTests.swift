import ClarionStore
import Foundation
import Testing
@testable import ClarionAPI

/// Bulk import and export through a real server and PostgreSQL (docs/api.md, "Bulk import and export").
@Suite("Native API: bulk import and export")
struct NativeImportTests {
    static let hex1 = String(repeating: "a1", count: 32)
    static let hex2 = String(repeating: "b2", count: 32)
    static let hex3 = String(repeating: "c3", count: 32)
    static let hex4 = String(repeating: "d4", count: 32)

    func upload(_ f: NativeAPIFixture, _ path: String, _ body: String, contentType: String = "application/x-ndjson")
        async throws -> (status: Int, json: [String: Any]) {
        let result = try await f.call("POST", path, body, headers: ["Content-Type": contentType])
        let json = (try? JSONSerialization.jsonObject(with: Data(result.body)) as? [String: Any]) ?? [:]
        return (result.status, json)
    }

    func refusals(_ json: [String: Any]) -> [(Int, String)] {
        ((json["refusals"] as? [[String: Any]]) ?? []).map { ($0["line"] as? Int ?? 0, $0["reason"] as? String ?? "") }
    }

    func counts(_ json: [String: Any]) -> [Int] {
        ["created", "unchanged", "updated", "refused"].map { json[$0] as? Int ?? -1 }
    }

    @Test("CreatePlatformEndpoint's rule per line (docs/providers.md C.8): new token created, same fields unchanged, new device facts updated, different fields refused naming the endpoint; malformed lines and duplicates in the file refused with their line")
    func endpointRules() async throws {
        try await NativeAPIFixture.with { f in
            _ = try await f.json("POST", "/v1/applications", #"{"name":"chat","platform":"APNS","credential":"k","principal":"ABCDE12345"}"#, expect: 201)
            let existing = try await f.json("POST", "/v1/applications/APNS:chat/endpoints",
                                            #"{"token":"\#(Self.hex1)","custom_user_data":"u1","user_id":"alice"}"#, expect: 201)
            let existingID = try #require(existing["id"] as? String)
            let lines = [
                #"{"token":"\#(Self.hex2)","user_id":"bob","custom_user_data":"x","enabled":false,"attributes":{"AppVersion":"1.0"}}"#, // 1 created
                #"{"token":"\#(Self.hex1)","custom_user_data":"u1"}"#,                          // 2 unchanged (given fields match)
                #"{"token":"\#(Self.hex1.uppercased())","attributes":{"OSVersion":"17"}}"#,     // 3 APNs tokens are stored lower-case: updated
                #"{"token":"\#(Self.hex1)","custom_user_data":"other"}"#,                     // 4 refused: conflicts with line 2
                "{not json",                                                                   // 5 refused
                #"{"token":"zz-not-hex"}"#,                                                    // 6 refused: iOS tokens are hex
                "",                                                                            // 7 blank: skipped
                #"{"token":"\#(Self.hex2)","user_id":"bob","custom_user_data":"x","enabled":false,"attributes":{"AppVersion":"1.0"}}"#, // 8 same as 1
                #"{"token":"\#(Self.hex2)","user_id":"carol"}"#,                               // 9 refused: differs from line 1
                #"{"token":"\#(Self.hex3)","colour":"red"}"#,                                  // 10 refused: unknown field
                #"{"token":"\#(Self.hex3)","attributes":{"Colour":"red"}}"#,                   // 11 refused: unknown attribute
                #"{"token":"\#(Self.hex4)","custom_user_data":"\#(String(repeating: "x", count: 2049))"}"#, // 12 refused: > 2048 bytes
            ]
            let (status, json) = try await upload(f, "/v1/applications/APNS:chat/endpoints:import", lines.joined(separator: "\n"))
            #expect(status == 200, "\(json)")
            #expect(json["lines"] as? Int == 12)
            // Lines 2 and 3 name the same token (3 upper-cased): 3 differs from 2 and is refused as a duplicate; 4 too.
            #expect(counts(json) == [1, 2, 0, 8], "\(json)")
            let refused = refusals(json)
            #expect(refused.map(\.0) == [3, 4, 5, 6, 9, 10, 11, 12], "\(refused)")
            #expect(refused.first { $0.0 == 4 }?.1 == "The token is also on line 2, with different fields.")
            #expect(refused.first { $0.0 == 5 }?.1.hasPrefix("The line is not JSON") == true)
            #expect(refused.first { $0.0 == 6 }?.1.contains("hexadecimal") == true)
            #expect(json["refusals_truncated"] as? Bool == false)

            // Against the rows now there: a different custom_user_data is SNS's conflict, naming the endpoint; new
            // device facts update.
            let again = try await upload(f, "/v1/applications/APNS:chat/endpoints:import", [
                #"{"token":"\#(Self.hex1)","custom_user_data":"changed"}"#,
                #"{"token":"\#(Self.hex1.uppercased())","attributes":{"OSVersion":"17"}}"#,
            ].joined(separator: "\n"))
            #expect(counts(again.json) == [0, 0, 0, 2], "\(again.json)")
            let second = try await upload(f, "/v1/applications/APNS:chat/endpoints:import",
                                          #"{"token":"\#(Self.hex1.uppercased())","attributes":{"OSVersion":"17"}}"#)
            #expect(counts(second.json) == [0, 0, 1, 0], "\(second.json)")
            #expect(refusals(again.json).first?.1 == "Endpoint \(existingID) already exists with the same token, but different attributes.")
            let stored = try await f.json("GET", "/v1/endpoints/\(existingID)", expect: 200)
            #expect(stored["custom_user_data"] as? String == "u1")
            #expect(stored["os_version"] as? String == "17")
            let created = try #require(try await f.context.endpoints.find(applicationKey: try await f.context.applications
                .get(accountKey: try await f.context.accounts.account(accountID: NativeAPIFixture.accountID).key, region: "us-east-1", platform: "APNS", name: "chat").key,
                token: Self.hex2))
            #expect(created.enabled == false)
            #expect(created.disabledReason == "created disabled")
            #expect(created.userID == "bob")
            #expect(created.attributes == ["AppVersion": "1.0"])
        }
    }

    @Test("CSV with a header line, quoted fields and CRLF; a header without a token column is refused whole (400); other media types 415")
    func csv() async throws {
        try await NativeAPIFixture.with { f in
            _ = try await f.json("POST", "/v1/applications", #"{"name":"droid","platform":"GCM","credential":"k"}"#, expect: 201)
            let body = "token,user_id,custom_user_data,enabled,attributes\r\n"
                + "tok-1,alice,\"a, \"\"quoted\"\" value\",true,\"{\"\"AppVersion\"\":\"\"2\"\"}\"\r\n"
                + "tok-2,,,,\r\n"
                + "tok-3,bob,,maybe,\r\n"
                + "tok-4,\"unterminated\r\n"
            let (status, json) = try await upload(f, "/v1/applications/GCM:droid/endpoints:import", body, contentType: "text/csv")
            #expect(status == 200)
            #expect(counts(json) == [2, 0, 0, 2], "\(json)")
            #expect(refusals(json).map(\.0) == [4, 5])
            let page = try await f.json("GET", "/v1/applications/GCM:droid/endpoints", expect: 200)
            let items = try #require(page["items"] as? [[String: Any]])
            #expect(items.first?["custom_user_data"] as? String == "a, \"quoted\" value")
            #expect(items.first?["app_version"] as? String == "2")
            let bad = try await f.call("POST", "/v1/applications/GCM:droid/endpoints:import", "user_id\nalice\n",
                                       headers: ["Content-Type": "text/csv"])
            #expect(bad.status == 400)
            #expect(bad.text.contains("no 'token' column"))
            let xml = try await f.call("POST", "/v1/applications/GCM:droid/endpoints:import", "<x/>", headers: ["Content-Type": "text/xml"])
            #expect(xml.status == 415)
            #expect(try await f.error("POST", "/v1/applications/GCM:nope/endpoints:import", "{}").status == 404)
        }
    }

    @Test("export is NDJSON in creation order that imports back: unchanged into the same application, created into another")
    func exportRoundTrip() async throws {
        try await NativeAPIFixture.with { f in
            _ = try await f.json("POST", "/v1/applications", #"{"name":"a","platform":"GCM","credential":"k"}"#, expect: 201)
            _ = try await f.json("POST", "/v1/applications", #"{"name":"b","platform":"GCM","credential":"k"}"#, expect: 201)
            var lines: [String] = []
            for i in 0..<2500 {
                lines.append(#"{"token":"t-\#(i)","user_id":"u\#(i % 7)","custom_user_data":"back\\slash \"\#(i)\" \u00e9","attributes":{"Language":"en"}}"#)
            }
            lines.append(#"{"token":"off","enabled":false}"#)
            let first = try await upload(f, "/v1/applications/GCM:a/endpoints:import", lines.joined(separator: "\n") + "\n")
            #expect(counts(first.json) == [2501, 0, 0, 0], "\(first.json)")
            let export = try await f.call("GET", "/v1/applications/GCM:a/endpoints:export")
            #expect(export.status == 200)
            #expect(export.headers["content-type"] == "application/x-ndjson")
            #expect(export.headers["transfer-encoding"] == "chunked")
            let exported = export.text.split(separator: "\n")
            #expect(exported.count == 2501)
            let row = try #require(try JSONSerialization.jsonObject(with: Data(exported[0].utf8)) as? [String: Any])
            #expect(row["token"] as? String == "t-0")
            #expect(row["custom_user_data"] as? String == "back\\slash \"0\" é")
            #expect((row["attributes"] as? [String: String]) == ["Language": "en"])
            let same = try await upload(f, "/v1/applications/GCM:a/endpoints:import", export.text)
            #expect(counts(same.json) == [0, 2501, 0, 0], "\(same.json)")
            let moved = try await upload(f, "/v1/applications/GCM:b/endpoints:import", export.text)
            #expect(counts(moved.json) == [2501, 0, 0, 0], "\(moved.json)")
            let again = try await f.call("GET", "/v1/applications/GCM:b/endpoints:export")
            // The same documents but for ids and creation times.
            func strip(_ text: String) -> [String] {
                text.split(separator: "\n").map { line in
                    var object = (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]) ?? [:]
                    object["id"] = nil
                    object["created_at"] = nil
                    return String(decoding: (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data(), as: UTF8.self)
                }
            }
            #expect(strip(again.text) == strip(export.text))
        }
    }

    @Test("an upload cut off mid-body applies nothing; the same lines sent whole are all created")
    func interruptedUpload() async throws {
        try await NativeAPIFixture.with { f in
            _ = try await f.json("POST", "/v1/applications", #"{"name":"cut","platform":"GCM","credential":"k"}"#, expect: 201)
            var body = ""
            for i in 0..<50_000 { body += #"{"token":"cut-\#(i)"}"# + "\n" }
            let port = String(f.base.split(separator: ":").last!)
            let script = """
            import socket, sys, time
            body = sys.stdin.buffer.read()
            s = socket.create_connection(('127.0.0.1', int(sys.argv[1])))
            head = ('POST /v1/applications/GCM:cut/endpoints:import HTTP/1.1\\r\\nHost: a\\r\\nAuthorization: Bearer %s\\r\\n'
                    'Content-Type: application/x-ndjson\\r\\nContent-Length: %d\\r\\n\\r\\n' % (sys.argv[2], len(body) + 1000))
            s.sendall(head.encode() + body)
            time.sleep(1.0)
            s.close()
            """
            _ = try await run("/usr/bin/env", ["python3", "-c", script, port, f.key], stdin: Array(body.utf8))
            let app = try await f.context.applications.get(
                accountKey: try await f.context.accounts.account(accountID: NativeAPIFixture.accountID).key, region: "us-east-1", platform: "GCM", name: "cut")
            // The handler's transaction rolls back once the stream fails; the pool then has the connection back.
            try await Task.sleep(for: .seconds(2))
            let page = try await f.context.endpoints.list(applicationKey: app.key, limit: 10)
            #expect(page.items.isEmpty)
            let whole = try await upload(f, "/v1/applications/GCM:cut/endpoints:import", body)
            #expect(counts(whole.json) == [50_000, 0, 0, 0])
        }
    }

    @Test("subscriptions import by endpoint id, ARN or token: new ones created, already subscribed or repeated unchanged, unknown refused")
    func subscriptions() async throws {
        try await NativeAPIFixture.with { f in
            _ = try await f.json("POST", "/v1/applications", #"{"name":"s","platform":"GCM","credential":"k"}"#, expect: 201)
            _ = try await f.json("POST", "/v1/topics", #"{"name":"news"}"#, expect: 201)
            var ids: [String] = []
            var arns: [String] = []
            for i in 0..<4 {
                let e = try await f.json("POST", "/v1/applications/GCM:s/endpoints", #"{"token":"sub-\#(i)"}"#, expect: 201)
                ids.append(e["id"] as! String)
                arns.append(e["arn"] as! String)
            }
            _ = try await f.json("POST", "/v1/topics/news/subscriptions", #"{"endpoint":"\#(ids[0])"}"#, expect: 201)
            let plain = [ids[0], ids[1], arns[2], ids[1], "0190d1f0-0000-7000-8000-000000000000", "junk"].joined(separator: "\n")
            let (status, json) = try await upload(f, "/v1/topics/news/subscriptions:import", plain, contentType: "text/plain")
            #expect(status == 200)
            #expect(counts(json) == [2, 2, 0, 2], "\(json)")
            #expect(refusals(json).map(\.0) == [5, 6])
            let tokens = try await upload(f, "/v1/topics/news/subscriptions:import?application=GCM:s",
                                          [#"{"token":"sub-3"}"#, #"{"token":"sub-0"}"#, #"{"token":"missing"}"#, #"{"endpoint":"\#(ids[3])"}"#].joined(separator: "\n"))
            #expect(counts(tokens.json) == [1, 2, 0, 1], "\(tokens.json)")
            let page = try await f.json("GET", "/v1/topics/news/subscriptions", expect: 200)
            #expect((page["items"] as? [Any])?.count == 4)
            let noApp = try await upload(f, "/v1/topics/news/subscriptions:import", #"{"token":"sub-0"}"#)
            #expect(counts(noApp.json) == [0, 0, 0, 1])
        }
    }

    @Test("line splitter: lines across chunk boundaries, CRLF, a last line without newline, an overlong line refused alone")
    func splitter() {
        var splitter = ImportLineSplitter()
        var seen: [(Int, String?)] = []
        let record: (Int, ArraySlice<UInt8>?) -> Void = { seen.append(($0, $1.map { String(decoding: $0, as: UTF8.self) })) }
        splitter.feed(Array("ab\r\ncd".utf8), record)
        splitter.feed(Array("ef\n".utf8), record)
        splitter.feed(Array(repeating: 0x78, count: ImportLineSplitter.maxLineBytes), record)
        splitter.feed(Array("x\nlast".utf8), record)
        splitter.finish(record)
        #expect(seen.map(\.0) == [1, 2, 3, 4])
        #expect(seen.map(\.1) == ["ab", "cdef", nil, "last"])
    }
}
