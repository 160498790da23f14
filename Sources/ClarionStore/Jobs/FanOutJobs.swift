import ClarionCore
import Foundation

/// The fan-out job queue in PostgreSQL (docs/architecture.md, "The life of a publish", steps 3-6): plan, claim, stream targets,
/// checkpoint, release, finish, retries, and the message status query.
///
/// PostgreSQL is the coordinator: shards are claimed with `FOR UPDATE SKIP LOCKED` under a lease whose
/// fencing token (`claims`) every later write checks, so a worker that lost its lease cannot write over the
/// one that took it. Every statement is keyed by message, topic, shard or application; the hot path writes
/// only at checkpoints (one transaction per few thousand deliveries), never per delivery.
public struct FanOutJobs: Sendable {
    public let pool: PGPool

    public init(pool: PGPool) {
        self.pool = pool
    }

    /// The channel the publish path notifies after committing a message.
    public static let workChannel = "clarion_work"

    // MARK: Plan

    /// Cuts unplanned topic, user and audience messages into shards; returns how many messages were planned.
    /// Direct messages are not the planner's: `claim` makes their shard (schema v10). The query repeats the
    /// predicate of `messages_unplanned_idx` (`state = 'Enqueued' AND target_kind <> 'endpoint'`) so PostgreSQL can
    /// prove and use it; scheduled and cancelled messages are not in it (schema v16).
    ///
    /// A topic's subscriptions are walked through the `(topic, id)` index one boundary at a time
    /// (`OFFSET shardSize - 1 LIMIT 1`), so planning a million-subscription topic reads about a hundred index
    /// entries per shard boundary query, not the rows. Each shard holds `shardSize` subscriptions at planning
    /// time; subscriptions added later with higher ids are not part of this publish.
    @discardableResult
    public func planPending(limit: Int = 16, shardSize: Int = 10_000) async throws(StoreError) -> Int {
        let size = max(1, shardSize)
        return try await pool.transaction { (c) throws(StoreError) -> Int in
            let pending = try c.query("""
                SELECT id, target_kind, target_id FROM messages
                WHERE NOT planned AND state = 'Enqueued' AND target_kind <> 'endpoint' ORDER BY id LIMIT $1
                FOR UPDATE SKIP LOCKED
                """, [limit])
            var planned = 0
            for row in pending.rows {
                let message = try row.requireInt64(0)
                let kind = row.string(1) ?? ""
                let target = row.int64(2)
                try Self.plan(c, message: message, kind: kind, target: target, shardSize: size)
                planned += 1
            }
            return planned
        }
    }

    static func plan(_ c: PGConnection, message: Int64, kind: String, target: Int64?, shardSize: Int) throws(StoreError) {
        let existing = try c.query("SELECT count(*) FROM fanout_shards WHERE message = $1", [message])
        if (existing.first?.int64(0) ?? 0) > 0 {
            try c.query("UPDATE messages SET planned = true WHERE id = $1", [message])
            return
        }
        var los: [Int64] = []
        var his: [Int64] = []
        var counts: [Int64] = []
        switch (kind, target) {
        case ("topic", let topic?):
            // HTTP/S subscribers get their rows in the durable HTTP queue in this transaction (schema v17); the
            // shards below still span them (they are subscriptions), and the shard workers' target query skips them.
            try HTTPDeliveryQueue.enqueueNotifications(c, message: message, topic: topic)
            var last: Int64 = 0
            while true {
                let boundary = try c.query("""
                    SELECT id FROM subscriptions WHERE topic = $1 AND id > $2 ORDER BY id OFFSET $3 LIMIT 1
                    """, [topic, last, shardSize - 1])
                if let hi = boundary.first?.int64(0) {
                    los.append(last)
                    his.append(hi)
                    counts.append(Int64(shardSize))
                    last = hi
                    continue
                }
                let tail = try c.query("""
                    SELECT count(*), max(id) FROM (
                        SELECT id FROM subscriptions WHERE topic = $1 AND id > $2 ORDER BY id LIMIT $3) t
                    """, [topic, last, shardSize])
                if let row = tail.first, let count = row.int64(0), count > 0, let hi = row.int64(1) {
                    los.append(last)
                    his.append(hi)
                    counts.append(count)
                }
                break
            }
        case ("user", _), ("audience", _):
            // AudienceTargets.swift: ranges of the applications' endpoint ids.
            (los, his, counts) = try planAudience(c, message: message, shardSize: shardSize)
        default:
            // An unknown target kind: fail it visibly rather than leave it Enqueued for ever. ('endpoint' never
            // comes here: the query above leaves direct messages to `claim`, and older ones are already planned.)
            try c.query("""
                UPDATE messages SET planned = true, state = 'Failed', started_at = coalesce(started_at, now()),
                    completed_at = now() WHERE id = $1
                """, [message])
            return
        }
        if los.isEmpty {
            // Nothing to deliver (an empty topic): the message is complete at once.
            try c.query("""
                UPDATE messages SET planned = true, state = 'Completed', started_at = coalesce(started_at, now()),
                    completed_at = now() WHERE id = $1 AND state IN ('Enqueued', 'Processing')
                """, [message])
            return
        }
        try c.query("""
            INSERT INTO fanout_shards (message, lo, hi, checkpoint, planned_targets)
            SELECT $1, lo, hi, lo, n FROM unnest($2::bigint[], $3::bigint[], $4::bigint[]) AS t(lo, hi, n)
            """, [message, PGArrayParameter(text: PGArrayLiteral.int64s(los)),
                  PGArrayParameter(text: PGArrayLiteral.int64s(his)), PGArrayParameter(text: PGArrayLiteral.int64s(counts))])
        try c.query("UPDATE messages SET planned = true WHERE id = $1", [message])
    }

    // MARK: Claim

    /// Claims up to `limit` shards for `owner`, oldest message first: ready shards or shards whose lease expired,
    /// and direct messages nobody has claimed yet, whose one-endpoint shard is inserted here, already leased.
    /// - Parameter maxPlannedTargets: only shards planned with at most this many targets (direct publishes and
    ///   small topics), so they need not wait behind a large fan-out. A direct message always passes (1 target).
    ///
    /// One statement. Both sources are locked `FOR UPDATE SKIP LOCKED` (a concurrent claimer skips what this one
    /// holds), merged by message id and cut to `limit`; candidates not chosen stay locked only until the commit.
    /// A direct message's row lock re-checks `NOT planned` on the newest row version (PostgreSQL keeps a partial
    /// index's predicate as a filter on a locking scan), and the update that marks the message Processing sets
    /// `planned` again under `NOT planned`: its shard is inserted only from that update's rows, so two claimers,
    /// or a claimer and an older node's planner, never both make it. The shard row holds exactly what the
    /// publish path used to insert and the claim used to set (schema v10): (lo, hi] = (e - 1, e], checkpoint = lo,
    /// `planned_targets` = 1, `claims` = 1, leased to `owner`. Messages stored before v10 have a ready shard and
    /// `planned = true`; they come through the shard side, as do direct shards whose lease expired.
    /// - Parameter direct: whether unclaimed direct messages are taken too; a dispatcher that claims them in
    ///   batches (`claimDirect`) passes false for its shard workers. Ready shards are taken either way.
    public func claim(
        owner: String, limit: Int = 1, leaseSeconds: Double, maxPlannedTargets: Int? = nil, direct: Bool = true
    ) async throws(StoreError) -> [ShardClaim] {
        try await pool.transaction { (c) throws(StoreError) -> [ShardClaim] in
            let result = try c.query(Self.claimStatement, [owner, limit, leaseSeconds, maxPlannedTargets, direct])
            var claims: [ShardClaim] = []
            claims.reserveCapacity(result.rowCount)
            for row in result.rows {
                claims.append(ShardClaim(
                    shard: try row.requireInt64(0), message: try row.requireInt64(1), lo: try row.requireInt64(2),
                    hi: try row.requireInt64(3), checkpoint: try row.requireInt64(4), claim: Int32(try row.requireInt64(5)),
                    owner: owner, leaseExpiresAt: try row.requireDate(6)))
            }
            claims.sort { ($0.message, $0.shard) < ($1.message, $1.shard) }
            return claims
        }
    }

