import Foundation
import Testing
@testable import ClarionAPI
@testable import ClarionHTTP1

/// Not a test: the server the load-test script (loadtest/api/bench.sh) drives with wrk. Runs only when the
/// script sets CLARION_API_BENCH_PORT_FILE; writes the port there and serves until the stop file appears.
@Suite("API server benchmark target")
struct BenchmarkServer {
    static let environment = ProcessInfo.processInfo.environment

    @Test("serve for wrk", .enabled(if: environment["CLARION_API_BENCH_PORT_FILE"] != nil))
    func serve() async throws {
        let portFile = try #require(Self.environment["CLARION_API_BENCH_PORT_FILE"])
        let stopFile = portFile + ".stop"
        var actions = SNSActionTable()
        actions.register("Publish", maxPayloadBytes: SNSActionTable.publishPayloadLimit) { request throws(SNSError) in
            _ = try request.parameters.required("Message")
            _ = try request.parameters.messageAttributes()
            return XMLResponse { $0.element("MessageId", request.requestID) }
        }
        var router = Router.api()
        SNSQueryService(region: "us-east-1", actions: actions, authentication: .disabled(accountID: "123456789012"))
            .register(on: &router)
        router.add(.post, "/v1/echo", .asynchronous { request in .json(request.body) })
        router.add(.post, "/v1/echo-suspending", .suspending { request, responder in responder.respond(.json(request.body)) })
        let threads = Int(Self.environment["CLARION_API_BENCH_THREADS"] ?? "2") ?? 2
        let server = HTTPServer(configuration: HTTPServerConfiguration(port: 0, threadPoolSize: threads,
                                                                       connectionLimit: 10_000), router: router)
        try server.start()
        try "\(server.port)".write(toFile: portFile, atomically: true, encoding: .utf8)
        while !FileManager.default.fileExists(atPath: stopFile) {
            try await Task.sleep(for: .milliseconds(100))
        }
        await server.shutdown()
    }
}
