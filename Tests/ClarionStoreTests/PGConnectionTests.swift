import Foundation
import Testing
import ClarionStore
import ClarionTestSupport

@Suite("PostgreSQL connection and pool")
struct PGConnectionTests {
    @Test("constraint violations come back as typed codes with the constraint name")
    func typedErrors() throws {
        let connection = try PGConnection(conninfo: try TestPostgres.freshDatabase())
        try connection.execute("""
            CREATE TABLE parent (id int PRIMARY KEY, name text NOT NULL UNIQUE CHECK (length(name) < 5));
            CREATE TABLE child (id int PRIMARY KEY, parent int NOT NULL REFERENCES parent(id));
            """)
        try connection.query("INSERT INTO parent VALUES ($1, $2)", [1, "a"])
        func code(_ body: () throws -> Void) -> StoreError? {
            do { try body(); return nil } catch let error as StoreError { return error } catch { return nil }
        }
        let unique = code { try connection.query("INSERT INTO parent VALUES ($1, $2)", [2, "a"]) }
        #expect(unique?.code == .uniqueViolation)
        #expect(unique?.constraint == "parent_name_key")
        #expect(code { try connection.query("INSERT INTO child VALUES (1, 99)") }?.code == .foreignKeyViolation)
        #expect(code { try connection.query("INSERT INTO parent VALUES ($1, $2)", [3, "toolong"]) }?.code == .checkViolation)
        #expect(code { try connection.query("INSERT INTO parent VALUES ($1, $2)", [4, String?.none]) }?.code == .notNullViolation)
        #expect(code { try connection.query("SELECT * FROM nowhere") }?.code == .queryFailed)
    }

    @Test("query prepares repeated statements on its session: bounded, DML and queries only, safe across DDL")
    func statementCache() throws {
        let connection = try PGConnection(conninfo: try TestPostgres.freshDatabase())
        try connection.execute("CREATE TABLE t (id int PRIMARY KEY, v text)")
        for n in 0..<3 { try connection.query("INSERT INTO t VALUES ($1, $2)", [n, "v\(n)"]) }
        #expect(try connection.query("SELECT v FROM t WHERE id = $1", [2]).first?.string(0) == "v2")
        let prepared = { () throws -> [String] in
            try connection.query("SELECT statement FROM pg_prepared_statements WHERE name LIKE 'clarion_q%' ORDER BY statement")
                .rows.compactMap { $0.string(0) }
        }
        let statements = try prepared()
        #expect(statements.contains("INSERT INTO t VALUES ($1, $2)"))
        #expect(statements.contains("SELECT v FROM t WHERE id = $1"))
        #expect(statements.filter { $0 == "INSERT INTO t VALUES ($1, $2)" }.count == 1)

        // A cached SELECT * whose table changes shape: answered again (unnamed) outside a transaction block.
        #expect(try connection.query("SELECT * FROM t WHERE id = $1", [1]).first?.string(1) == "v1")
        try connection.execute("ALTER TABLE t ADD COLUMN w text DEFAULT 'w'")
        let after = try connection.query("SELECT * FROM t WHERE id = $1", [1])
        #expect(after.first?.string(2) == "w")
        #expect(try connection.query("SELECT * FROM t WHERE id = $1", [2]).first?.string(2) == "w")

        // Errors are the same as unnamed: a bad statement is not cached and reports its own error.
        #expect(throws: StoreError.self) { try connection.query("SELECT nope FROM t") }
        #expect(try prepared().contains("SELECT nope FROM t") == false)

        // Bounded: past the limit statements run unnamed, and still work.
        for n in 0..<(PGConnection.statementCacheLimit + 10) {
            #expect(try connection.query("SELECT $1::int + \(n)", [1]).first?.int(0) == 1 + n)
        }
        #expect(try prepared().count <= PGConnection.statementCacheLimit)

        #expect(PGConnection.isPreparable("  WITH x AS (SELECT 1) SELECT * FROM x"))
        #expect(PGConnection.isPreparable("(SELECT 1)"))
        #expect(PGConnection.isPreparable("update t set v = $1"))
        #expect(!PGConnection.isPreparable("LISTEN clarion_work"))
        #expect(!PGConnection.isPreparable("CREATE TABLE x (id int)"))
        #expect(!PGConnection.isPreparable("SELECTED"))
    }

