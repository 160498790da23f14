// The benchmark driver for loadtest/hms/run.sh: Huawei Push Kit deliveries through ProviderClient's batch path, one
// token per request against up to 1000 tokens per request (docs/providers.md E.1), to the provider emulator.
//
//   hmsbench emulator --port P --client-id ID --secret S      the provider emulator (h2c) knowing one HMS client
//   hmsbench load --url URL --client-id ID --secret S --tokens-per-request N --deliveries D [--window W]
//                                                            ProviderClient.submit of D deliveries of one rendered
//                                                            push, at most W in flight; prints deliveries/s
import ClarionCore
import ClarionEmulator
import ClarionProviders
import Foundation
import Synchronization

func argument(_ name: String, _ arguments: [String]) -> String? {
    guard let i = arguments.firstIndex(of: name), i + 1 < arguments.count else { return nil }
    return arguments[i + 1]
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data((message + "\n").utf8))
    exit(2)
}

/// Counts outcomes; signals when `total` arrived.
final class CountingSink: ProviderResultSink {
    private let state = Mutex<(done: Int, accepted: Int, other: [String: Int])>((0, 0, [:]))
    let total: Int
    let finished = DispatchSemaphore(value: 0)
    let inFlight: Atomic<Int> = Atomic(0)

    init(total: Int) { self.total = total }

    func receive(_ results: [ProviderDeliveryResult]) {
        inFlight.subtract(results.count, ordering: .relaxed)
        let complete = state.withLock { state -> Bool in
            for result in results {
                if case .accepted = result.outcome { state.accepted += 1 } else { state.other[result.outcome.label, default: 0] += 1 }
            }
            state.done += results.count
            return state.done >= total
        }
        if complete { finished.signal() }
    }

    var summary: (accepted: Int, other: [String: Int]) { state.withLock { ($0.accepted, $0.other) } }
}

let arguments = Array(CommandLine.arguments.dropFirst())
guard let command = arguments.first else { fail("usage: hmsbench emulator|load ...") }
let clientID = argument("--client-id", arguments) ?? "107000001"
let secret = argument("--secret", arguments) ?? "bench-secret"

switch command {
case "emulator":
    guard let port = argument("--port", arguments).flatMap(Int.init) else { fail("--port P") }
    var configuration = EmulatorConfiguration()
    configuration.host = "127.0.0.1"
    configuration.port = port
    configuration.hms.clients = [.init(clientID: clientID, clientSecret: secret)]
    configuration.hms.accessTokenLifetimeSeconds = 86_400
    let handle = try runEmulator(configuration: configuration)
    print("listening \(handle.port)")
    fflush(nil)
    while true { sleep(3600) }

case "load":
    guard let url = argument("--url", arguments),
          let perRequest = argument("--tokens-per-request", arguments).flatMap(Int.init),
          let deliveries = argument("--deliveries", arguments).flatMap(Int.init) else {
        fail("load --url URL --tokens-per-request N --deliveries D [--window W]")
    }
    let window = argument("--window", arguments).flatMap(Int.init) ?? 20_000
    var options = ProviderOptions(connectionsPerPool: 1, requestTimeout: .seconds(60), pingInterval: nil)
    options.hmsTokensPerRequest = perRequest
    options.maxQueuedRequestsPerPool = 1_000_000
    let registry = try ProviderRegistry(options: options)
    let client = try registry.client(applicationID: "bench", platform: .hms, attributes: [
        ProviderAttribute.platformPrincipal: clientID, ProviderAttribute.platformCredential: secret,
        ProviderAttribute.providerEndpoint: url, ProviderAttribute.providerAuthEndpoint: url + "/oauth2/v3/token",
    ])
    let now = Date()
    let message = try SNSMessage.parse(message: #"{"default":"d","HMS":"{\"notification\":{\"title\":\"Bench\",\"body\":\"hello from the HMS benchmark\"},\"data\":\"{\\\"k\\\":\\\"v\\\"}\"}"}"#,
                                       structure: .json, requireDefault: true)
    guard case .push(let push) = PushRenderer.render(message, attributes: MobilePushAttributes(), platform: .hms,
                                                     settings: RenderSettings(), publishedAt: now, now: now) else { fail("render") }
    // Warm up: the token exchange and the connection.
    _ = await client.send(push, token: "IQAAAACy0kYdAABwarmup")
    let tokens = (0..<deliveries).map { "IQAAAACy0kYdAAB" + String(format: "%08d", $0) + String(repeating: "h", count: 100) }
    let sink = CountingSink(total: deliveries)
    let started = ContinuousClock.now
    var next = 0
    while next < deliveries {
        let room = window - sink.inFlight.load(ordering: .relaxed)
        if room < min(perRequest, 1000) {
            try await Task.sleep(for: .microseconds(200))
            continue
        }
        let end = min(deliveries, next + room)
        let batch = (next..<end).map { ProviderDelivery(token: tokens[$0], tag: UInt64($0)) }
        sink.inFlight.add(batch.count, ordering: .relaxed)
        let admitted = client.submit(push, deliveries: batch, sink: sink)
        if admitted < batch.count { sink.inFlight.subtract(batch.count - admitted, ordering: .relaxed) }
        next += admitted
        if admitted == 0 { try await Task.sleep(for: .milliseconds(1)) }
    }
    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
        Thread.detachNewThread {
            sink.finished.wait()
            done.resume()
        }
    }
    let elapsed = started.duration(to: .now)
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    let (accepted, other) = sink.summary
    print(String(format: "tokens/request %d: %d deliveries in %.3f s = %.0f deliveries/s (accepted %d, other %@)",
                 perRequest, deliveries, seconds, Double(deliveries) / seconds, accepted, other.description))
    await registry.shutdown()

default:
    fail("unknown command \(command)")
}
