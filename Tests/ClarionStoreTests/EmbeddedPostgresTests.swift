import Foundation
import Testing
@testable import ClarionStore

/// The embedded cluster belongs to the node alone: no other local user may connect to it, and it starts from a
/// data directory under a folder the `postgres` user cannot traverse (a clone under /root, run as root).
@Suite("Embedded PostgreSQL", .serialized)
struct EmbeddedPostgresTests {
    private func withCluster(under parent: URL, _ body: (EmbeddedPostgres, URL) throws -> Void) throws {
        let data = parent.appendingPathComponent("var")
        let cluster = try EmbeddedPostgres(dataDirectory: data, databaseName: "embedded")
        defer {
            cluster.stop()
            if let relocated = cluster.relocatedTo ?? (try? FileManager.default.destinationOfSymbolicLink(atPath: cluster.directory.path)) {
                try? FileManager.default.removeItem(atPath: relocated)
            }
            try? FileManager.default.removeItem(at: parent)
        }
        try cluster.start()
        try body(cluster, data)
    }

    private func temporaryFolder(mode: mode_t) throws -> URL {
        let url = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("clarion-embedded-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        chmod(url.path, mode)
        return url
    }

    private func mode(_ path: String) -> mode_t {
        var info = stat()
        stat(path, &info)
        return info.st_mode & 0o777
    }

    @Test("a connection without the generated password is refused (SCRAM for TCP and the socket); the node's URL works")
    func passwordRequired() throws {
        try withCluster(under: try temporaryFolder(mode: 0o755)) { cluster, data in
            // Rule: no trust authentication, so a local user who can reach the port gets nothing.
            #expect(throws: StoreError.self) {
                _ = try PGConnection(conninfo: "postgresql://postgres@127.0.0.1:\(cluster.port)/embedded?connect_timeout=5")
            }
            #expect(throws: StoreError.self) {
                _ = try PGConnection(conninfo: "host=\(cluster.socketDirectory.path) port=\(cluster.port) user=postgres dbname=embedded")
            }
            let connection = try PGConnection(conninfo: cluster.url())
            #expect(try connection.query("SHOW listen_addresses")[0].string(0) == "127.0.0.1")
            #expect(try connection.query("SHOW password_encryption")[0].string(0) == "scram-sha-256")
            let hba = try connection.query("SELECT DISTINCT auth_method FROM pg_hba_file_rules")
            #expect((0..<hba.rowCount).map { hba[$0].string(0) } == ["scram-sha-256"])
            // The password file is readable by this process alone; the socket directory by the cluster's owner alone.
            #expect(mode(data.appendingPathComponent("postgres.password").path) == 0o600)
            #expect(mode(cluster.socketDirectory.path) == 0o700)
            #expect(mode(cluster.directory.resolvingSymlinksInPath().path) == 0o700)
        }
    }

    @Test("a cluster made with trust authentication (before passwords) requires the password after the next start")
    func upgradeFromTrust() throws {
        try withCluster(under: try temporaryFolder(mode: 0o755)) { cluster, _ in
            // Put the cluster back the way older versions made it: trust everywhere.
            let hba = cluster.clusterDirectory.appendingPathComponent("pg_hba.conf")
            try "local all all trust\nhost all all 127.0.0.1/32 trust\n".write(to: hba, atomically: false, encoding: .utf8)
            _ = try PGConnection(conninfo: cluster.url()).query("SELECT pg_reload_conf()")
            Thread.sleep(forTimeInterval: 0.3)
            _ = try PGConnection(conninfo: "postgresql://postgres@127.0.0.1:\(cluster.port)/embedded")
            try cluster.restart()
            #expect(throws: StoreError.self) {
                _ = try PGConnection(conninfo: "postgresql://postgres@127.0.0.1:\(cluster.port)/embedded")
            }
            #expect(try PGConnection(conninfo: cluster.url()).query("SELECT 1").rowCount == 1)
        }
    }

    @Test("as root, a data directory under a 0700 folder: the cluster is placed where postgres can reach it, linked from the data directory")
    func unreachableDataDirectory() throws {
        guard geteuid() == 0 else { return }  // Only root runs the cluster as another user.
        let parent = try temporaryFolder(mode: 0o700)
        try withCluster(under: parent) { cluster, data in
            let link = try FileManager.default.destinationOfSymbolicLink(atPath: cluster.directory.path)
            #expect(link.hasPrefix(EmbeddedPostgres.relocationRoot + "/"))
            #expect(cluster.relocatedTo == link)
            #expect(mode(parent.path) == 0o700, "the user's folder is not opened up")
            #expect(try PGConnection(conninfo: cluster.url()).query("SELECT 1").rowCount == 1)
            // A second start (a restarted node) finds the same cluster through the link.
            try cluster.restart()
            #expect(try PGConnection(conninfo: cluster.url()).query("SELECT 1").rowCount == 1)
            #expect(FileManager.default.fileExists(atPath: data.appendingPathComponent("postgres/data/PG_VERSION").path))
        }
    }
}
