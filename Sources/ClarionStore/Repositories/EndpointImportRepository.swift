import ClarionCore
import Foundation

/// One refused line of a bulk import: its number in the file (from 1) and why.
public struct ImportRefusal: Sendable, Equatable {
    public let line: Int
    public let reason: String

    public init(line: Int, reason: String) {
        self.line = line
        self.reason = reason
    }
}

/// What a bulk import did. `refusals` holds the first `refusalLimit` refusals in line order; `refused` counts them
/// all (parse refusals are the caller's to add).
public struct ImportOutcome: Sendable, Equatable {
    public var created = 0
    public var unchanged = 0
    public var updated = 0
    public var refused = 0
    public var refusals: [ImportRefusal] = []
    /// Time spent reading, checking and COPying the lines into staging, and merging them (for the log and the
    /// benchmark: where an import's time goes).
    public var stagingDuration: Duration = .zero
    public var mergeDuration: Duration = .zero

    public init() {}
}

/// Builds the COPY text of the endpoint staging table (`endpoint_import`), one row per accepted line.
public struct EndpointStagingRows: Sendable {
    public private(set) var bytes: [UInt8] = []
    public private(set) var count = 0

    public init() { bytes.reserveCapacity(256 * 1024) }

    /// `attributesJSON` is a JSON object of strings ("{}" for none); nil fields were not given.
    public mutating func add(line: Int, externalID: UUID, token: String, userID: String?, customUserData: String?,
                             enabled: Bool?, attributesJSON: String) {
        appendDecimal(line)
        bytes.append(0x09)
        PGCopy.append(externalID.lowercasedText, to: &bytes)
        bytes.append(0x09)
        PGCopy.append(token, to: &bytes)
        bytes.append(0x09)
        PGCopy.append(userID, to: &bytes)
        bytes.append(0x09)
        PGCopy.append(customUserData, to: &bytes)
        bytes.append(0x09)
        PGCopy.append(enabled.map { $0 ? "t" : "f" }, to: &bytes)
        bytes.append(0x09)
        PGCopy.append(attributesJSON, to: &bytes)
        bytes.append(0x0a)
        count += 1
    }

    /// Hands the rows over and starts again empty.
    public mutating func take() -> [UInt8] {
        defer {
            bytes = []
            bytes.reserveCapacity(256 * 1024)
        }
        return bytes
    }

    private mutating func appendDecimal(_ value: Int) {
        if value >= 10 { appendDecimal(value / 10) }
        bytes.append(UInt8(48 + value % 10))
    }
}

/// COPYs the upload's rows into the staging table. An upload cut short throws, so the transaction rolls back:
/// not one row of it is applied.
private func stageImport(_ c: PGConnection, table: String,
                         _ nextRows: @escaping @Sendable () throws(ImportAborted) -> [UInt8]?) throws(StoreError) {
    var aborted: ImportAborted?
    try c.copyIn("COPY \(table) FROM STDIN") {
        do throws(ImportAborted) {
            return try nextRows()
        } catch {
            aborted = error
            return nil
        }
    }
    if let aborted { throw StoreError(.invalidData, "import aborted: \(aborted.reason)") }
}

/// Thrown by an import's row source to stop it: nothing of the import is applied.
public struct ImportAborted: Error, Sendable {
    public let reason: String
    public init(_ reason: String) { self.reason = reason }
}

/// Bulk import and export of an application's endpoints (docs/api.md, "Bulk import and export").
///
/// An import runs in one transaction: the rows are COPied into a temporary staging table as they are parsed (the
/// upload is never held whole), then merged by a few set-based statements with CreatePlatformEndpoint's rule
/// (`EndpointRepository.create`, docs/providers.md C.8): a new token is created; a token that exists with every given
/// `enabled`, `custom_user_data` and `user_id` equal is unchanged (and not re-enabled), and its device attributes are
/// updated when they differ (the native create's rule: they are the latest report, not identity); a token that
/// exists with a different one of those is refused, naming the endpoint, as SNS refuses it. Within one file the
/// first line of a token decides; a later line of the same token that says exactly the same is unchanged, one that
/// differs is refused. A row source that throws (the client went away mid-upload) rolls everything back.
public struct EndpointImportRepository: Sendable {
    public let pool: PGPool

    public init(pool: PGPool) { self.pool = pool }

