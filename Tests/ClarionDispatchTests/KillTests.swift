import ClarionCore
@testable import ClarionDispatch
import ClarionStore
import ClarionTestSupport
import Foundation
import Synchronization
import Testing

/// A transport for the child process: appends each batch's tokens to a file (one write per batch, so what the
/// parent reads after SIGKILL is what was handed over) and accepts them after a delay.
final class FileRecordingTransport: PushTransport, @unchecked Sendable {
    private let handle: FileHandle
    private let lock = Mutex(())
    private let queue = DispatchQueue(label: "file-recording-transport")
    let latency: Double

    init(path: String, latency: Double) throws {
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        self.latency = latency
    }

    func submit(_ push: RenderedPush, deliveries: [PushDelivery], sink: any PushResultSink) -> Int {
        var text = ""
        for delivery in deliveries { text += delivery.token + "\n" }
        lock.withLock { _ in handle.write(Data(text.utf8)) }
        let results = deliveries.map { PushResult(tag: $0.tag, outcome: .accepted(providerID: nil)) }
        queue.asyncAfter(deadline: .now() + latency) { sink.receive(results) }
        return deliveries.count
    }
}

@Suite("Dispatcher killed with SIGKILL", .serialized)
struct KillTests {
    static let childDatabase = "CLARION_DISPATCH_CHILD_DB"
    static let childLog = "CLARION_DISPATCH_CHILD_LOG"
    static let childConfiguration = testConfiguration(
        owner: "child", lease: 1.5, checkpointEvery: 300, inFlight: 100, shardSize: 2_000)

    /// Runs only inside the child process the test below starts: a dispatcher that works until it is killed.
    @Test("child: a dispatcher process that runs until SIGKILL",
          .enabled(if: ProcessInfo.processInfo.environment[KillTests.childDatabase] != nil))
    func childDispatcher() async throws {
        let environment = ProcessInfo.processInfo.environment
        // Slow on purpose (about 1,000 pushes/s): the parent must catch it mid-fan-out even on a loaded machine.
        let transport = try FileRecordingTransport(path: environment[Self.childLog]!, latency: 0.2)
        let pool = PGPool(conninfo: environment[Self.childDatabase]!, size: 6)
        let dispatcher = Dispatcher(
            pool: pool, directory: TestDirectory(transports: [:], fileTransport: transport),
            configuration: Self.childConfiguration)
        await dispatcher.run()
        Issue.record("the child dispatcher returned; it should have been killed")
    }

    @Test("SIGKILL of a dispatcher process mid-fan-out: a second node resumes at the checkpoints; every endpoint at least once, duplicates within the bound")
    func sigkillMidFanOut() async throws {
        var fixture = try FanOutFixture()
        try fixture.addApplication("ios", platform: "APNS")
        try fixture.addApplication("android", platform: "GCM")
        try fixture.addEndpoints("ios", prefix: "ios-", count: 3_000)
        try fixture.addEndpoints("android", prefix: "and-", count: 3_000)
        let log = NSTemporaryDirectory() + "clarion-kill-\(UUID().uuidString).log"
        defer { try? FileManager.default.removeItem(atPath: log) }

        let child = Process()
        child.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
        child.arguments = ["--testing-library", "swift-testing", "--filter", "childDispatcher"]
        var environment = ProcessInfo.processInfo.environment
        environment[Self.childDatabase] = fixture.url
        environment[Self.childLog] = log
        environment["CLARION_TEST_DATABASE_URL"] = try TestPostgres.serverURL()
        child.environment = environment
        child.standardOutput = FileHandle.nullDevice
        child.standardError = FileHandle.nullDevice
        try child.run()
        defer { if child.isRunning { kill(child.processIdentifier, SIGKILL) } }

        let message = try fixture.publishToTopic()
        func sentByChild() -> [String] {
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            return text.split(separator: "\n").map(String.init)
        }
        // Kill once the child has sent a good part and written checkpoints, well before the end.
        let deadline = Date().addingTimeInterval(60)
        while sentByChild().count < 1_000, Date() < deadline { try await Task.sleep(for: .milliseconds(5)) }
        kill(child.processIdentifier, SIGKILL)
        child.waitUntilExit()
        #expect(child.terminationReason == .uncaughtSignal)
        let childSends = sentByChild()
        #expect(childSends.count >= 1_000)
        #expect(childSends.count < 6_000)
        let c = try fixture.connection()
        let held = try c.query(
            "SELECT count(*) FROM fanout_shards WHERE state = 'leased' AND lease_owner = 'child'").first!.int64(0)!
        #expect(held > 0)
        let checkpointed = try c.query(
            "SELECT count(*) FROM fanout_shards WHERE message = $1 AND checkpoint > lo", [message]).first!.int64(0)!
        #expect(checkpointed > 0)

        let transports = ["ios": RecordingTransport(), "android": RecordingTransport()]
        let second = RunningDispatcher(Dispatcher(
            pool: fixture.pool, directory: TestDirectory(transports: transports),
            configuration: testConfiguration(owner: "node-b", shardSize: 2_000)))
        let status = try await fixture.waitForFinal(message)
        await second.stop()

        #expect(status.state == .completed)
        var counts: [String: Int] = [:]
        for token in childSends { counts[token, default: 0] += 1 }
        for t in transports.values { counts.merge(t.counts) { $0 + $1 } }
        #expect(counts.count == 6_000)
        let duplicates = counts.values.reduce(0) { $0 + $1 - 1 }
        let bound = Self.childConfiguration.duplicateBound
        #expect(duplicates <= Int(held) * bound, "\(duplicates) duplicates over \(held) shards")
        #expect(status.counters.accepted == 6_000)
    }
}
