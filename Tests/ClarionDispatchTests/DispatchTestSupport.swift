import ClarionCore
@testable import ClarionDispatch
import ClarionStore
import ClarionTestSupport
import Foundation
import Synchronization

/// A transport that records every push it is handed and answers from a rule, asynchronously, in batches, as
/// the HTTP/2 provider pools do. Stands in for ClarionProviders + the emulator, whose batch API was not
/// committed when these tests were written.
final class RecordingTransport: PushTransport, @unchecked Sendable {
    /// Tokens with this prefix are admitted and recorded but never answered (a transport breaking its contract).
    static let blackHolePrefix = "blackhole-"

    struct Send: Sendable {
        let token: String
        let at: Date
        let attempt: Int
        let bodyBytes: Int
    }

    private struct State {
        var sends: [Send] = []
        var attempts: [String: Int] = [:]
        var outstanding = 0
        var submitSizes: [Int] = []
    }

    let rule: @Sendable (_ token: String, _ attempt: Int) -> DeliveryOutcome
    let latency: Double
    let capacity: Int
    /// What it answers to `preferredSubmitSize` (a Push Kit client says 1000).
    var preferredSubmit: Int?
    private let state = Mutex(State())
    private let queue = DispatchQueue(label: "recording-transport", attributes: .concurrent)

    init(latency: Double = 0.002, capacity: Int = 10_000,
         rule: @escaping @Sendable (_ token: String, _ attempt: Int) -> DeliveryOutcome = { _, _ in .accepted(providerID: nil) }) {
        self.rule = rule
        self.latency = latency
        self.capacity = capacity
    }

    func submit(_ push: RenderedPush, deliveries: [PushDelivery], sink: any PushResultSink) -> Int {
        let now = Date()
        let results = state.withLock { state -> [PushResult] in
            state.submitSizes.append(deliveries.count)
            let admitted = min(deliveries.count, max(0, capacity - state.outstanding))
            state.outstanding += admitted
            var results: [PushResult] = []
            for delivery in deliveries.prefix(admitted) {
                let attempt = state.attempts[delivery.token, default: 0] + 1
                state.attempts[delivery.token] = attempt
                let body = push.body(token: delivery.token, deliveryID: delivery.deliveryID)
                state.sends.append(Send(token: delivery.token, at: now, attempt: attempt, bodyBytes: body.count))
                results.append(PushResult(tag: delivery.tag, outcome: rule(delivery.token, attempt)))
            }
            return results
        }
        guard !results.isEmpty else { return 0 }
        let answered = results.filter { result in
            !deliveries.contains { $0.tag == result.tag && $0.token.hasPrefix(Self.blackHolePrefix) }
        }
        let admitted = results.count
        state.withLock { $0.outstanding -= admitted - answered.count }
        queue.asyncAfter(deadline: .now() + latency) { [self] in
            state.withLock { $0.outstanding -= answered.count }
            sink.receive(answered)
        }
        return admitted
    }

    func preferredSubmitSize(for push: RenderedPush) -> Int? { preferredSubmit }

    /// The number of deliveries offered by each submit, in order.
    var submitSizes: [Int] { state.withLock { $0.submitSizes } }

    var sends: [Send] { state.withLock { $0.sends } }
    var sendCount: Int { state.withLock { $0.sends.count } }

    /// Sends per token.
    var counts: [String: Int] {
        var out: [String: Int] = [:]
        for send in sends { out[send.token, default: 0] += 1 }
        return out
    }
}

/// Resolves applications by name to transports.
struct TestDirectory: PushTransportDirectory {
    var transports: [String: RecordingTransport]
    var unavailable: [String: DeliveryOutcome] = [:]
    /// When set, every application sends through it.
    var fileTransport: FileRecordingTransport?

    func resolve(_ application: DispatchApplication) async -> TransportResolution {
        if let outcome = unavailable[application.name] { return .unavailable(outcome) }
        if let fileTransport { return .ready(fileTransport, RenderSettings(apnsBundleID: "com.example.app")) }
        guard let transport = transports[application.name] else {
            return .unavailable(.rejected(reason: "no transport"))
        }
        return .ready(transport, RenderSettings(apnsBundleID: "com.example.app"))
    }
}

