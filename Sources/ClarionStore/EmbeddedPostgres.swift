import Foundation
import ClarionCrypto
internal import CPQ

/// A private PostgreSQL cluster that Clarion manages under its data directory: `initdb` on first
/// run, started on a free port on 127.0.0.1 (and a Unix socket inside the directory), stopped on
/// shutdown. When the process runs as root the cluster belongs to the `postgres` user, because
/// PostgreSQL refuses to run as root.
///
/// Only this process may use the cluster: the superuser has a generated password (SCRAM-SHA-256 for
/// every connection, local and TCP) kept in a 0600 file beside the cluster, the server listens on
/// 127.0.0.1 alone, and its socket directory is 0700. Without that, any local user could connect as
/// superuser (trust authentication), read every account's data and run programs as `postgres`.
///
/// When the data directory lies below a folder the `postgres` user cannot traverse (a clone under
/// `/root`, mode 0700), the cluster itself lives under `/var/lib/clarion/postgres/<hash of the path>`
/// and `<data dir>/postgres` is a symbolic link to it; nothing in the user's folders is opened up.
public final class EmbeddedPostgres: @unchecked Sendable {
    public struct Failure: Error, CustomStringConvertible {
        public let message: String
        public var description: String { message }
    }

    /// The folder holding the cluster (`<data dir>/postgres`; a link when the cluster is relocated).
    public let directory: URL
    /// The generated superuser password (`<data dir>/postgres.password`, mode 0600).
    let passwordFile: URL
    /// Where relocated clusters live (see the type's comment).
    static let relocationRoot = "/var/lib/clarion/postgres"
    public let databaseName: String
    public private(set) var port: Int = 0
    private let binaries: URL
    private let runAsPostgres: Bool
    /// Server settings (`-c name=value`) on top of the node's defaults, later ones winning.
    private let extraSettings: [String: String]
    /// Held (flock) while this process owns the cluster; another process that finds it held uses the
    /// running server without stopping it at the end (`clarion accounts` beside a running `clarion serve`).
    private var ownerLock: Int32 = -1
    public var isOwner: Bool { ownerLock >= 0 }

    /// - Parameter settings: server settings on top of the defaults (a test run's cluster raises
    ///   `max_connections`: every suite opens pools of its own beside the ones a node would).
    public init(dataDirectory: URL, databaseName: String = "clarion", settings: [String: String] = [:]) throws(Failure) {
        self.extraSettings = settings
        self.directory = dataDirectory.appendingPathComponent("postgres")
        self.passwordFile = dataDirectory.appendingPathComponent("postgres.password")
        self.databaseName = databaseName
        self.binaries = try Self.findBinaries()
        self.runAsPostgres = geteuid() == 0
    }