    @Test("parameters are bound, never spliced: a quote in a value stays data")
    func parametersBound() throws {
        let connection = try PGConnection(conninfo: try TestPostgres.freshDatabase())
        let hostile = "x'); DROP TABLE t; --"
        try connection.execute("CREATE TABLE t (v text)")
        try connection.query("INSERT INTO t VALUES ($1)", [hostile])
        #expect(try connection.query("SELECT v FROM t").first?.string(0) == hostile)
    }

    @Test("values round-trip: text, integers, booleans, timestamps, bytea, uuid, NULL")
    func roundTrip() throws {
        let connection = try PGConnection(conninfo: try TestPostgres.freshDatabase())
        let date = Date(timeIntervalSince1970: 1_764_500_000.123456)
        let id = UUID()
        let bytes: [UInt8] = [0, 1, 2, 250, 255]
        let row = try connection.query(
            "SELECT $1::text, $2::bigint, $3::boolean, $4::timestamptz, $5::bytea, $6::uuid, $7::text",
            ["héllo ✓", Int64(-9_000_000_000), true, date, PGBytes(bytes), id, String?.none]).first!
        #expect(row.string(0) == "héllo ✓")
        #expect(row.int64(1) == -9_000_000_000)
        #expect(row.bool(2) == true)
        #expect(abs(row.date(3)!.timeIntervalSince1970 - date.timeIntervalSince1970) < 0.000002)
        #expect(row.bytes(4) == bytes)
        #expect(row.uuid(5) == id)
        #expect(row.isNull(6) && row.string(6) == nil)
    }

    @Test("pipeline: many statements, one round trip, all or nothing")
    func pipeline() throws {
        let connection = try PGConnection(conninfo: try TestPostgres.freshDatabase())
        try connection.execute("CREATE TABLE p (id int PRIMARY KEY)")
        let good = (1...500).map { PGCommand("INSERT INTO p VALUES ($1)", [$0]) }
        let results = try connection.pipeline(good)
        #expect(results.count == 500)
        #expect(try connection.query("SELECT count(*) FROM p").first?.int(0) == 500)
        // A duplicate in the middle aborts the whole batch: nothing of it is committed.
        let bad = [PGCommand("INSERT INTO p VALUES (1001)"), PGCommand("INSERT INTO p VALUES (1)"), PGCommand("INSERT INTO p VALUES (1002)")]
        do {
            _ = try connection.pipeline(bad)
            Issue.record("expected a unique violation")
        } catch {
            #expect(error.code == .uniqueViolation)
        }
        #expect(try connection.query("SELECT count(*) FROM p").first?.int(0) == 500)
        // The connection is usable afterwards.
        #expect(try connection.pipeline([PGCommand("SELECT 1")]).count == 1)
    }