    /// Imports into the application `applicationKey`. `nextRows` is called on the pool thread until it returns nil;
    /// it may block (reading the upload). At most `refusalLimit` refusals are listed.
    public func importEndpoints(applicationKey: Int64, refusalLimit: Int,
                                nextRows: @escaping @Sendable () throws(ImportAborted) -> [UInt8]?)
        async throws(StoreError) -> ImportOutcome {
        try await pool.transaction { (c) throws(StoreError) -> ImportOutcome in
            try c.query("""
                CREATE TEMPORARY TABLE endpoint_import (line bigint NOT NULL, external_id uuid NOT NULL, token text NOT NULL,
                    user_id text, custom_user_data text, enabled boolean, attributes jsonb NOT NULL) ON COMMIT DROP
                """)
            let started = ContinuousClock.now
            try stageImport(c, table: "endpoint_import", nextRows)
            let staged = ContinuousClock.now
            try c.query("ANALYZE endpoint_import")
            // The merge hashes the staged rows (first line per token, the join with the application's endpoints); with
            // the default 4 MB those hashes of a million lines go to disk. For this transaction only. Measured: merges
            // of 31 and 45 s against 40 and 36 s before, within this machine's noise (docs/benchmarks.md, "Bulk
            // import"): kept because it cannot be slower, not because it was shown faster.
            try c.query("SET LOCAL work_mem = '256MB'")
            // Every staged line with what happens to it. The first line of a token decides; later ones compare with it.
            try c.query("""
                CREATE TEMPORARY TABLE endpoint_import_plan ON COMMIT DROP AS
                WITH first_lines AS (
                    SELECT token, min(line) AS line FROM endpoint_import GROUP BY token
                ), firsts AS (
                    SELECT i.line, i.token, i.user_id, i.custom_user_data, i.enabled, i.attributes
                    FROM endpoint_import i JOIN first_lines l ON l.line = i.line
                )
                SELECT r.line, r.external_id, r.token, r.user_id, r.custom_user_data, r.enabled, r.attributes,
                       f.line AS first_line, e.id AS endpoint_key, e.external_id AS existing_id,
                       CASE
                           WHEN r.line <> f.line THEN
                               CASE WHEN ROW(r.user_id, r.custom_user_data, r.enabled, r.attributes)
                                         IS NOT DISTINCT FROM ROW(f.user_id, f.custom_user_data, f.enabled, f.attributes)
                                    THEN 'duplicate' ELSE 'duplicate_conflict' END
                           WHEN e.id IS NULL THEN 'create'
                           WHEN (r.custom_user_data IS NOT NULL AND r.custom_user_data <> coalesce(e.custom_user_data, ''))
                                OR (r.enabled IS NOT NULL AND r.enabled <> e.enabled)
                                OR (r.user_id IS NOT NULL AND r.user_id IS DISTINCT FROM e.user_id) THEN 'conflict'
                           WHEN e.attributes @> r.attributes THEN 'unchanged'
                           ELSE 'update'
                       END AS action
                FROM endpoint_import r
                JOIN firsts f ON f.token = r.token
                LEFT JOIN endpoints e ON e.application = $1 AND e.token = r.token
                """, [applicationKey])
            var outcome = ImportOutcome()
            outcome.stagingDuration = staged - started
            let planned = try c.query("SELECT count(*) FROM endpoint_import_plan WHERE action = 'create'").first?.int64(0) ?? 0
            if planned > 0 {
                // In line order, so ids (time-ordered, made in line order) and keys follow the file.
                let inserted = try c.query("""
                    INSERT INTO endpoints (external_id, application, token, user_id, custom_user_data, enabled,
                                           disabled_reason, disabled_at, attributes, token_refreshed_at)
                    SELECT external_id, $1, token, user_id, custom_user_data, coalesce(enabled, true),
                           CASE WHEN enabled = false THEN 'created disabled' END, CASE WHEN enabled = false THEN now() END,
                           attributes, now()
                    FROM endpoint_import_plan WHERE action = 'create' ORDER BY line
                    ON CONFLICT ON CONSTRAINT endpoints_application_token_key DO NOTHING
                    """, [applicationKey]).affectedRows
                if Int64(inserted) < planned {
                    // Created by another request between the plan and the insert (the plan reads without locks).
                    try c.query("""
                        UPDATE endpoint_import_plan p SET action = 'raced'
                        WHERE action = 'create' AND NOT EXISTS (SELECT 1 FROM endpoints e WHERE e.external_id = p.external_id)
                        """)
                }
            }
            // A later line saying exactly what a refused first line said shares its fate.
            try c.query("""
                UPDATE endpoint_import_plan d SET action = 'duplicate_refused'
                FROM endpoint_import_plan f
                WHERE d.action = 'duplicate' AND f.line = d.first_line AND f.action IN ('conflict', 'raced')
                """)
            try c.query("""
                UPDATE endpoints e SET attributes = e.attributes || p.attributes, updated_at = now()
                FROM endpoint_import_plan p WHERE p.action = 'update' AND e.id = p.endpoint_key
                """)
            for row in try c.query("SELECT action, count(*) FROM endpoint_import_plan GROUP BY action").rows {
                let count = Int(row.int64(1) ?? 0)
                switch row.string(0) {
                case "create": outcome.created += count
                case "unchanged", "duplicate": outcome.unchanged += count
                case "update": outcome.updated += count
                default: outcome.refused += count
                }
            }
            if outcome.refused > 0 && refusalLimit > 0 {
                for row in try c.query("""
                    SELECT line, action, first_line, existing_id FROM endpoint_import_plan
                    WHERE action IN ('duplicate_conflict', 'duplicate_refused', 'conflict', 'raced') ORDER BY line LIMIT $1
                    """, [refusalLimit]).rows {
                    let line = Int(row.int64(0) ?? 0)
                    let reason = switch row.string(1) {
                    case "duplicate_conflict":
                        "The token is also on line \(row.int64(2) ?? 0), with different fields."
                    case "duplicate_refused":
                        "The same as line \(row.int64(2) ?? 0), which was refused."
                    case "conflict":
                        "Endpoint \(row.string(3) ?? "") already exists with the same token, but different attributes."
                    default:
                        "The token was created by another request during the import; import the line again."
                    }
                    outcome.refusals.append(ImportRefusal(line: line, reason: reason))
                }
            }
            outcome.mergeDuration = ContinuousClock.now - staged
            return outcome
        }
    }

