import ClarionCore
import Foundation
import Testing
@testable import ClarionAPI
@testable import ClarionHTTP1

/// Hostile JSON at the API edge (issue "Hardening", findings 1 and 12a): every route family turns the parser's
/// refusals (text that is not UTF-8, unpaired surrogate escapes, the JSON limits) into a 400 in its own format, and
/// a large body is parsed off the event-loop thread.
@Suite("Hostile JSON at the API edge")
struct HostileJSONTests {
    func request(_ body: [UInt8]) -> HTTPRequest {
        HTTPRequest(method: .post, rawPath: "/x", headers: ["Content-Type": "application/json"], body: body, requestID: "r")
    }

    static func keys(_ count: Int) -> [UInt8] {
        var out = "{"
        for i in 0..<count { out += (i == 0 ? "" : ",") + "\"k\(i)\":\(i)" }
        return Array((out + "}").utf8)
    }

    struct Refusal: Sendable, CustomTestStringConvertible {
        let label: String
        let body: [UInt8]
        let message: String
        var testDescription: String { label }
    }

    static let refusals: [Refusal] = [
        Refusal(label: "a byte that is not UTF-8", body: [0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xFF, 0x22, 0x7D],
                message: "The request body is not valid JSON: not valid UTF-8 at byte 6."),
        Refusal(label: "a surrogate encoded in UTF-8", body: Array(#"{"a":""#.utf8) + [0xED, 0xA0, 0x80] + Array(#""}"#.utf8),
                message: "The request body is not valid JSON: not valid UTF-8 at byte 6."),
        Refusal(label: "an overlong encoding", body: Array(#"{"a":""#.utf8) + [0xC0, 0xAF] + Array(#""}"#.utf8),
                message: "The request body is not valid JSON: not valid UTF-8 at byte 6."),
        Refusal(label: "a lone high surrogate escape", body: Array(#"{"a":"x\ud800"}"#.utf8),
                message: "The request body is not valid JSON: a \\u escape of an unpaired UTF-16 surrogate at byte 7."),
        Refusal(label: "a lone low surrogate escape", body: Array(#"{"a":"\udc00x"}"#.utf8),
                message: "The request body is not valid JSON: a \\u escape of an unpaired UTF-16 surrogate at byte 6."),
        Refusal(label: "10,001 members", body: keys(10_001),
                message: "The request body is over a JSON limit: an object with more than 10000 members at byte \(keys(10_001).count - 15)."),
        Refusal(label: "100,001 values", body: Array(("{\"a\":[" + Array(repeating: "0", count: 99_999).joined(separator: ",") + "]}").utf8),
                message: "The request body is over a JSON limit: more than 100000 values in one document at byte 200002."),
        Refusal(label: "257 levels", body: Array((String(repeating: "[", count: 257) + String(repeating: "]", count: 257)).utf8),
                message: "The request body is over a JSON limit: arrays and objects nested more than 256 deep at byte 256."),
    ]

    /// Runs `work` on a thread of its own. A body at the real JSON limits takes about a second to parse in a debug
    /// build; on the cooperative pool (two threads on this machine) that would stall the servers of the tests
    /// running beside this one.
    static func onOwnThread<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in Thread { continuation.resume(returning: work()) }.start() }
    }

    @Test("native and registration bodies: each refusal is 400 invalid_json saying what and where", arguments: refusals)
    func nativeAndRegistrationWording(_ c: Refusal) async {
        for native in [true, false] {
            let request = request(c.body)
            let refusal: JSONAPIError? = await Self.onOwnThread {
                do throws(JSONAPIError) {
                    if native { _ = try NativeFields.body(request) } else { _ = try RegistrationFields.document(request) }
                    return nil
                } catch {
                    return error
                }
            }
            guard let error = refusal else {
                Issue.record("accepted")
                continue
            }
            #expect(error.status == 400)
            #expect(error.code == "invalid_json")
            #expect(error.message == c.message)
            #expect(error.field == nil)
        }
    }

    @Test("a repeated key stays invalid_field naming it; a valid surrogate pair is accepted")
    func repeatedKeysAndPairs() throws {
        do {
            _ = try NativeFields.body(request(Array(#"{"a":1,"b":2,"a":3}"#.utf8)))
            Issue.record("accepted")
        } catch {
            #expect(error == .invalidField("a", "The field 'a' appears more than once."))
        }
        let fields = try NativeFields.body(request(Array(#"{"a":"\ud83d\ude00 \u00e9"}"#.utf8)))
        #expect(fields.object["a"] == "\u{1F600} \u{E9}")
    }

    @Test("the event collector keeps its format: 'validation: request body ...' naming the refusal")
    func eventWording() async {
        let cases: [([UInt8], String)] = [
            ([0x7B, 0x22, 0xC3, 0x22, 0x3A, 0x31, 0x7D], "request body must be valid UTF-8 (byte 2)"),
            (Array(#"{"user_id":"\ud800"}"#.utf8), "request body must not contain an unpaired UTF-16 surrogate escape (byte 12)"),
            (Self.keys(10_001), "request body must have at most 10000 members in an object"),
            (Array((String(repeating: "[", count: 257) + String(repeating: "]", count: 257)).utf8),
             "request body must not nest arrays and objects more than 256 deep"),
            (Array("{".utf8), "request body must be a JSON object"),
            (Array("[]".utf8), "request body must be a JSON object"),
        ]
        for (body, text) in cases {
            let refusal: MobileEventError? = await Self.onOwnThread {
                do throws(MobileEventError) {
                    _ = try MobileEvent.parse(body)
                    return nil
                } catch {
                    return error
                }
            }
            #expect(refusal == MobileEventError(text: text))
        }
    }

    @Test("finding 8: the escape \\u0000 in a registration or event string is refused by name, not cut short by libpq")
    func nulEscapesAreRefused() throws {
        let event = Array(#"{"user_id":"victim\u0000x","event_type":"x"}"#.utf8)
        #expect(throws: MobileEventError(text: "user_id must be a string without U+0000", field: "user_id")) { try MobileEvent.parse(event) }

        let object = try #require(try JSONValue.parse(#"{"token":"tok\u0000other","list":["a\u0000"]}"#).objectValue)
        let fields = RegistrationFields(object, path: "device")
        do {
            _ = try fields.string("token")
            Issue.record("a token with U+0000 was accepted")
        } catch {
            #expect(error.message.contains("'device.token' must not contain the character U+0000"), "\(error.message)")
        }
        #expect(throws: JSONAPIError.self) { try AudiencePublish.list(fields, "list") }
        #expect(try fields.string("missing") == nil)
    }

    // MARK: off the loop thread

    static func threadResponse() -> HTTPResponse { .json(Array(String(UInt(pthread_self())).utf8)) }

    @Test("a body over loopThreadBodyLimit starts its handler off the loop thread; one at the limit starts on it")
    func largeBodiesLeaveTheLoop() async throws {
        var router = Router.api(defaultMaxBodyBytes: 1 << 20)
        router.add(.get, "/loop", .synchronous { _ in Self.threadResponse() })
        router.add(.post, "/task", .task { _ in Self.threadResponse() })
        router.add(.post, "/json", .json { _ throws(JSONAPIError) in Self.threadResponse() })
        router.add(.post, "/suspending", .suspending { request, responder in
            RouteHandler.startTask(for: request) { responder.respond(Self.threadResponse()) }
        })
        router.post("/post") { _ in Self.threadResponse() }
        try await withServer(router, configure: { $0.threadPoolSize = 1 }) { server in
            let base = "http://127.0.0.1:\(server.port)"
            let loop = try await curl(base + "/loop").text
            let limit = RouteHandler.loopThreadBodyLimit
            for path in ["/task", "/json", "/suspending", "/post"] {
                let small = try await curl(base + path, method: "POST", body: Array(repeating: 0x20, count: limit))
                #expect(small.status == 200)
                #expect(small.text == loop, "\(path): a small body starts on the loop thread (no hop)")
                let large = try await curl(base + path, method: "POST", body: Array(repeating: 0x20, count: limit + 1))
                #expect(large.status == 200)
                #expect(!large.text.isEmpty && large.text != loop, "\(path): a large body starts off the loop thread")
            }
        }
    }

    // MARK: over real sockets, each family in its format

    @Test("the finding over sockets: a 40,000-key registration is 400 at once, and /health is answered meanwhile")
    func fortyThousandKeyRegistration() async throws {
        try await RegistrationFixture.with { f in
            let body = Self.keys(40_000)
            #expect(body.count > 400_000)
            let started = ContinuousClock.now
            async let refused = curl(f.devices, method: "POST", headers: ["Content-Type": "application/json"], body: body)
            async let health = curl(f.base + "/health")
            let (answer, alive) = try await (refused, health)
            // A hang guard, not a benchmark: before the fix this request took 12 s of CPU in a release build.
            #expect(ContinuousClock.now - started < .seconds(10))
            #expect(alive.status == 200)
            #expect(answer.status == 400)
            let error = try #require((try JSONSerialization.jsonObject(with: Data(answer.body)) as? [String: Any])?["error"] as? [String: Any])
            #expect(error["code"] as? String == "invalid_json")
            #expect((error["message"] as? String)?.hasPrefix("The request body is over a JSON limit: an object with more than 10000 members") == true)
            #expect(try await f.count("SELECT count(*) FROM registration_requests") == 0)
        }
    }

    @Test("registration over sockets: bytes that are not UTF-8 and lone surrogates are 400 invalid_json; a surrogate pair registers")
    func registrationUTF8() async throws {
        try await RegistrationFixture.with { f in
            let item = Array(f.item(user: "u", fcm: "token-1").utf8)
            let user = Array(#""UserId":"u""#.utf8)
            let at = try #require(item.indices.first { Array(item[$0..<min($0 + user.count, item.count)]) == user })
            func withUser(_ raw: [UInt8]) -> [UInt8] {
                Array(item[..<at]) + Array(#""UserId":""#.utf8) + raw + [0x22] + Array(item[(at + user.count)...])
            }
            for raw in [[0xED, 0xA0, 0x80], [0xE0, 0x80, 0xAF], [0xF0, 0x9F, 0x98], Array(#"\ud800"#.utf8), Array(#"\udfff"#.utf8)] as [[UInt8]] {
                let result = try await curl(f.devices, method: "POST", headers: ["Content-Type": "application/json"], body: withUser(raw))
                #expect(result.status == 400, "\(raw): \(result.text)")
                #expect(result.text.contains(#""code":"invalid_json""#), "\(raw): \(result.text)")
            }
            #expect(try await f.count("SELECT count(*) FROM registration_requests") == 0)
            let pair = try await curl(f.devices, method: "POST", headers: ["Content-Type": "application/json"],
                                      body: withUser(Array(#"\ud83d\ude00"#.utf8)))
            #expect(pair.status == 202, "\(pair.text)")
            #expect(try await f.count("SELECT count(*) FROM registration_requests WHERE request->>'userId' = $1", ["\u{1F600}"]) == 1)
        }
    }

    @Test("a callback header map whose bytes were not UTF-8 is refused, naming the header")
    func callbackHeadersUTF8() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("clarion-hdr-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let headerFile = directory.appendingPathComponent("headers")
        let line = Array("x-ms-callback-url-headers: {\"X-Tag\":\"".utf8) + [0xFF] + Array("\"}\r\n".utf8)
        try Data(line).write(to: headerFile)
        try await RegistrationFixture.with { f in
            let result = try await curl(f.devices, method: "POST",
                                        headers: ["Content-Type": "application/json", "x-ms-callback-url": "https://example.com/hook"],
                                        body: Array(f.item(user: "u", fcm: "token-1").utf8), extra: ["-H", "@\(headerFile.path)"])
            #expect(result.status == 400, "\(result.text)")
            #expect(result.text.contains(#""field":"x-ms-callback-url-headers""#), "\(result.text)")
        }
    }

    @Test("the event collector over sockets answers in its own format")
    func eventsOverSockets() async throws {
        try await RegistrationFixture.with { f in
            let body = Array(#"{"user_id":""#.utf8) + [0xF4, 0x90, 0x80, 0x80] + Array(#""}"#.utf8)
            let result = try await curl(f.base + "/meiro_mobile", method: "POST", headers: ["Content-Type": "application/json"], body: body)
            #expect(result.status == 400)
            #expect(result.text == #"{"message":"validation: request body must be valid UTF-8 (byte 12)","status":"error"}"#)
            let lone = try await curl(f.base + "/v1/events", method: "POST", headers: ["Content-Type": "application/json"],
                                      body: Array(#"{"user_id":"\udc00"}"#.utf8))
            #expect(lone.text == #"{"message":"validation: request body must not contain an unpaired UTF-16 surrogate escape (byte 12)","status":"error"}"#)
        }
    }

    @Test("native publish over sockets: refusals are the JSON error envelope with invalid_json, stored nothing")
    func nativeOverSockets() async throws {
        try await NativeAPIFixture.with { f in
            let target = #"{"targets":[{"topic":"t"}],"message":""#
            let bodies: [[UInt8]] = [
                Array(target.utf8) + [0xED, 0xBF, 0xBF] + Array(#""}"#.utf8),
                Array((target + #"\udbff"}"#).utf8),
                Array(#"{"targets":[{"topic":"t"}],"message":"m","attributes":"#.utf8) + Self.keys(10_001) + Array("}".utf8),
            ]
            for body in bodies {
                let result = try await curl(f.base + "/v1/publish", method: "POST",
                                            headers: ["Authorization": "Bearer \(f.key)", "Content-Type": "application/json"], body: body)
                #expect(result.status == 400, "\(result.text)")
                #expect(result.text.contains(#""code":"invalid_json""#), "\(result.text)")
                #expect(result.text.contains(#""field":null"#), "\(result.text)")
            }
        }
    }
}
