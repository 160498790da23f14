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
@testable import ClarionWorkers

/// A real HTTPServer with the registration routes over a freshly migrated database: an account, an APNs and an
/// FCM platform application, a mobile app over both (Firebase project `proj-1`), an API token and a native API
/// key. The processor is driven by the tests (`processPending`, `sendWebhooks`) unless a test runs it.
struct RegistrationFixture {
    static let accountID = "123456789012"

    let base: String
    let pool: PGPool
    let masterKey: AESGCMKey
    let context: RegistrationContext
    let app: MobileAppRecord
    let apiToken: String
    let apiKey: String
    let apnsApplication: Int64
    let fcmApplication: Int64
    let validator: ScriptedValidator
    let processor: RegistrationProcessor

    var devices: String { base + "/api/v1.0/orgs/\(Self.accountID)/pushdeviceregistration/devices" }

    static func with<R>(policy: OutboundAddressPolicy = OutboundAddressPolicy(allowPrivateNetworks: true), dryRun: Bool = false,
                        leaseSeconds: Double = 30, clock: @escaping @Sendable () -> Date = { Date() },
                        _ body: (RegistrationFixture) async throws -> R) async throws -> R {
        let url = try TestPostgres.migratedDatabase(prefix: "reg")
        let pool = PGPool(conninfo: url, size: 3)
        defer { pool.shutdown() }
        let masterKey = AESGCMKey.generate()
        let context = RegistrationContext(pool: pool, masterKey: masterKey)
        let account = try await context.accounts.ensureAccount(accountID: accountID)
        let apiKey = try await context.accounts.createAPIKey(accountID: accountID).key
        let apns = try await context.applications.createOrUpdate(accountKey: account.key, region: "us-east-1", name: "ios", platform: "APNS",
                                                                 credentials: PlatformCredentials(), attributes: [:]).0
        let fcm = try await context.applications.createOrUpdate(accountKey: account.key, region: "us-east-1", name: "android", platform: "GCM",
                                                                credentials: PlatformCredentials(), attributes: [:]).0
        let app = try await context.admin.createApp(accountID: accountID, name: "shop", apnsApplication: "APNS:ios",
                                                    fcmApplication: "GCM:android", firebaseProjectID: "proj-1", dryRunValidation: dryRun)
        let token = try await context.admin.createToken(accountID: accountID, app: app.externalID).token
        let validator = ScriptedValidator()
        let processor = RegistrationProcessor(
            pool: pool, masterKey: masterKey, validator: validator,
            configuration: RegistrationProcessorConfiguration(pollInterval: 0.05, leaseSeconds: leaseSeconds, webhookTimeout: 2,
                                                              outboundPolicy: policy),
            clock: clock)
        var router = Router.api()
        registerDeviceRegistrationAPI(on: &router, context: context)
        return try await withServer(router) { server in
            try await body(RegistrationFixture(
                base: "http://127.0.0.1:\(server.port)", pool: pool, masterKey: masterKey, context: context, app: app,
                apiToken: token, apiKey: apiKey, apnsApplication: apns.key, fcmApplication: fcm.key, validator: validator,
                processor: processor))
        }
    }

    /// A native-API call with the account's key (`/v1/mobile-apps`).
    func native(_ method: String, _ path: String, _ body: String? = nil) async throws -> ClientResult {
        var headers = ["Authorization": "Bearer \(apiKey)"]
        if body != nil { headers["Content-Type"] = "application/json" }
        return try await curl(base + path, method: method, headers: headers, body: body.map { Array($0.utf8) })
    }

    func post(_ url: String, _ body: String, headers: [String: String] = [:]) async throws -> ClientResult {
        var all = headers
        if all["Content-Type"] == nil { all["Content-Type"] = "application/json" }
        return try await curl(url, method: "POST", headers: all, body: Array(body.utf8))
    }

    /// A registration item as JSON text.
    func item(user: String, apns: String? = nil, fcm: String? = nil, token: String? = nil, app: UUID? = nil) -> String {
        var fields = ["\"MobileAppId\":\(jsonText((app ?? self.app.externalID).uuidString))", "\"UserId\":\(jsonText(user))",
                      "\"ApiToken\":\(jsonText(token ?? apiToken))"]
        if let apns { fields.append("\"ApnsDeviceToken\":\(jsonText(apns))") }
        if let fcm { fields.append("\"FcmDeviceToken\":\(jsonText(fcm))") }
        return "{" + fields.joined(separator: ",") + "}"
    }

    /// Registers one device with tracking and returns its request id.
    func register(user: String, apns: String? = nil, fcm: String? = nil, token: String? = nil,
                  headers: [String: String] = [:]) async throws -> String {
        var all = headers
        all["x-ms-track-registration"] = "true"
        let result = try await post(devices, item(user: user, apns: apns, fcm: fcm, token: token), headers: all)
        #expect(result.status == 202, "\(result.text)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.body)) as? [String: Any])
        return try #require(object["RegistrationRequestId"] as? String)
    }