    /// The steps both claims share, after their `ready` and `direct` sources (`$1` owner, `$2` limit, `$3` lease
    /// seconds): `chosen`, the oldest of both; `started`, their messages marked Processing and planned (`NOT planned`
    /// re-checked under the row lock, so a direct message gets one shard); `leased`, existing shards leased with a new
    /// fencing token; `created`, a direct message's one-endpoint shard inserted already leased.
    private static let claimSteps = """
        chosen AS (
            SELECT shard, message, endpoint FROM (
                SELECT id AS shard, message, NULL::bigint AS endpoint FROM ready
                UNION ALL
                SELECT NULL::bigint, message, endpoint FROM direct) u
            ORDER BY message, shard LIMIT $2
        ), started AS (
            UPDATE messages m SET state = CASE WHEN m.state = 'Enqueued' THEN 'Processing' ELSE m.state END,
                started_at = coalesce(m.started_at, now()), planned = true
            FROM chosen c
            WHERE m.id = c.message
              AND ((c.endpoint IS NULL AND m.state = 'Enqueued') OR (c.endpoint IS NOT NULL AND NOT m.planned))
            RETURNING m.id, c.endpoint
        ), leased AS (
            UPDATE fanout_shards s SET state = 'leased', lease_owner = $1,
                lease_expires_at = now() + make_interval(secs => $3), claims = s.claims + 1, updated_at = now()
            FROM chosen c WHERE s.id = c.shard
            RETURNING s.id, s.message, s.lo, s.hi, s.checkpoint, s.claims, s.lease_expires_at
        ), created AS (
            INSERT INTO fanout_shards (message, lo, hi, checkpoint, planned_targets, state, lease_owner,
                                       lease_expires_at, claims)
            SELECT id, endpoint - 1, endpoint, endpoint - 1, 1, 'leased', $1, now() + make_interval(secs => $3), 1
            FROM started WHERE endpoint IS NOT NULL
            RETURNING id, message, lo, hi, checkpoint, claims, lease_expires_at
        """

    /// `claim`'s statement: $1 owner, $2 limit, $3 lease seconds, $4 most planned targets (or NULL), $5 whether
    /// unclaimed direct messages are taken (false: a one-time filter, the index is not read).
    static let claimStatement = """
        WITH ready AS (
            SELECT id, message FROM fanout_shards
            WHERE (state = 'ready' OR (state = 'leased' AND lease_expires_at < now()))
              AND ($4::bigint IS NULL OR planned_targets <= $4::bigint)
            ORDER BY message, id LIMIT $2 FOR UPDATE SKIP LOCKED
        ), direct AS (
            SELECT id AS message, target_id AS endpoint FROM messages
            WHERE NOT planned AND state = 'Enqueued' AND target_kind = 'endpoint' AND $5::boolean
            ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED
        ), \(claimSteps)
        )
        SELECT * FROM leased UNION ALL SELECT * FROM created
        """

    /// Claims up to `limit` direct messages for one batch worker, oldest first, with everything needed to send
    /// them: unclaimed direct messages (their shards inserted leased, as `claim` does) and ready or lease-expired
    /// shards of direct messages (stored before v10, or a batch whose holder died), each with its message row and
    /// its endpoint. One statement, one commit for the whole batch: the claim, the message read and the target read
    /// that a shard worker makes per message.
    ///
    /// Locking is `claim`'s: both sources `FOR UPDATE SKIP LOCKED`, `NOT planned` re-checked under the row lock,
    /// a fencing token per shard. The message and endpoint columns are read in the same statement, so they are the
    /// rows as of its snapshot (the message's `state` is not read: it is Processing from here on).
    public func claimDirect(
        owner: String, limit: Int, leaseSeconds: Double, staleBefore: Date?
    ) async throws(StoreError) -> [DirectClaim] {
        let stale: Date = staleBefore ?? Date(timeIntervalSince1970: 0)
        return try await pool.transaction { (c) throws(StoreError) -> [DirectClaim] in
            let result = try c.query(Self.claimDirectStatement, [owner, limit, leaseSeconds, stale])
            var claims: [DirectClaim] = []
            claims.reserveCapacity(result.rowCount)
            for row in result.rows {
                let shard = ShardClaim(
                    shard: try row.requireInt64(0), message: try row.requireInt64(1), lo: try row.requireInt64(2),
                    hi: try row.requireInt64(3), checkpoint: try row.requireInt64(4), claim: Int32(try row.requireInt64(5)),
                    owner: owner, leaseExpiresAt: try row.requireDate(6))
                guard let external = row.uuid(7) else {
                    throw StoreError(.invalidData, "message \(shard.message) has an unreadable row")
                }
                let job = MessageJob(
                    key: shard.message, externalID: external, account: try row.requireInt64(8), targetKind: .endpoint,
                    targetID: row.int64(9), message: try row.requireString(10), structure: row.string(11),
                    subject: row.string(12), attributesJSON: row.string(13) ?? "{}", publishedAt: try row.requireDate(14),
                    expiresAt: row.date(15), state: .processing)
                var target = row.int64(16) == nil ? nil : try Self.target(row, offset: 16)
                target?.timeZone = row.string(23)
                claims.append(DirectClaim(shard: shard, job: job, target: target))
            }
            claims.sort { ($0.shard.message, $0.shard.shard) < ($1.shard.message, $1.shard.shard) }
            return claims
        }
    }

    /// `claimDirect`'s statement: $1 owner, $2 limit, $3 lease seconds, $4 stale-before time. It shares
    /// `claimSteps` with `claimStatement`, with the ready side cut to direct messages' shards (one planned target,
    /// the message's kind checked by primary key; that side is small: ready topic shards, pre-v10 and expired
    /// direct shards). The final select joins the message (primary key) and the endpoint (primary key; none when
    /// the checkpoint already passed it). The endpoint is probed through a `LATERAL ... OFFSET 0` subquery, as in
    /// `targets`: as a plain join the planner hashes the batch against a sequential scan of every endpoint, a cost
    /// that grows with the table.
    static let claimDirectStatement = """
        WITH ready AS (
            SELECT s.id, s.message FROM fanout_shards s
            WHERE (s.state = 'ready' OR (s.state = 'leased' AND s.lease_expires_at < now())) AND s.planned_targets = 1
              AND EXISTS (SELECT 1 FROM messages m WHERE m.id = s.message AND m.target_kind = 'endpoint')
            ORDER BY s.message, s.id LIMIT $2 FOR UPDATE OF s SKIP LOCKED
        ), direct AS (
            SELECT id AS message, target_id AS endpoint FROM messages
            WHERE NOT planned AND state = 'Enqueued' AND target_kind = 'endpoint'
            ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED
        ), \(claimSteps)
        ), claimed AS (
            SELECT * FROM leased UNION ALL SELECT * FROM created
        )
        SELECT k.id, k.message, k.lo, k.hi, k.checkpoint, k.claims, k.lease_expires_at,
            m.external_id, m.account, m.target_id, m.message, m.structure, m.subject, m.attributes::text,
            greatest(m.published_at, m.send_at), m.expires_at,
            e.id, e.id, e.application, e.token, e.enabled,
            coalesce(e.token_refreshed_at, e.updated_at) < $4, coalesce(e.token_refreshed_at, e.created_at),
            e.attributes->>'TimeZone'
        FROM claimed k JOIN messages m ON m.id = k.message
        LEFT JOIN LATERAL (SELECT * FROM endpoints e WHERE e.id = k.hi AND k.checkpoint < k.hi OFFSET 0) e ON true
        """

    /// Hands back every shard and retry `owner` still holds (shutdown after the workers stopped, or a node
    /// restarting under the same name). Returns the number of shards released.
    @discardableResult
    public func releaseAll(owner: String) async throws(StoreError) -> Int {
        try await pool.transaction { (c) throws(StoreError) -> Int in
            let shards = try c.query("""
                UPDATE fanout_shards SET state = 'ready', lease_owner = NULL, lease_expires_at = NULL, updated_at = now()
                WHERE state = 'leased' AND lease_owner = $1
                """, [owner])
            try c.query("""
                UPDATE delivery_retries SET lease_owner = NULL, lease_expires_at = NULL WHERE lease_owner = $1
                """, [owner])
            return shards.affectedRows
        }
    }