    /// Where the Debian packages put the server programs; the newest version wins.
    static func findBinaries() throws(Failure) -> URL {
        var candidates: [URL] = []
        if let versions = try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql") {
            for version in versions.sorted(by: { (Int($0) ?? 0) > (Int($1) ?? 0) }) {
                candidates.append(URL(fileURLWithPath: "/usr/lib/postgresql/\(version)/bin"))
            }
        }
        for path in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") {
            candidates.append(URL(fileURLWithPath: String(path)))
        }
        for dir in candidates where FileManager.default.isExecutableFile(atPath: dir.appendingPathComponent("initdb").path)
            && FileManager.default.isExecutableFile(atPath: dir.appendingPathComponent("pg_ctl").path) {
            return dir
        }
        throw Failure(message: "PostgreSQL server programs (initdb, pg_ctl) were not found. "
            + "Install them with `apt-get install postgresql` (Debian package `postgresql`), "
            + "or point Clarion at an existing server with --database-url / CLARION_DATABASE_URL.")
    }

    /// `directory` with links resolved: the paths the server's programs get, since they run as `postgres`,
    /// which may not be able to pass through the data directory (see the type's comment).
    private var resolved: URL { directory.resolvingSymlinksInPath() }
    var clusterDirectory: URL { resolved.appendingPathComponent("data") }
    var socketDirectory: URL { resolved.appendingPathComponent("run") }
    var logFile: URL { resolved.appendingPathComponent("server.log") }

    /// The superuser password, read from its file (hex digits: nothing to escape in a URL).
    private var password: String = ""

    /// A libpq URL for the managed database (or another database of the cluster). It carries the
    /// password: never log it.
    public func url(database: String? = nil) -> String {
        "\(serverURL)/\(database ?? databaseName)"
    }

    /// The server's URL without a database part (`.../dbname` appended gives a database).
    public var serverURL: String { "postgresql://postgres:\(password)@127.0.0.1:\(port)" }

    /// initdb when needed, start (or adopt a cluster a killed process left running), create the database.
    public func start() throws(Failure) {
        let fm = FileManager.default
        try? fm.createDirectory(at: directory.deletingLastPathComponent(), withIntermediateDirectories: true)
        if runAsPostgres { try placeWherePostgresCanReach() }
        try? fm.createDirectory(at: socketDirectory, withIntermediateDirectories: true)
        chmod(directory.path, 0o700)
        chmod(socketDirectory.path, 0o700)
        if runAsPostgres {
            try run("/bin/chown", ["-R", "postgres:postgres", directory.path + "/"], asPostgres: false)
        }
        password = try loadOrCreatePassword()
        var upgradeFromTrust = false
        if !fm.fileExists(atPath: clusterDirectory.appendingPathComponent("PG_VERSION").path) {
            try? fm.removeItem(at: clusterDirectory)
            // initdb reads the password from a file the cluster's owner can read; it is removed at once.
            let pwfile = resolved.appendingPathComponent("initdb.pw")
            guard fm.createFile(atPath: pwfile.path, contents: Data(password.utf8), attributes: [.posixPermissions: 0o600]) else {
                throw Failure(message: "cannot write \(pwfile.path)")
            }
            defer { try? fm.removeItem(at: pwfile) }
            if runAsPostgres { try run("/bin/chown", ["postgres:postgres", pwfile.path], asPostgres: false) }
            try run(binaries.appendingPathComponent("initdb").path,
                    ["-D", clusterDirectory.path, "-A", "scram-sha-256", "--pwfile=\(pwfile.path)", "-U", "postgres",
                     "-E", "UTF8", "--no-sync"])
        } else {
            upgradeFromTrust = try hbaTrustsConnections()
        }
        let lock = open(directory.appendingPathComponent("owner.lock").path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        if lock >= 0, flock(lock, LOCK_EX | LOCK_NB) == 0 {
            ownerLock = lock
        } else if lock >= 0 {
            close(lock)
        }
        if let running = runningPort() {
            // A cluster left by a node that was killed (we own it now), or one a live node owns.
            port = running
        } else if !isOwner {
            throw Failure(message: "the cluster under \(directory.path) is owned by another process but not running")
        } else {
            port = port == 0 ? Self.freePort() : port
            let options = "-p \(port) -k \(socketDirectory.path) -c listen_addresses=127.0.0.1"
                + " -c unix_socket_permissions=0700 -c password_encryption=scram-sha-256"
                + " -c max_connections=200 -c shared_buffers=256MB -c synchronous_commit=on"
                + extraSettings.sorted(by: { $0.key < $1.key }).map { " -c \($0.key)=\($0.value)" }.joined()
            do {
                try run(binaries.appendingPathComponent("pg_ctl").path,
                        ["-D", clusterDirectory.path, "-l", logFile.path, "-w", "-t", "60", "-o", options, "start"])
            } catch {
                // pg_ctl says only that it stopped waiting; why the server did not start is in its log.
                throw Failure(message: error.message + "; the end of \(logFile.path): " + serverLogTail())
            }
        }
        if upgradeFromTrust { try requirePasswords() }
        try createDatabase(databaseName)
    }

    /// Moves the cluster out of a folder the `postgres` user cannot traverse (see the type's comment).
    /// A cluster already in place, or one the `postgres` user can reach, stays where it is.
    private func placeWherePostgresCanReach() throws(Failure) {
        let fm = FileManager.default
        let parent = directory.deletingLastPathComponent()
        if postgresCanReach(parent.path) { return }
        let digest = Digest.sha256(parent.resolvingSymlinksInPath().path).prefix(8).map { String(format: "%02x", $0) }.joined()
        let target = URL(fileURLWithPath: Self.relocationRoot).appendingPathComponent(digest)
        if let existing = try? fm.destinationOfSymbolicLink(atPath: directory.path) {
            if existing == target.path { try? fm.createDirectory(at: target, withIntermediateDirectories: true); return }
            throw Failure(message: "\(directory.path) links to \(existing), expected \(target.path)")
        }
        if fm.fileExists(atPath: directory.appendingPathComponent("data/PG_VERSION").path) {
            throw Failure(message: "the cluster in \(directory.path) cannot be reached by the postgres user "
                + "(a folder above it is not searchable); move the data directory or give --database-url")
        }
        // Nothing worth keeping here (at most a failed first attempt): link it to a place postgres can reach.
        try? fm.removeItem(at: directory)
        do {
            try fm.createDirectory(atPath: Self.relocationRoot, withIntermediateDirectories: true,
                                   attributes: [.posixPermissions: 0o755])
            try fm.createDirectory(at: target, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            try fm.createSymbolicLink(at: directory, withDestinationURL: target)
        } catch {
            throw Failure(message: "cannot place the cluster under \(target.path): \(error)")
        }
        relocatedTo = target.path
    }

    /// Set when `start` placed the cluster outside the data directory (the node logs it).
    public private(set) var relocatedTo: String?

    /// Whether the `postgres` user can search `path` (every folder on the way, ACLs included).
    private func postgresCanReach(_ path: String) -> Bool {
        guard let result = try? ChildProcess.run(["/sbin/runuser", "-u", "postgres", "--", "/usr/bin/test", "-x", path])
        else { return false }
        return result.status == 0
    }

    /// The superuser password from `postgres.password`, created (32 random bytes, hex, mode 0600) the
    /// first time.
    private func loadOrCreatePassword() throws(Failure) -> String {
        let fm = FileManager.default
        if let data = fm.contents(atPath: passwordFile.path),
           let text = String(data: data, encoding: .utf8)?.trimmingCharacters(in: .whitespacesAndNewlines), !text.isEmpty {
            chmod(passwordFile.path, 0o600)
            return text
        }
        let text = SecureRandom.bytes(32).map { String(format: "%02x", $0) }.joined()
        let fd = open(passwordFile.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Failure(message: "cannot write \(passwordFile.path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        let bytes = Array((text + "\n").utf8)
        guard bytes.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) == bytes.count else {
            throw Failure(message: "cannot write \(passwordFile.path)")
        }
        return text
    }

    /// A cluster made before passwords (trust authentication): true when pg_hba.conf still trusts.
    private func hbaTrustsConnections() throws(Failure) -> Bool {
        let hba = clusterDirectory.appendingPathComponent("pg_hba.conf")
        guard let text = try? String(contentsOf: hba, encoding: .utf8) else { return false }
        return text.split(separator: "\n").contains { line in
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            return !(fields.first?.hasPrefix("#") ?? true) && fields.last == "trust"
        }
    }

    /// Sets the superuser password on a cluster that trusted every connection, then makes every
    /// connection use it.
    private func requirePasswords() throws(Failure) {
        do {
            let connection = try PGConnection(conninfo: "postgresql://postgres@127.0.0.1:\(port)/postgres")
            try connection.execute("SET password_encryption = 'scram-sha-256'")
            try connection.execute("ALTER ROLE postgres PASSWORD '\(password)'")
            let hba = "# Written by Clarion: every connection needs the password in postgres.password.\n"
                + "local all all scram-sha-256\nhost all all 127.0.0.1/32 scram-sha-256\nhost all all ::1/128 scram-sha-256\n"
            try hba.write(to: clusterDirectory.appendingPathComponent("pg_hba.conf"), atomically: false, encoding: .utf8)
            _ = try connection.query("SELECT pg_reload_conf()")
        } catch {
            throw Failure(message: "cannot require passwords on the existing cluster: \(error)")
        }
    }

    /// Creates a database in the cluster if it does not exist.
    public func createDatabase(_ name: String) throws(Failure) {
        do {
            let connection = try PGConnection(conninfo: url(database: "postgres"))
            let exists = try connection.query("SELECT 1 FROM pg_database WHERE datname = $1", [name]).rowCount > 0
            if !exists { try connection.execute("CREATE DATABASE \(PGConnection.quoteIdentifier(name))") }
        } catch {
            throw Failure(message: "cannot create database \(name): \(error)")
        }
    }

    /// Stops the cluster (fast shutdown: open sessions are closed, committed data is safe).
    public func stop() {
        guard isOwner else { return }
        defer {
            close(ownerLock)
            ownerLock = -1
        }
        guard FileManager.default.fileExists(atPath: clusterDirectory.appendingPathComponent("postmaster.pid").path) else { return }
        try? run(binaries.appendingPathComponent("pg_ctl").path, ["-D", clusterDirectory.path, "-m", "fast", "-w", "stop"])
    }

    /// Stops and starts the server on the same port (tests use it to restart the database mid-run).
    public func restart() throws(Failure) {
        let keep = port
        stop()
        port = keep
        try start()
    }

    /// The port of a server already running on this cluster, read from postmaster.pid when its
    /// process is alive.
    func runningPort() -> Int? {
        let pidFile = clusterDirectory.appendingPathComponent("postmaster.pid")
        guard let text = try? String(contentsOf: pidFile, encoding: .utf8) else { return nil }
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard lines.count > 3, let pid = Int32(lines[0]), let port = Int(lines[3]) else { return nil }
        guard kill(pid, 0) == 0 else { return nil }
        return port
    }

    /// A port on 127.0.0.1 that nothing listens on right now (the kernel picks it).
    public static func freePort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// The last lines of the server's log, for a start that failed.
    private func serverLogTail(lines: Int = 8) -> String {
        guard let text = try? String(contentsOf: logFile, encoding: .utf8) else { return "(unreadable)" }
        return text.split(separator: "\n").suffix(lines).joined(separator: " | ")
    }

    private func run(_ program: String, _ arguments: [String], asPostgres: Bool? = nil) throws(Failure) {
        // Run from `/`: the caller's working directory may be one the `postgres` user cannot enter (a clone under
        // /root), and pg_ctl refuses to start from there ("could not change directory"). Every path given is absolute.
        let argv: [String]
        if asPostgres ?? runAsPostgres {
            argv = ["/sbin/runuser", "-u", "postgres", "--", "/usr/bin/env", "-C", "/", program] + arguments
        } else {
            argv = ["/usr/bin/env", "-C", "/", program] + arguments
        }
        let result: ChildProcess.Result
        do { result = try ChildProcess.run(argv) } catch {
            throw Failure(message: "cannot run \(program): \(error)")
        }
        guard result.status == 0 else {
            throw Failure(message: "\((program as NSString).lastPathComponent) failed (exit \(result.status)): \(result.output)")
        }
    }
}

/// Runs a program to completion with posix_spawn and waitpid.
///
/// Foundation's `Process` can miss the exit of a child on Linux when called from a thread without a run
/// loop (a test's worker thread); spawning and reaping directly has no such dependency on a run loop. Output goes to
/// a file, not a pipe: the postmaster that `pg_ctl start` leaves running inherits the child's
/// descriptors and would hold a pipe open forever.
enum ChildProcess {
    struct Result {
        let status: Int32
        let output: String
    }

    struct SpawnError: Error, CustomStringConvertible {
        let code: Int32
        var description: String { String(cString: strerror(code)) }
    }

    static func run(_ argv: [String]) throws -> Result {
        let outputPath = NSTemporaryDirectory() + "clarion-child-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).out"
        defer { unlink(outputPath) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // Nothing else of ours reaches the child, and so the postmaster `pg_ctl start` leaves running: a descriptor
        // opened without close-on-exec (by a library, or a test) would otherwise stay open in the server for its
        // whole life, and the server counts them against its own budget: with enough inherited, the postmaster
        // refuses to start ("insufficient file descriptors available to start server process").
        let closing = clarion_spawn_close_from(&actions, 3)
        guard closing == 0 else { throw SpawnError(code: closing) }
        var cArgs: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) }
        cArgs.append(nil)
        defer { for p in cArgs { free(p) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, argv[0], &actions, nil, cArgs, environ)
        guard spawned == 0 else { throw SpawnError(code: spawned) }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 {
            guard errno == EINTR else { throw SpawnError(code: errno) }
        }
        let exitCode: Int32 = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        return Result(status: exitCode, output: output.trimmingCharacters(in: .whitespacesAndNewlines))
    }
}
