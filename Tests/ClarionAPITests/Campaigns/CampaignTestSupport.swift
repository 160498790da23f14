import ClarionCore
import ClarionCrypto
import ClarionDispatch
@testable import ClarionHTTP1
import ClarionStore
import ClarionTestSupport
import Foundation
import Synchronization
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
    let account: Int64
    let topic: Int64
    let masterKey = AESGCMKey.generate()
    var applications: [String: Int64] = [:]

    init() throws {
        url = try TestPostgres.migratedDatabase(prefix: "camp")
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
