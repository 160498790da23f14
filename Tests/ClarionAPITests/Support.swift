import Foundation
import Synchronization
@testable import ClarionAPI
@testable import ClarionHTTP1

/// What an external client saw.
struct ClientResult: Sendable {
    var status: Int
    /// Header names lower-cased; for repeated headers the last value.
    var headers: [String: String]
    var body: [UInt8]
    var text: String { String(decoding: body, as: UTF8.self) }
}

struct ToolError: Error, CustomStringConvertible {
    let description: String
}

/// Runs a command without blocking a cooperative thread; returns exit status, stdout, stderr.
func run(_ executable: String, _ arguments: [String], stdin: [UInt8]? = nil,
         environment: [String: String]? = nil) async throws -> (status: Int32, stdout: [UInt8], stderr: String) {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("clarion-api-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let out = directory.appendingPathComponent("out"), err = directory.appendingPathComponent("err")
    _ = FileManager.default.createFile(atPath: out.path, contents: nil)
    _ = FileManager.default.createFile(atPath: err.path, contents: nil)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if let environment { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
    // Closed here, not left to Foundation: the Process keeps its handles, and each run left its files open (about
    // a thousand descriptors by the end of the suite, inherited by every child the suite started afterwards).
    var handles = [try FileHandle(forWritingTo: out), try FileHandle(forWritingTo: err)]
    defer { for handle in handles { try? handle.close() } }
    process.standardOutput = handles[0]
    process.standardError = handles[1]
    if let stdin {
        let input = directory.appendingPathComponent("in")
        _ = FileManager.default.createFile(atPath: input.path, contents: Data(stdin))
        handles.append(try FileHandle(forReadingFrom: input))
        process.standardInput = handles[2]
    }
    let status: Int32 = try await withCheckedThrowingContinuation { continuation in
        process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
        do { try process.run() } catch {
            process.terminationHandler = nil
            continuation.resume(throwing: error)
        }
    }
    let stdout = (try? Data(contentsOf: out)).map { [UInt8]($0) } ?? []
    let stderr = (try? String(contentsOf: err, encoding: .utf8)) ?? ""
    return (status, stdout, stderr)
}

/// One request with curl: `-D` for headers, the body to a file, the status from `-w`.
func curl(_ url: String, method: String = "GET", headers: [String: String] = [:], body: [UInt8]? = nil,
          extra: [String] = []) async throws -> ClientResult {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("clarion-curl-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let headerFile = directory.appendingPathComponent("h").path, bodyFile = directory.appendingPathComponent("b").path
    var arguments = ["-s", "-S", "--max-time", "30", "-X", method, "-D", headerFile, "-o", bodyFile,
                     "-w", "%{http_code}"]
    for (name, value) in headers { arguments += ["-H", "\(name): \(value)"] }
    if let body {
        let bodyIn = directory.appendingPathComponent("in").path
        _ = FileManager.default.createFile(atPath: bodyIn, contents: Data(body))
        arguments += ["--data-binary", "@\(bodyIn)"]
    }
    arguments += extra
    arguments.append(url)
    let result = try await run("/usr/bin/curl", arguments)
    guard result.status == 0 else { throw ToolError(description: "curl exit \(result.status): \(result.stderr)") }
    var parsed = ClientResult(status: Int(String(decoding: result.stdout, as: UTF8.self)) ?? -1, headers: [:], body: [])
    let headerText = (try? String(contentsOfFile: headerFile, encoding: .utf8)) ?? ""
    for line in headerText.components(separatedBy: "\r\n") {
        guard let colon = line.firstIndex(of: ":") else { continue }
        parsed.headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
    }
    parsed.body = (try? Data(contentsOf: URL(fileURLWithPath: bodyFile))).map { [UInt8]($0) } ?? []
    return parsed
}

func startServer(_ router: Router, configure: (inout HTTPServerConfiguration) -> Void = { _ in }) throws -> HTTPServer {
    var configuration = HTTPServerConfiguration(host: "127.0.0.1", port: 0, threadPoolSize: 2)
    configure(&configuration)
    let server = HTTPServer(configuration: configuration, router: router)
    try server.start()
    return server
}

/// Collects access log entries for assertions.
final class CollectingLog: AccessLogSink {
    private let entries = Mutex<[AccessLogEntry]>([])
    func record(_ entry: AccessLogEntry) { entries.withLock { $0.append(entry) } }
    var all: [AccessLogEntry] { entries.withLock { $0 } }
}

/// Waits (polling) until a condition holds or the timeout passes.
func eventually(timeout: Duration = .seconds(5), _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return condition()
}

/// Starts a server, runs the body, and always shuts the server down before returning.
func withServer<R>(_ router: Router, configure: (inout HTTPServerConfiguration) -> Void = { _ in },
                   _ body: (HTTPServer) async throws -> R) async throws -> R {
    let server = try startServer(router, configure: configure)
    do {
        let result = try await body(server)
        await server.shutdown()
        return result
    } catch {
        await server.shutdown()
        throw error
    }
}