    // MARK: Read

    public func message(_ key: Int64) async throws(StoreError) -> MessageJob {
        try await pool.withConnection { (c) throws(StoreError) -> MessageJob in
            let result = try c.query("""
                SELECT id, external_id, account, target_kind, target_id, message, structure, subject, attributes::text,
                    greatest(published_at, send_at), expires_at, state,
                    pace_per_second IS NOT NULL OR pace_over_seconds IS NOT NULL
                FROM messages WHERE id = $1
                """, [key])
            guard let row = result.first else { throw StoreError(.notFound, "message \(key) does not exist") }
            guard let external = row.uuid(1), let kind = MessageJob.TargetKind(rawValue: row.string(3) ?? ""),
                  let state = MessageState(rawValue: row.string(11) ?? "") else {
                throw StoreError(.invalidData, "message \(key) has an unreadable row")
            }
            var job = MessageJob(
                key: try row.requireInt64(0), externalID: external, account: try row.requireInt64(2), targetKind: kind,
                targetID: row.int64(4), message: try row.requireString(5), structure: row.string(6), subject: row.string(7),
                attributesJSON: row.string(8) ?? "{}", publishedAt: try row.requireDate(9), expiresAt: row.date(10),
                state: state)
            job.paced = row.bool(12) ?? false
            return job
        }
    }

    /// Up to `limit` targets of a shard after key `after` (the checkpoint, then the last key read), in key
    /// order: a keyset page, so memory stays flat whatever the shard or topic size.
    public func targets(
        of message: MessageJob, shard: ShardClaim, after: Int64, limit: Int, staleBefore: Date?
    ) async throws(StoreError) -> [ShardTarget] {
        let stale: Date = staleBefore ?? Date(timeIntervalSince1970: 0)
        let kind = message.targetKind
        let target = message.targetID ?? 0
        return try await pool.withConnection { (c) throws(StoreError) -> [ShardTarget] in
            let result: PGResult
            switch kind {
            case .topic:
                // One index probe per subscription of the page (a nested loop, in key order, no sort). A plain
                // join lets the planner hash the page against a (parallel) sequential scan of every endpoint,
                // which grows with the table while probes grow with the page. `OFFSET 0`
                // keeps the lateral subquery from being flattened back into that join.
                // The subscription's filter policy comes with it (NULL for most): the worker compiles each
                // distinct policy text once and applies it to every target that carries it.
                result = try c.query("""
                    SELECT s.id, e.id, e.application, e.token, e.enabled,
                        coalesce(e.token_refreshed_at, e.updated_at) < $5, coalesce(e.token_refreshed_at, e.created_at),
                        s.filter_policy::text, s.scope, e.attributes->>'TimeZone'
                    FROM (SELECT id, endpoint, filter_policy,
                              CASE WHEN filter_policy IS NOT NULL THEN attributes->>'FilterPolicyScope' END AS scope
                          FROM subscriptions
                          WHERE topic = $1 AND id > $2 AND id <= $3 AND endpoint IS NOT NULL ORDER BY id LIMIT $4) s
                    CROSS JOIN LATERAL (SELECT * FROM endpoints e WHERE e.id = s.endpoint OFFSET 0) e
                    ORDER BY s.id
                    """, [target, after, shard.hi, limit, stale])
            case .endpoint:
                result = try c.query("""
                    SELECT e.id, e.id, e.application, e.token, e.enabled,
                        coalesce(e.token_refreshed_at, e.updated_at) < $4, coalesce(e.token_refreshed_at, e.created_at),
                        e.attributes->>'TimeZone'
                    FROM endpoints e WHERE e.id > $1 AND e.id <= $2
                    ORDER BY e.id LIMIT $3
                    """, [after, shard.hi, limit, stale])
            case .user, .audience:
                result = try Self.audienceTargets(c, message: message.key, after: after, hi: shard.hi, limit: limit,
                                                  staleBefore: stale)
            }
            var out: [ShardTarget] = []
            out.reserveCapacity(result.rowCount)
            for row in result.rows {
                var target = try Self.target(row, offset: 0)
                if kind == .topic {
                    target.filterPolicy = row.string(7)
                    target.filterPolicyScope = row.string(8)
                    target.timeZone = row.string(9)
                } else {
                    target.timeZone = row.string(7)
                }
                out.append(target)
            }
            return out
        }
    }

    static func target(_ row: PGRow, offset o: Int) throws(StoreError) -> ShardTarget {
        ShardTarget(
            key: try row.requireInt64(o), endpoint: try row.requireInt64(o + 1), application: try row.requireInt64(o + 2),
            token: try row.requireString(o + 3), enabled: row.bool(o + 4) ?? false, stale: row.bool(o + 5) ?? false,
            tokenUpdatedAt: row.date(o + 6))
    }

    public func applications(_ keys: [Int64]) async throws(StoreError) -> [DispatchApplication] {
        guard !keys.isEmpty else { return [] }
        return try await pool.withConnection { (c) throws(StoreError) -> [DispatchApplication] in
            let result = try c.query("""
                SELECT a.id, a.account, a.name, a.platform, a.enabled, a.disabled_reason, a.attributes::text,
                    md5(a.credentials_sealed), m.frequency_cap_max, m.frequency_cap_window_seconds, m.quiet_start_minute,
                    m.quiet_end_minute, m.quiet_time_zone
                FROM platform_applications a
                -- The mobile app the application belongs to (schema v22: its cap and quiet hours; v24: its WEBPUSH
                -- application too); the oldest when
                -- several name it.
                LEFT JOIN LATERAL (
                    SELECT * FROM mobile_apps m
                    WHERE m.apns_application = a.id OR m.fcm_application = a.id OR m.adm_application = a.id
                       OR m.webpush_application = a.id
                    ORDER BY m.id LIMIT 1) m ON true
                WHERE a.id = ANY($1::bigint[])
                """, [PGArrayParameter(text: PGArrayLiteral.int64s(keys))])
            var out: [DispatchApplication] = []
            for row in result.rows {
                var application = DispatchApplication(
                    key: try row.requireInt64(0), account: try row.requireInt64(1), name: try row.requireString(2),
                    platform: try row.requireString(3), enabled: row.bool(4) ?? false, disabledReason: row.string(5),
                    attributes: row.stringMap(6) ?? [:], credentialsVersion: row.string(7))
                if let max = row.int(8), let window = row.int(9) {
                    application.frequencyCap = FrequencyCap(max: max, windowSeconds: window)
                }
                if let start = row.int(10).flatMap(LocalClockTime.init(minutes:)), let end = row.int(11).flatMap(LocalClockTime.init(minutes:)) {
                    application.quietHours = QuietHours(start: start, end: end)
                    application.quietTimeZone = row.string(12)
                }
                out.append(application)
            }
            return out
        }
    }

    // MARK: Checkpoint

