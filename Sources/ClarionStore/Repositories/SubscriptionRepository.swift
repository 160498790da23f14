import Foundation

/// A subscription of a topic, with what its ARNs need (the topic's name; the endpoint's application).
public struct SubscriptionRecord: Sendable, Equatable {
    public let key: Int64
    public let externalID: UUID
    public let topicKey: Int64
    public let topicName: String
    public let accountKey: Int64
    /// `application` for endpoint subscriptions.
    public let `protocol`: String
    public let endpointKey: Int64?
    public let endpointExternalID: UUID?
    public let endpointPlatform: String?
    public let endpointApplicationName: String?
    public let target: String?
    /// The FilterPolicy JSON text, as stored.
    public let filterPolicy: String?
    public let attributes: [String: String]
    public let createdAt: Date
    /// An http/https subscription its endpoint has not confirmed yet (always false for `application`).
    public var pendingConfirmation: Bool = false
    /// The 12-digit ids of the topic's account (the subscription's, in its ARN) and of the subscribed endpoint's
    /// account (nil for http/https): they differ for a subscription another account's topic policy allowed.
    public var topicAccountID: String = ""
    public var endpointAccountID: String?
    /// The topic's SNS region: a subscription lives where its topic does.
    public var region: String = ""
}

/// Subscriptions. One per (topic, endpoint): constraint `subscriptions_topic_endpoint_key`.
public struct SubscriptionRepository: Sendable {
    public let pool: PGPool

    public init(pool: PGPool) { self.pool = pool }

    static let select = """
        SELECT s.id, s.external_id, s.topic, t.name, t.account, s.protocol, s.endpoint, e.external_id, a.platform, a.name,
               s.target, s.filter_policy::text, s.attributes::text, s.created_at, s.pending_confirmation,
               ta.account_id, ea.account_id, t.region
        FROM subscriptions s JOIN topics t ON t.id = s.topic JOIN accounts ta ON ta.id = t.account
        LEFT JOIN endpoints e ON e.id = s.endpoint LEFT JOIN platform_applications a ON a.id = e.application
        LEFT JOIN accounts ea ON ea.id = a.account
        """

    /// Subscribes an endpoint (protocol `application`). Subscribing again returns the existing subscription
    /// (`created` false), as SNS does. A filter policy that is not valid JSON is `.queryFailed` from the server;
    /// callers validate first.
    public func subscribe(topicKey: Int64, endpointKey: Int64, externalID: UUID, filterPolicy: String?,
                          attributes: [String: String]) async throws(StoreError) -> (SubscriptionRecord, created: Bool) {
        try await pool.withConnection { (c) throws(StoreError) -> (SubscriptionRecord, created: Bool) in
            let inserted = try c.query("""
                INSERT INTO subscriptions (external_id, topic, protocol, endpoint, filter_policy, attributes)
                VALUES ($1, $2, 'application', $3, $4::jsonb, $5)
                ON CONFLICT ON CONSTRAINT subscriptions_topic_endpoint_key DO NOTHING
                RETURNING id
                """, [externalID, topicKey, endpointKey, filterPolicy, RepositoryJSON.encode(attributes)])
            if let key = inserted.first?.int64(0) {
                return (try Self.fetch(c, "s.id = $1", [key]), true)
            }
            return (try Self.fetch(c, "s.topic = $1 AND s.endpoint = $2", [topicKey, endpointKey]), false)
        }
    }

    /// Subscribes an http/https URL: the subscription starts PendingConfirmation with `token`, and its
    /// SubscriptionConfirmation POST is queued in the same transaction (`http_deliveries`), so a crash between the
    /// two cannot leave a subscription nobody is asked to confirm. Subscribing the same URL again returns the
    /// existing subscription (`created` false); while it is still pending, another confirmation is queued, as SNS
    /// sends a new one.
    public func subscribeHTTP(topicKey: Int64, protocol proto: String, url: String, externalID: UUID, token: String,
                              filterPolicy: String?, attributes: [String: String]) async throws(StoreError)
        -> (SubscriptionRecord, created: Bool) {
        try await pool.transaction { (c) throws(StoreError) -> (SubscriptionRecord, created: Bool) in
            let inserted = try c.query("""
                INSERT INTO subscriptions (external_id, topic, protocol, target, filter_policy, attributes,
                    pending_confirmation, confirmation_token)
                VALUES ($1, $2, $3, $4, $5::jsonb, $6, true, $7)
                ON CONFLICT (topic, protocol, target) WHERE endpoint IS NULL DO NOTHING
                RETURNING id
                """, [externalID, topicKey, proto, url, filterPolicy, RepositoryJSON.encode(attributes), token])
            let record: SubscriptionRecord
            let created: Bool
            if let key = inserted.first?.int64(0) {
                record = try Self.fetch(c, "s.id = $1", [key])
                created = true
            } else {
                record = try Self.fetch(c, "s.topic = $1 AND s.protocol = $2 AND s.target = $3 AND s.endpoint IS NULL",
                                        [topicKey, proto, url])
                created = false
            }
            if record.pendingConfirmation {
                try c.query("""
                    INSERT INTO http_deliveries (subscription, kind) VALUES ($1, 'SubscriptionConfirmation')
                    """, [record.key])
                try c.query("SELECT pg_notify($1, '')", [HTTPDeliveryQueue.channel])
            }
            return (record, created)
        }
    }

