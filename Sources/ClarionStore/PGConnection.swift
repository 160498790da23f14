internal import CPQ
import Foundation

/// One SQL command with bound parameters, for pipelines.
public struct PGCommand: Sendable {
    public let sql: String
    public let parameters: [String?]
    /// Set for hot statements: the connection prepares the SQL once under this name and then only binds and
    /// executes it, so PostgreSQL skips parsing, analysis and (once it settles on a generic plan) planning.
    /// One name must always mean the same SQL.
    public let preparedName: String?

    public init(_ sql: String, _ parameters: [any PGEncodable] = []) {
        self.sql = sql
        self.parameters = parameters.map { $0.pgText }
        self.preparedName = nil
    }

    public init(prepared name: String, _ sql: String, _ parameters: [any PGEncodable] = []) {
        self.sql = sql
        self.parameters = parameters.map { $0.pgText }
        self.preparedName = name
    }
}

/// One libpq connection. Not thread-safe by design: a `PGConnection` is confined to the pool thread
/// that owns it, and callers reach it only through `PGPool.withConnection`, so a blocking libpq call
/// never runs on the Swift cooperative thread pool.
public final class PGConnection {
    let handle: OpaquePointer
    /// Statements prepared on this session (see `PGCommand.preparedName`).
    private var prepared: Set<String> = []