/// Records who held which shard when, to prove no shard is worked by two dispatchers at once.
final class ShardLog: DispatcherObserver, Sendable {
    struct Interval: Sendable {
        let shard: Int64
        let owner: String
        let start: Date
        var end: Date?
        var exit: ShardWorkerExit?
    }

    private let intervals = Mutex<[Interval]>([])

    func shardClaimed(shard: Int64, message: Int64, owner: String, checkpoint: Int64) {
        intervals.withLock { $0.append(Interval(shard: shard, owner: owner, start: Date())) }
    }

    func shardEnded(shard: Int64, owner: String, how: ShardWorkerExit) {
        intervals.withLock { list in
            if let i = list.lastIndex(where: { $0.shard == shard && $0.owner == owner && $0.end == nil }) {
                list[i].end = Date()
                list[i].exit = how
            }
        }
    }

    var all: [Interval] { intervals.withLock { $0 } }
}

/// A migrated database with an account, applications, endpoints and a topic.
struct FanOutFixture {
    let url: String
    let pool: PGPool
    /// Ends the database's sessions when the test is done with the fixture.
    let sessions: TestDatabaseSessions
    let account: Int64
    var applications: [String: Int64] = [:]
    var topic: Int64 = 0

    init(poolSize: Int = 8) throws {
        url = try TestPostgres.migratedDatabase(prefix: "disp")
        sessions = TestDatabaseSessions(url: url)
        pool = PGPool(conninfo: url, size: poolSize)
        let c = try PGConnection(conninfo: url)
        account = try c.query("INSERT INTO accounts (account_id) VALUES ('123456789012') RETURNING id").first!.int64(0)!
        topic = try c.query("INSERT INTO topics (account, region, name) VALUES ($1, 'us-east-1', 'news') RETURNING id", [account]).first!.int64(0)!
    }

    func connection() throws -> PGConnection { try PGConnection(conninfo: url) }

    mutating func addApplication(_ name: String, platform: String, attributes: String = "{}") throws {
        let c = try connection()
        applications[name] = try c.query("""
            INSERT INTO platform_applications (account, region, name, platform, attributes) VALUES ($1, 'us-east-1', $2, $3, $4::jsonb) RETURNING id
            """, [account, name, platform, attributes]).first!.int64(0)!
    }

    /// Adds `count` endpoints with tokens `<prefix><n>` to an application, subscribed to the topic.
    func addEndpoints(_ application: String, prefix: String, count: Int, subscribe: Bool = true) throws {
        let c = try connection()
        try c.query("""
            INSERT INTO endpoints (external_id, application, token)
            SELECT gen_random_uuid(), $1, $2 || g FROM generate_series(1, $3) g
            """, [applications[application]!, prefix, count])
        if subscribe {
            try c.query("""
                INSERT INTO subscriptions (external_id, topic, protocol, endpoint)
                SELECT gen_random_uuid(), $1, 'application', e.id FROM endpoints e
                WHERE e.application = $2 AND e.token LIKE $3 || '%'
                  AND NOT EXISTS (SELECT 1 FROM subscriptions s WHERE s.topic = $1 AND s.endpoint = e.id)
                ORDER BY random()
                """, [topic, applications[application]!, prefix])
        }
    }

    /// Inserts a topic message (unplanned, as the publish path leaves it) and notifies; returns its key.
    @discardableResult
    func publishToTopic(_ text: String = "hello", attributes: String = "{}", publishedSecondsAgo: Double = 0) throws -> Int64 {
        let c = try connection()
        let key = try c.query("""
            INSERT INTO messages (external_id, account, target_kind, target_id, message, attributes, published_at)
            VALUES (gen_random_uuid(), $1, 'topic', $2, $3, $4::jsonb, now() - make_interval(secs => $5)) RETURNING id
            """, [account, topic, text, attributes, publishedSecondsAgo]).first!.int64(0)!
        try c.notify(FanOutJobs.workChannel)
        return key
    }

