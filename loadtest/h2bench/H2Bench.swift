// The benchmark driver for loadtest/h2bench/run.sh. Not part of the package: run.sh compiles it (release) in a
// generated package that links ClarionHTTP2 from Sources/.
//
//   h2bench gencert --out DIR                      writes DIR/cert.pem and DIR/key.pem (self-signed, 127.0.0.1)
//   h2bench serve --port P [--tls DIR] [--max-streams N] [--threads T]
//                                                  HTTP2Server answering every request 200 with a static body
//   h2bench load --url URL --connections C --streams M --requests N [--body-bytes B] [--ca FILE]
//                                                  our client: C connections, M streams each, closed loop, batch path
import ClarionHTTP2
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

func argument(_ name: String, _ arguments: [String]) -> String? {
    guard let i = arguments.firstIndex(of: name), i + 1 < arguments.count else { return nil }
    return arguments[i + 1]
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data((message + "\n").utf8))
    exit(2)
}

func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
        + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
}

/// Keeps `window` requests in flight: every completion batch is answered by submitting as many new requests.
final class ClosedLoopSink: HTTP2CompletionSink, @unchecked Sendable {
    // Touched only on the pool's loop thread (receive) after the first submit.
    private let pool: HTTP2ClientPool
    private let template: [HTTP2Request]
    private let total: Int
    private var submitted = 0
    private var completed = 0
    private(set) var failures = 0
    private(set) var firstError: HTTP2Error?
    private(set) var statusCounts: [Int: Int] = [:]
    let done = DispatchSemaphore(value: 0)

    init(pool: HTTP2ClientPool, template: [HTTP2Request], total: Int) {
        self.pool = pool
        self.template = template
        self.total = total
    }

    func start() {
        pool.eventLoop.execute { self.submitMore(self.template.count) }
    }

    private func submitMore(_ count: Int) {
        let n = min(count, total - submitted, template.count)
        guard n > 0 else { return }
        submitted += pool.submit(n == template.count ? template : Array(template[0..<n]), sink: self)
    }

    func receive(_ completions: [HTTP2Completion]) {
        for completion in completions {
            switch completion.result {
            case .success(let response): statusCounts[response.status, default: 0] += 1
            case .failure(let error):
                failures += 1
                if firstError == nil { firstError = error }
            }
        }
        completed += completions.count
        if completed >= total {
            done.signal()
        } else {
            submitMore(completions.count)
        }
    }
}

let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "gencert":
    guard let out = argument("--out", arguments) else { fail("gencert --out DIR") }
    let certificate = try SelfSignedCertificate.generate()
    try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
    try certificate.certificatePEM.write(toFile: out + "/cert.pem", atomically: true, encoding: .utf8)
    try certificate.privateKeyPEM.write(toFile: out + "/key.pem", atomically: true, encoding: .utf8)

case "serve":
    let port = Int(argument("--port", arguments) ?? "0") ?? 0
    let maxStreams = UInt32(argument("--max-streams", arguments) ?? "1000") ?? 1000
    let threads = Int(argument("--threads", arguments) ?? "1") ?? 1
    var tls: TLSIdentity?
    if let dir = argument("--tls", arguments) {
        tls = TLSIdentity(certificateChainPEM: try String(contentsOfFile: dir + "/cert.pem", encoding: .utf8),
                          privateKeyPEM: try String(contentsOfFile: dir + "/key.pem", encoding: .utf8))
    }
    let group = try EventLoopGroup(threadCount: threads)
    let response = HTTP2ServerResponse(status: 200, headers: [("content-type", "application/json")],
                                       body: Array("{\"ok\":true}".utf8))
    let server = try HTTP2Server(
        configuration: HTTP2ServerConfiguration(host: "127.0.0.1", port: port, tls: tls, maxConcurrentStreams: maxStreams),
        group: group) { _, _ in .respond(response) }
    let bound = try server.start()
    print("listening \(bound)")
    fflush(nil)
    while true { sleep(3600) }

case "load":
    guard let url = argument("--url", arguments) else { fail("load --url URL") }
    let connections = Int(argument("--connections", arguments) ?? "1") ?? 1
    let streams = Int(argument("--streams", arguments) ?? "100") ?? 100
    let requests = Int(argument("--requests", arguments) ?? "100000") ?? 100_000
    let bodyBytes = Int(argument("--body-bytes", arguments) ?? "200") ?? 200
    let ca = try argument("--ca", arguments).map { try String(contentsOfFile: $0, encoding: .utf8) }
    // "scheme://authority/path" -> origin + path.
    guard let schemeEnd = url.range(of: "://")?.upperBound else { fail("--url needs a scheme") }
    let slash = url[schemeEnd...].firstIndex(of: "/") ?? url.endIndex
    let origin = try HTTP2Origin(String(url[..<slash]))
    let path = slash == url.endIndex ? "/" : String(url[slash...])
    let group = try EventLoopGroup(threadCount: 1)
    let pool = try HTTP2ClientPool(
        configuration: HTTP2PoolConfiguration(
            origin: origin, identity: "bench", connectionCount: connections,
            maxConcurrentStreamsPerConnection: streams, maxQueuedRequests: connections * streams * 2,
            requestTimeout: .seconds(60), trustedCAPEM: ca, pingInterval: nil, idleTimeout: nil),
        group: group)
    // A 200-byte JSON body, like h2load -d with the same file.
    var json = Array("{\"aps\":{\"alert\":\"".utf8)
    json += Array(repeating: UInt8(ascii: "x"), count: max(0, bodyBytes - json.count - 4))
    json += Array("\"}}".utf8)
    json = Array(json.prefix(bodyBytes))
    let request = HTTP2Request(method: "POST", path: path, headers: [("content-type", "application/json")], body: json)
    let sink = ClosedLoopSink(pool: pool, template: Array(repeating: request, count: connections * streams),
                              total: requests)
    let cpuStart = cpuSeconds()
    let clock = ContinuousClock()
    let started = clock.now
    sink.start()
    sink.done.wait()
    let elapsed = clock.now - started
    let cpu = cpuSeconds() - cpuStart
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    let codes = sink.statusCounts.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" }.joined(separator: ",")
    print(String(format: "reqs=%d failed=%d seconds=%.3f rps=%.0f client_cpu_us_per_req=%.2f statuses=%@",
                 requests, sink.failures, seconds, Double(requests) / seconds, cpu * 1e6 / Double(requests), codes))
    if let error = sink.firstError { print("first error: \(error)") }
    fflush(nil)
    exit(sink.failures == 0 ? 0 : 1)

default:
    fail("usage: h2bench gencert|serve|load ...")
}
