import Foundation
import Synchronization
import ClarionStore

/// The PostgreSQL of a test run: one cluster per run, a fresh database per suite.
///
/// `scripts/test` starts one cluster and exports `CLARION_TEST_DATABASE_URL` (a server URL without a
/// database, such as `postgresql://postgres@127.0.0.1:55432`). Without it, the first suite that asks
/// starts a private cluster under a temporary directory with the same embedded machinery `clarion
/// serve` uses, and stops it when the test process exits.
public enum TestPostgres {
    private static let shared = Mutex<String?>(nil)
    private static let embedded = Mutex<EmbeddedPostgres?>(nil)

    /// The server URL (no database part).
    public static func serverURL() throws -> String {
        try shared.withLock { url -> String in
            if let url { return url }
            if let configured = ProcessInfo.processInfo.environment["CLARION_TEST_DATABASE_URL"], !configured.isEmpty {
                url = configured.hasSuffix("/") ? String(configured.dropLast()) : configured
                return url!
            }
            let directory = URL(fileURLWithPath: NSTemporaryDirectory())
                .appendingPathComponent("clarion-test-pg-\(getpid())")
            // The suite opens far more sessions than one node (a pool per fixture, nodes of its own); the
            // same headroom as scripts/test's cluster, and no fsync for a throwaway cluster.
            let cluster = try EmbeddedPostgres(dataDirectory: directory, databaseName: "postgres",
                                               settings: ["max_connections": "300", "fsync": "off"])
            try cluster.start()
            embedded.withLock { $0 = cluster }
            atexit {
                TestPostgres.stopEmbedded()
            }
            url = cluster.serverURL
            return url!
        }
    }

    static func stopEmbedded() {
        let cluster = embedded.withLock { cluster -> EmbeddedPostgres? in
            defer { cluster = nil }
            return cluster
        }
        guard let cluster else { return }
        cluster.stop()
        try? FileManager.default.removeItem(at: cluster.directory.deletingLastPathComponent())
    }

    /// Creates an empty database with a unique name and returns its URL.
    public static func freshDatabase(prefix: String = "t") throws -> String {
        let server = try serverURL()
        let name = "\(prefix)_\(UUID().uuidString.prefix(8).lowercased())_\(Int(Date().timeIntervalSince1970) % 100000)"
        let admin = try PGConnection(conninfo: server + "/postgres")
        try admin.execute("CREATE DATABASE \(PGConnection.quoteIdentifier(name))")
        return server + "/" + name
    }

    /// A fresh database with every migration applied.
    public static func migratedDatabase(prefix: String = "t") throws -> String {
        let url = try freshDatabase(prefix: prefix)
        let connection = try PGConnection(conninfo: url)
        try Migrator().migrate(connection)
        return url
    }

    /// Runs SQL as the superuser against the server's maintenance database (terminating sessions etc.).
    public static func admin<T>(_ body: (PGConnection) throws -> T) throws -> T {
        let connection = try PGConnection(conninfo: try serverURL() + "/postgres")
        return try body(connection)
    }

    /// Ends every session on the database `url` names. A fixture's pools live as long as the test process unless
    /// someone closes them; dozens of fixtures' idle sessions together reach the server's max_connections.
    public static func endSessions(of url: String) {
        guard let name = url.split(separator: "/").last.map(String.init) else { return }
        _ = try? admin { connection in
            try connection.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
                                 [name])
        }
    }
}

/// Ends the sessions on a test database when the last copy of the fixture holding it goes away (a struct fixture
/// has no deinit of its own): what the test left open (its pool, a dispatcher's) does not outlive the test.
public final class TestDatabaseSessions: Sendable {
    public let url: String

    public init(url: String) { self.url = url }

    deinit { TestPostgres.endSessions(of: url) }
}
