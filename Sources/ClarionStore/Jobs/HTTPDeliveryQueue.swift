import Foundation

/// One claimed POST to an http/https subscription, with everything its document needs.
public struct HTTPDeliveryClaim: Sendable, Equatable {
    public enum Kind: String, Sendable { case subscriptionConfirmation = "SubscriptionConfirmation", notification = "Notification" }

    public let id: Int64
    public let kind: Kind
    /// Attempts made before this one.
    public let attempts: Int
    public let messageKey: Int64?
    public let subscriptionID: UUID
    public let `protocol`: String
    public let url: String
    public let filterPolicy: String?
    public let subscriptionAttributes: [String: String]
    /// The confirmation token: the Token of a SubscriptionConfirmation, and the UnsubscribeURL's authorisation.
    public let token: String
    public let topicName: String
    public let topicAttributes: [String: String]
    /// The account's 12-digit id, for the ARNs.
    public let accountID: String
    public let messageID: UUID?
    public let message: String?
    public let structure: String?
    public let subject: String?
    public let messageAttributesJSON: String?
    public let publishedAt: Date?
    /// The topic's SNS region, for the ARNs (the node's own region need not be the topic's).
    public var topicRegion: String = ""
}

/// How one attempt ended.
public enum HTTPDeliveryResult: Sendable, Equatable {
    /// A 2xx answer.
    case delivered(status: Int)
    /// Not sent again: retries used up, or refused by the outbound address policy.
    case failed(reason: String, status: Int?)
    /// The subscription's filter policy does not match the message: not sent, not a failure.
    case filtered
    /// Another attempt at `at`.
    case retry(at: Date, reason: String, status: Int?)
}

/// The durable queue of HTTP/S subscription deliveries (`http_deliveries`, schema v17).
///
/// Rows are written in the transaction that decides them: a SubscriptionConfirmation with the subscription
/// (`SubscriptionRepository.subscribeHTTP`), a Notification per confirmed subscription when a topic message is
/// planned (`FanOutJobs.plan`). A sender claims due rows under a lease (`FOR UPDATE SKIP LOCKED`; a sender that
/// dies leaves them to be claimed again when the lease runs out), makes one attempt each and records the result.
/// A Notification's final result finishes its message when nothing else of it is open (`FanOutJobs.finishIfDone`).
public struct HTTPDeliveryQueue: Sendable {
    /// Notified when a row is queued, so an idle sender wakes at once.
    public static let channel = "clarion_http_deliveries"

    public let pool: PGPool

    public init(pool: PGPool) { self.pool = pool }

    /// Claims up to `limit` due rows for `leaseSeconds`. Blocking: the sender's own threads only.
    public func claimBlocking(limit: Int, leaseSeconds: Double) throws(StoreError) -> [HTTPDeliveryClaim] {
        try pool.withConnectionBlocking { (c) throws(StoreError) -> [HTTPDeliveryClaim] in
            let result = try c.query("""
                WITH c AS (
                    SELECT id FROM http_deliveries
                    WHERE state = 'pending' AND not_before <= now() AND (lease_expires_at IS NULL OR lease_expires_at < now())
                    ORDER BY not_before, id LIMIT $1 FOR UPDATE SKIP LOCKED)
                UPDATE http_deliveries d SET lease_expires_at = now() + make_interval(secs => $2)
                FROM c WHERE d.id = c.id
                RETURNING d.id, d.kind, d.attempts, d.message, d.subscription
                """, [limit, leaseSeconds])
            var out: [HTTPDeliveryClaim] = []
            for row in result.rows {
                let id = try row.requireInt64(0)
                let facts = try c.query("""
                    SELECT s.external_id, s.protocol, s.target, s.filter_policy::text, s.attributes::text,
                        coalesce(s.confirmation_token, ''), t.name, t.attributes::text, a.account_id,
                        m.external_id, m.message, m.structure, m.subject, m.attributes::text, m.published_at, t.region
                    FROM subscriptions s JOIN topics t ON t.id = s.topic JOIN accounts a ON a.id = t.account
                    LEFT JOIN messages m ON m.id = $2
                    WHERE s.id = $1
                    """, [try row.requireInt64(4), row.int64(3)])
                guard let f = facts.first, let subscription = f.uuid(0),
                      let kind = HTTPDeliveryClaim.Kind(rawValue: row.string(1) ?? "") else { continue }
                out.append(HTTPDeliveryClaim(
                    id: id, kind: kind, attempts: row.int(2) ?? 0, messageKey: row.int64(3), subscriptionID: subscription,
                    protocol: f.string(1) ?? "", url: f.string(2) ?? "", filterPolicy: f.string(3),
                    subscriptionAttributes: RepositoryJSON.decode(f.string(4)), token: f.string(5) ?? "",
                    topicName: f.string(6) ?? "", topicAttributes: RepositoryJSON.decode(f.string(7)),
                    accountID: f.string(8) ?? "", messageID: f.uuid(9), message: f.string(10), structure: f.string(11),
                    subject: f.string(12), messageAttributesJSON: f.string(13), publishedAt: f.date(14),
                    topicRegion: f.string(15) ?? ""))
            }
            return out.sorted { $0.id < $1.id }
        }
    }

