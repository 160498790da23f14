import ClarionCrypto
import ClarionStore
import ClarionTestSupport
import Foundation
import Testing

/// `ResourceReset`, behind `serve --dev`'s `POST /_clarion/reset` (docs/api.md, "Development mode"): every resource
/// of every account gone; accounts, their keys, the signing key and the migration history kept.
@Suite struct ResourceResetTests {
    @Test("reset empties every table but the kept ones, whichever account the rows belong to; the kept ones keep their rows")
    func resetEmptiesResourcesAndKeepsAccounts() async throws {
        let fixture = try RepositoryFixture()
        var accountKeys: [Int64] = []
        for id in ["123456789012", "222222222222"] {
            let account = try await fixture.accounts.ensureAccount(accountID: id)
            _ = try await fixture.accounts.createAccessKey(accountID: id)
            accountKeys.append(account.key)
            let topics = TopicRepository(pool: fixture.pool)
            let (topic, _) = try await topics.create(accountKey: account.key, region: "us-east-1", name: "orders", attributes: ["DisplayName": "x"])
            let apps = PlatformApplicationRepository(pool: fixture.pool, masterKey: fixture.masterKey)
            _ = try await apps.createOrUpdate(accountKey: account.key, region: "us-east-1", name: "android", platform: "GCM",
                                              credentials: PlatformCredentials(credential: "key"), attributes: [:])
            try await TagRepository(pool: fixture.pool).tag(accountKey: account.key, resourceARN: "arn:aws:sns:us-east-1:\(id):orders",
                                                            [TagRecord(key: "team", value: "a")])
            _ = topic
        }

        let emptied = try await ResourceReset(pool: fixture.pool).reset()
        #expect(emptied.contains("topics") && emptied.contains("platform_applications") && emptied.contains("tags"))
        #expect(emptied.allSatisfy { !ResourceReset.kept.contains($0) })

        let connection = try PGConnection(conninfo: fixture.url)
        let tables = try connection.query("""
            SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p')
            """).rows.map { try $0.requireString(0) }
        #expect(tables.count > ResourceReset.kept.count + 10, "the catalogue query sees the schema")
        for table in tables where !ResourceReset.kept.contains(table) {
            let count = try connection.query("SELECT count(*) FROM \"\(table)\"").first?.int(0)
            #expect(count == 0, "\(table) still has rows")
        }
        #expect(try connection.query("SELECT count(*) FROM accounts").first?.int(0) == 2)
        #expect(try connection.query("SELECT count(*) FROM access_keys").first?.int(0) == 2)
        #expect(try connection.query("SELECT count(*) FROM schema_migrations").first?.int(0) == Migrator().migrations.count)
        // The accounts work on: a topic of the same name can be made again.
        let (again, created) = try await TopicRepository(pool: fixture.pool).create(accountKey: accountKeys[0], region: "us-east-1", name: "orders", attributes: [:])
        #expect(created && again.name == "orders")
    }
}
