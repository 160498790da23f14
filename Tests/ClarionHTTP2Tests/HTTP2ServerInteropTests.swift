import ClarionHTTP2
import ClarionTransport
import Foundation
import Testing

/// The server against independent clients (nghttp2's h2load), so a bug shared by our client and server cannot hide.
@Suite struct HTTP2ServerInteropTests {
    static let h2load = "/usr/bin/h2load"

    @Test(.enabled(if: FileManager.default.fileExists(atPath: h2load)))
    func h2loadCompletesEveryRequestOverH2C() async throws {
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        let ok = HTTP2ServerResponse(status: 200, headers: [("content-type", "application/json")], body: Array("{}".utf8))
        let server = try HTTP2Server(configuration: .init(), group: group) { _, _ in .respond(ok) }
        let port = try server.start()
        let output = try await runH2load(["-n", "2000", "-c", "2", "-m", "50", "http://127.0.0.1:\(port)/"])
        #expect(output.contains("2000 succeeded"), "\(output)")
        await server.shutdown()
    }

    @Test(.enabled(if: FileManager.default.fileExists(atPath: h2load)))
    func h2loadCompletesEveryRequestOverTLS() async throws {
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        let certificate = try SelfSignedCertificate.generate()
        let server = try HTTP2Server(configuration: .init(tls: certificate.identity), group: group) { request, _ in
            .respond(status: 200, body: request.body)
        }
        let port = try server.start()
        let body = FileManager.default.temporaryDirectory.appendingPathComponent("h2-body-\(port).json")
        try Data(repeating: UInt8(ascii: "x"), count: 200).write(to: body)
        defer { try? FileManager.default.removeItem(at: body) }
        let output = try await runH2load(["-n", "1000", "-c", "2", "-m", "20", "-d", body.path, "https://127.0.0.1:\(port)/"])
        #expect(output.contains("1000 succeeded"), "\(output)")
        #expect(output.contains("h2"), "\(output)")
        await server.shutdown()
    }

    /// Runs h2load on a thread of its own and waits without holding a cooperative thread: waiting for the process
    /// and its output blocks, and on a 2-core machine two blocked cooperative threads stall every other test in
    /// the process (their continuations cannot resume), which is what made timing-sensitive tests fail.
    private func runH2load(_ arguments: [String]) async throws -> String {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<String, any Error>) in
            Thread.detachNewThread {
                continuation.resume(with: Result { try Self.runH2loadBlocking(arguments) })
            }
        }
    }

    private static func runH2loadBlocking(_ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: h2load)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }
}