    /// Writes the application's endpoints as NDJSON, one object per line in creation order, straight from a
    /// `COPY ... TO STDOUT` (nothing is materialised): `{"id", "token", "enabled", "disabled_reason",
    /// "custom_user_data", "user_id", "attributes", "created_at"}`, which the import takes back. `write` gets each
    /// line (with its "\n") and answers false to stop (the rest of the COPY is read and dropped). Returns the lines
    /// written.
    public func exportEndpoints(applicationKey: Int64,
                                write: @escaping @Sendable (UnsafeBufferPointer<UInt8>) -> Bool) async throws(StoreError) -> Int {
        // COPY takes no bound parameters: the key is an integer, spliced as one. The CSV format with a quote and a
        // delimiter that JSON text never holds raw (0x01, 0x02: JSON escapes control characters) writes each JSON
        // document as it is; the text format would double its backslashes.
        let sql = """
            COPY (SELECT json_build_object('id', external_id, 'token', token, 'enabled', enabled,
                                           'disabled_reason', disabled_reason, 'custom_user_data', custom_user_data,
                                           'user_id', user_id, 'attributes', attributes,
                                           'created_at', to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))::text
                  FROM endpoints WHERE application = \(applicationKey) ORDER BY id)
            TO STDOUT (FORMAT csv, QUOTE E'\\x01', DELIMITER E'\\x02')
            """
        return try await pool.withConnection { (c) throws(StoreError) -> Int in
            var open = true
            var lines = 0
            try c.copyOut(sql) { row in
                guard open else { return }
                open = write(row)
                if open { lines += 1 }
            }
            return lines
        }
    }
}

/// Builds the COPY text of the subscription staging table: one row per line naming an endpoint (by id) or a token.
public struct SubscriptionStagingRows: Sendable {
    public private(set) var bytes: [UInt8] = []
    public private(set) var count = 0

    public init() { bytes.reserveCapacity(64 * 1024) }

    public mutating func add(line: Int, externalID: UUID, endpointID: UUID?, token: String?) {
        PGCopy.append(String(line), to: &bytes)
        bytes.append(0x09)
        PGCopy.append(externalID.lowercasedText, to: &bytes)
        bytes.append(0x09)
        PGCopy.append(endpointID?.lowercasedText, to: &bytes)
        bytes.append(0x09)
        PGCopy.append(token, to: &bytes)
        bytes.append(0x0a)
        count += 1
    }

