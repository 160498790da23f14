import Foundation
import Testing
import ClarionStore
import ClarionTestSupport

/// A command that fails part-way (a pipeline, a COPY) must leave its connection ready for the next caller, or
/// have it dropped from the pool: never in a state where every later command on it fails.
@Suite("PostgreSQL: failed pipelines and COPYs leave no broken connection behind")
struct PGErrorRecoveryTests {
    /// libpq refuses to send a command with more than 65,535 parameters: a send that fails on the client after
    /// other commands of the pipeline were queued.
    static let unsendable = PGCommand("SELECT 1", [any PGEncodable](repeating: 1, count: 65_536))

    /// Rule: libpq leaves pipeline mode only when nothing is queued and every result was read up to its sync
    /// point; a connection left in pipeline mode refuses every synchronous call ("synchronous command execution
    /// functions are not allowed in pipeline mode"). A send failing half-way must not leave it so in the pool.
    @Test("a pipeline whose second command cannot be sent: nothing committed, the pool's next caller is served")
    func pipelineFailingToSend() async throws {
        let pool = PGPool(conninfo: try TestPostgres.freshDatabase(), size: 1)
        defer { pool.shutdown() }
        try await pool.withConnection { c throws(StoreError) in try c.execute("CREATE TABLE p (id int PRIMARY KEY)") }
        for _ in 0..<2 {
            await #expect(throws: StoreError.self) {
                try await pool.withConnection { c throws(StoreError) in
                    try c.pipeline([PGCommand("INSERT INTO p VALUES (1)"), Self.unsendable,
                                    PGCommand("INSERT INTO p VALUES (2)")]).count
                }
            }
            // Synchronous, pipelined and streamed commands all work on the pool's (only) connection.
            let count = try await pool.withConnection { c throws(StoreError) in try c.query("SELECT count(*) FROM p").first?.int(0) }
            #expect(count == 0, "the commands queued before the failed send were not committed")
            let piped = try await pool.withConnection { c throws(StoreError) in try c.pipeline([PGCommand("SELECT 1")]).count }
            #expect(piped == 1)
            let streamed = try await pool.withConnection { c throws(StoreError) in try c.stream("SELECT 1") { _ in true } }
            #expect(streamed == 1)
        }
    }

    /// Rule: libpq leaves pipeline mode only with every result read. A server error in a pipeline (a unique
    /// violation in the second command) is drained to the sync point: the same session goes on.
    @Test("a pipeline whose second command fails on the server: the same pooled session goes on")
    func pipelineFailingOnTheServer() async throws {
        let pool = PGPool(conninfo: try TestPostgres.freshDatabase(), size: 1)
        defer { pool.shutdown() }
        try await pool.withConnection { c throws(StoreError) in try c.execute("CREATE TABLE p (id int PRIMARY KEY)") }
        let pid = try await pool.withConnection { c throws(StoreError) in c.backendPID }
        do {
            _ = try await pool.withConnection { c throws(StoreError) in
                try c.pipeline([PGCommand("INSERT INTO p VALUES (1)"), PGCommand("INSERT INTO p VALUES (1)")]).count
            }
            Issue.record("expected a unique violation")
        } catch {
            #expect(error.code == .uniqueViolation)
        }
        let streamed = try await pool.withConnection { c throws(StoreError) in try c.stream("SELECT 1") { _ in true } }
        #expect(streamed == 1)
        let count = try await pool.withConnection { c throws(StoreError) in try c.query("SELECT count(*) FROM p").first?.int(0) }
        #expect(count == 0)
        #expect(try await pool.withConnection { c throws(StoreError) in c.backendPID } == pid)
    }

    /// What must work after a failed COPY, each tried first on its own (the synchronous `query` would have
    /// swallowed leftover results itself; `stream` and `pipeline` do not).
    enum FollowUp: String, CaseIterable, Sendable {
        case stream, pipeline, query
    }

    static func run(_ followUp: FollowUp, on c: PGConnection) throws(StoreError) -> Int? {
        switch followUp {
        case .stream:
            var value: Int?
            _ = try c.stream("SELECT 42") { row in value = row.int(0); return true }
            return value
        case .pipeline:
            return try c.pipeline([PGCommand("SELECT 42")]).first?.first?.int(0)
        case .query:
            return try c.query("SELECT 42").first?.int(0)
        }
    }

    /// Rule: after an error, libpq's results must be read until PQgetResult returns NULL before the connection
    /// takes the next asynchronous command ("another command is already in progress").
    @Test("a COPY IN with a bad row fails, and the same pooled session takes the next command",
          arguments: FollowUp.allCases)
    func copyInWithABadRow(followUp: FollowUp) async throws {
        let pool = PGPool(conninfo: try TestPostgres.freshDatabase(), size: 1)
        defer { pool.shutdown() }
        try await pool.withConnection { c throws(StoreError) in try c.execute("CREATE TABLE c (id int PRIMARY KEY, token text)") }
        let pid = try await pool.withConnection { c throws(StoreError) in c.backendPID }
        do {
            _ = try await pool.withConnection { c throws(StoreError) in
                var sent = false
                return try c.copyIn("COPY c (id, token) FROM STDIN") {
                    defer { sent = true }
                    return sent ? nil : Array("1\tfine\nnot-a-number\tbad\n".utf8)
                }
            }
            Issue.record("expected the bad row to fail the COPY")
        } catch {
            #expect(error.sqlState == "22P02")
        }
        let value = try await pool.withConnection { c throws(StoreError) in try Self.run(followUp, on: c) }
        #expect(value == 42)
        #expect(try await pool.withConnection { c throws(StoreError) in try c.query("SELECT count(*) FROM c").first?.int(0) } == 0)
        #expect(try await pool.withConnection { c throws(StoreError) in c.backendPID } == pid)
    }

    /// Rule: after an error, libpq's results must be read until PQgetResult returns NULL. A COPY OUT whose query
    /// fails after some rows went out.
    @Test("a COPY OUT failing half-way fails, and the same pooled session takes the next command",
          arguments: FollowUp.allCases)
    func copyOutFailingHalfWay(followUp: FollowUp) async throws {
        let pool = PGPool(conninfo: try TestPostgres.freshDatabase(), size: 1)
        defer { pool.shutdown() }
        let pid = try await pool.withConnection { c throws(StoreError) in c.backendPID }
        do {
            _ = try await pool.withConnection { c throws(StoreError) in
                try c.copyOut("COPY (SELECT 10 / (5000 - g) FROM generate_series(1, 10000) g) TO STDOUT") { _ in }
            }
            Issue.record("expected division by zero")
        } catch {
            #expect(error.sqlState == "22012")
        }
        let value = try await pool.withConnection { c throws(StoreError) in try Self.run(followUp, on: c) }
        #expect(value == 42)
        #expect(try await pool.withConnection { c throws(StoreError) in c.backendPID } == pid)
    }

    /// Rule: a pipeline's implicit transaction commits at its sync point (PostgreSQL protocol, "Pipelining"), so an
    /// error that arrives there is the commit failing and nothing was stored. Every command's own result was fine
    /// before it. The pipeline ignored such an error and returned the commands' results as if committed: a publish
    /// batch killed by an immediate shutdown of PostgreSQL between its INSERT's result and its commit was
    /// acknowledged and lost (Tests/e2e/test_fault_database_restart.py). A deferred foreign key fails the same
    /// way at the sync point, deterministically.
    @Test("an error at the pipeline's sync point (its commit) is thrown: nothing committed, nothing reported stored")
    func errorAtSyncPoint() async throws {
        let pool = PGPool(conninfo: try TestPostgres.freshDatabase(), size: 1)
        defer { pool.shutdown() }
        try await pool.withConnection { c throws(StoreError) in
            try c.execute("CREATE TABLE parent (id int PRIMARY KEY)")
            try c.execute("CREATE TABLE child (parent int REFERENCES parent DEFERRABLE INITIALLY DEFERRED)")
        }
        do {
            let results = try await pool.withConnection { c throws(StoreError) in
                try c.pipeline([PGCommand("INSERT INTO child VALUES (1) RETURNING parent")]).map { $0.rowCount }
            }
            Issue.record("the pipeline reported \(results) although its commit failed")
        } catch {
            #expect(error.code == .foreignKeyViolation)
        }
        let count = try await pool.withConnection { c throws(StoreError) in try c.query("SELECT count(*) FROM child").first?.int(0) }
        #expect(count == 0)
        // The session goes on.
        let piped = try await pool.withConnection { c throws(StoreError) in try c.pipeline([PGCommand("SELECT 1")]).count }
        #expect(piped == 1)
    }

    /// The fault test's case itself: the session dies while committing, after every command's result arrived. A
    /// deferred trigger that terminates its own backend runs at the commit, so the client reads the INSERT's rows,
    /// then a FATAL and a closed connection instead of the sync point. This was returned as success.
    @Test("a session that dies at the pipeline's commit is connectionLost, not success; nothing committed")
    func sessionDiesAtCommit() async throws {
        let pool = PGPool(conninfo: try TestPostgres.freshDatabase(), size: 1)
        defer { pool.shutdown() }
        try await pool.withConnection { c throws(StoreError) in
            try c.execute("CREATE TABLE doomed (id int)")
            try c.execute("""
                CREATE FUNCTION die() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN PERFORM pg_terminate_backend(pg_backend_pid()); PERFORM pg_sleep(5); RETURN NULL; END $$
                """)
            try c.execute("CREATE CONSTRAINT TRIGGER die AFTER INSERT ON doomed DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION die()")
        }
        do {
            let results = try await pool.withConnection { c throws(StoreError) in
                try c.pipeline([PGCommand("INSERT INTO doomed VALUES (1) RETURNING id")]).map { $0.rowCount }
            }
            Issue.record("the pipeline reported \(results) although its session died before the commit")
        } catch {
            #expect(error.code == .connectionLost)
        }
        let count = try await pool.withConnection { c throws(StoreError) in try c.query("SELECT count(*) FROM doomed").first?.int(0) }
        #expect(count == 0)
    }
}