    /// Records an attempt's result (a filtered row made no attempt). A final result of a Notification finishes its
    /// message when nothing else of it is open, in the same transaction.
    public func finishBlocking(id: Int64, messageKey: Int64?, result: HTTPDeliveryResult) throws(StoreError) {
        try pool.withConnectionBlocking { (c) throws(StoreError) in
            try c.transaction { (c) throws(StoreError) in
                switch result {
                case .delivered(let status):
                    try c.query("""
                        UPDATE http_deliveries SET state = 'delivered', attempts = attempts + 1, last_status = $2,
                            last_error = NULL, lease_expires_at = NULL, finished_at = now() WHERE id = $1
                        """, [id, status])
                case .failed(let reason, let status):
                    try c.query("""
                        UPDATE http_deliveries SET state = 'failed', attempts = attempts + 1, last_status = $2,
                            last_error = $3, lease_expires_at = NULL, finished_at = now() WHERE id = $1
                        """, [id, status, reason])
                case .filtered:
                    try c.query("""
                        UPDATE http_deliveries SET state = 'filtered', lease_expires_at = NULL, finished_at = now()
                        WHERE id = $1
                        """, [id])
                case .retry(let at, let reason, let status):
                    try c.query("""
                        UPDATE http_deliveries SET attempts = attempts + 1, last_status = $2, last_error = $3,
                            not_before = $4, lease_expires_at = NULL WHERE id = $1
                        """, [id, status, reason, at])
                }
                if let messageKey, !result.isRetry {
                    _ = try FanOutJobs.finishIfDone(c, messages: [messageKey])
                }
            }
        }
    }

    /// When the next pending row is due (nil: none), so an idle sender sleeps until then.
    public func nextDueBlocking() throws(StoreError) -> Date? {
        try pool.withConnectionBlocking { (c) throws(StoreError) -> Date? in
            try c.query("SELECT min(not_before) FROM http_deliveries WHERE state = 'pending'").first?.date(0)
        }
    }

    /// Inserts one Notification row per confirmed http/https subscription of `topic` for `message` (the planner's
    /// transaction); returns how many.
    @discardableResult
    static func enqueueNotifications(_ c: PGConnection, message: Int64, topic: Int64) throws(StoreError) -> Int {
        let inserted = try c.query("""
            INSERT INTO http_deliveries (subscription, message, kind)
            SELECT id, $1, 'Notification' FROM subscriptions
            WHERE topic = $2 AND endpoint IS NULL AND protocol IN ('http', 'https') AND NOT pending_confirmation
            ORDER BY id
            """, [message, topic])
        if inserted.affectedRows > 0 { try c.query("SELECT pg_notify($1, '')", [channel]) }
        return inserted.affectedRows
    }

    /// A subscription's deliveries (kind, state, attempts, last status, last error) in id order: for tests and
    /// operators.
    public func deliveries(subscription: UUID) async throws(StoreError)
        -> [(kind: String, state: String, attempts: Int, lastStatus: Int?, lastError: String?)] {
        try await pool.withConnection { (c) throws(StoreError) in
            try c.query("""
                SELECT d.kind, d.state, d.attempts, d.last_status, d.last_error FROM http_deliveries d
                JOIN subscriptions s ON s.id = d.subscription WHERE s.external_id = $1 ORDER BY d.id
                """, [subscription]).rows.map {
                (kind: $0.string(0) ?? "", state: $0.string(1) ?? "", attempts: $0.int(2) ?? 0, lastStatus: $0.int(3),
                 lastError: $0.string(4))
            }
        }
    }
}

extension HTTPDeliveryResult {
    var isRetry: Bool {
        if case .retry = self { return true }
        return false
    }
}

extension DeliveryCounters {
    static func + (lhs: DeliveryCounters, rhs: DeliveryCounters) -> DeliveryCounters {
        var sum = lhs
        sum += rhs
        return sum
    }
}
