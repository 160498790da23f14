import ClarionCore
import ClarionCrypto
import ClarionDispatch
@testable import ClarionHTTP1
import ClarionStore
import ClarionTestSupport
import Foundation
import Synchronization
import Testing
@testable import ClarionAPI

/// Stands in for the provider pools (ClarionAPITests cannot link the emulator): records every request body
/// exactly as a provider would receive it (`RenderedPush.body(token:deliveryID:)`, the provider layer's own call)
/// and answers from a rule, asynchronously.
final class CampaignRecordingTransport: PushTransport, @unchecked Sendable {
    struct Sent: Sendable {
        let token: String
        let deliveryID: String?
        let body: [UInt8]
        let request: RenderedPush.Request
    }

    let rule: @Sendable (String) -> DeliveryOutcome
    private let sent = Mutex<[Sent]>([])
    private let queue = DispatchQueue(label: "campaign-recording-transport")

    init(rule: @escaping @Sendable (String) -> DeliveryOutcome = { _ in .accepted(providerID: nil) }) {
        self.rule = rule
    }

    func submit(_ push: RenderedPush, deliveries: [PushDelivery], sink: any PushResultSink) -> Int {
        var results: [PushResult] = []
        sent.withLock { sent in
            for delivery in deliveries {
                sent.append(Sent(token: delivery.token, deliveryID: delivery.deliveryID,
                                 body: push.body(token: delivery.token, deliveryID: delivery.deliveryID), request: push.request))
                results.append(PushResult(tag: delivery.tag, outcome: rule(delivery.token)))
            }
        }
        let finished = results
        queue.async { sink.receive(finished) }
        return deliveries.count
    }

    var all: [Sent] { sent.withLock { $0 } }
}

struct CampaignDirectory: PushTransportDirectory {
    let transports: [String: CampaignRecordingTransport]

    func resolve(_ application: DispatchApplication) async -> TransportResolution {
        guard let transport = transports[application.name] else { return .unavailable(.rejected(reason: "no transport")) }
        return .ready(transport, RenderSettings(apnsBundleID: "com.example.app"))
    }
}

/// Accepts one bearer key for the fixture's account.
struct FixedKeyResolver: APIKeyResolver {
    let accountID: String
    func principal(forAPIKey key: String) async throws -> APIPrincipal? {
        key == "test-key" ? APIPrincipal(accountID: accountID, keyID: "k1") : nil
    }
}

/// A migrated database with one account, a topic, and APNs/FCM/ADM applications.
struct CampaignFixture {
    static let accountID = "123456789012"
    let url: String
    let pool: PGPool
    /// Ends the database's sessions (this pool's, and the dispatchers' a test starts) when the test is done with the
    /// fixture: a campaign test's pools otherwise stay open to the end of the test process.
    let sessions: TestDatabaseSessions
    let account: Int64
    let topic: Int64
    let masterKey = AESGCMKey.generate()
    var applications: [String: Int64] = [:]

    init() throws {
        url = try TestPostgres.migratedDatabase(prefix: "camp")
        sessions = TestDatabaseSessions(url: url)
        pool = PGPool(conninfo: url, size: 4)
        let c = try PGConnection(conninfo: url)
        account = try c.query("INSERT INTO accounts (account_id) VALUES ($1) RETURNING id", [Self.accountID]).first!.int64(0)!
        topic = try c.query("INSERT INTO topics (account, region, name) VALUES ($1, 'us-east-1', 'promos') RETURNING id", [account]).first!.int64(0)!
    }

    func connection() throws -> PGConnection { try PGConnection(conninfo: url) }

    mutating func addApplication(_ name: String, platform: String, tokens: [String]) throws {
        let c = try connection()
        let key = try c.query("""
            INSERT INTO platform_applications (account, region, name, platform) VALUES ($1, 'us-east-1', $2, $3) RETURNING id
            """, [account, name, platform]).first!.int64(0)!
        applications[name] = key
        for token in tokens {
            try c.query("""
                WITH e AS (INSERT INTO endpoints (external_id, application, token) VALUES (gen_random_uuid(), $1, $2) RETURNING id)
                INSERT INTO subscriptions (external_id, topic, protocol, endpoint) SELECT gen_random_uuid(), $3, 'application', id FROM e
                """, [key, token, topic])
        }
    }

