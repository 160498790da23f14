/// `serve --dev`'s `POST /_clarion/reset`: every resource of every account gone in one transaction, as a test suite
/// wants between its tests. What is not a resource stays: the accounts, their access keys and API keys (the test
/// suite's credentials go on working), the message-signing key (receivers keep trusting the certificate) and the
/// migration history.
///
/// The tables to empty are read from the catalogue, not listed here: a table a later migration adds is emptied
/// too, unless it is added to `kept`.
public struct ResourceReset: Sendable {
    /// Tables that hold no resource.
    public static let kept: Set<String> = ["accounts", "access_keys", "api_keys", "sns_signing_keys", "schema_migrations"]

    let pool: PGPool

    public init(pool: PGPool) { self.pool = pool }

    /// Empties every other table of the schema; returns the tables emptied, sorted.
    @discardableResult
    public func reset() async throws(StoreError) -> [String] {
        try await pool.transaction { (c) throws(StoreError) -> [String] in
            // Ordinary and partitioned tables; a partition goes with its parent (TRUNCATE cascades to partitions).
            let rows = try c.query("""
                SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND NOT c.relispartition
                ORDER BY c.relname
                """)
            var tables: [String] = []
            for row in rows.rows {
                let name = try row.requireString(0)
                if !Self.kept.contains(name) { tables.append(name) }
            }
            guard !tables.isEmpty else { return [] }
            try c.execute("TRUNCATE " + tables.map { "\"\($0)\"" }.joined(separator: ", "))
            return tables
        }
    }
}
