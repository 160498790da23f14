import ClarionCore
import Foundation

/// A campaign as stored: messages sent under it are reported together.
public struct CampaignRecord: Sendable, Hashable {
    public let key: Int64
    public let accountKey: Int64
    /// The publisher's id for it (given in the publish, or generated).
    public let externalID: String
    public let name: String
    /// The payload key its deliveries carry Clarion's values under.
    public let namespace: String
    public let createdAt: Date
}

/// Campaigns, opens and engagement reports.
///
/// Opens need no row per delivery: a delivery id names its (message, endpoint) and is verified by its MAC before
/// it gets here; the open is one upsert keyed by that pair, so the same beacon twice counts once.
public struct CampaignRepository: Sendable {
    public let pool: PGPool

    public init(pool: PGPool) { self.pool = pool }

    /// Creates the campaign, or updates the name and namespace of the account's campaign with that id.
    public func ensureCampaign(accountKey: Int64, externalID: String, name: String, namespace: String)
        async throws(StoreError) -> CampaignRecord
    {
        try await pool.withConnection { (c) throws(StoreError) -> CampaignRecord in
            let result = try c.query("""
                INSERT INTO campaigns (external_id, account, name, namespace) VALUES ($1, $2, $3, $4)
                ON CONFLICT (account, external_id) DO UPDATE SET name = EXCLUDED.name, namespace = EXCLUDED.namespace
                RETURNING id, account, external_id, name, namespace, created_at
                """, [externalID, accountKey, name, namespace])
            guard let row = result.first else { throw StoreError(.invalidData, "campaign upsert returned nothing") }
            return try Self.record(row)
        }
    }

    /// The account's campaign with that external id, or nil.
    public func campaign(accountKey: Int64, externalID: String) async throws(StoreError) -> CampaignRecord? {
        try await pool.withConnection { (c) throws(StoreError) -> CampaignRecord? in
            guard let row = try c.query("""
                SELECT id, account, external_id, name, namespace, created_at FROM campaigns
                WHERE account = $1 AND external_id = $2
                """, [accountKey, externalID]).first else { return nil }
            return try Self.record(row)
        }
    }

    /// Records an open of a verified delivery id. False, and nothing stored, when its message or endpoint does
    /// not exist (any more). The first and last open times are kept; `count` counts beacons, the reports count
    /// each (message, endpoint) once. The API records through `OpenRecorder` (group commit) instead.
    public func recordOpen(_ delivery: DeliveryID, at time: Date) async throws(StoreError) -> Bool {
        try await pool.withConnection { (c) throws(StoreError) -> Bool in
            try Self.writeOpens([OpenRecord(delivery: delivery, at: time)], on: c)[0].get()
        }
    }

    /// Records many opens in one statement (one commit): the same delivery twice in a batch is one upsert with
    /// both times and a count of 2. One result per open, in order: false when its message or endpoint does not
    /// exist.
    static func writeOpens(_ opens: [OpenRecord], on c: PGConnection) -> [Result<Bool, StoreError>] {
        do throws(StoreError) {
            let result = try c.query("""
                WITH v AS (
                    SELECT message, endpoint, min(t) AS first_at, max(t) AS last_at, count(*) AS n
                    FROM unnest($1::bigint[], $2::bigint[], $3::timestamptz[]) AS u(message, endpoint, t)
                    GROUP BY message, endpoint)
                INSERT INTO opens (message, endpoint, first_opened_at, last_opened_at, count)
                SELECT v.message, v.endpoint, v.first_at, v.last_at, least(v.n, 2147483647)::integer
                FROM v JOIN messages m ON m.id = v.message JOIN endpoints e ON e.id = v.endpoint
                ON CONFLICT (message, endpoint) DO UPDATE SET
                    first_opened_at = least(opens.first_opened_at, EXCLUDED.first_opened_at),
                    last_opened_at = greatest(opens.last_opened_at, EXCLUDED.last_opened_at),
                    count = least(opens.count::bigint + EXCLUDED.count, 2147483647)::integer
                RETURNING message, endpoint
                """, [PGArrayParameter(text: PGArrayLiteral.int64s(opens.map(\.delivery.messageKey))),
                      PGArrayParameter(text: PGArrayLiteral.int64s(opens.map(\.delivery.endpointKey))),
                      PGArrayParameter(text: PGArrayLiteral.dates(opens.map(\.at)))])
            var stored = Set<DeliveryID>()
            for row in result.rows {
                if let message = row.int64(0), let endpoint = row.int64(1) {
                    stored.insert(DeliveryID(messageKey: message, endpointKey: endpoint))
                }
            }
            return opens.map { .success(stored.contains($0.delivery)) }
        } catch {
            return opens.map { _ in .failure(error) }
        }
    }

