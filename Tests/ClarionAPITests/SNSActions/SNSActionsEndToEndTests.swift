import ClarionProviders
import ClarionCrypto
@testable import ClarionHTTP1
import ClarionStore
import ClarionTestSupport
import Foundation
import Testing
@testable import ClarionAPI

/// A live SNS API: HTTPServer + SNSQueryService with SigV4 against stored access keys + the real action table
/// on a fresh migrated database.
struct LiveSNS {
    static let accountID = "123456789012"
    static let accessKeyID = "AKIACLARIONSNSE2E01"
    static let secret = "e2e/Secret+Key0123456789abcdefghijklmnop"

    let pool: PGPool
    let batcher: PublishBatcher
    let context: SNSActionContext
    let router: Router

    init() async throws {
        let url = try TestPostgres.migratedDatabase(prefix: "snsapi")
        pool = PGPool(conninfo: url, size: 4)
        batcher = PublishBatcher(pool: pool)
        context = SNSActionContext(pool: pool, masterKey: AESGCMKey.generate(), batcher: batcher, region: "us-east-1",
                                   settingsCheck: ProviderSettingsCheck())
        try await context.accounts.ensureAccessKey(accountID: Self.accountID, accessKeyID: Self.accessKeyID, secret: Self.secret)
        let verifier = SigV4Verifier(region: "us-east-1", resolver: StoreAccessKeyResolver(accounts: context.accounts))
        var router = Router.api()
        SNSQueryService(region: "us-east-1", actions: makeSNSActionTable(context: context),
                        authentication: .sigV4(verifier)).register(on: &router)
        self.router = router
    }

    func stop() {
        batcher.shutdown()
        pool.shutdown()
    }

    static var e2eDirectory: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("e2e/sns")
    }

    static func environment(port: Int, secret: String = secret) -> [String: String] {
        ["CLARION_SNS_ENDPOINT": "http://127.0.0.1:\(port)", "CLARION_SNS_KEY": accessKeyID, "CLARION_SNS_SECRET": secret,
         "AWS_ACCESS_KEY_ID": accessKeyID, "AWS_SECRET_ACCESS_KEY": secret, "AWS_DEFAULT_REGION": "us-east-1",
         "AWS_CONFIG_FILE": "/dev/null", "AWS_SHARED_CREDENTIALS_FILE": "/dev/null", "AWS_EC2_METADATA_DISABLED": "true",
         "PYTHONUNBUFFERED": "1"]
    }
}

@Suite("SNS actions end to end (boto3, aws CLI)", .serialized)
struct SNSActionsEndToEndTests {
    @Test("boto3 drives every action: SNS C.7 app attributes, C.8 endpoint idempotency, 250 endpoints in pages of 100, topics, subscriptions, C.2 publish errors, PublishBatch, tags, wrong secret refused")
    func boto3EveryAction() async throws {
        let live = try await LiveSNS()
        defer { live.stop() }
        try await withServer(live.router) { server in
            let script = LiveSNS.e2eDirectory.appendingPathComponent("sns_actions.py").path
            let result = try await run("/usr/bin/env", ["python3", script], environment: LiveSNS.environment(port: server.port))
            let output = String(decoding: result.stdout, as: UTF8.self)
            #expect(result.status == 0, "boto3 script failed:\n\(output)\n\(result.stderr)")
            #expect(output.contains("ALL OK"), "\(output)\n\(result.stderr)")
            for group in ["wrong secret refused", "platform applications", "endpoints", "pagination", "topics",
                          "subscriptions", "publish", "publish batch", "tags", "deletes"] {
                #expect(output.contains("PASS \(group)\n"), "missing group \(group)")
            }
            // Every MessageId the client got names a committed message row.
            let ids = output.split(separator: "\n").filter { $0.hasPrefix("MESSAGE ") }.compactMap { UUID(uuidString: String($0.dropFirst(8))) }
            #expect(ids.count == 9)
            let messages = MessageRepository(pool: live.pool)
            for id in ids {
                let stored = try await messages.get(externalID: id)
                #expect(stored.state == "Enqueued")
                if stored.targetKind == "endpoint" {
                    // The dispatcher's claim makes its shard (schema v10); none runs here.
                    #expect(!stored.planned)
                    #expect(try await messages.shards(messageKey: stored.id.key).isEmpty)
                } else {
                    #expect(stored.targetKind == "topic" && !stored.planned)
                }
            }
            // Platform credentials reached the store sealed: the plaintext is nowhere in the table.
            let raw = try await live.pool.withConnection { (c) throws(StoreError) -> String in
                try c.query("SELECT string_agg(coalesce(encode(credentials_sealed, 'escape'), '') || attributes::text, '|') FROM platform_applications").first?.string(0) ?? ""
            }
            #expect(!raw.isEmpty && !raw.contains("AAAA-server-key-secret") && !raw.contains("rotated-secret"))
        }
    }

    @Test("the aws CLI creates and lists topics, publishes, and is refused with a wrong secret (SignatureDoesNotMatch); four CLI runs, as each costs about a second of CPU")
    func awsCLI() async throws {
        let live = try await LiveSNS()
        defer { live.stop() }
        try await withServer(live.router) { server in
            let endpoint = "http://127.0.0.1:\(server.port)"
            let env = LiveSNS.environment(port: server.port)
            func aws(_ arguments: [String], environment: [String: String]) async throws -> (Int32, String, String) {
                let r = try await run("/usr/bin/env", ["aws", "--endpoint-url", endpoint, "--output", "json", "sns"] + arguments,
                                      environment: environment)
                return (r.status, String(decoding: r.stdout, as: UTF8.self), r.stderr)
            }
            let created = try await aws(["create-topic", "--name", "cli-topic"], environment: env)
            #expect(created.0 == 0, "\(created.2)")
            #expect(created.1.contains("arn:aws:sns:us-east-1:123456789012:cli-topic"))
            let listed = try await aws(["list-topics"], environment: env)
            #expect(listed.0 == 0 && listed.1.contains("arn:aws:sns:us-east-1:123456789012:cli-topic"), "\(listed)")
            let published = try await aws(["publish", "--topic-arn", "arn:aws:sns:us-east-1:123456789012:cli-topic", "--message", "hello"],
                                          environment: env)
            #expect(published.0 == 0 && published.1.contains("MessageId"), "\(published)")
            let refused = try await aws(["list-topics"], environment: LiveSNS.environment(port: server.port, secret: "not-the-secret"))
            #expect(refused.0 != 0 && refused.2.contains("SignatureDoesNotMatch"), "\(refused)")
        }
    }
}