    /// Confirms the pending subscription that was sent `token` (ConfirmSubscription, or a GET on its
    /// SubscribeURL). Confirming again is harmless and returns the subscription. `.notFound` for an unknown token.
    public func confirm(token: String) async throws(StoreError) -> SubscriptionRecord {
        try await pool.withConnection { (c) throws(StoreError) -> SubscriptionRecord in
            let updated = try c.query("""
                UPDATE subscriptions SET pending_confirmation = false WHERE confirmation_token = $1 RETURNING id
                """, [token])
            guard let key = updated.first?.int64(0) else { throw StoreError(.notFound, "no subscription with that token") }
            return try Self.fetch(c, "s.id = $1", [key])
        }
    }

    /// The subscription that was sent `token`, if any (the UnsubscribeURL's check).
    public func find(token: String) async throws(StoreError) -> SubscriptionRecord? {
        try await pool.withConnection { (c) throws(StoreError) -> SubscriptionRecord? in
            guard let row = try c.query(Self.select + " WHERE s.confirmation_token = $1", [token]).first else { return nil }
            return try Self.record(row)
        }
    }

    public func get(externalID: UUID) async throws(StoreError) -> SubscriptionRecord {
        try await pool.withConnection { (c) throws(StoreError) -> SubscriptionRecord in
            try Self.fetch(c, "s.external_id = $1", [externalID])
        }
    }

    /// Sets one attribute. `FilterPolicy` goes to its own column (nil or "" clears it); other attributes to the
    /// attribute map (nil removes).
    public func setAttribute(externalID: UUID, name: String, value: String?) async throws(StoreError) -> SubscriptionRecord {
        try await pool.withConnection { (c) throws(StoreError) -> SubscriptionRecord in
            let result: PGResult
            if name == "FilterPolicy" {
                let policy = (value?.isEmpty ?? true) ? nil : value
                result = try c.query("UPDATE subscriptions SET filter_policy = $2::jsonb WHERE external_id = $1 RETURNING id",
                                     [externalID, policy])
            } else if let value {
                result = try c.query("UPDATE subscriptions SET attributes = attributes || jsonb_build_object($2::text, $3::text) WHERE external_id = $1 RETURNING id",
                                     [externalID, name, value])
            } else {
                result = try c.query("UPDATE subscriptions SET attributes = attributes - $2::text WHERE external_id = $1 RETURNING id",
                                     [externalID, name])
            }
            guard let key = result.first?.int64(0) else { throw StoreError(.notFound, "no subscription \(externalID)") }
            return try Self.fetch(c, "s.id = $1", [key])
        }
    }

    /// Removes the subscription; false when it did not exist.
    @discardableResult
    /// An HTTP/S subscription's pending deliveries go with it (cascade); the messages they held open are finished
    /// in the same transaction when nothing else of theirs is open, so no message waits for a delivery that is gone.
    public func unsubscribe(externalID: UUID) async throws(StoreError) -> Bool {
        try await pool.transaction { (c) throws(StoreError) -> Bool in
            let held = try c.query("""
                SELECT DISTINCT d.message FROM http_deliveries d JOIN subscriptions s ON s.id = d.subscription
                WHERE s.external_id = $1 AND d.state = 'pending' AND d.message IS NOT NULL
                """, [externalID]).rows.compactMap { $0.int64(0) }
            let deleted = try c.query("DELETE FROM subscriptions WHERE external_id = $1", [externalID]).affectedRows > 0
            if !held.isEmpty { _ = try FanOutJobs.finishIfDone(c, messages: held) }
            return deleted
        }
    }

    /// The topic's subscriptions in keyset order (the fan-out's order).
    public func list(topicKey: Int64, after: Int64? = nil, limit: Int = 100) async throws(StoreError) -> Page<SubscriptionRecord> {
        try await pool.withConnection { (c) throws(StoreError) -> Page<SubscriptionRecord> in
            try c.page(Self.select + " WHERE s.topic = $1 AND s.id > $2 ORDER BY s.id LIMIT $3",
                       [topicKey, after ?? 0, limit + 1], limit: limit, key: \.key, Self.record)
        }
    }

    /// Every subscription of the account's topics in `region`, in key order.
    public func list(accountKey: Int64, region: String, after: Int64? = nil, limit: Int = 100) async throws(StoreError) -> Page<SubscriptionRecord> {
        try await pool.withConnection { (c) throws(StoreError) -> Page<SubscriptionRecord> in
            try c.page(Self.select + " WHERE t.account = $1 AND t.region = $2 AND s.id > $3 ORDER BY s.id LIMIT $4",
                       [accountKey, region, after ?? 0, limit + 1], limit: limit, key: \.key, Self.record)
        }
    }

    static func fetch(_ c: PGConnection, _ condition: String, _ parameters: [any PGEncodable]) throws(StoreError) -> SubscriptionRecord {
        guard let row = try c.query(select + " WHERE " + condition, parameters).first else {
            throw StoreError(.notFound, "no such subscription")
        }
        return try record(row)
    }

    static func record(_ row: PGRow) throws(StoreError) -> SubscriptionRecord {
        guard let id = row.uuid(1) else { throw StoreError(.invalidData, "subscription without external id") }
        return SubscriptionRecord(key: try row.requireInt64(0), externalID: id, topicKey: try row.requireInt64(2),
                                  topicName: try row.requireString(3), accountKey: try row.requireInt64(4),
                                  protocol: try row.requireString(5), endpointKey: row.int64(6), endpointExternalID: row.uuid(7),
                                  endpointPlatform: row.string(8), endpointApplicationName: row.string(9), target: row.string(10),
                                  filterPolicy: row.string(11), attributes: RepositoryJSON.decode(row.string(12)),
                                  createdAt: try row.requireDate(13), pendingConfirmation: row.bool(14) ?? false,
                                  topicAccountID: try row.requireString(15), endpointAccountID: row.string(16),
                                  region: try row.requireString(17))
    }
}
