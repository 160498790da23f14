import Foundation
import Testing
import ClarionStore
import ClarionTestSupport

@Suite("Migrations")
struct MigratorTests {
    @Test("from empty: every migration applies, in order, recorded in schema_migrations")
    func fromEmpty() throws {
        let url = try TestPostgres.freshDatabase(prefix: "mig")
        let connection = try PGConnection(conninfo: url)
        let migrator = Migrator()
        #expect(try migrator.currentVersion(connection) == 0)
        let applied = try migrator.migrate(connection)
        #expect(applied == Schema.migrations.map(\.version))
        #expect(try migrator.currentVersion(connection) == migrator.latestVersion)
        let tables = Set(try connection.query("SELECT tablename FROM pg_tables WHERE schemaname = 'public'").rows.compactMap { $0.string(0) })
        for table in ["accounts", "access_keys", "api_keys", "platform_applications", "endpoints", "topics",
                      "subscriptions", "messages", "fanout_shards", "delivery_retries", "mobile_apps",
                      "registration_requests", "opens", "campaigns", "webhook_outbox"] {
            #expect(tables.contains(table), "missing table \(table)")
        }
    }

    @Test("v10 on a v9 database: direct messages stored with their shard are claimed through it, once; the others get theirs at claim")
    func directShardsAtClaimUpgrade() async throws {
        let url = try TestPostgres.freshDatabase(prefix: "mig")
        let c = try PGConnection(conninfo: url)
        #expect(try Migrator(migrations: Schema.migrations.filter { $0.version <= 9 }).migrate(c).last == 9)
        let account = try c.query("INSERT INTO accounts (account_id) VALUES ('123456789012') RETURNING id").first!.int64(0)!
        let app = try c.query("INSERT INTO platform_applications (account, name, platform) VALUES ($1, 'a', 'GCM') RETURNING id",
                              [account]).first!.int64(0)!
        let topic = try c.query("INSERT INTO topics (account, name) VALUES ($1, 't') RETURNING id", [account]).first!.int64(0)!
        let endpoint = try c.query("INSERT INTO endpoints (external_id, application, token) VALUES (gen_random_uuid(), $1, 'k') RETURNING id",
                                   [app]).first!.int64(0)!
        func message(kind: String, target: Int64, planned: Bool, shard: Bool) throws -> Int64 {
            let key = try c.query("""
                INSERT INTO messages (external_id, account, target_kind, target_id, message, planned)
                VALUES (gen_random_uuid(), $1, $2, $3, 'm', $4) RETURNING id
                """, [account, kind, target, planned]).first!.int64(0)!
            if shard {
                try c.query("INSERT INTO fanout_shards (message, lo, hi, checkpoint, planned_targets) VALUES ($1, $2 - 1, $2, $2 - 1, 1)",
                            [key, target])
            }
            return key
        }
        let published = try message(kind: "endpoint", target: endpoint, planned: true, shard: true)  // v9's publish path
        let odd = try message(kind: "endpoint", target: endpoint, planned: false, shard: true)       // never written by Clarion
        let bare = try message(kind: "endpoint", target: endpoint, planned: false, shard: false)
        let toTopic = try message(kind: "topic", target: topic, planned: false, shard: false)

        #expect(try Migrator(migrations: Schema.migrations.filter { $0.version <= 10 }).migrate(c) == [10])
        let indexes = Dictionary(uniqueKeysWithValues: try c.query(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'messages'").rows.map { ($0.string(0)!, $0.string(1)!) })
        #expect(indexes["messages_unplanned_idx"]?.contains("target_kind <> 'endpoint'") == true)
        #expect(indexes["messages_direct_unclaimed_idx"]?.contains("target_kind = 'endpoint'") == true)
        #expect(try c.query("SELECT planned FROM messages WHERE id = $1", [odd]).first?.bool(0) == true)
        // Today's job queue runs on today's schema (v17's planner also queues HTTP/S deliveries): apply the later
        // migrations, which leave these messages and shards as v10 made them.
        _ = try Migrator().migrate(c)

        let jobs = FanOutJobs(pool: PGPool(conninfo: url, size: 2))
        let claims = try await jobs.claim(owner: "a", limit: 10, leaseSeconds: 30)
        #expect(claims.map(\.message) == [published, odd, bare])
        #expect(try await jobs.claim(owner: "b", limit: 10, leaseSeconds: 30).isEmpty)
        #expect(try c.query("SELECT count(*), count(DISTINCT message) FROM fanout_shards").first.map { [$0.int(0), $0.int(1)] } == [3, 3])
        #expect(try await jobs.planPending() == 1)
        #expect(try c.query("SELECT planned FROM messages WHERE id = $1", [toTopic]).first?.bool(0) == true)
    }

    @Test("running twice is a no-op")
    func twice() throws {
        let url = try TestPostgres.freshDatabase(prefix: "mig")
        let connection = try PGConnection(conninfo: url)
        try Migrator().migrate(connection)
        #expect(try Migrator().migrate(connection) == [])
        #expect(try connection.query("SELECT count(*) FROM schema_migrations").first?.int(0) == Schema.migrations.count)
    }

    @Test("two nodes at once (two sessions racing on the lock): exactly one applies each migration")
    func concurrentProcesses() throws {
        let url = try TestPostgres.freshDatabase(prefix: "mig")
        // Two sessions, as two starting nodes have; a third holds the lock so both are waiting on it
        // when it is released. (ClarionAppTests runs the same race with two `clarion migrate` processes.)
        let blocker = try PGConnection(conninfo: url)
        try blocker.query("SELECT pg_advisory_lock($1)", [Int64(0x636c_6172_696f_6e00)])
        let results = Mutex2<[Result<[Int], StoreError>]>([])
        let group = DispatchGroup()
        for _ in 0..<2 {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                do {
                    let c = try PGConnection(conninfo: url)
                    let applied = try Migrator().migrate(c)
                    results.append(.success(applied))
                } catch let error as StoreError {
                    results.append(.failure(error))
                } catch {}
            }
        }
        // Both are now waiting on the lock; let them race.
        Thread.sleep(forTimeInterval: 0.3)
        try blocker.query("SELECT pg_advisory_unlock($1)", [Int64(0x636c_6172_696f_6e00)])
        group.wait()
        let applied = results.value.compactMap { try? $0.get() }
        #expect(applied.count == 2)
        #expect(applied.map(\.count).sorted() == [0, Schema.migrations.count])
        #expect(try blocker.query("SELECT count(*) FROM schema_migrations").first?.int(0) == Schema.migrations.count)
    }

    @Test("a failing migration rolls back and is not recorded")
    func failingMigration() throws {
        let url = try TestPostgres.freshDatabase(prefix: "mig")
        let connection = try PGConnection(conninfo: url)
        let bad = Migrator(migrations: [
            Migration(version: 1, name: "ok", sql: "CREATE TABLE a (x int)"),
            Migration(version: 2, name: "bad", sql: "CREATE TABLE b (x int); SELECT * FROM missing_table"),
        ])
        #expect(throws: StoreError.self) { try bad.migrate(connection) }
        #expect(try bad.currentVersion(connection) == 1)
        #expect(try connection.query("SELECT to_regclass('b') IS NULL").first?.bool(0) == true)
    }
}

/// A tiny lock box for collecting results from threads in tests.
final class Mutex2<T>: @unchecked Sendable {
    private var stored: T
    private let lock = NSLock()
    init(_ value: T) { stored = value }
    var value: T { lock.withLock { stored } }
    func mutate(_ body: (inout T) -> Void) { lock.withLock { body(&stored) } }
}

extension Mutex2 where T == [Result<[Int], StoreError>] {
    func append(_ r: Result<[Int], StoreError>) { mutate { $0.append(r) } }
}
