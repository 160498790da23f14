import ClarionProviders
import ClarionCore
import ClarionCrypto
@testable import ClarionHTTP1
import ClarionStore
import ClarionTestSupport
import Foundation
import Testing
@testable import ClarionAPI

/// Not a test: a live SNS API (authentication off) with one GCM endpoint, for Tests/e2e/sns/bench_publish.sh.
/// Writes "<port> <endpoint ARN>" to $CLARION_SNS_BENCH_FILE and serves until "<file>.stop" appears.
@Suite("SNS publish benchmark server", .enabled(if: ProcessInfo.processInfo.environment["CLARION_SNS_BENCH_FILE"] != nil))
struct SNSPublishBenchmarkServer {
    @Test("serve until told to stop")
    func serve() async throws {
        let file = ProcessInfo.processInfo.environment["CLARION_SNS_BENCH_FILE"]!
        let url = try TestPostgres.migratedDatabase(prefix: "snsbench")
        let pool = PGPool(conninfo: url, size: 4)
        let batcher = PublishBatcher(pool: pool)
        let context = SNSActionContext(pool: pool, masterKey: AESGCMKey.generate(), batcher: batcher, region: "us-east-1",
                                       settingsCheck: ProviderSettingsCheck())
        let account = try await context.accounts.ensureAccount(accountID: "123456789012")
        let app = try await context.applications.createOrUpdate(accountKey: account.key, region: "us-east-1", name: "bench", platform: "GCM",
                                                                 credentials: PlatformCredentials(credential: "k"), attributes: [:]).0
        let endpoint = try await context.endpoints.create(NewEndpoint(applicationKey: app.key, token: "bench-token"), externalID: UUID()).record
        let arn = SNSARN.endpoint("us-east-1", "123456789012", platform: "GCM", application: "bench", id: endpoint.externalID)
        var router = Router.api()
        SNSQueryService(region: "us-east-1", actions: makeSNSActionTable(context: context),
                        authentication: .disabled(accountID: "123456789012")).register(on: &router)
        let threads = Int(ProcessInfo.processInfo.environment["CLARION_SNS_BENCH_THREADS"] ?? "") ?? 2
        try await withServer(router, configure: { $0.threadPoolSize = threads; $0.connectionLimit = 1024 }) { server in
            try "\(server.port) \(arn)".write(toFile: file, atomically: true, encoding: .utf8)
            while !FileManager.default.fileExists(atPath: file + ".stop") {
                try await Task.sleep(for: .milliseconds(100))
            }
        }
        let count = try await pool.withConnection { (c) throws(StoreError) -> Int in
            try c.query("SELECT count(*) FROM messages").first?.int(0) ?? 0
        }
        print("SNS publish benchmark: \(count) messages stored, \(batcher.batchesWritten) batches")
        batcher.shutdown()
        pool.shutdown()
        #expect(count > 0)
    }
}