    /// Writes a shard's progress in one transaction: checkpoint key, counters, failures by reason, delivery
    /// log rows, endpoints disabled (with an event each), tokens replaced, retries, applications disabled (with
    /// an event each), the lease renewed, released or the shard done; when done and the message has nothing
    /// left, the message's final state.
    ///
    /// The first statement checks the fencing token; a lost lease rolls everything back. `report`: what the
    /// committed transaction disabled or gave up on (empty when the lease was lost), for the caller to log.
    public func checkpoint(
        _ claim: ShardClaim, message: Int64, checkpoint key: Int64, effects: OutcomeEffects, lease: LeaseDisposition
    ) async throws(StoreError) -> (result: CheckpointResult, report: FailureReport) {
        do {
            return try await withDeadlockRetry { () throws(StoreError) -> (result: CheckpointResult, report: FailureReport) in
                try await pool.transaction { (c) throws(StoreError) -> (result: CheckpointResult, report: FailureReport) in
                    let (state, renew): (String, Double?) = switch lease {
                    case .renew(let seconds): ("leased", seconds)
                    case .release: ("ready", nil)
                    case .finish: ("done", nil)
                    }
                    let n = effects.counters
                    // A shard `done` while still naming its holder was cancelled with its message (`cancel`): the
                    // holder's checkpoints still add what it counted, and the shard stays done with its holder's name
                    // (so the holder's next checkpoint, its last, matches too).
                    let updated = try c.query("""
                        UPDATE fanout_shards SET checkpoint = greatest(checkpoint, least($3, hi)),
                            targeted = targeted + $4, sent = sent + $5, accepted = accepted + $6, failed = failed + $7,
                            retried = retried + $8, skipped = skipped + $9, expired = expired + $10,
                            filtered = filtered + $14, held_out = held_out + $15, capped = capped + $16,
                            deferred = deferred + $17, quiet_skipped = quiet_skipped + $18, state = CASE WHEN state = 'done' THEN 'done' ELSE $11 END,
                            lease_owner = CASE WHEN state = 'done' OR $11 = 'leased' THEN lease_owner END,
                            lease_expires_at = CASE WHEN state <> 'done' AND $11 = 'leased'
                                                    THEN now() + make_interval(secs => $12) END,
                            updated_at = now()
                        WHERE id = $1 AND claims = $2 AND state IN ('leased', 'done') AND lease_owner = $13
                        RETURNING state
                        """, [claim.shard, claim.claim, key, n.targeted, n.sent, n.accepted, n.failed, n.retried,
                              n.skipped, n.expired, state, renew ?? 0, claim.owner, n.filtered, n.heldOut,
                              n.capped, n.deferred, n.quietSkipped])
                    guard updated.affectedRows == 1 else { throw StoreError(.notFound, Self.leaseLostMessage) }
                    var statements = Self.effectCommands(message: message, shardFailures: [claim.shard: effects.failures],
                                                         effects: effects, retryShard: claim.shard)
                    // The counts' upsert is the transaction's last statement (`applicationCountsCommand`): in the
                    // pipeline when nothing follows, after the message's finish otherwise.
                    let counts = Self.applicationCountsCommand(effects.applications)
                    if lease != .finish, let counts { statements.append(counts) }
                    var report = try statements.run(c)
                    if lease != .finish, updated.first?.string(0) == "done" { return (.cancelled, report) }
                    guard case .finish = lease else { return (.applied(finishedMessage: nil), report) }
                    let finished = try Self.finishIfDone(c, messages: [message])
                    report.messages += finished.givenUp
                    if let counts { _ = try c.pipeline([counts]) }
                    return (.applied(finishedMessage: finished.states[message]), report)
                }
            }
        } catch where error.code == .notFound && error.message == Self.leaseLostMessage {
            return (.leaseLost, FailureReport())
        }
    }

    static let leaseLostMessage = "the shard lease was taken over"

    /// A single shard's checkpoint for many shards of one owner in one transaction (a direct batch: up to a few
    /// hundred one-endpoint shards): one fenced UPDATE over all of them, the effects of those whose lease held in
    /// one pipeline, then the messages of the finished ones completed under their row locks, in batched
    /// statements. Returns each shard's result; a shard whose lease was taken over writes nothing, the others are
    /// unaffected by it. `report`: what the committed transaction disabled or gave up on, for the caller to log.
    public func checkpoint(batch: [ShardProgress]) async throws(StoreError)
        -> (results: [Int64: CheckpointResult], report: FailureReport) {
        guard let owner = batch.first?.claim.owner else { return ([:], FailureReport()) }
        let sorted = batch.sorted { $0.claim.shard < $1.claim.shard }
        return try await withDeadlockRetry { () throws(StoreError) -> (results: [Int64: CheckpointResult], report: FailureReport) in
            try await pool.transaction { (c) throws(StoreError) -> (results: [Int64: CheckpointResult], report: FailureReport) in
                var renew: Double = 0
                var states: [String?] = []
                for progress in sorted {
                    switch progress.lease {
                    case .renew(let seconds):
                        states.append("leased")
                        renew = max(renew, seconds)
                    case .release: states.append("ready")
                    case .finish: states.append("done")
                    }
                }
                func column(_ value: (DeliveryCounters) -> Int64) -> PGArrayParameter {
                    PGArrayParameter(text: PGArrayLiteral.int64s(sorted.map { value($0.effects.counters) }))
                }
                let updated = try c.query("""
                    UPDATE fanout_shards s SET checkpoint = greatest(s.checkpoint, least(v.key, s.hi)),
                        targeted = s.targeted + v.targeted, sent = s.sent + v.sent, accepted = s.accepted + v.accepted,
                        failed = s.failed + v.failed, retried = s.retried + v.retried, skipped = s.skipped + v.skipped,
                        expired = s.expired + v.expired, capped = s.capped + v.capped, deferred = s.deferred + v.deferred,
                        quiet_skipped = s.quiet_skipped + v.quiet_skipped,
                        state = CASE WHEN s.state = 'done' THEN 'done' ELSE v.state END,
                        lease_owner = CASE WHEN s.state = 'done' OR v.state = 'leased' THEN s.lease_owner END,
                        lease_expires_at = CASE WHEN s.state <> 'done' AND v.state = 'leased'
                                                THEN now() + make_interval(secs => $13) END,
                        updated_at = now()
                    FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[], $6::bigint[],
                                $7::bigint[], $8::bigint[], $9::bigint[], $10::bigint[], $11::text[], $14::bigint[],
                                $15::bigint[], $16::bigint[])
                        AS v(id, claims, key, targeted, sent, accepted, failed, retried, skipped, expired, state, capped,
                             deferred, quiet_skipped)
                    WHERE s.id = v.id AND s.claims = v.claims AND s.state IN ('leased', 'done') AND s.lease_owner = $12
                    RETURNING s.id
                    """, [PGArrayParameter(text: PGArrayLiteral.int64s(sorted.map(\.claim.shard))),
                          PGArrayParameter(text: PGArrayLiteral.int64s(sorted.map { Int64($0.claim.claim) })),
                          PGArrayParameter(text: PGArrayLiteral.int64s(sorted.map {
                              $0.lease == .finish ? $0.claim.hi : $0.checkpoint })),
                          column(\.targeted), column(\.sent), column(\.accepted), column(\.failed), column(\.retried),
                          column(\.skipped), column(\.expired), PGArrayParameter(text: PGArrayLiteral.strings(states)),
                          owner, renew, column(\.capped), column(\.deferred), column(\.quietSkipped)])
                var applied = Set<Int64>()
                for row in updated.rows { applied.insert(try row.requireInt64(0)) }
                var statements = EffectStatements()
                var finishing: [Int64] = []
                var applications: [Int64: ApplicationOutcomeCounts] = [:]
                for progress in sorted where applied.contains(progress.claim.shard) {
                    statements.append(Self.effectCommands(
                        message: progress.claim.message, shardFailures: [progress.claim.shard: progress.effects.failures],
                        effects: progress.effects, retryShard: progress.claim.shard))
                    if progress.lease == .finish { finishing.append(progress.claim.message) }
                    for (application, counts) in progress.effects.applications { applications[application, default: .init()] += counts }
                }
                // One upsert for the whole batch, its last statement (`applicationCountsCommand`).
                let counts = Self.applicationCountsCommand(applications)
                if finishing.isEmpty, let counts { statements.append(counts) }
                var report = try statements.run(c)
                let finished = try Self.finishIfDone(c, messages: finishing)
                report.messages += finished.givenUp
                if !finishing.isEmpty, let counts { _ = try c.pipeline([counts]) }
                var out: [Int64: CheckpointResult] = [:]
                for progress in sorted {
                    out[progress.claim.shard] = applied.contains(progress.claim.shard)
                        ? .applied(finishedMessage: progress.lease == .finish ? finished.states[progress.claim.message] : nil)
                        : .leaseLost
                }
                return (out, report)
            }
        }
    }