    @Test("pipeline: a prepared command is prepared once per session, then only bound and executed")
    func preparedCommands() throws {
        let connection = try PGConnection(conninfo: try TestPostgres.freshDatabase())
        try connection.execute("CREATE TABLE q (id int PRIMARY KEY)")
        let insert = "INSERT INTO q VALUES ($1) RETURNING id"
        // First use: Prepare + execute in one pipeline, results only for the commands.
        let first = try connection.pipeline([PGCommand(prepared: "q_insert", insert, [1]), PGCommand(prepared: "q_insert", insert, [2])])
        #expect(first.map { $0.first?.int(0) } == [1, 2])
        #expect(try connection.query("SELECT count(*) FROM pg_prepared_statements WHERE name = 'q_insert'").first?.int(0) == 1)
        // Later uses do not prepare again (a second Prepare under the same name would fail).
        let second = try connection.pipeline([PGCommand(prepared: "q_insert", insert, [3])])
        #expect(second.first?.first?.int(0) == 3)
        // A failing execution leaves the statement prepared and the session usable.
        do {
            _ = try connection.pipeline([PGCommand(prepared: "q_insert", insert, [3])])
            Issue.record("expected a unique violation")
        } catch {
            #expect(error.code == .uniqueViolation)
        }
        #expect(try connection.pipeline([PGCommand(prepared: "q_insert", insert, [4])]).first?.first?.int(0) == 4)
        // A statement whose Prepare fails is not remembered: fixing the table lets it prepare next time.
        let later = "INSERT INTO r VALUES ($1) RETURNING id"
        do {
            _ = try connection.pipeline([PGCommand(prepared: "r_insert", later, [1])])
            Issue.record("expected a missing table")
        } catch {
            #expect(error.code == .queryFailed)
        }
        try connection.execute("CREATE TABLE r (id int PRIMARY KEY)")
        #expect(try connection.pipeline([PGCommand(prepared: "r_insert", later, [7])]).first?.first?.int(0) == 7)
    }

    @Test("COPY in and out, and single-row streaming in keyset order")
    func copyAndStream() throws {
        let connection = try PGConnection(conninfo: try TestPostgres.freshDatabase())
        try connection.execute("CREATE TABLE c (id bigint PRIMARY KEY, token text)")
        var next = 1
        let loaded = try connection.copyIn("COPY c (id, token) FROM STDIN") {
            guard next <= 10_000 else { return nil }
            var chunk = [UInt8]()
            for _ in 0..<1000 {
                chunk.append(contentsOf: Array(String(next).utf8)); chunk.append(0x09)
                PGCopy.append(next == 7 ? "tab\there\\back" : "tok\(next)", to: &chunk); chunk.append(0x0a)
                next += 1
            }
            return chunk
        }
        #expect(loaded == 10_000)
        #expect(try connection.query("SELECT token FROM c WHERE id = 7").first?.string(0) == "tab\there\\back")
        var lines = 0
        try connection.copyOut("COPY (SELECT id FROM c ORDER BY id) TO STDOUT") { _ in lines += 1 }
        #expect(lines == 10_000)
        var last: Int64 = 0
        var ordered = true
        let streamed = try connection.stream("SELECT id FROM c WHERE id > $1 ORDER BY id", [Int64(0)]) { row in
            let id = row.int64(0)!
            if id <= last { ordered = false }
            last = id
            return true
        }
        #expect(streamed == 10_000 && ordered)
        // Stopping early leaves the connection usable.
        var seen = 0
        try connection.stream("SELECT id FROM c ORDER BY id") { _ in seen += 1; return seen < 10 }
        #expect(seen == 10)
        #expect(try connection.query("SELECT 1").first?.int(0) == 1)
    }

    @Test("LISTEN/NOTIFY wakes a listener")
    func listenNotify() throws {
        let url = try TestPostgres.freshDatabase()
        let listener = try PGConnection(conninfo: url)
        try listener.listen("clarion_work")
        let sender = try PGConnection(conninfo: url)
        try sender.notify("clarion_work", payload: "shard:42")
        let notes = try listener.waitForNotifications(timeout: 5)
        #expect(notes.map(\.payload) == ["shard:42"])
        #expect(try listener.waitForNotifications(timeout: 0.05).isEmpty)
    }