    /// Opens a connection; `conninfo` is a libpq key/value string or a `postgresql://` URL.
    /// A down server gives `.unavailable` within the connect timeout, never a hang.
    public init(conninfo: String, applicationName: String = "clarion") throws(StoreError) {
        let keywords = ["dbname", "connect_timeout", "application_name", "options"]
        let values = [conninfo, "5", applicationName, "-c TimeZone=UTC -c client_min_messages=warning"]
        // `expand_dbname` makes the first dbname value a full conninfo/URL; later values fill the gaps.
        let connection: OpaquePointer? = withCStringArray(keywords) { k in
            withCStringArray(values) { v in PQconnectdbParams(k, v, 1) }
        }
        guard let connection else { throw StoreError(.unavailable, "libpq could not allocate a connection") }
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = String(cString: PQerrorMessage(connection)).trimmingCharacters(in: .whitespacesAndNewlines)
            PQfinish(connection)
            throw StoreError(.unavailable, "cannot connect to PostgreSQL: \(message)")
        }
        // libpq's default notice processor prints every server WARNING to standard error, outside the structured
        // log: a restart of PostgreSQL printed "WARNING: terminating connection due to immediate shutdown command"
        // once per session. The loss itself reaches the caller as an error (and the node's DatabaseHealth line);
        // the server's own log keeps every warning.
        PQsetNoticeProcessor(connection, { _, _ in }, nil)
        self.handle = connection
    }

    deinit { PQfinish(handle) }

    /// Set when a command failed in a way that leaves this session in a state no later command can use: a pipeline
    /// whose commands could be sent only in part (they cannot be taken back, and a Sync would commit them). The
    /// session is given up: `isHealthy` turns false, so `PGPool` drops the connection, and closing it rolls back
    /// what was sent.
    private var abandoned = false

    public var isHealthy: Bool { !abandoned && PQstatus(handle) == CONNECTION_OK }

    private func checkUsable() throws(StoreError) {
        if abandoned { throw StoreError(.connectionLost, "this connection was given up: a failed command left it unusable") }
    }

    /// The server's backend process id (tests use it to kill a session).
    public var backendPID: Int32 { PQbackendPID(handle) }

    // MARK: Queries

    /// Runs one parameterised statement. Parameters are bound, never spliced into the SQL.
    @discardableResult
    public func query(_ sql: String, _ parameters: [any PGEncodable] = []) throws(StoreError) -> PGResult {
        try query(sql, texts: parameters.map { $0.pgText })
    }

    @discardableResult
    public func query(_ sql: String, texts: [String?]) throws(StoreError) -> PGResult {
        try checkUsable()
        if let name = statementName(for: sql) {
            let result = withParameters(texts) { count, values in
                PQexecPrepared(handle, name, Int32(count), values, nil, nil, 0)
            }
            do throws(StoreError) {
                return try check(result)
            } catch {
                // A table under a cached `SELECT *` changed shape (0A000 "cached plan must not change result
                // type", after DDL): this text runs unnamed from now on (its stale statement stays counted, so
                // the session never holds more than the bound); outside a transaction block it runs again now.
                guard error.sqlState == "0A000" else { throw error }
                statementNames[sql] = ""
                guard PQtransactionStatus(handle) == PQTRANS_IDLE else { throw error }
            }
        }
        let result = withParameters(texts) { count, values in
            PQexecParams(handle, sql, Int32(count), nil, values, nil, nil, 0)
        }
        return try check(result)
    }

    /// Statements `query` prepared on this session, by SQL text. A statement sent as unnamed is parsed, analysed
    /// and planned on every execution, and for the dispatcher's claim statement (run once per direct message)
    /// planning costs more than running it. Prepared, PostgreSQL parses it once and
    /// settles on a generic plan after five executions unless custom plans are cheaper. Bounded per session;
    /// statements past the bound, and anything but plain DML and queries, stay unnamed.
    private var statementNames: [String: String] = [:]
    public static let statementCacheLimit = 200

    private func statementName(for sql: String) -> String? {
        if let name = statementNames[sql] { return name.isEmpty ? nil : name }
        guard statementNames.count < Self.statementCacheLimit, Self.isPreparable(sql) else { return nil }
        // Entries are never removed (a retired one stays as ""), so the count numbers the next name.
        let name = "clarion_q\(statementNames.count)"
        guard let result = PQprepare(handle, name, sql, 0, nil) else { return nil }
        defer { PQclear(result) }
        // Not prepared (a syntax error, an aborted transaction): the unnamed path reports the same error.
        guard PQresultStatus(result) == PGRES_COMMAND_OK else { return nil }
        statementNames[sql] = name
        return name
    }

    /// SELECT, INSERT, UPDATE, DELETE and WITH statements (what `PREPARE` accepts), by their first word.
    public static func isPreparable(_ sql: String) -> Bool {
        let word = Substring(sql).drop { $0 == " " || $0 == "\n" || $0 == "\t" || $0 == "\r" || $0 == "(" }.prefix { $0.isLetter }
        switch word.uppercased() {
        case "SELECT", "INSERT", "UPDATE", "DELETE", "WITH": return true
        default: return false
        }
    }

    /// Runs statements without parameters (DDL, `BEGIN`), possibly several separated by semicolons.
    public func execute(_ sql: String) throws(StoreError) {
        try checkUsable()
        _ = try check(PQexec(handle, sql))
    }

    /// Runs `body` in a transaction: committed when it returns, rolled back when it throws.
    public func transaction<T>(_ body: (PGConnection) throws(StoreError) -> T) throws(StoreError) -> T {
        try execute("BEGIN")
        do {
            let value = try body(self)
            try execute("COMMIT")
            return value
        } catch {
            if isHealthy { _ = PQexec(handle, "ROLLBACK").map { PQclear($0) } }
            throw error
        }
    }

    /// Sends every command in pipeline mode with one Sync: one round trip, one implicit transaction
    /// (all commit together or none does). Returns one result per command.
    ///
    /// libpq leaves pipeline mode only when nothing is queued and every result has been read up to the sync point;
    /// until then it refuses every synchronous call. So every way out of here reads the results to the sync point
    /// and leaves pipeline mode, except a send that fails part-way: the commands already queued cannot be taken
    /// back and a Sync would commit them, so the session is given up instead (`isHealthy` false, and the pool
    /// drops it; closing it rolls them back).
    public func pipeline(_ commands: [PGCommand]) throws(StoreError) -> [PGResult] {
        guard !commands.isEmpty else { return [] }
        try checkUsable()
        guard PQenterPipelineMode(handle) == 1 else { throw connectionError("cannot enter pipeline mode") }
        // What the server answers, in order: a Prepare before the first use of a prepared statement on this
        // session (its result is not returned), then each command.
        var expected: [String?] = []
        expected.reserveCapacity(commands.count + 1)
        var preparing: Set<String> = []
        for command in commands {
            let sent: Int32
            if let name = command.preparedName {
                if !prepared.contains(name) && !preparing.contains(name) {
                    guard PQsendPrepare(handle, name, command.sql, 0, nil) == 1 else {
                        throw abandon(connectionError("pipeline prepare failed"))
                    }
                    preparing.insert(name)
                    expected.append(name)
                }
                sent = withParameters(command.parameters) { count, values in
                    PQsendQueryPrepared(handle, name, Int32(count), values, nil, nil, 0)
                }
            } else {
                sent = withParameters(command.parameters) { count, values in
                    PQsendQueryParams(handle, command.sql, Int32(count), nil, values, nil, nil, 0)
                }
            }
            guard sent == 1 else { throw abandon(connectionError("pipeline send failed")) }
            expected.append(nil)
        }
        guard PQpipelineSync(handle) == 1 else { throw abandon(connectionError("pipeline sync failed")) }
        var results: [PGResult] = []
        results.reserveCapacity(commands.count)
        var firstError: StoreError?
        var index = 0
        while index < expected.count {
            guard let result = PQgetResult(handle) else {
                // End of this command's results.
                index += 1
                continue
            }
            let status = PQresultStatus(result)
            if status == PGRES_PIPELINE_ABORTED {
                PQclear(result)
                if firstError == nil { firstError = StoreError(.queryFailed, "pipeline aborted") }
                continue
            }
            if status == PGRES_FATAL_ERROR || status == PGRES_BAD_RESPONSE || status == PGRES_NONFATAL_ERROR {
                let error = resultError(result)
                PQclear(result)
                if firstError == nil || firstError?.message == "pipeline aborted" { firstError = error }
                continue
            }
            if let name = expected[index] {
                // A Prepare that succeeded: the statement now exists on this session.
                PQclear(result)
                prepared.insert(name)
                continue
            }
            results.append(PGResult(handle: result))
        }
        // Drain up to and including the sync point. The implicit transaction commits at the sync point, so what
        // arrives here is the commit's outcome: an error (a deferred constraint, a connection lost while
        // committing) means nothing committed, and no sync point at all means the commit is not confirmed. Both
        // were ignored: an immediate shutdown of PostgreSQL between a batch's INSERT result and its commit
        // acknowledged publishes that were never stored (Tests/e2e/test_fault_database_restart.py).
        // An error result here is followed by a NULL (end of that result) and then the sync point; a session that
        // died gives NULLs with a bad status.
        var synced = false
        var nulls = 0
        while true {
            guard let result = PQgetResult(handle) else {
                nulls += 1
                if PQstatus(handle) != CONNECTION_OK || nulls > 2 { break }
                continue
            }
            nulls = 0
            let status = PQresultStatus(result)
            if status == PGRES_FATAL_ERROR || status == PGRES_BAD_RESPONSE || status == PGRES_NONFATAL_ERROR {
                let error = resultError(result)
                if firstError == nil || firstError?.message == "pipeline aborted" { firstError = error }
            }
            PQclear(result)
            if status == PGRES_PIPELINE_SYNC {
                synced = true
                break
            }
        }
        if !synced && firstError == nil {
            firstError = StoreError(.connectionLost, "the session ended before the pipeline's sync point: its commit is not confirmed")
        }
        if PQexitPipelineMode(handle) != 1 && PQstatus(handle) == CONNECTION_OK {
            // Results left unread (should not happen): a session stuck in pipeline mode serves no one.
            let error = abandon(connectionError("cannot leave pipeline mode"))
            if firstError == nil { firstError = error }
        }
        if let firstError {
            if !isHealthy { throw StoreError(.connectionLost, firstError.message) }
            throw firstError
        }
        return results
    }

    /// Gives the session up (see `abandoned`) and returns `error` for the caller to throw. The error keeps its
    /// code: a command libpq refuses to send (more than 65,535 parameters) is not worth retrying.
    private func abandon(_ error: StoreError) -> StoreError {
        abandoned = true
        return error
    }

    /// Bulk load with `COPY ... FROM STDIN` (text format). `produce` is called until it returns nil;
    /// each chunk is sent as is (rows end with "\n", columns separated by tabs; see `PGCopy.escape`).
    /// Returns the number of rows the server loaded.
    ///
    /// Every way out reads the connection's results until `PQgetResult` returns NULL (`finishCommand`): libpq
    /// takes no asynchronous command (`stream`, `pipeline`) while one is unread, and a failed COPY (a bad row)
    /// leaves the server's error and the end of the command to read.
    @discardableResult
    public func copyIn(_ sql: String, produce: () -> [UInt8]?) throws(StoreError) -> Int {
        try checkUsable()
        let start = PQexec(handle, sql)
        guard let start, PQresultStatus(start) == PGRES_COPY_IN else {
            throw copyDidNotStart(start)
        }
        PQclear(start)
        while let chunk = produce() {
            guard !chunk.isEmpty else { continue }
            let ok = chunk.withUnsafeBufferPointer { buffer in
                buffer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: buffer.count) {
                    PQputCopyData(handle, $0, Int32(buffer.count))
                }
            }
            guard ok == 1 else {
                // Usually the server has already refused a row and libpq has read its error: report that one.
                let sendError = connectionError("COPY data send failed")
                _ = PQputCopyEnd(handle, "COPY data could not be sent")
                throw finishCommand() ?? sendError
            }
        }
        guard PQputCopyEnd(handle, nil) == 1 else {
            let endError = connectionError("COPY end failed")
            throw finishCommand() ?? endError
        }
        return try copyResult().affectedRows
    }

    /// Bulk read with `COPY ... TO STDOUT` (text format); `consume` gets one row's bytes (with its "\n").
    /// A query failing part-way (after some rows) throws its error; the connection is ready for the next command.
    @discardableResult
    public func copyOut(_ sql: String, consume: (UnsafeBufferPointer<UInt8>) -> Void) throws(StoreError) -> Int {
        try checkUsable()
        let start = PQexec(handle, sql)
        guard let start, PQresultStatus(start) == PGRES_COPY_OUT else {
            throw copyDidNotStart(start)
        }
        PQclear(start)
        var rows = 0
        while true {
            var buffer: UnsafeMutablePointer<CChar>?
            let length = PQgetCopyData(handle, &buffer, 0)
            if length > 0, let buffer {
                buffer.withMemoryRebound(to: UInt8.self, capacity: Int(length)) {
                    consume(UnsafeBufferPointer(start: $0, count: Int(length)))
                }
                PQfreemem(buffer)
                rows += 1
            } else if length == -1 {
                break
            } else {
                let readError = connectionError("COPY read failed")
                throw finishCommand() ?? readError
            }
        }
        _ = try copyResult()
        return rows
    }

    /// The COPY's own result once its data is done (its row count, or the server's error), with everything after
    /// it read.
    private func copyResult() throws(StoreError) -> PGResult {
        let result = PQgetResult(handle)
        let later = finishCommand()
        let checked = try check(result)
        if let later { throw later }
        return checked
    }

    /// The error for a COPY statement that did not enter the expected COPY state (a failing statement, or a
    /// statement that is not that kind of COPY), with the connection brought back to idle.
    private func copyDidNotStart(_ start: OpaquePointer?) -> StoreError {
        guard let start else { return connectionError("no result") }
        let status = PQresultStatus(start)
        if status == PGRES_COPY_IN || status == PGRES_COPY_OUT || status == PGRES_COPY_BOTH {
            _ = finishCommand(startingWith: start)
            return StoreError(.queryFailed, "COPY went the other way (expected \(status == PGRES_COPY_IN ? "TO STDOUT" : "FROM STDIN"))")
        }
        do throws(StoreError) {
            _ = try check(start)
            return StoreError(.queryFailed, "COPY did not start")
        } catch {
            return error
        }
    }

    /// Reads what is left of the current command until `PQgetResult` returns NULL, so the connection takes the next
    /// one; returns the first error among the results. A COPY still open is ended first (COPY IN with an error
    /// message, COPY OUT by reading its rows to the end). A session that cannot be brought back (COPY BOTH, or the
    /// end of a COPY IN that cannot be sent) is given up.
    private func finishCommand(startingWith first: OpaquePointer? = nil) -> StoreError? {
        var firstError: StoreError?
        var pending = first
        while let result = pending ?? PQgetResult(handle) {
            pending = nil
            switch PQresultStatus(result) {
            case PGRES_COPY_IN:
                if PQputCopyEnd(handle, "COPY ended by the client") != 1 { abandoned = true }
            case PGRES_COPY_OUT:
                var row: UnsafeMutablePointer<CChar>?
                while PQgetCopyData(handle, &row, 0) > 0 {
                    PQfreemem(row)
                    row = nil
                }
            case PGRES_COPY_BOTH:
                abandoned = true
            case PGRES_FATAL_ERROR, PGRES_BAD_RESPONSE, PGRES_NONFATAL_ERROR:
                if firstError == nil { firstError = resultError(result) }
            default:
                break
            }
            PQclear(result)
            if abandoned || PQstatus(handle) != CONNECTION_OK { break }
        }
        return firstError
    }

    /// Streams a query's rows one at a time (single-row mode): memory stays flat however many rows.
    /// `body` returns false to stop early.
    @discardableResult
    public func stream(_ sql: String, _ parameters: [any PGEncodable] = [], _ body: (PGRow) -> Bool) throws(StoreError) -> Int {
        try checkUsable()
        let texts = parameters.map { $0.pgText }
        let sent = withParameters(texts) { count, values in
            PQsendQueryParams(handle, sql, Int32(count), nil, values, nil, nil, 0)
        }
        guard sent == 1 else { throw connectionError("send failed") }
        _ = PQsetSingleRowMode(handle)
        var rows = 0
        var wanted = true
        var failure: StoreError?
        while let raw = PQgetResult(handle) {
            let status = PQresultStatus(raw)
            if status == PGRES_SINGLE_TUPLE {
                let result = PGResult(handle: raw)
                if wanted {
                    rows += 1
                    wanted = body(result[0])
                    if !wanted { _ = cancel() }
                }
            } else if status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK {
                PQclear(raw)
            } else {
                let error = resultError(raw)
                PQclear(raw)
                // A cancel we asked for is not an error.
                if wanted, failure == nil { failure = error }
            }
        }
        if let failure { throw failure }
        return rows
    }

    private func cancel() -> Bool {
        guard let cancel = PQgetCancel(handle) else { return false }
        defer { PQfreeCancel(cancel) }
        var buffer = [CChar](repeating: 0, count: 256)
        return PQcancel(cancel, &buffer, 256) == 1
    }

    // MARK: LISTEN / NOTIFY

    public func listen(_ channel: String) throws(StoreError) {
        try execute("LISTEN \(PGConnection.quoteIdentifier(channel))")
    }

    public func notify(_ channel: String, payload: String = "") throws(StoreError) {
        try query("SELECT pg_notify($1, $2)", [channel, payload])
    }

    /// Waits up to `timeout` seconds for notifications on channels this connection listens to.
    public func waitForNotifications(timeout: Double) throws(StoreError) -> [(channel: String, payload: String)] {
        var out = drainNotifications()
        if !out.isEmpty { return out }
        var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0)
        let ready = poll(&descriptor, 1, Int32(timeout * 1000))
        if ready > 0 {
            guard PQconsumeInput(handle) == 1 else { throw connectionError("connection lost while listening") }
            out = drainNotifications()
        }
        return out
    }

    private func drainNotifications() -> [(channel: String, payload: String)] {
        var out: [(String, String)] = []
        while let notify = PQnotifies(handle) {
            out.append((String(cString: notify.pointee.relname), String(cString: notify.pointee.extra)))
            PQfreemem(notify)
        }
        return out
    }

    public static func quoteIdentifier(_ name: String) -> String {
        "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    // MARK: Errors

    private func check(_ result: OpaquePointer?) throws(StoreError) -> PGResult {
        guard let result else { throw connectionError("no result") }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_SINGLE_TUPLE, PGRES_EMPTY_QUERY:
            return PGResult(handle: result)
        default:
            let error = resultError(result)
            PQclear(result)
            throw error
        }
    }

    private func resultError(_ result: OpaquePointer) -> StoreError {
        func field(_ code: Character) -> String? {
            guard let value = PQresultErrorField(result, Int32(code.asciiValue!)) else { return nil }
            return String(cString: value)
        }
        let message = field("M") ?? String(cString: PQerrorMessage(handle)).trimmingCharacters(in: .whitespacesAndNewlines)
        guard let state = field("C") else {
            return StoreError(isHealthy ? .queryFailed : .connectionLost, message)
        }
        return StoreError(StoreError.code(forSQLState: state), message, sqlState: state, constraint: field("n"))
    }

    private func connectionError(_ context: String) -> StoreError {
        let message = String(cString: PQerrorMessage(handle)).trimmingCharacters(in: .whitespacesAndNewlines)
        return StoreError(isHealthy ? .queryFailed : .connectionLost, "\(context): \(message)")
    }
}