    /// The writes shared by shard and retry checkpoints. Failures go to the given shards' rows. Returns the
    /// endpoints and applications these writes disabled.
    static func writeEffects(
        _ c: PGConnection, message: Int64, shardFailures: [Int64: [String: Int64]], effects: OutcomeEffects,
        retryShard: Int64?
    ) throws(StoreError) -> FailureReport {
        try effectCommands(message: message, shardFailures: shardFailures, effects: effects, retryShard: retryShard).run(c)
    }

    /// Statements pipelined together, and which of them read back what they disabled.
    struct EffectStatements {
        enum Reader {
            /// Rows of `DisabledEndpoint` columns.
            case endpoints(message: Int64)
            /// At most one row: the application, if this statement turned it off.
            case application(ApplicationDisable, message: Int64)
            /// At most one row: the message, if this statement recorded its first delivery.
            case firstDelivery(message: Int64)
        }

        var commands: [PGCommand] = []
        var readers: [Reader?] = []

        mutating func append(_ command: PGCommand, reader: Reader? = nil) {
            commands.append(command)
            readers.append(reader)
        }

        mutating func append(_ other: EffectStatements) {
            commands += other.commands
            readers += other.readers
        }

        /// Runs the statements in one pipeline; returns what they disabled.
        func run(_ c: PGConnection) throws(StoreError) -> FailureReport {
            guard !commands.isEmpty else { return FailureReport() }
            let results = try c.pipeline(commands)
            var report = FailureReport()
            for (result, reader) in zip(results, readers) {
                switch reader {
                case nil:
                    continue
                case .endpoints(let message)?:
                    for row in result.rows {
                        guard let external = row.uuid(1) else { throw StoreError(.invalidData, "disabled endpoint without external id") }
                        report.endpoints.append(DisabledEndpoint(
                            endpoint: try row.requireInt64(0), externalID: external, accountID: try row.requireString(2),
                            applicationName: try row.requireString(3), platform: try row.requireString(4),
                            tokenPrefix: row.string(5) ?? "", reason: row.string(6) ?? "", providerStatus: row.int(7),
                            disabledAt: try row.requireDate(8), message: message))
                    }
                case .application(let disable, let message)?:
                    for row in result.rows {
                        report.applications.append(DisabledApplication(
                            application: try row.requireInt64(0), accountID: try row.requireString(1),
                            name: try row.requireString(2), platform: try row.requireString(3), reason: disable.reason,
                            providerStatus: disable.providerStatus, disabledAt: disable.at, message: message))
                    }
                case .firstDelivery(let message)?:
                    for row in result.rows {
                        report.firstDeliveries.append(FirstDelivery(
                            message: message, targetKind: try row.requireString(0), seconds: max(0, row.double(1) ?? 0)))
                    }
                }
            }
            return report
        }
    }

    /// Adds a checkpoint's outcomes to `application_delivery_counts` (schema v23): one INSERT ... ON CONFLICT DO
    /// UPDATE SET n = n + EXCLUDED.n for every application of the checkpoint, in the minute of the database's clock,
    /// so any number of workers and nodes add to the same row and a checkpoint that rolls back adds nothing. Nil when
    /// there is nothing to add.
    ///
    /// Callers run it as the transaction's last statement, rows in application order: a transaction holding a
    /// counts row then waits for nothing but other counts rows, taken in one order by everyone, so the hot rows add
    /// no deadlock to the checkpoints' other locks (shards, messages, endpoints) and are held only until the commit.
    static func applicationCountsCommand(_ applications: [Int64: ApplicationOutcomeCounts]) -> PGCommand? {
        let keys = applications.keys.sorted().filter { $0 > 0 && applications[$0] != ApplicationOutcomeCounts() }
        guard !keys.isEmpty else { return nil }
        let rows = keys.map { applications[$0]!.values }
        var parameters: [any PGEncodable] = [PGArrayParameter(text: PGArrayLiteral.int64s(keys))]
        for i in ApplicationOutcomeCounts.columns.indices {
            parameters.append(PGArrayParameter(text: PGArrayLiteral.int64s(rows.map { $0[i] })))
        }
        return PGCommand(prepared: "application_counts_add", applicationCountsSQL, parameters)
    }

    static let applicationCountsSQL: String = {
        let columns = ApplicationOutcomeCounts.columns
        let list = columns.joined(separator: ", ")
        let arrays = columns.indices.map { "$\($0 + 2)::bigint[]" }.joined(separator: ", ")
        return """
            INSERT INTO application_delivery_counts (application, minute, \(list))
            SELECT a, date_trunc('minute', now()), \(list)
            FROM unnest($1::bigint[], \(arrays)) AS v(a, \(list))
            ORDER BY a
            ON CONFLICT (application, minute) DO UPDATE SET
                \(columns.map { "\($0) = application_delivery_counts.\($0) + excluded.\($0)" }.joined(separator: ", "))
            """
    }()