    @Test("a down database is a clear .unavailable error within the connect timeout, not a hang")
    func downDatabase() async throws {
        let started = Date()
        let pool = PGPool(conninfo: "postgresql://postgres@127.0.0.1:1/none", size: 1)
        defer { pool.shutdown() }
        do {
            _ = try await pool.withConnection { c throws(StoreError) in try c.query("SELECT 1").rowCount }
            Issue.record("expected failure")
        } catch {
            #expect(error.code == .unavailable)
            #expect(error.message.contains("cannot connect"))
        }
        #expect(Date().timeIntervalSince(started) < 10)
    }

    @Test("pool: a killed server session is .connectionLost once, then the pool reconnects")
    func reconnectsAfterSessionLoss() async throws {
        let url = try TestPostgres.freshDatabase()
        let pool = PGPool(conninfo: url, size: 1)
        defer { pool.shutdown() }
        let pid = try await pool.withConnection { c throws(StoreError) in c.backendPID }
        try TestPostgres.admin { admin in _ = try admin.query("SELECT pg_terminate_backend($1)", [Int(pid)]) }
        do {
            _ = try await pool.withConnection { c throws(StoreError) in try c.query("SELECT 1").rowCount }
            Issue.record("expected the first query on the dead session to fail")
        } catch {
            #expect(error.code == .connectionLost)
        }
        let newPID = try await pool.withConnection { c throws(StoreError) in c.backendPID }
        #expect(newPID != pid)
        #expect(try await pool.withConnection { c throws(StoreError) in try c.query("SELECT 41 + 1").first?.int(0) } == 42)
    }

    @Test("pool: concurrent callers are served by N connections without blocking the cooperative pool")
    func concurrency() async throws {
        let url = try TestPostgres.freshDatabase()
        let pool = PGPool(conninfo: url, size: 4)
        defer { pool.shutdown() }
        let total = try await withThrowingTaskGroup(of: Int.self) { group in
            for i in 0..<200 {
                group.addTask {
                    try await pool.withConnection { c throws(StoreError) in try c.query("SELECT $1::int", [i]).first!.int(0)! }
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(total == (0..<200).reduce(0, +))
        let backends = try await pool.withConnection { c throws(StoreError) in
            try c.query("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()").first!.int(0)!
        }
        #expect(backends <= 4)
    }
}

@Suite("PostgreSQL server restart")
struct ServerRestartTests {
    @Test("a server restart mid-run: commands on old sessions fail as .connectionLost, then the pool reconnects")
    func serverRestart() async throws {
        let directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("clarion-restart-\(UUID().uuidString.prefix(8))")
        let cluster = try EmbeddedPostgres(dataDirectory: directory, databaseName: "restart")
        try cluster.start()
        defer {
            cluster.stop()
            try? FileManager.default.removeItem(at: directory)
        }
        let pool = PGPool(conninfo: cluster.url(), size: 2)
        defer { pool.shutdown() }
        // Open both connections.
        async let a = pool.withConnection { c throws(StoreError) in try c.query("SELECT pg_sleep(0.2), 1").rowCount }
        async let b = pool.withConnection { c throws(StoreError) in try c.query("SELECT pg_sleep(0.2), 2").rowCount }
        #expect(try await a + b == 2)

        try cluster.restart()

        var lost = 0
        var succeeded = 0
        for _ in 0..<8 {
            do {
                _ = try await pool.withConnection { c throws(StoreError) in try c.query("SELECT 1").rowCount }
                succeeded += 1
            } catch {
                #expect(error.code == .connectionLost, "got \(error)")
                lost += 1
            }
        }
        // Each of the two old sessions fails at most once; everything after runs on new connections.
        #expect(lost <= 2)
        #expect(succeeded >= 6)
        // And the data written before the restart is there (committed data survives a fast shutdown).
        let rows = try await pool.withConnection { c throws(StoreError) -> Int in
            try c.execute("CREATE TABLE IF NOT EXISTS r (x int)")
            try c.query("INSERT INTO r VALUES (1)")
            return try c.query("SELECT count(*) FROM r").first!.int(0)!
        }
        #expect(rows == 1)
    }
}