/// Calls `body` with a C array of C strings (nil entries become NULL), terminated by NULL.
private func withCStringArray<R>(_ strings: [String?], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R) -> R {
    var pointers: [UnsafeMutablePointer<CChar>?] = strings.map { $0.flatMap { strdup($0) } }
    pointers.append(nil)
    defer { for p in pointers { free(p) } }
    return pointers.withUnsafeBufferPointer { buffer in
        buffer.baseAddress!.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: buffer.count) { body($0) }
    }
}

private func withParameters<R>(_ texts: [String?], _ body: (Int, UnsafePointer<UnsafePointer<CChar>?>?) -> R) -> R {
    if texts.isEmpty { return body(0, nil) }
    return withCStringArray(texts) { body(texts.count, $0) }
}

/// Helpers for COPY's text format.
public enum PGCopy {
    /// Appends a column value escaped for COPY text format (`\N` for NULL).
    public static func append(_ value: String?, to buffer: inout [UInt8]) {
        guard let value else { buffer.append(contentsOf: [0x5c, 0x4e]); return }
        for byte in value.utf8 {
            switch byte {
            case 0x5c: buffer.append(contentsOf: [0x5c, 0x5c])
            case 0x09: buffer.append(contentsOf: [0x5c, 0x74])
            case 0x0a: buffer.append(contentsOf: [0x5c, 0x6e])
            case 0x0d: buffer.append(contentsOf: [0x5c, 0x72])
            default: buffer.append(byte)
            }
        }
    }
}