    /// `writeEffects`' statements, for a caller that pipelines several messages' effects at once.
    static func effectCommands(
        message: Int64, shardFailures: [Int64: [String: Int64]], effects: OutcomeEffects, retryShard: Int64?
    ) -> EffectStatements {
        var commands = EffectStatements()
        if let at = effects.firstAcceptedAt {
            // Only the first checkpoint with a delivery sets it (the row lock orders two at once; the second finds
            // it set and changes nothing), so each message's first delivery is read back, and observed, once.
            commands.append(PGCommand("""
                UPDATE messages SET first_delivery_at = $2 WHERE id = $1 AND first_delivery_at IS NULL
                RETURNING target_kind, extract(epoch FROM $2::timestamptz - published_at)::float8
                """, [message, at]), reader: .firstDelivery(message: message))
        }
        for shard in shardFailures.keys.sorted() {
            guard let failures = shardFailures[shard], !failures.isEmpty else { continue }
            let reasons = failures.keys.sorted()
            commands.append(PGCommand("""
                INSERT INTO shard_failures (shard, reason, count)
                SELECT $1, r, n FROM unnest($2::text[], $3::bigint[]) AS t(r, n)
                ON CONFLICT (shard, reason) DO UPDATE SET count = shard_failures.count + excluded.count
                """, [shard, PGArrayParameter(text: PGArrayLiteral.strings(reasons)),
                      PGArrayParameter(text: PGArrayLiteral.int64s(reasons.map { failures[$0]! }))]))
        }
        if !effects.log.isEmpty {
            let log = effects.log
            commands.append(PGCommand("""
                INSERT INTO delivery_log (message, endpoint, status, provider_status, provider_response, attempts, dwell_ms)
                SELECT $1, e, s, ps, pr, a, d
                FROM unnest($2::bigint[], $3::text[], $4::int[], $5::text[], $6::int[], $7::int[]) AS t(e, s, ps, pr, a, d)
                """, [message, PGArrayParameter(text: PGArrayLiteral.int64s(log.map(\.endpoint))),
                      PGArrayParameter(text: PGArrayLiteral.strings(log.map(\.status))),
                      PGArrayParameter(text: PGArrayLiteral.ints(log.map(\.providerStatus))),
                      PGArrayParameter(text: PGArrayLiteral.strings(log.map(\.providerResponse))),
                      PGArrayParameter(text: PGArrayLiteral.ints(log.map { $0.attempts })),
                      PGArrayParameter(text: PGArrayLiteral.ints(log.map { $0.dwellMilliseconds }))]))
        }
        if !effects.disable.isEmpty {
            let d = effects.disable.sorted { $0.endpoint < $1.endpoint }
            // The UPDATE's own rows are read back (only endpoints this statement turned off): the caller logs one
            // warning each, with a token prefix (at most 8 characters and half the token), never the token.
            commands.append(PGCommand("""
                WITH d AS (
                    UPDATE endpoints e SET enabled = false, disabled_reason = t.reason, disabled_at = t.at, updated_at = now()
                    FROM unnest($1::bigint[], $2::text[], $3::text[], $4::timestamptz[], $6::int[]) AS t(id, token, reason, at, status)
                    WHERE e.id = t.id AND e.token = t.token AND e.enabled
                    RETURNING e.id, e.external_id, e.application, t.reason, t.at, t.status, left(t.token, least(8, length(t.token) / 2)) AS token_prefix),
                ev AS (
                    INSERT INTO events (account, kind, resource, detail)
                    SELECT a.account, 'EndpointDisabled', 'endpoint/' || d.external_id::text,
                        jsonb_build_object('reason', d.reason, 'disabledAt', d.at, 'application', a.name,
                                           'platform', a.platform, 'message', $5::bigint, 'providerStatus', d.status)
                    FROM d JOIN platform_applications a ON a.id = d.application)
                SELECT d.id, d.external_id, acc.account_id, a.name, a.platform, d.token_prefix, d.reason, d.status, d.at
                FROM d JOIN platform_applications a ON a.id = d.application JOIN accounts acc ON acc.id = a.account
                ORDER BY d.id
                """, [PGArrayParameter(text: PGArrayLiteral.int64s(d.map(\.endpoint))),
                      PGArrayParameter(text: PGArrayLiteral.strings(d.map(\.token))),
                      PGArrayParameter(text: PGArrayLiteral.strings(d.map(\.reason))),
                      PGArrayParameter(text: PGArrayLiteral.dates(d.map(\.at))), message,
                      PGArrayParameter(text: PGArrayLiteral.ints(d.map(\.providerStatus)))]),
                            reader: .endpoints(message: message))
        }
        if !effects.replace.isEmpty {
            let r = effects.replace.sorted { $0.endpoint < $1.endpoint }
            // Skipped when another endpoint of the application already has the new token (unique key).
            commands.append(PGCommand("""
                WITH r AS (
                    UPDATE endpoints e SET token = t.new, token_refreshed_at = now(), updated_at = now()
                    FROM unnest($1::bigint[], $2::text[], $3::text[]) AS t(id, old, new)
                    WHERE e.id = t.id AND e.token = t.old
                      AND NOT EXISTS (SELECT 1 FROM endpoints o WHERE o.application = e.application AND o.token = t.new)
                    RETURNING e.id, e.external_id, e.application)
                INSERT INTO events (account, kind, resource, detail)
                SELECT a.account, 'EndpointTokenReplaced', 'endpoint/' || r.external_id::text,
                    jsonb_build_object('application', a.name, 'platform', a.platform, 'message', $4::bigint)
                FROM r JOIN platform_applications a ON a.id = r.application
                """, [PGArrayParameter(text: PGArrayLiteral.int64s(r.map(\.endpoint))),
                      PGArrayParameter(text: PGArrayLiteral.strings(r.map(\.oldToken))),
                      PGArrayParameter(text: PGArrayLiteral.strings(r.map(\.newToken))), message]))
        }
        if !effects.retries.isEmpty {
            let r = effects.retries.sorted { $0.endpoint < $1.endpoint }
            commands.append(PGCommand("""
                INSERT INTO delivery_retries (message, endpoint, attempt, not_before, last_reason, shard)
                SELECT $1, e, a, nb, r, $6 FROM unnest($2::bigint[], $3::int[], $4::timestamptz[], $5::text[]) AS t(e, a, nb, r)
                -- A cancelled message's retries are dropped (`cancel`); none is scheduled after it.
                WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.id = $1 AND m.state = 'Cancelled')
                ON CONFLICT (message, endpoint) DO UPDATE SET attempt = excluded.attempt,
                    -- A retry whose endpoint went while it was being sent is due at once: only its failure is left.
                    not_before = CASE WHEN delivery_retries.vanished IS NULL THEN excluded.not_before ELSE now() END,
                    last_reason = excluded.last_reason, shard = coalesce(excluded.shard, delivery_retries.shard),
                    lease_owner = NULL, lease_expires_at = NULL
                """, [message, PGArrayParameter(text: PGArrayLiteral.int64s(r.map(\.endpoint))),
                      PGArrayParameter(text: PGArrayLiteral.ints(r.map { $0.attempt })),
                      PGArrayParameter(text: PGArrayLiteral.dates(r.map(\.notBefore))),
                      PGArrayParameter(text: PGArrayLiteral.strings(r.map(\.reason))), retryShard]))
        }
        for app in effects.disableApplications {
            // Read back only when this statement turned the application off (another worker may have already).
            commands.append(PGCommand("""
                WITH a AS (
                    UPDATE platform_applications SET enabled = false, disabled_reason = $2, disabled_at = $3, updated_at = now()
                    WHERE id = $1 AND enabled RETURNING id, account, name, platform),
                ev AS (
                    INSERT INTO events (account, kind, resource, detail)
                    SELECT a.account, 'PlatformApplicationDisabled', 'app/' || a.platform || '/' || a.name,
                        jsonb_build_object('reason', $2::text, 'disabledAt', $3::timestamptz, 'message', $4::bigint,
                                           'providerStatus', $5::int)
                    FROM a)
                SELECT a.id, acc.account_id, a.name, a.platform FROM a JOIN accounts acc ON acc.id = a.account
                """, [app.application, app.reason, app.at, message, app.providerStatus]),
                            reader: .application(app, message: message))
        }
        return commands
    }

