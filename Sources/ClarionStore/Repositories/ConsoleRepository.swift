import Foundation

/// The read-only figures the web console shows that no other read gives: an application's endpoint counts and last
/// hour of deliveries, a topic's subscriptions and recent messages, the delivery log of a message or an endpoint, and
/// endpoints found by user id or token prefix. Every query is scoped to one account, and no full device token leaves
/// here: rows carry a token prefix (at most 8 characters and half the token, as the logs print it).
public struct ConsoleRepository: Sendable {
    public let pool: PGPool

    public init(pool: PGPool) { self.pool = pool }

    /// The SQL expression of an endpoint token's shown prefix (the logs' rule: at most 8 characters, at most half).
    static func tokenPrefix(_ column: String) -> String { "left(\(column), least(8, length(\(column)) / 2))" }

    /// Endpoint counts of one application: `enabled` (and not stale), `disabled`, and `stale` (enabled, but its token
    /// not refreshed since `staleBefore`: the dispatcher skips these, `skipped_stale`).
    public func endpointCounts(applicationKey: Int64, staleBefore: Date) async throws(StoreError) -> EndpointCounts {
        try await pool.withConnection { (c) throws(StoreError) -> EndpointCounts in
            let result = try c.query("""
                SELECT count(*) FILTER (WHERE enabled AND coalesce(token_refreshed_at, updated_at) >= $2),
                    count(*) FILTER (WHERE NOT enabled),
                    count(*) FILTER (WHERE enabled AND coalesce(token_refreshed_at, updated_at) < $2)
                FROM endpoints WHERE application = $1
                """, [applicationKey, staleBefore])
            let row = result.first
            return EndpointCounts(enabled: row?.int64(0) ?? 0, disabled: row?.int64(1) ?? 0, stale: row?.int64(2) ?? 0)
        }
    }

    /// One application's exact delivery counts over the last hour, from `application_delivery_counts` (schema v23):
    /// the 60 minute rows from the start of the minute 59 minutes before the database's current minute to now, so
    /// the window is 59 to 60 minutes long and every delivery checkpointed in it is counted, whatever the
    /// application's SuccessFeedbackSampleRate. `lastMinuteSent`: the provider hand-offs of the last whole minute.
    /// The clock is the database's, the one the dispatcher's checkpoints stamp the rows with.
    public func deliveryCounts(applicationKey: Int64) async throws(StoreError) -> ApplicationDeliveryWindow {
        try await pool.withConnection { (c) throws(StoreError) -> ApplicationDeliveryWindow in
            let sums = ApplicationOutcomeCounts.columns.map { "coalesce(sum(\($0)), 0)::bigint" }.joined(separator: ", ")
            let result = try c.query("""
                WITH w AS (SELECT now() AS now, date_trunc('minute', now()) - interval '59 minutes' AS since)
                SELECT w.since, w.now,
                    coalesce(sum(d.sent) FILTER (WHERE d.minute = date_trunc('minute', w.now) - interval '1 minute'), 0)::bigint,
                    \(sums)
                FROM w LEFT JOIN application_delivery_counts d ON d.application = $1 AND d.minute >= w.since
                GROUP BY w.since, w.now
                """, [applicationKey])
            guard let row = result.first else { throw StoreError(.invalidData, "no delivery counts row") }
            let values = ApplicationOutcomeCounts.columns.indices.map { row.int64($0 + 3) ?? 0 }
            return ApplicationDeliveryWindow(since: try row.requireDate(0), now: try row.requireDate(1),
                                             lastMinuteSent: row.int64(2) ?? 0,
                                             counts: ApplicationOutcomeCounts(values: values))
        }
    }

    /// One application's delivery-log rows since `since`: per status (`SUCCESS` rows are sampled at the application's
    /// SuccessFeedbackSampleRate, every `FAILURE` is logged) and failures by reason (the log's "class: reason").
    public func deliveryLogSummary(applicationKey: Int64, since: Date) async throws(StoreError) -> DeliveryLogSummary {
        try await pool.withConnection { (c) throws(StoreError) -> DeliveryLogSummary in
            let result = try c.query("""
                SELECT l.status, coalesce(l.provider_response, ''), count(*)
                FROM delivery_log l JOIN endpoints e ON e.id = l.endpoint
                WHERE e.application = $1 AND l.logged_at >= $2
                GROUP BY 1, 2
                """, [applicationKey, since])
            var summary = DeliveryLogSummary()
            for row in result.rows {
                let count = row.int64(2) ?? 0
                if row.string(0) == "SUCCESS" {
                    summary.successes += count
                } else {
                    summary.failures += count
                    summary.failuresByReason[row.string(1) ?? "", default: 0] += count
                }
            }
            return summary
        }
    }