    public mutating func take() -> [UInt8] {
        defer { bytes = [] }
        return bytes
    }
}

/// Bulk subscription of endpoints to a topic (docs/api.md, "Bulk import and export"), in one transaction as the
/// endpoint import: staged by COPY, then one insert. An endpoint already subscribed (or named twice) is unchanged, as
/// Subscribe answers the existing subscription; an endpoint that does not exist in the topic's account (or a token the
/// application does not have) is refused.
public struct SubscriptionImportRepository: Sendable {
    public let pool: PGPool

    public init(pool: PGPool) { self.pool = pool }

    /// `tokenApplicationKey` is the application whose tokens the lines may give (nil: none).
    public func importSubscriptions(topicKey: Int64, accountKey: Int64, tokenApplicationKey: Int64?, refusalLimit: Int,
                                    nextRows: @escaping @Sendable () throws(ImportAborted) -> [UInt8]?)
        async throws(StoreError) -> ImportOutcome {
        try await pool.transaction { (c) throws(StoreError) -> ImportOutcome in
            try c.query("""
                CREATE TEMPORARY TABLE subscription_import (line bigint NOT NULL, external_id uuid NOT NULL, endpoint_id uuid,
                    token text) ON COMMIT DROP
                """)
            try stageImport(c, table: "subscription_import", nextRows)
            try c.query("ANALYZE subscription_import")
            try c.query("""
                CREATE TEMPORARY TABLE subscription_import_plan ON COMMIT DROP AS
                WITH resolved AS (
                    SELECT r.line, r.external_id,
                           CASE WHEN a.id IS NOT NULL THEN byid.id ELSE bytoken.id END AS endpoint_key
                    FROM subscription_import r
                    LEFT JOIN endpoints byid ON byid.external_id = r.endpoint_id
                    LEFT JOIN platform_applications a ON a.id = byid.application AND a.account = $2
                        AND a.region = (SELECT region FROM topics WHERE id = $1)
                    LEFT JOIN endpoints bytoken ON bytoken.application = $3 AND bytoken.token = r.token
                ), numbered AS (
                    SELECT *, row_number() OVER (PARTITION BY endpoint_key ORDER BY line) AS nth FROM resolved
                )
                SELECT n.line, n.external_id, n.endpoint_key,
                       CASE WHEN n.endpoint_key IS NULL THEN 'missing'
                            WHEN n.nth > 1 OR s.id IS NOT NULL THEN 'unchanged'
                            ELSE 'create' END AS action
                FROM numbered n
                LEFT JOIN subscriptions s ON s.topic = $1 AND s.endpoint = n.endpoint_key
                """, [topicKey, accountKey, tokenApplicationKey ?? -1])
            var outcome = ImportOutcome()
            let planned = try c.query("SELECT count(*) FROM subscription_import_plan WHERE action = 'create'").first?.int64(0) ?? 0
            if planned > 0 {
                let inserted = try c.query("""
                    INSERT INTO subscriptions (external_id, topic, protocol, endpoint)
                    SELECT external_id, $1, 'application', endpoint_key FROM subscription_import_plan
                    WHERE action = 'create' ORDER BY line
                    ON CONFLICT ON CONSTRAINT subscriptions_topic_endpoint_key DO NOTHING
                    """, [topicKey]).affectedRows
                if Int64(inserted) < planned {
                    // Subscribed by another request meanwhile: the subscription exists, as this line asked.
                    try c.query("""
                        UPDATE subscription_import_plan p SET action = 'unchanged'
                        WHERE action = 'create' AND NOT EXISTS (SELECT 1 FROM subscriptions s WHERE s.external_id = p.external_id)
                        """)
                }
            }
            for row in try c.query("SELECT action, count(*) FROM subscription_import_plan GROUP BY action").rows {
                let count = Int(row.int64(1) ?? 0)
                switch row.string(0) {
                case "create": outcome.created += count
                case "unchanged": outcome.unchanged += count
                default: outcome.refused += count
                }
            }
            if outcome.refused > 0 && refusalLimit > 0 {
                for row in try c.query("""
                    SELECT line FROM subscription_import_plan WHERE action = 'missing' ORDER BY line LIMIT $1
                    """, [refusalLimit]).rows {
                    outcome.refusals.append(ImportRefusal(line: Int(row.int64(0) ?? 0),
                                                          reason: "No such endpoint in this account (or token in the application)."))
                }
            }
            return outcome
        }
    }
}