    /// The report of one campaign of the account, or nil when it has no such campaign.
    public func campaignReport(accountKey: Int64, externalID: String) async throws(StoreError) -> EngagementReport? {
        try await pool.withConnection { (c) throws(StoreError) -> EngagementReport? in
            guard let row = try c.query("""
                SELECT id, account, external_id, name, namespace, created_at FROM campaigns
                WHERE account = $1 AND external_id = $2
                """, [accountKey, externalID]).first else { return nil }
            let campaign = try Self.record(row)
            return try Self.report(c, subject: .campaign(campaign), scope: "SELECT id, published_at FROM messages WHERE campaign = $1",
                                   key: campaign.key)
        }
    }

    /// The report of one message of the account (by its external id), or nil when the account has no such message.
    public func messageReport(accountKey: Int64, messageID: UUID) async throws(StoreError) -> EngagementReport? {
        try await pool.withConnection { (c) throws(StoreError) -> EngagementReport? in
            guard let row = try c.query("SELECT id, account FROM messages WHERE external_id = $1", [messageID]).first,
                  let key = row.int64(0), row.int64(1) == accountKey else { return nil }
            return try Self.report(c, subject: .message(messageID), scope: "SELECT id, published_at FROM messages WHERE id = $1",
                                   key: key)
        }
    }

    /// Any report by the id an operator types (`clarion report <id>`): a message UUID of any account first, then
    /// a campaign external id (of any account; with `accountKey`, of that account only).
    public func report(id: String, accountKey: Int64? = nil) async throws(StoreError) -> EngagementReport? {
        try await pool.withConnection { (c) throws(StoreError) -> EngagementReport? in try Self.report(c, id: id, accountKey: accountKey) }
    }

    /// `report(id:accountKey:)` for the command line's thread (never from async code: it blocks).
    public func reportBlocking(id: String, accountKey: Int64? = nil) throws(StoreError) -> EngagementReport? {
        try pool.withConnectionBlocking { (c) throws(StoreError) -> EngagementReport? in try Self.report(c, id: id, accountKey: accountKey) }
    }

    static func report(_ c: PGConnection, id: String, accountKey: Int64?) throws(StoreError) -> EngagementReport? {
        if let uuid = UUID(text: id),
           let row = try c.query("SELECT id, account FROM messages WHERE external_id = $1", [uuid]).first,
           let key = row.int64(0), accountKey == nil || row.int64(1) == accountKey {
            return try Self.report(c, subject: .message(uuid), scope: "SELECT id, published_at FROM messages WHERE id = $1",
                                   key: key)
        }
        let rows = try c.query("""
            SELECT id, account, external_id, name, namespace, created_at FROM campaigns
            WHERE external_id = $1 AND ($2::bigint IS NULL OR account = $2) ORDER BY id LIMIT 2
            """, [id, accountKey]).rows
        guard rows.count == 1 else {
            if rows.count > 1 {
                throw StoreError(.invalidData, "campaign id '\(id)' exists in several accounts; name the account")
            }
            return nil
        }
        let campaign = try Self.record(rows[0])
        return try Self.report(c, subject: .campaign(campaign), scope: "SELECT id, published_at FROM messages WHERE campaign = $1",
                               key: campaign.key)
    }

    // MARK: Queries

    /// Most hour buckets a report lists (a campaign opened over more than 41 days shows its first 1000 hours).
    public static let hourBucketLimit = 1000