    /// A topic's subscriptions: all, those to endpoints, and those waiting for confirmation (HTTP/S).
    public func subscriptionCounts(topicKey: Int64) async throws(StoreError) -> SubscriptionCounts {
        try await pool.withConnection { (c) throws(StoreError) -> SubscriptionCounts in
            let result = try c.query("""
                SELECT count(*), count(*) FILTER (WHERE endpoint IS NOT NULL), count(*) FILTER (WHERE pending_confirmation)
                FROM subscriptions WHERE topic = $1
                """, [topicKey])
            let row = result.first
            return SubscriptionCounts(total: row?.int64(0) ?? 0, endpoints: row?.int64(1) ?? 0,
                                      pendingConfirmation: row?.int64(2) ?? 0)
        }
    }

    /// The latest `limit` messages published to a topic, newest first, with their shards' counters summed
    /// (`messages_topic_recent_idx`, schema v20).
    public func recentTopicMessages(topicKey: Int64, limit: Int) async throws(StoreError) -> [TopicMessageSummary] {
        try await pool.withConnection { (c) throws(StoreError) -> [TopicMessageSummary] in
            let result = try c.query("""
                SELECT m.external_id, m.state, m.published_at, m.completed_at,
                    coalesce(sum(s.targeted), 0), coalesce(sum(s.accepted), 0), coalesce(sum(s.failed), 0)
                FROM (SELECT id, external_id, state, published_at, completed_at FROM messages
                      WHERE target_kind = 'topic' AND target_id = $1 ORDER BY id DESC LIMIT $2) m
                LEFT JOIN fanout_shards s ON s.message = m.id
                GROUP BY m.id, m.external_id, m.state, m.published_at, m.completed_at
                ORDER BY m.id DESC
                """, [topicKey, limit])
            var out: [TopicMessageSummary] = []
            for row in result.rows {
                guard let id = row.uuid(0) else { throw StoreError(.invalidData, "a topic message has no external id") }
                out.append(TopicMessageSummary(
                    externalID: id, state: row.string(1) ?? "", publishedAt: try row.requireDate(2), completedAt: row.date(3),
                    targeted: row.int64(4) ?? 0, accepted: row.int64(5) ?? 0, failed: row.int64(6) ?? 0))
            }
            return out
        }
    }

    /// The delivery log of one message of the account, newest first; nil when the account has no such message.
    public func messageDeliveries(externalID: UUID, accountKey: Int64, limit: Int) async throws(StoreError) -> [DeliveryLogRow]? {
        try await pool.withConnection { (c) throws(StoreError) -> [DeliveryLogRow]? in
            let found = try c.query("SELECT id FROM messages WHERE external_id = $1 AND account = $2", [externalID, accountKey])
            guard let key = found.first?.int64(0) else { return nil }
            let result = try c.query("""
                SELECT l.logged_at, $3::uuid, e.external_id, \(Self.tokenPrefix("e.token")), l.status, l.provider_status,
                    l.provider_response, l.attempts, l.dwell_ms
                FROM delivery_log l LEFT JOIN endpoints e ON e.id = l.endpoint
                WHERE l.message = $1
                ORDER BY l.logged_at DESC LIMIT $2
                """, [key, limit, externalID])
            return try result.rows.map(Self.logRow)
        }
    }

    /// The delivery log of one endpoint since `since`, newest first. The log is partitioned by day and not indexed by
    /// endpoint, so the window bounds the scan to the partitions it covers.
    public func endpointDeliveries(endpointKey: Int64, since: Date, limit: Int) async throws(StoreError) -> [DeliveryLogRow] {
        try await pool.withConnection { (c) throws(StoreError) -> [DeliveryLogRow] in
            let result = try c.query("""
                SELECT l.logged_at, m.external_id, e.external_id, \(Self.tokenPrefix("e.token")), l.status, l.provider_status,
                    l.provider_response, l.attempts, l.dwell_ms
                FROM delivery_log l JOIN endpoints e ON e.id = l.endpoint LEFT JOIN messages m ON m.id = l.message
                WHERE l.endpoint = $1 AND l.logged_at >= $2
                ORDER BY l.logged_at DESC LIMIT $3
                """, [endpointKey, since, limit])
            return try result.rows.map(Self.logRow)
        }
    }

