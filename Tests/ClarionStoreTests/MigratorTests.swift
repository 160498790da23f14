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