    /// The states of ids, in order, as `[(Status, FailureReason)]`.
    func states(_ ids: [String], token: String? = nil) async throws -> [(String, String?)] {
        let body = "{\"RegistrationRequestIds\":[\(ids.map(jsonText).joined(separator: ","))],\"MobileAppId\":\(jsonText(app.externalID.uuidString)),\"ApiToken\":\(jsonText(token ?? apiToken))}"
        let result = try await post(devices + "/status/", body)
        #expect(result.status == 200, "\(result.text)")
        let array = try #require(try JSONSerialization.jsonObject(with: Data(result.body)) as? [[String: Any]])
        return array.map { ($0["Status"] as? String ?? "?", $0["FailureReason"] as? String) }
    }

    /// Processes every pending registration.
    func processAll() async {
        while await processor.processPending() > 0 {}
    }

    /// Sends queued webhooks on a thread of its own (the call blocks on libcurl).
    func sendWebhooks() async -> Int {
        await withCheckedContinuation { continuation in
            let processor = self.processor
            Thread { continuation.resume(returning: processor.sendPendingWebhooksBlocking()) }.start()
        }
    }

    func count(_ sql: String, _ parameters: [any PGEncodable] = []) async throws -> Int64 {
        try await pool.withConnection { (c) throws(StoreError) -> Int64 in try c.query(sql, parameters).first?.int64(0) ?? -1 }
    }

    /// Endpoints of an application as (token, user) pairs, in key order.
    func endpoints(_ application: Int64) async throws -> [(token: String, user: String?)] {
        try await pool.withConnection { (c) throws(StoreError) -> [(token: String, user: String?)] in
            try c.query("SELECT token, user_id FROM endpoints WHERE application = $1 ORDER BY id", [application]).rows
                .map { (token: $0.string(0) ?? "", user: $0.string(1)) }
        }
    }
}

/// A dry-run validator that answers from the token: tokens starting with "bad" are refused; every call is recorded.
final class ScriptedValidator: DryRunValidator {
    private let calls = Mutex<[String]>([])

    func validate(applicationKey: Int64, token: String) async -> DeliveryOutcome {
        calls.withLock { $0.append(token) }
        return token.hasPrefix("bad") ? .tokenInvalid(reason: "BadDeviceToken", invalidSince: nil) : .accepted(providerID: "dry")
    }

    var tokens: [String] { calls.withLock { $0 } }
}

/// A tiny HTTP server in Python that records every request (method, path, headers, body) to a JSON-lines file:
/// the webhook receiver, independent of Clarion's code.
final class WebhookReceiver: @unchecked Sendable {
    let port: Int
    let process: Process
    let directory: URL
    var recordFile: URL { directory.appendingPathComponent("requests.jsonl") }

    static let script = """
        import json, signal, sys, threading, http.server
        # The test process may block signals its children inherit: let SIGTERM through, and stop after 5 minutes anyway.
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGTERM])
        threading.Timer(300, lambda: __import__('os')._exit(0)).start()
        out = sys.argv[2]
        class H(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                n = int(self.headers.get('Content-Length') or 0)
                body = self.rfile.read(n).decode()
                with open(out, 'a') as f:
                    f.write(json.dumps({'path': self.path, 'headers': {k.lower(): v for k, v in self.headers.items()},
                                        'header_list': [[k, v] for k, v in self.headers.items()], 'body': body}) + '\\n')
                self.send_response(204)
                self.end_headers()
            def log_message(self, *a):
                pass
        s = http.server.HTTPServer(('127.0.0.1', 0), H)
        print(s.server_address[1], flush=True)
        s.serve_forever()
        """

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("clarion-hook-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let scriptFile = directory.appendingPathComponent("receiver.py")
        try Self.script.write(to: scriptFile, atomically: true, encoding: .utf8)
        let pipe = Pipe()
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [scriptFile.path, "0", directory.appendingPathComponent("requests.jsonl").path]
        process.standardOutput = pipe
        try process.run()
        var line = [UInt8]()
        while true {
            let byte = pipe.fileHandleForReading.readData(ofLength: 1)
            guard let first = byte.first else { break }
            if first == 0x0a { break }
            line.append(first)
        }
        guard let port = Int(String(decoding: line, as: UTF8.self)) else { throw ToolError(description: "receiver did not start") }
        self.port = port
    }

    func stop() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Requests received so far.
    var requests: [[String: Any]] {
        guard let text = try? String(contentsOf: recordFile, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }
}

/// Base64(HMAC-SHA256(key, message)) computed by Python's hmac module, independently of Clarion's crypto.
func pythonSignature(key: String, message: String) async throws -> String {
    let result = try await run("/usr/bin/python3", ["-c", """
        import sys, hmac, hashlib, base64
        print(base64.b64encode(hmac.new(sys.argv[1].encode(), sys.argv[2].encode(), hashlib.sha256).digest()).decode())
        """, key, message])
    return String(decoding: result.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
}

/// JSON text of a string, for building bodies.
func jsonText(_ text: String) -> String {
    String(decoding: try! JSONSerialization.data(withJSONObject: [text], options: [.withoutEscapingSlashes]), as: UTF8.self)
        .dropFirst().dropLast().description
}
