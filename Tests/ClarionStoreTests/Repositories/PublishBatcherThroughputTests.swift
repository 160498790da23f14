import ClarionStore
import ClarionTestSupport
import Foundation
import Testing

@Suite("Repositories: group commit throughput")
struct PublishBatcherThroughputTests {
    /// Not a benchmark (docs/benchmarks.md has those): a floor that one commit per publish could not reach on
    /// this machine, so a batcher that stopped grouping fails here.
    @Test("10,000 concurrent direct publishes commit in batches averaging more than 10 messages")
    func groupsCommits() async throws {
        let fixture = try RepositoryFixture()
        let account = try await fixture.accounts.ensureAccount(accountID: "123456789012")
        let app = try await PlatformApplicationRepository(pool: fixture.pool, masterKey: fixture.masterKey)
            .createOrUpdate(accountKey: account.key, region: "us-east-1", name: "app", platform: "GCM", credentials: PlatformCredentials(credential: "k"), attributes: [:]).0
        let endpoint = try await EndpointRepository(pool: fixture.pool).create(NewEndpoint(applicationKey: app.key, token: "t"), externalID: UUID()).record
        let batcher = PublishBatcher(pool: fixture.pool)
        defer { batcher.shutdown() }
        let total = 10_000
        let concurrency = 250
        let start = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<concurrency {
                group.addTask {
                    for _ in stride(from: worker, to: total, by: concurrency) {
                        _ = try await batcher.publish(NewMessage(externalID: UUID(), accountKey: account.key,
                                                                 target: .endpoint(key: endpoint.key, arn: "arn"), message: "m"))
                    }
                }
            }
            try await group.waitForAll()
        }
        let elapsed = ContinuousClock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let batches = batcher.batchesWritten
        print("PublishBatcher: \(total) publishes in \(String(format: "%.2f", seconds)) s = \(Int(Double(total) / seconds))/s, \(batches) batches")
        #expect(try PGConnection(conninfo: fixture.url).query("SELECT count(*) FROM messages").first?.int(0) == total)
        #expect(batches * 10 < total)
    }
}