    /// Aggregates over the messages `scope` selects (a statement with `$1` = `key`, giving `id, published_at`).
    /// Counters come from the per-shard counters (no hot row per message), opens from `opens`. A direct message
    /// not claimed yet has no shard (schema v10): its one target is counted as planned all the same.
    static func report(_ c: PGConnection, subject: EngagementReport.Subject, scope: String, key: Int64)
        throws(StoreError) -> EngagementReport
    {
        let totals = try c.query("""
            WITH scope AS (\(scope))
            SELECT (SELECT count(*) FROM scope), (SELECT min(published_at) FROM scope),
                coalesce(sum(s.targeted), 0), coalesce(sum(s.sent), 0), coalesce(sum(s.accepted), 0),
                coalesce(sum(s.failed), 0), coalesce(sum(s.skipped), 0), coalesce(sum(s.expired), 0),
                coalesce(sum(s.planned_targets) FILTER (WHERE NOT EXISTS (
                    -- A variant's or a local-time zone's message plans the whole topic and sends to its part only.
                    SELECT 1 FROM messages vm WHERE vm.id = s.message AND (vm.attributes ? 'Clarion.Variant'
                        OR (vm.attributes->'Clarion.Timing'->>'StringValue')::jsonb ? 'zone'))), 0) + (
                    SELECT count(*) FROM messages m
                    WHERE NOT m.planned AND m.target_kind = 'endpoint' AND m.id IN (SELECT id FROM scope)),
                coalesce(sum(s.filtered), 0), coalesce(sum(s.held_out), 0), coalesce(sum(s.capped), 0),
                coalesce(sum(s.deferred), 0), coalesce(sum(s.quiet_skipped), 0)
            FROM fanout_shards s WHERE s.message IN (SELECT id FROM scope)
            """, [key])
        guard let row = totals.first else { throw StoreError(.invalidData, "report totals returned nothing") }
        var report = EngagementReport(subject: subject)
        report.messages = row.int64(0) ?? 0
        report.firstPublishedAt = row.date(1)
        report.targeted = max(row.int64(2) ?? 0, row.int64(8) ?? 0)
        report.sent = row.int64(3) ?? 0
        report.accepted = row.int64(4) ?? 0
        report.failed = row.int64(5) ?? 0
        report.skipped = row.int64(6) ?? 0
        report.expired = row.int64(7) ?? 0
        report.filtered = row.int64(9) ?? 0
        report.heldOut = row.int64(10) ?? 0
        report.capped = row.int64(11) ?? 0
        report.deferred = row.int64(12) ?? 0
        report.quietSkipped = row.int64(13) ?? 0

        // Per variant (schema v21): a campaign variant's messages carry `Clarion.Variant`, which only Clarion writes
        // (the publish refuses it from a publisher). Each endpoint is counted by exactly one variant's message.
        let variants = try c.query("""
            WITH scope AS (\(scope)),
            v AS (SELECT m.id, (m.attributes->'Clarion.Variant'->>'StringValue')::jsonb AS spec FROM messages m
                  WHERE m.id IN (SELECT id FROM scope) AND m.attributes ? 'Clarion.Variant'),
            n AS (SELECT s.message, sum(s.targeted) AS targeted, sum(s.sent) AS sent, sum(s.accepted) AS accepted,
                         sum(s.failed) AS failed, sum(s.held_out) AS held_out
                  FROM fanout_shards s WHERE s.message IN (SELECT id FROM v) GROUP BY s.message),
            o AS (SELECT o.message, count(*) AS opens FROM opens o WHERE o.message IN (SELECT id FROM v) GROUP BY o.message)
            SELECT (v.spec->>'index')::int, v.spec->>'name', (v.spec->'weights'->((v.spec->>'index')::int))::text::int,
                count(*), coalesce(sum(n.targeted), 0), coalesce(sum(n.sent), 0), coalesce(sum(n.accepted), 0),
                coalesce(sum(n.failed), 0), coalesce(sum(n.held_out), 0), coalesce(sum(o.opens), 0)
            FROM v LEFT JOIN n ON n.message = v.id LEFT JOIN o ON o.message = v.id
            GROUP BY 1, 2, 3 ORDER BY 1, 2
            """, [key])
        report.variants = variants.rows.map { v in
            EngagementReport.VariantRow(
                index: v.int(0) ?? 0, name: v.string(1) ?? "", weight: v.int(2) ?? 0, messages: v.int64(3) ?? 0,
                targeted: v.int64(4) ?? 0, sent: v.int64(5) ?? 0, accepted: v.int64(6) ?? 0, failed: v.int64(7) ?? 0,
                heldOut: v.int64(8) ?? 0, uniqueOpens: v.int64(9) ?? 0)
        }

        let failures = try c.query("""
            WITH scope AS (\(scope))
            SELECT f.reason, sum(f.count) FROM shard_failures f JOIN fanout_shards s ON s.id = f.shard
            WHERE s.message IN (SELECT id FROM scope) GROUP BY f.reason ORDER BY f.reason
            """, [key])
        for f in failures.rows { if let reason = f.string(0) { report.failuresByReason[reason] = f.int64(1) ?? 0 } }

        // Time to open runs from the message's publish time: no row per delivery records when each was sent.
        let opens = try c.query("""
            WITH scope AS (\(scope)),
            o AS (SELECT o.first_opened_at, o.count,
                         greatest(0, extract(epoch FROM o.first_opened_at - s.published_at))::float8 AS seconds
                  FROM opens o JOIN scope s ON s.id = o.message)
            SELECT count(*), coalesce(sum(count), 0),
                percentile_cont(0.5) WITHIN GROUP (ORDER BY seconds),
                percentile_cont(0.9) WITHIN GROUP (ORDER BY seconds),
                percentile_cont(0.99) WITHIN GROUP (ORDER BY seconds)
            FROM o
            """, [key])
        if let o = opens.first {
            report.uniqueOpens = o.int64(0) ?? 0
            report.beacons = o.int64(1) ?? 0
            if report.uniqueOpens > 0 {
                report.timeToOpen = EngagementReport.Percentiles(p50: o.double(2) ?? 0, p90: o.double(3) ?? 0,
                                                                 p99: o.double(4) ?? 0)
            }
        }
        let hours = try c.query("""
            WITH scope AS (\(scope))
            SELECT date_trunc('hour', o.first_opened_at), count(*) FROM opens o JOIN scope s ON s.id = o.message
            GROUP BY 1 ORDER BY 1 LIMIT \(hourBucketLimit)
            """, [key])
        report.opensPerHour = hours.rows.compactMap { h in
            h.date(0).map { EngagementReport.HourBucket(hour: $0, opens: h.int64(1) ?? 0) }
        }
        return report
    }

    static func record(_ row: PGRow) throws(StoreError) -> CampaignRecord {
        CampaignRecord(key: try row.requireInt64(0), accountKey: try row.requireInt64(1), externalID: try row.requireString(2),
                       name: try row.requireString(3), namespace: try row.requireString(4), createdAt: try row.requireDate(5))
    }
}
