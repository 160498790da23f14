import Foundation

/// A private PostgreSQL cluster that Clarion manages under its data directory: `initdb` on first
/// run, started on a free port on 127.0.0.1 (and a Unix socket inside the directory), stopped on
/// shutdown. When the process runs as root the cluster belongs to the `postgres` user, because
/// PostgreSQL refuses to run as root.
public final class EmbeddedPostgres: @unchecked Sendable {
    public struct Failure: Error, CustomStringConvertible {
        public let message: String
        public var description: String { message }
    }

    /// The folder holding the cluster (`<data dir>/postgres`).
    public let directory: URL
    public let databaseName: String
    public private(set) var port: Int = 0
    private let binaries: URL
    private let runAsPostgres: Bool
    /// Held (flock) while this process owns the cluster; another process that finds it held uses the
    /// running server without stopping it at the end (`clarion accounts` beside a running `clarion serve`).
    private var ownerLock: Int32 = -1
    public var isOwner: Bool { ownerLock >= 0 }

    public init(dataDirectory: URL, databaseName: String = "clarion") throws(Failure) {
        self.directory = dataDirectory.appendingPathComponent("postgres")
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

    var clusterDirectory: URL { directory.appendingPathComponent("data") }
    var socketDirectory: URL { directory.appendingPathComponent("run") }
    var logFile: URL { directory.appendingPathComponent("server.log") }

    /// A libpq URL for the managed database (or another database of the cluster).
    public func url(database: String? = nil) -> String {
        "postgresql://postgres@127.0.0.1:\(port)/\(database ?? databaseName)"
    }

    /// initdb when needed, start (or adopt a cluster a killed process left running), create the database.
    public func start() throws(Failure) {
        let fm = FileManager.default
        try? fm.createDirectory(at: socketDirectory, withIntermediateDirectories: true)
        // The postgres user must be able to reach its folder.
        chmod(directory.deletingLastPathComponent().path, 0o755)
        chmod(directory.path, 0o755)
        if runAsPostgres {
            try run("/bin/chown", ["-R", "postgres:postgres", directory.path], asPostgres: false)
        }
        if !fm.fileExists(atPath: clusterDirectory.appendingPathComponent("PG_VERSION").path) {
            try? fm.removeItem(at: clusterDirectory)
            try run(binaries.appendingPathComponent("initdb").path,
                    ["-D", clusterDirectory.path, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync"])
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
                + " -c max_connections=200 -c shared_buffers=256MB -c synchronous_commit=on"
            try run(binaries.appendingPathComponent("pg_ctl").path,
                    ["-D", clusterDirectory.path, "-l", logFile.path, "-w", "-t", "60", "-o", options, "start"])
        }
        try createDatabase(databaseName)
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

    private func run(_ program: String, _ arguments: [String], asPostgres: Bool? = nil) throws(Failure) {
        let argv: [String]
        if asPostgres ?? runAsPostgres {
            argv = ["/sbin/runuser", "-u", "postgres", "--", program] + arguments
        } else {
            argv = [program] + arguments
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
/// Foundation's `Process` was seen to miss the exit of a child on Linux when called from a test's
/// worker thread; spawning and reaping directly has no such dependency on a run loop. Output goes to
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
