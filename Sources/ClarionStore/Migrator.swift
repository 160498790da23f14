import Foundation

/// One versioned schema change. Versions only grow; an applied migration is never edited.
public struct Migration: Sendable {
    public let version: Int
    public let name: String
    public let sql: String

    public init(version: Int, name: String, sql: String) {
        self.version = version
        self.name = name
        self.sql = sql
    }

    /// A migration from its `.sql` resource's bytes.
    public init(version: Int, name: String, sql bytes: [UInt8]) {
        self.init(version: version, name: name, sql: String(decoding: bytes, as: UTF8.self))
    }
}

/// Applies pending migrations, each in its own transaction, recorded in `schema_migrations`.
///
/// Two nodes starting at once serialise on a PostgreSQL advisory lock: the second waits, then finds
/// nothing left to apply. Running it twice is a no-op.
public struct Migrator: Sendable {
    /// `pg_advisory_lock` key: "clarion" as ASCII bytes, so it cannot collide with small integers.
    static let lockKey: Int64 = 0x636c_6172_696f_6e00

    public let migrations: [Migration]
    /// The node's configured region (CLARION_REGION): V020 gives it to the topics and platform applications made
    /// before resources had a region. Set for the migrating session as `clarion.default_region`.
    public let defaultRegion: String

    public init(migrations: [Migration] = Schema.migrations, defaultRegion: String = "us-east-1") {
        self.migrations = migrations.sorted { $0.version < $1.version }
        self.defaultRegion = defaultRegion
    }

    public var latestVersion: Int { migrations.last?.version ?? 0 }

    /// Applies what is missing; returns the versions applied by this call.
    @discardableResult
    public func migrate(_ connection: PGConnection) throws(StoreError) -> [Int] {
        try connection.query("SELECT pg_advisory_lock($1)", [Migrator.lockKey])
        defer { _ = try? connection.query("SELECT pg_advisory_unlock($1)", [Migrator.lockKey]) }
        try connection.query("SELECT set_config('clarion.default_region', $1, false)", [defaultRegion])
        try connection.execute("""
            CREATE TABLE IF NOT EXISTS schema_migrations (
                version    integer PRIMARY KEY,
                name       text NOT NULL,
                applied_at timestamptz NOT NULL DEFAULT now()
            )
            """)
        let applied = Set(try connection.query("SELECT version FROM schema_migrations").rows.compactMap { $0.int(0) })
        var done: [Int] = []
        for migration in migrations where !applied.contains(migration.version) {
            do {
                try connection.transaction { (c) throws(StoreError) in
                    try c.execute(migration.sql)
                    try c.query("INSERT INTO schema_migrations (version, name) VALUES ($1, $2)",
                                [migration.version, migration.name])
                }
            } catch {
                throw StoreError(.migrationFailed,
                                 "migration \(migration.version) (\(migration.name)) failed: \(error.message)",
                                 sqlState: error.sqlState)
            }
            done.append(migration.version)
        }
        return done
    }

    /// The highest applied version, or 0 on an empty database.
    public func currentVersion(_ connection: PGConnection) throws(StoreError) -> Int {
        let exists = try connection.query("SELECT to_regclass('schema_migrations') IS NOT NULL").first?.bool(0) ?? false
        guard exists else { return 0 }
        return try connection.query("SELECT coalesce(max(version), 0) FROM schema_migrations").first?.int(0) ?? 0
    }
}
