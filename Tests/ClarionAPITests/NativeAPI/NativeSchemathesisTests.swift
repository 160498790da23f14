import Foundation
import Testing
@testable import ClarionAPI

/// Property-based run of schemathesis against the served OpenAPI document: no 5xx, statuses, content types and
/// response bodies as documented. Opt-in (it needs schemathesis from PyPI):
///
///     python3 -m venv /tmp/st && /tmp/st/bin/pip install schemathesis
///     CLARION_SCHEMATHESIS=/tmp/st/bin/st swift test --filter NativeSchemathesis
@Suite("Native API against its OpenAPI document (schemathesis)")
struct NativeSchemathesisTests {
    static let executable = ProcessInfo.processInfo.environment["CLARION_SCHEMATHESIS"] ?? ""

    @Test("a short schemathesis run finds no server error and no response outside the document",
          .enabled(if: !executable.isEmpty, "set CLARION_SCHEMATHESIS to the st executable"))
    func schemathesis() async throws {
        try await NativeAPIFixture.with { f in
            // Some resources so that GETs by id can hit something.
            _ = try await f.json("POST", "/v1/applications", #"{"name":"chat","platform":"GCM","credential":"c"}"#, expect: 201)
            _ = try await f.json("POST", "/v1/applications/GCM:chat/endpoints", #"{"token":"t1","user_id":"u"}"#, expect: 201)
            _ = try await f.json("POST", "/v1/topics", #"{"name":"news"}"#, expect: 201)
            let seconds = ProcessInfo.processInfo.environment["CLARION_SCHEMATHESIS_SECONDS"] ?? "60"
            let result = try await run(Self.executable, [
                "run", f.base + "/v1/openapi.json", "--url", f.base, "-H", "Authorization: Bearer \(f.key)",
                "--checks", "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance",
                "--max-time", seconds, "--workers", "1", "--seed", "1", "--no-color",
            ], environment: ["SCHEMATHESIS_HOOKS": "", "NO_COLOR": "1"])
            let output = String(decoding: result.stdout, as: UTF8.self)
            #expect(result.status == 0, "schemathesis failed:\n\(output.suffix(6000))\n\(result.stderr.suffix(2000))")
        }
    }
}