    /// Finishes the messages with nothing left to do (no shard open, no retry waiting): their rows locked in key
    /// order (so two batches cannot deadlock on them), then one read of their shards' totals and pending retries
    /// and one update of those with nothing left. The lock serialises the last two shards of a message finishing
    /// at once, so exactly one sees the other done (READ COMMITTED: each statement sees what committed before it).
    ///
    /// The lock is `FOR NO KEY UPDATE`, not `FOR UPDATE`: the callers' transactions have already written rows that
    /// reference the message (`delivery_retries`, `fanout_shards`), and each such foreign key holds `FOR KEY SHARE`
    /// on the message row until commit. `FOR UPDATE` conflicts with that, so two checkpoints that both scheduled
    /// retries for one message and then both came here waited for each other: a deadlock, and under a provider storm
    /// (every shard and the retry worker scheduling retries) a queue of them that stopped a 1M fan-out for minutes
    /// while `withDeadlockRetry` gave up and the shards' leases expired (re-sending since their checkpoints).
    /// `FOR NO KEY UPDATE` does not conflict with `FOR KEY SHARE` and still conflicts with itself, which is all the
    /// serialisation above needs; the UPDATE below changes no key column, so it needs no stronger lock.
    /// Returns the final state of each message finished here, and those finished with deliveries given up
    /// (Failed, Expired, or Completed with some failed or expired), with their failures by reason.
    static func finishIfDone(_ c: PGConnection, messages: [Int64]) throws(StoreError)
        -> (states: [Int64: MessageState], givenUp: [GivenUpMessage]) {
        let keys = Array(Set(messages)).sorted()
        guard !keys.isEmpty else { return ([:], []) }
        let ids = PGArrayParameter(text: PGArrayLiteral.int64s(keys))
        let locked = try c.query("""
            SELECT id FROM messages WHERE id = ANY($1::bigint[]) AND state IN ('Enqueued', 'Processing') ORDER BY id
            FOR NO KEY UPDATE
            """, [ids])
        guard locked.rowCount > 0 else { return ([:], []) }
        var open: [Int64] = []
        for row in locked.rows { open.append(try row.requireInt64(0)) }
        let openIDs = PGArrayParameter(text: PGArrayLiteral.int64s(open))
        let totals = try c.query("""
            SELECT s.message, count(*) FILTER (WHERE s.state <> 'done'), sum(s.targeted), sum(s.sent), sum(s.accepted),
                sum(s.failed), sum(s.retried), sum(s.skipped), sum(s.expired),
                EXISTS (SELECT 1 FROM delivery_retries r WHERE r.message = s.message)
                    OR EXISTS (SELECT 1 FROM http_deliveries h WHERE h.message = s.message AND h.state = 'pending'),
                sum(s.filtered), sum(s.held_out)
            FROM fanout_shards s WHERE s.message = ANY($1::bigint[])
            GROUP BY s.message
            """, [openIDs])
        let http = try Self.httpCounters(c, messages: openIDs)
        var done: [Int64] = []
        var states: [String?] = []
        var out: [Int64: MessageState] = [:]
        var totalsByMessage: [Int64: DeliveryCounters] = [:]
        for row in totals.rows {
            guard let message = row.int64(0), (row.int64(1) ?? 1) == 0, row.bool(9) == false else { continue }
            let counters = DeliveryCounters(
                targeted: row.int64(2) ?? 0, sent: row.int64(3) ?? 0, accepted: row.int64(4) ?? 0,
                failed: row.int64(5) ?? 0, retried: row.int64(6) ?? 0, skipped: row.int64(7) ?? 0,
                expired: row.int64(8) ?? 0, filtered: row.int64(10) ?? 0, heldOut: row.int64(11) ?? 0)
                + (http[message] ?? DeliveryCounters())
            let state = MessageState.final(for: counters)
            done.append(message)
            states.append(state.rawValue)
            out[message] = state
            totalsByMessage[message] = counters
        }
        guard !done.isEmpty else { return ([:], []) }
        try c.query("""
            UPDATE messages m SET state = v.state, started_at = coalesce(m.started_at, now()), completed_at = now()
            FROM unnest($1::bigint[], $2::text[]) AS v(id, state) WHERE m.id = v.id
            """, [PGArrayParameter(text: PGArrayLiteral.int64s(done)), PGArrayParameter(text: PGArrayLiteral.strings(states))])
        // Only messages with something given up are read further: finishing what delivered everything costs no more
        // than before.
        let givenUp = done.filter { totalsByMessage[$0].map { $0.failed + $0.expired > 0 } ?? false }
        guard !givenUp.isEmpty else { return (out, []) }
        let givenUpIDs = PGArrayParameter(text: PGArrayLiteral.int64s(givenUp))
        let facts = try c.query("""
            SELECT m.id, m.external_id, m.target_kind, a.account_id FROM messages m JOIN accounts a ON a.id = m.account
            WHERE m.id = ANY($1::bigint[]) ORDER BY m.id
            """, [givenUpIDs])
        var reasons: [Int64: [String: Int64]] = [:]
        let failures = try c.query("""
            SELECT s.message, f.reason, sum(f.count) FROM shard_failures f JOIN fanout_shards s ON s.id = f.shard
            WHERE s.message = ANY($1::bigint[]) GROUP BY s.message, f.reason
            """, [givenUpIDs])
        for row in failures.rows {
            guard let message = row.int64(0), let reason = row.string(1) else { continue }
            reasons[message, default: [:]][reason] = row.int64(2) ?? 0
        }
        for message in givenUp where (http[message]?.failed ?? 0) > 0 {
            reasons[message, default: [:]][Self.httpFailureReason, default: 0] += http[message]!.failed
        }
        var report: [GivenUpMessage] = []
        for row in facts.rows {
            guard let message = row.int64(0), let external = row.uuid(1), let state = out[message],
                  let counters = totalsByMessage[message] else { continue }
            report.append(GivenUpMessage(message: message, externalID: external, accountID: row.string(3) ?? "",
                                         targetKind: row.string(2) ?? "", state: state, counters: counters,
                                         failuresByReason: reasons[message] ?? [:]))
        }
        return (out, report)
    }

    // MARK: HTTP/S subscription deliveries

    /// The failure reason HTTP/S deliveries given up count under (their own last errors are per row, in
    /// `http_deliveries.last_error`, and in the sender's log).
    public static let httpFailureReason = "HTTPDeliveryFailed"

    /// The HTTP/S deliveries of messages as counters: each row is targeted once; sent when attempted; accepted,
    /// failed or filtered by its final state; retried once per attempt after the first.
    static func httpCounters(_ c: PGConnection, messages: PGArrayParameter) throws(StoreError) -> [Int64: DeliveryCounters] {
        let rows = try c.query(Self.httpCountersSQL + " WHERE message = ANY($1::bigint[]) GROUP BY message", [messages])
        var out: [Int64: DeliveryCounters] = [:]
        for row in rows.rows {
            guard let message = row.int64(0) else { continue }
            out[message] = Self.httpCounters(row)
        }
        return out
    }

    static func httpStatus(_ c: PGConnection, message: Int64) throws(StoreError) -> (counters: DeliveryCounters, pending: Int64) {
        guard let row = try c.query(Self.httpCountersSQL + " WHERE message = $1 GROUP BY message", [message]).first else {
            return (DeliveryCounters(), 0)
        }
        return (Self.httpCounters(row), row.int64(7) ?? 0)
    }

    static let httpCountersSQL = """
        SELECT message, count(*), count(*) FILTER (WHERE attempts > 0), count(*) FILTER (WHERE state = 'delivered'),
            count(*) FILTER (WHERE state = 'failed'), coalesce(sum(greatest(attempts - 1, 0)), 0),
            count(*) FILTER (WHERE state = 'filtered'), count(*) FILTER (WHERE state = 'pending' AND attempts > 0)
        FROM http_deliveries
        """

    static func httpCounters(_ row: PGRow) -> DeliveryCounters {
        DeliveryCounters(targeted: row.int64(1) ?? 0, sent: row.int64(2) ?? 0, accepted: row.int64(3) ?? 0,
                         failed: row.int64(4) ?? 0, retried: row.int64(5) ?? 0, filtered: row.int64(6) ?? 0)
    }

    func withDeadlockRetry<T>(_ body: () async throws(StoreError) -> T) async throws(StoreError) -> T {
        var attempt = 0
        while true {
            do {
                return try await body()
            } catch where error.code == .serializationFailure && attempt < 3 {
                attempt += 1
            }
        }
    }

    // MARK: Retries

    /// Claims up to `limit` due retries for `owner`, with their endpoints (enabled or not: a disabled one is
    /// skipped by the worker), oldest due first. A retry whose endpoint is gone (schema v12) is claimed too, with
    /// `vanished` saying why, so the worker can count it failed and finish its message.
    public func claimDueRetries(owner: String, limit: Int, leaseSeconds: Double) async throws(StoreError) -> [RetryClaim] {
        try await pool.transaction { (c) throws(StoreError) -> [RetryClaim] in
            let result = try c.query("""
                WITH c AS (
                    SELECT id FROM delivery_retries
                    WHERE not_before <= now() AND (lease_expires_at IS NULL OR lease_expires_at < now())
                    ORDER BY not_before LIMIT $2 FOR UPDATE SKIP LOCKED),
                u AS (
                    UPDATE delivery_retries r SET lease_owner = $1, lease_expires_at = now() + make_interval(secs => $3)
                    FROM c WHERE r.id = c.id
                    RETURNING r.id, r.message, r.shard, r.attempt, r.last_reason, r.endpoint, r.vanished)
                SELECT u.id, u.message, u.shard, u.attempt, u.last_reason,
                    e.id, e.id, e.application, e.token, e.enabled, false, coalesce(e.token_refreshed_at, e.created_at),
                    u.endpoint, CASE WHEN e.id IS NULL THEN coalesce(u.vanished, 'EndpointDeleted') END
                FROM u LEFT JOIN endpoints e ON e.id = u.endpoint
                """, [owner, limit, leaseSeconds])
            var out: [RetryClaim] = []
            for row in result.rows {
                let endpoint = try row.requireInt64(12)
                let vanished = row.string(13)
                let target = if vanished == nil {
                    try Self.target(row, offset: 5)
                } else {
                    ShardTarget(key: endpoint, endpoint: endpoint, application: 0, token: "", enabled: false, stale: false,
                                tokenUpdatedAt: nil)
                }
                out.append(RetryClaim(
                    id: try row.requireInt64(0), message: try row.requireInt64(1), shard: row.int64(2),
                    attempt: row.int(3) ?? 1, lastReason: row.string(4), target: target, vanished: vanished))
            }
            return out
        }
    }

    /// A claimed retry handed back unsent, due again at `notBefore` with its attempt count unchanged.
    public struct DeferredRetry: Sendable, Equatable {
        public var id: Int64
        public var notBefore: Date
        public init(id: Int64, notBefore: Date) {
            self.id = id
            self.notBefore = notBefore
        }
    }

