import ClarionStore
import Foundation
import Testing
@testable import ClarionAPI

/// Native publish under load with wrk (keep-alive, concurrent connections): every 202 is a stored row, and the
/// rate is printed. Opt-in because it loads the shared cores: `CLARION_NATIVE_LOAD_SECONDS=10`.
@Suite("Native publish under load (wrk)")
struct NativePublishLoadTests {
    static let seconds = ProcessInfo.processInfo.environment["CLARION_NATIVE_LOAD_SECONDS"] ?? ""

    @Test("concurrent publishes to an endpoint ARN: no errors, every acknowledged message stored",
          .enabled(if: !seconds.isEmpty && FileManager.default.isExecutableFile(atPath: "/usr/bin/wrk"),
                   "set CLARION_NATIVE_LOAD_SECONDS (wrk must be installed)"))
    func publishUnderLoad() async throws {
        try await NativeAPIFixture.with { f in
            _ = try await f.json("POST", "/v1/applications", #"{"name":"chat","platform":"GCM","credential":"c"}"#, expect: 201)
            let endpoint = try await f.json("POST", "/v1/applications/GCM:chat/endpoints", #"{"token":"load-1"}"#, expect: 201)
            let arn = try #require(endpoint["arn"] as? String)
            let script = FileManager.default.temporaryDirectory.appendingPathComponent("native-publish-\(UUID().uuidString).lua")
            defer { try? FileManager.default.removeItem(at: script) }
            try """
                wrk.method = "POST"
                wrk.headers["Content-Type"] = "application/json"
                wrk.headers["Authorization"] = "Bearer \(f.key)"
                wrk.body = '{"targets":[{"endpoint":"\(arn)"}],"message":{"default":"hi","GCM":{"data":{"k":"v"}}}}'
                """.write(to: script, atomically: true, encoding: .utf8)
            let result = try await run("/usr/bin/wrk", ["-t2", "-c64", "-d\(Self.seconds)s", "-s", script.path, f.base + "/v1/publish"])
            let output = String(decoding: result.stdout, as: UTF8.self)
            print(output)
            #expect(result.status == 0, "\(result.stderr)")
            #expect(!output.contains("Non-2xx"), "\(output)")
            let requests = output.split(separator: "\n").first { $0.contains("requests in") }
                .flatMap { Int($0.trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "") } ?? 0
            #expect(requests > 0)
            let rows = try await f.pool.withConnection { c throws(StoreError) in
                try c.query("SELECT count(*) FROM messages").first?.int(0) ?? -1
            }
            // wrk counts answered requests; a request in flight when wrk stopped may be stored without being counted.
            #expect(rows >= requests, "\(rows) rows for \(requests) acknowledged publishes")
        }
    }
}