    func context(limiter: BeaconLimiter? = BeaconLimiter(), trustedProxies: TrustedProxies = TrustedProxies()) -> CampaignContext {
        CampaignContext(authenticator: BearerAuthenticator(resolver: FixedKeyResolver(accountID: Self.accountID)),
                        accounts: AccountRepository(pool: pool, masterKey: masterKey), campaigns: CampaignRepository(pool: pool),
                        deliveryIDs: DeliveryIDSecret.codec(masterKey: masterKey), opens: OpenRecorder(pool: pool),
                        beaconLimiter: limiter, trustedProxies: trustedProxies)
    }

    func waitForFinal(_ message: Int64, timeout: Double = 60) async throws -> MessageStatus {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let status = try await FanOutJobs(pool: pool).messageStatus(key: message)!
            if status.state.isFinal || Date() > deadline { return status }
            try await Task.sleep(for: .milliseconds(50))
        }
    }
}

/// Runs a route of the router in process, as the server would (peer address given).
func call(_ router: Router, _ method: HTTPMethod, _ path: String, body: String? = nil, from address: String = "192.0.2.1",
          headers: HTTPHeaders = HTTPHeaders()) async -> HTTPResponse {
    guard case .matched(let route, let parameters) = router.resolve(method: method, rawPath: path) else {
        return HTTPResponse(status: 404)
    }
    let request = HTTPRequest(method: method, rawPath: path, headers: headers, body: Array((body ?? "").utf8),
                              remoteAddress: address, requestID: UUID().uuidString, pathParameters: parameters)
    switch route.handler {
    case .synchronous(let handler): return handler(request)
    case .asynchronous(let handler): return await handler(request)
    case .suspending: return HTTPResponse(status: 500)
    case .streaming(let handler): return await handler(request, RequestBodyStream(complete: request.body))
    }
}

func jsonObject(_ bytes: [UInt8]) -> JSONObject? {
    (try? JSONValue.parse(bytes: bytes))?.objectValue
}

/// `clarion emulator` in a process of its own (ClarionAPITests does not link the emulator), with its demo credentials
/// in a temporary directory and its record file beside them; stopped and removed when the test drops it.
final class EmulatorProcess {
    let directory: String
    let port: Int
    let recordPath: String
    private let process = Process()

    var base: String { "http://127.0.0.1:\(port)" }

    init() async throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("clarion-camp-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        port = EmbeddedPostgres.freePort()
        recordPath = directory + "/records.jsonl"
        process.executableURL = URL(fileURLWithPath: try Self.clarionExecutable())
        process.arguments = ["emulator", "--listen", "127.0.0.1:\(port)", "--write-demo-credentials", directory, "--record", recordPath]
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        try await Self.waitForPort(port)
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Stops the emulator (its record file is complete afterwards).
    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
    }

    /// A demo credential file the emulator wrote.
    func text(_ file: String) throws -> String { try String(contentsOfFile: directory + "/" + file, encoding: .utf8) }

    func json(_ file: String) throws -> JSONObject { try #require(try JSONValue.parse(text(file)).objectValue) }

    /// The accepted requests (status 200) the emulator recorded for these of its endpoints (`apns`, `fcm`, `adm`).
    func acceptedRecords(_ endpoints: Set<String>) throws -> [JSONObject] {
        try String(contentsOfFile: recordPath, encoding: .utf8).split(separator: "\n")
            .compactMap { try? JSONValue.parse(String($0)).objectValue }
            .filter { endpoints.contains($0["endpoint"]?.stringValue ?? "") && $0["status"] == .number(JSONNumber(200)) }
    }

    /// The `clarion` executable next to the test bundle (built with the tests).
    static func clarionExecutable() throws -> String {
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent("clarion").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        throw ToolError(description: "no clarion executable near \(CommandLine.arguments[0]); build the package first")
    }

    static func waitForPort(_ port: Int, timeout: Double = 20) async throws {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            close(fd)
            if connected == 0 { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw ToolError(description: "the emulator did not listen on \(port)")
    }
}