    /// The earliest `not_before` of retries nobody holds, so an idle retry loop sleeps until then.
    public func nextRetryDue() async throws(StoreError) -> Date? {
        try await pool.withConnection { (c) throws(StoreError) -> Date? in
            try c.query("SELECT min(not_before) FROM delivery_retries WHERE lease_owner IS NULL OR lease_expires_at < now()")
                .first?.date(0)
        }
    }

    /// Writes the outcomes of claimed retries of one message: finished retries deleted, rescheduled ones updated
    /// (their `effects.retries` entries), counters and failures added to each retry's shard, side effects as in
    /// a shard checkpoint; then the message finished if nothing is left. Returns its final state when it finished
    /// here, and what the transaction disabled or gave up on, for the caller to log.
    public func completeRetries(
        message: Int64, owner: String, finished: [Int64], deferred: [DeferredRetry] = [],
        shardCounters: [Int64: DeliveryCounters], shardFailures: [Int64: [String: Int64]], effects: OutcomeEffects
    ) async throws(StoreError) -> (state: MessageState?, report: FailureReport) {
        try await withDeadlockRetry { () throws(StoreError) -> (state: MessageState?, report: FailureReport) in
            try await pool.transaction { (c) throws(StoreError) -> (state: MessageState?, report: FailureReport) in
                var commands: [PGCommand] = []
                if !finished.isEmpty {
                    commands.append(PGCommand("DELETE FROM delivery_retries WHERE id = ANY($1::bigint[]) AND lease_owner = $2",
                                              [PGArrayParameter(text: PGArrayLiteral.int64s(finished)), owner]))
                }
                if !deferred.isEmpty {
                    // Not sent (over the application's send rate): back in the queue at a later time, same attempt.
                    commands.append(PGCommand("""
                        UPDATE delivery_retries r SET not_before = v.not_before, lease_owner = NULL, lease_expires_at = NULL
                        FROM unnest($1::bigint[], $2::timestamptz[]) AS v(id, not_before)
                        WHERE r.id = v.id AND r.lease_owner = $3
                        """, [PGArrayParameter(text: PGArrayLiteral.int64s(deferred.map(\.id))),
                              PGArrayParameter(text: PGArrayLiteral.dates(deferred.map(\.notBefore))), owner]))
                }
                for shard in shardCounters.keys.sorted() {
                    let n = shardCounters[shard]!
                    guard !n.isZero else { continue }
                    commands.append(PGCommand("""
                        UPDATE fanout_shards SET targeted = targeted + $2, sent = sent + $3, accepted = accepted + $4,
                            failed = failed + $5, retried = retried + $6, skipped = skipped + $7, expired = expired + $8,
                            updated_at = now()
                        WHERE id = $1
                        """, [shard, n.targeted, n.sent, n.accepted, n.failed, n.retried, n.skipped, n.expired]))
                }
                if !commands.isEmpty { _ = try c.pipeline(commands) }
                // Rescheduled retries: the upsert in writeEffects updates attempt/not_before and clears the lease.
                var rest = effects
                rest.counters = DeliveryCounters()
                var report = try Self.writeEffects(c, message: message, shardFailures: shardFailures, effects: rest, retryShard: nil)
                let finished = try Self.finishIfDone(c, messages: [message])
                report.messages += finished.givenUp
                if let counts = Self.applicationCountsCommand(effects.applications) { _ = try c.pipeline([counts]) }
                return (finished.states[message], report)
            }
        }
    }

    // MARK: Status

    /// The status of a message by its external id, optionally checked against the owning account; nil when
    /// there is no such message (for that account).
    public func messageStatus(externalID: UUID, account: Int64? = nil) async throws(StoreError) -> MessageStatus? {
        try await pool.withConnection { (c) throws(StoreError) -> MessageStatus? in
            let found = try c.query("SELECT id, account FROM messages WHERE external_id = $1", [externalID])
            guard let row = found.first, let key = row.int64(0) else { return nil }
            if let account, row.int64(1) != account { return nil }
            return try Self.status(c, message: key)
        }
    }

    /// The status of a message by its internal key.
    public func messageStatus(key: Int64) async throws(StoreError) -> MessageStatus? {
        try await pool.withConnection { (c) throws(StoreError) -> MessageStatus? in try Self.status(c, message: key) }
    }

    static func status(_ c: PGConnection, message: Int64) throws(StoreError) -> MessageStatus? {
        let result = try c.query("""
            SELECT m.id, m.external_id, m.account, m.state, m.target_kind, m.planned, m.published_at, m.started_at,
                m.completed_at, m.expires_at,
                count(s.id), count(s.id) FILTER (WHERE s.state = 'done'),
                coalesce(sum(s.planned_targets), 0) + CASE WHEN NOT m.planned AND m.target_kind = 'endpoint' THEN 1 ELSE 0 END,
                coalesce(sum(s.targeted), 0), coalesce(sum(s.sent), 0), coalesce(sum(s.accepted), 0),
                coalesce(sum(s.failed), 0), coalesce(sum(s.retried), 0), coalesce(sum(s.skipped), 0),
                coalesce(sum(s.expired), 0),
                (SELECT count(*) FROM delivery_retries r WHERE r.message = m.id), coalesce(sum(s.filtered), 0),
                m.send_at, m.pace_per_second, m.pace_over_seconds, m.pace_started_at, m.pace_granted,
                m.first_delivery_at, coalesce(sum(s.held_out), 0), coalesce(sum(s.capped), 0),
                coalesce(sum(s.deferred), 0), coalesce(sum(s.quiet_skipped), 0)
            FROM messages m LEFT JOIN fanout_shards s ON s.message = m.id
            WHERE m.id = $1
            GROUP BY m.id
            """, [message])
        guard let row = result.first else { return nil }
        guard let external = row.uuid(1), let state = MessageState(rawValue: row.string(3) ?? "") else {
            throw StoreError(.invalidData, "message \(message) has an unreadable row")
        }
        let failures = try c.query("""
            SELECT f.reason, sum(f.count) FROM shard_failures f JOIN fanout_shards s ON s.id = f.shard
            WHERE s.message = $1 GROUP BY f.reason
            """, [message])
        var byReason: [String: Int64] = [:]
        for f in failures.rows { if let reason = f.string(0) { byReason[reason] = f.int64(1) ?? 0 } }
        let http = try Self.httpStatus(c, message: message)
        if http.counters.failed > 0 { byReason[Self.httpFailureReason, default: 0] += http.counters.failed }
        var status = MessageStatus(
            key: try row.requireInt64(0), externalID: external, account: try row.requireInt64(2), state: state,
            targetKind: row.string(4) ?? "", planned: row.bool(5) ?? false, shards: row.int(10) ?? 0,
            shardsDone: row.int(11) ?? 0, plannedTargets: row.int64(12) ?? 0,
            counters: DeliveryCounters(
                targeted: row.int64(13) ?? 0, sent: row.int64(14) ?? 0, accepted: row.int64(15) ?? 0,
                failed: row.int64(16) ?? 0, retried: row.int64(17) ?? 0, skipped: row.int64(18) ?? 0,
                expired: row.int64(19) ?? 0, filtered: row.int64(21) ?? 0, heldOut: row.int64(28) ?? 0,
                capped: row.int64(29) ?? 0, deferred: row.int64(30) ?? 0, quietSkipped: row.int64(31) ?? 0) + http.counters,
            failuresByReason: byReason, pendingRetries: (row.int64(20) ?? 0) + http.pending, publishedAt: try row.requireDate(6),
            startedAt: row.date(7), completedAt: row.date(8), expiresAt: row.date(9), firstDeliveryAt: row.date(27))
        status.sendAt = row.date(22)
        let pace: MessagePace? = if let rate = row.double(23) { .perSecond(rate) } else { row.int(24).map { .overSeconds($0) } }
        if let pace {
            status.pace = PaceStatus(pace: pace, effectivePerSecond: Self.paceRate(pace, planned: status.planned ? status.plannedTargets : nil),
                                     startedAt: row.date(25), granted: row.int64(26) ?? 0)
        }
        return status
    }
}
