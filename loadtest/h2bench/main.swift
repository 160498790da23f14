// The benchmark driver for loadtest/h2bench/run.sh: the h2bench product of the loadtest package
// (loadtest/Package.swift, which depends on the main package by path).
//
//   h2bench gencert --out DIR                      writes DIR/cert.pem and DIR/key.pem (self-signed, 127.0.0.1)
//   h2bench serve --port P [--tls DIR] [--max-streams N] [--threads T]
//                                                  HTTP2Server answering every request 200 with a static body
//   h2bench apns-setup --out DIR                   a P-256 APNs key: DIR/emulator.json (the emulator's configuration
//                                                  with its public half), DIR/authorization (a provider-token header)
//   h2bench emulator --config FILE --port P [--tls DIR]
//                                                  the provider emulator (ClarionEmulator) as `clarion emulator` runs it
//   h2bench load --url URL --connections C --streams M --requests N [--body-bytes B] [--ca FILE]
//                [--header "name: value"]... [--full-responses]
//                                                  our client: C connections, M streams each, closed loop, batch path;
//                                                  keeps only each response's status, like h2load, unless
//                                                  --full-responses (header fields and body kept, as providers do)
import ClarionCrypto
import ClarionEmulator
import ClarionHTTP2
import ClarionTransport
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

func argument(_ name: String, _ arguments: [String]) -> String? {
    guard let i = arguments.firstIndex(of: name), i + 1 < arguments.count else { return nil }
    return arguments[i + 1]
}

/// Every value of a repeatable option.
func allValues(_ name: String, _ arguments: [String]) -> [String] {
    var values: [String] = []
    var i = 0
    while i + 1 < arguments.count {
        if arguments[i] == name {
            values.append(arguments[i + 1])
            i += 2
        } else {
            i += 1
        }
    }
    return values
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
    /// Count per status 0...599 (an array, like h2load's: no hashing per response).
    private(set) var statusCounts = [Int](repeating: 0, count: 600)
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
            case .success(let response): statusCounts[min(max(response.status, 0), 599)] += 1
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

case "apns-setup":
    // One key, team and bundle id; the token is signed now and stays valid for the emulator's hour (A.5).
    guard let out = argument("--out", arguments) else { fail("apns-setup --out DIR") }
    let key = SigningKey.generateP256()
    let keyID = "BENCHKEY01"
    let teamID = "BENCHTEAM1"
    var configuration = EmulatorConfiguration()
    configuration.apns.keys = [.init(keyID: keyID, teamID: teamID, publicKeyPEM: key.verifyingKey.pem)]
    configuration.apns.teams = [.init(teamID: teamID, bundleIDs: ["com.example.bench"])]
    // APNs allows one stream until a connection has shown a valid token (A.7). h2load sends its whole first window
    // before it reads the server's SETTINGS and counts the streams refused above 1 as errors (it does not retry
    // them, our client does): the benchmark measures the steady send path, so the limit is 1000 from the start.
    configuration.apns.maxConcurrentStreamsBeforeToken = 1000
    let jwt = try JWT.sign(header: ["kid": .string(keyID)],
                           claims: ["iss": .string(teamID), "iat": .number(Date().timeIntervalSince1970.rounded(.down))],
                           key: key)
    try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
    try configuration.jsonData().write(to: URL(fileURLWithPath: out + "/emulator.json"))
    try "authorization: bearer \(jwt)".write(toFile: out + "/authorization", atomically: true, encoding: .utf8)

case "emulator":
    guard let path = argument("--config", arguments) else { fail("emulator --config FILE --port P [--tls DIR]") }
    var configuration = try EmulatorConfiguration.load(path: path)
    configuration.host = "127.0.0.1"
    configuration.port = Int(argument("--port", arguments) ?? "0") ?? 0
    if let dir = argument("--tls", arguments) {
        configuration.tls.enabled = true
        configuration.tls.certificatePath = dir + "/cert.pem"
        configuration.tls.privateKeyPath = dir + "/key.pem"
    }
    let handle = try runEmulator(configuration: configuration)
    print("listening \(handle.port)")
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
    var headers = [("content-type", "application/json")]
    for field in allValues("--header", arguments) {
        guard let colon = field.firstIndex(of: ":") else { fail("--header \"name: value\"") }
        headers.append((field[..<colon].lowercased(), field[field.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
    }
    let parts: HTTP2Request.ResponseParts = arguments.contains("--full-responses") ? .all : .statusOnly
    let request = HTTP2Request(method: "POST", path: path, headers: headers, body: json, responseParts: parts)
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
    let codes = sink.statusCounts.indices.filter { sink.statusCounts[$0] > 0 }
        .map { "\($0):\(sink.statusCounts[$0])" }.joined(separator: ",")
    print(String(format: "reqs=%d failed=%d seconds=%.3f rps=%.0f client_cpu_us_per_req=%.2f statuses=%@",
                 requests, sink.failures, seconds, Double(requests) / seconds, cpu * 1e6 / Double(requests), codes))
    if let error = sink.firstError { print("first error: \(error)") }
    fflush(nil)
    exit(sink.failures == 0 ? 0 : 1)

default:
    fail("usage: h2bench gencert|serve|load ...")
}