    /// Endpoints of the account whose user id is `userID`, or whose token starts with `tokenPrefix` (exactly one of
    /// the two), in creation order. A prefix search reads every endpoint of the account (no index serves it): an
    /// operator's lookup, not a hot path.
    public func findEndpoints(accountKey: Int64, userID: String?, tokenPrefix: String?, limit: Int) async throws(StoreError) -> [EndpointSummary] {
        try await pool.withConnection { (c) throws(StoreError) -> [EndpointSummary] in
            // APNs tokens are stored lower-case (docs/api.md, Endpoints), so a prefix typed in capitals finds them too.
            let filter = userID != nil ? "e.user_id = $2"
                : "(left(e.token, length($2)) = $2 OR (a.platform IN ('APNS', 'APNS_SANDBOX') AND left(e.token, length($2)) = lower($2)))"
            let result = try c.query("""
                SELECT e.external_id, a.platform, a.name, \(Self.tokenPrefix("e.token")), e.user_id, e.enabled,
                    e.disabled_reason, e.disabled_at, e.created_at, coalesce(e.token_refreshed_at, e.updated_at)
                FROM endpoints e JOIN platform_applications a ON a.id = e.application
                WHERE a.account = $1 AND \(filter)
                ORDER BY e.id LIMIT $3
                """, [accountKey, userID ?? tokenPrefix ?? "", limit])
            var out: [EndpointSummary] = []
            for row in result.rows {
                guard let id = row.uuid(0) else { throw StoreError(.invalidData, "an endpoint has no external id") }
                out.append(EndpointSummary(
                    externalID: id, platform: row.string(1) ?? "", applicationName: row.string(2) ?? "",
                    tokenPrefix: row.string(3) ?? "", userID: row.string(4), enabled: row.bool(5) ?? false,
                    disabledReason: row.string(6), disabledAt: row.date(7), createdAt: try row.requireDate(8),
                    tokenRefreshedAt: row.date(9)))
            }
            return out
        }
    }

    /// The account's latest `limit` campaigns, newest first, with how many messages each has
    /// (`messages_campaign_idx`).
    public func recentCampaigns(accountKey: Int64, limit: Int) async throws(StoreError) -> [CampaignSummary] {
        try await pool.withConnection { (c) throws(StoreError) -> [CampaignSummary] in
            let result = try c.query("""
                SELECT c.external_id, c.name, c.namespace, c.created_at,
                    (SELECT count(*) FROM messages m WHERE m.campaign = c.id)
                FROM campaigns c WHERE c.account = $1
                ORDER BY c.id DESC LIMIT $2
                """, [accountKey, limit])
            var out: [CampaignSummary] = []
            for row in result.rows {
                out.append(CampaignSummary(externalID: try row.requireString(0), name: row.string(1) ?? "",
                                           namespace: row.string(2) ?? "", createdAt: try row.requireDate(3),
                                           messages: row.int64(4) ?? 0))
            }
            return out
        }
    }

    static func logRow(_ row: PGRow) throws(StoreError) -> DeliveryLogRow {
        DeliveryLogRow(loggedAt: try row.requireDate(0), message: row.uuid(1), endpoint: row.uuid(2),
                       tokenPrefix: row.string(3), status: row.string(4) ?? "", providerStatus: row.int(5),
                       providerResponse: row.string(6), attempts: row.int(7) ?? 1, dwellMilliseconds: row.int(8))
    }
}

public struct CampaignSummary: Sendable, Equatable {
    public var externalID: String
    public var name: String
    public var namespace: String
    public var createdAt: Date
    public var messages: Int64
}

public struct EndpointCounts: Sendable, Equatable {
    public var enabled: Int64
    public var disabled: Int64
    public var stale: Int64
}

/// An application's exact delivery counts over a window (`ConsoleRepository.deliveryCounts`).
public struct ApplicationDeliveryWindow: Sendable, Equatable {
    /// Start of the window's first minute, and the database's time when read.
    public var since: Date
    public var now: Date
    /// Provider hand-offs in the last whole minute before `now`'s.
    public var lastMinuteSent: Int64
    public var counts: ApplicationOutcomeCounts

    /// The window's length (59 to 60 minutes).
    public var seconds: Double { max(1, now.timeIntervalSince(since)) }
}

public struct DeliveryLogSummary: Sendable, Equatable {
    public var successes: Int64 = 0
    public var failures: Int64 = 0
    public var failuresByReason: [String: Int64] = [:]
}

public struct SubscriptionCounts: Sendable, Equatable {
    public var total: Int64
    public var endpoints: Int64
    public var pendingConfirmation: Int64
}

public struct TopicMessageSummary: Sendable, Equatable {
    public var externalID: UUID
    public var state: String
    public var publishedAt: Date
    public var completedAt: Date?
    public var targeted: Int64
    public var accepted: Int64
    public var failed: Int64
}

/// One delivery-log row as the console shows it: a token prefix, never the token.
public struct DeliveryLogRow: Sendable, Equatable {
    public var loggedAt: Date
    public var message: UUID?
    public var endpoint: UUID?
    public var tokenPrefix: String?
    public var status: String
    public var providerStatus: Int?
    public var providerResponse: String?
    public var attempts: Int
    public var dwellMilliseconds: Int?
}

public struct EndpointSummary: Sendable, Equatable {
    public var externalID: UUID
    public var platform: String
    public var applicationName: String
    public var tokenPrefix: String
    public var userID: String?
    public var enabled: Bool
    public var disabledReason: String?
    public var disabledAt: Date?
    public var createdAt: Date
    public var tokenRefreshedAt: Date?
}