    /// A direct publish as the publish path encodes it (schema v10): the message unplanned and without a shard;
    /// the dispatcher's claim inserts its shard (endpoint - 1, endpoint], already leased.
    @discardableResult
    func publishToEndpoint(token: String, text: String = "direct") throws -> Int64 {
        let c = try connection()
        let endpoint = try c.query("SELECT id FROM endpoints WHERE token = $1", [token]).first!.int64(0)!
        let key = try c.query("""
            INSERT INTO messages (external_id, account, target_kind, target_id, message)
            VALUES (gen_random_uuid(), $1, 'endpoint', $2, $3) RETURNING id
            """, [account, endpoint, text]).first!.int64(0)!
        try c.notify(FanOutJobs.workChannel)
        return key
    }

    /// Direct publishes to the endpoints with these tokens (one message each, in order), stored as the publish
    /// path stores them, in one statement; returns the message keys in the tokens' order.
    func publishToEndpoints(tokens: [String], text: String = "direct", expiresInSeconds: Double? = nil) throws -> [Int64] {
        let c = try connection()
        let literal = "{" + tokens.map { "\"\($0)\"" }.joined(separator: ",") + "}"
        let keys = try c.query("""
            INSERT INTO messages (external_id, account, target_kind, target_id, message, expires_at)
            SELECT gen_random_uuid(), $1, 'endpoint', e.id, $3, now() + make_interval(secs => $4)
            FROM unnest($2::text[]) WITH ORDINALITY AS t(token, n) JOIN endpoints e ON e.token = t.token
            ORDER BY t.n
            RETURNING id
            """, [account, literal, text, expiresInSeconds]).rows.map { $0.int64(0)! }
        try c.notify(FanOutJobs.workChannel)
        return keys.sorted()
    }

    /// Polls until every message is final (or the timeout passes); returns their statuses in the given order.
    func waitForAllFinal(_ messages: [Int64], timeout: Double = 60) async throws -> [MessageStatus] {
        let deadline = Date().addingTimeInterval(timeout)
        let c = try connection()
        let literal = "{" + messages.map(String.init).joined(separator: ",") + "}"
        while Date() < deadline {
            let open = try c.query("""
                SELECT count(*) FROM messages WHERE id = ANY($1::bigint[]) AND state NOT IN ('Completed', 'Failed', 'Expired')
                """, [literal]).first!.int64(0)!
            if open == 0 { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        var out: [MessageStatus] = []
        for message in messages { out.append(try await status(message)) }
        return out
    }

    func status(_ message: Int64) async throws -> MessageStatus {
        try await FanOutJobs(pool: pool).messageStatus(key: message)!
    }

    /// Polls until the message reaches a final state (or the timeout passes); returns its status.
    func waitForFinal(_ message: Int64, timeout: Double = 60) async throws -> MessageStatus {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let status = try await self.status(message)
            if status.state.isFinal || Date() > deadline { return status }
            try await Task.sleep(for: .milliseconds(50))
        }
    }
}

func testConfiguration(
    owner: String, workers: Int = 2, lease: Double = 5, checkpointEvery: Int = 500, inFlight: Int = 200,
    shardSize: Int = 2_500, retry: RetryPolicy = RetryPolicy(maxAttempts: 4, baseDelay: 0.05, maxDelay: 1, jitter: 0.5),
    deliveryTimeout: Double = 10
) -> DispatcherConfiguration {
    DispatcherConfiguration(
        owner: owner, shardWorkers: workers, leaseDuration: lease, checkpointEvery: checkpointEvery,
        checkpointInterval: 0.1, maxInFlightPerShard: inFlight, submitBatchSize: 64, pageSize: 500,
        shardSize: shardSize, maxPollInterval: 0.2, retryPolicy: retry, retryBatchSize: 500, shutdownGrace: 5,
        deliveryTimeout: deliveryTimeout)
}

/// Runs a dispatcher in a task; `stop` shuts it down and waits for `run()` to return.
final class RunningDispatcher: Sendable {
    let dispatcher: Dispatcher
    private let task: Task<Void, Never>

    init(_ dispatcher: Dispatcher) {
        self.dispatcher = dispatcher
        task = Task { await dispatcher.run() }
    }

    func stop() async {
        dispatcher.shutdown()
        await task.value
    }

    func crash() async {
        dispatcher.abandon()
        await task.value
    }
}
