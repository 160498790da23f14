import Foundation

public struct TopicRecord: Sendable, Equatable {
    public let key: Int64
    public let accountKey: Int64
    public let name: String
    public let attributes: [String: String]
    public let createdAt: Date
    /// The SNS region the topic lives in (its ARN's); its subscriptions live there too.
    public let region: String
}

/// Topics, unique per (account, region, name): the same name may exist in two regions (V020).
public struct TopicRepository: Sendable {
    public let pool: PGPool

    public init(pool: PGPool) { self.pool = pool }

    static let columns = "id, account, name, attributes::text, created_at, region"

    /// Creates the topic, or returns the existing one of that name (`created` false); the caller decides
    /// whether differing attributes are an error, as SNS does.
    public func create(accountKey: Int64, region: String, name: String,
                       attributes: [String: String]) async throws(StoreError) -> (TopicRecord, created: Bool) {
        try await pool.withConnection { (c) throws(StoreError) -> (TopicRecord, created: Bool) in
            if let row = try c.query("""
                INSERT INTO topics (account, region, name, attributes) VALUES ($1, $2, $3, $4)
                ON CONFLICT ON CONSTRAINT topics_account_name_key DO NOTHING
                RETURNING \(Self.columns)
                """, [accountKey, region, name, RepositoryJSON.encode(attributes)]).first {
                return (try Self.record(row), true)
            }
            guard let row = try c.query("SELECT \(Self.columns) FROM topics WHERE account = $1 AND region = $2 AND name = $3",
                                        [accountKey, region, name]).first else {
                throw StoreError(.notFound, "topic \(name) vanished while being created")
            }
            return (try Self.record(row), false)
        }
    }

    /// The account's topic of that name in `region`; `.notFound` when missing (also when it exists in another region).
    public func get(accountKey: Int64, region: String, name: String) async throws(StoreError) -> TopicRecord {
        try await pool.withConnection { (c) throws(StoreError) -> TopicRecord in
            guard let row = try c.query("SELECT \(Self.columns) FROM topics WHERE account = $1 AND region = $2 AND name = $3",
                                        [accountKey, region, name]).first else {
                throw StoreError(.notFound, "no topic \(name)")
            }
            return try Self.record(row)
        }
    }

    /// Sets (or with nil removes) attributes; `.notFound` when the topic is missing.
    public func setAttributes(topicKey: Int64, _ changes: [String: String?]) async throws(StoreError) -> TopicRecord {
        let set = changes.compactMapValues { $0 }
        let removed = changes.filter { $0.value == nil }.map(\.key).sorted()
        let removedJSON = PGJSON(text: "[" + removed.map { "\"" + Self.escape($0) + "\"" }.joined(separator: ",") + "]")
        return try await pool.withConnection { (c) throws(StoreError) -> TopicRecord in
            guard let row = try c.query("""
                UPDATE topics SET attributes = (attributes - ARRAY(SELECT jsonb_array_elements_text($3::jsonb))) || $2
                WHERE id = $1 RETURNING \(Self.columns)
                """, [topicKey, RepositoryJSON.encode(set), removedJSON]).first else {
                throw StoreError(.notFound, "no topic \(topicKey)")
            }
            return try Self.record(row)
        }
    }

    /// Reads attribute `name` under the row's lock and writes what `change` makes of it, in one transaction, so two
    /// read-modify-writes at once (AddPermission twice) cannot lose one. `change` returns nil as the new value to
    /// leave the row as it is, and an outcome for the caller. `.notFound` when the topic is missing.
    public func updateAttribute<Outcome: Sendable>(
        topicKey: Int64, name: String, _ change: @escaping @Sendable (String?) -> (newValue: String?, outcome: Outcome)
    ) async throws(StoreError) -> Outcome {
        try await pool.transaction { (c) throws(StoreError) -> Outcome in
            guard let row = try c.query("SELECT attributes ->> $2 FROM topics WHERE id = $1 FOR UPDATE", [topicKey, name]).first else {
                throw StoreError(.notFound, "no topic \(topicKey)")
            }
            let (value, outcome) = change(row.string(0))
            if let value {
                _ = try c.query("UPDATE topics SET attributes = attributes || jsonb_build_object($2::text, $3::text) WHERE id = $1",
                                [topicKey, name, value])
            }
            return outcome
        }
    }

    /// Confirmed subscriptions of the topic (all subscriptions here are confirmed: application endpoints).
    public func subscriptionCount(topicKey: Int64) async throws(StoreError) -> Int {
        try await pool.withConnection { (c) throws(StoreError) -> Int in
            try c.query("SELECT count(*) FROM subscriptions WHERE topic = $1", [topicKey]).first?.int(0) ?? 0
        }
    }

    /// Deletes the topic and its subscriptions; false when it did not exist.
    @discardableResult
    public func delete(topicKey: Int64) async throws(StoreError) -> Bool {
        try await pool.withConnection { (c) throws(StoreError) -> Bool in
            try c.query("DELETE FROM topics WHERE id = $1", [topicKey]).affectedRows > 0
        }
    }

    /// The account's topics in `region`, in key order.
    public func list(accountKey: Int64, region: String, after: Int64? = nil, limit: Int = 100) async throws(StoreError) -> Page<TopicRecord> {
        try await pool.withConnection { (c) throws(StoreError) -> Page<TopicRecord> in
            try c.page("SELECT \(Self.columns) FROM topics WHERE account = $1 AND region = $2 AND id > $3 ORDER BY id LIMIT $4",
                       [accountKey, region, after ?? 0, limit + 1], limit: limit, key: \.key, Self.record)
        }
    }

    static func record(_ row: PGRow) throws(StoreError) -> TopicRecord {
        TopicRecord(key: try row.requireInt64(0), accountKey: try row.requireInt64(1), name: try row.requireString(2),
                    attributes: RepositoryJSON.decode(row.string(3)), createdAt: try row.requireDate(4), region: try row.requireString(5))
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
    }
}
