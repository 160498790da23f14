import Foundation

/// A stored message: the internal key (shards, delivery ids) and the external id (SNS's MessageId).
public struct MessageID: Sendable, Hashable {
    public let key: Int64
    public let externalID: UUID

    public init(key: Int64, externalID: UUID) {
        self.key = key
        self.externalID = externalID
    }
}

/// Where a publish goes.
public enum MessageTarget: Sendable, Equatable {
    /// A direct publish: one shard of one endpoint is written with the message.
    case endpoint(key: Int64, arn: String)
    /// A topic publish: the dispatcher's planner cuts shards later (`planned = false`).
    case topic(key: Int64, arn: String)
}

/// An accepted publish, ready to store.
public struct NewMessage: Sendable {
    public var externalID: UUID
    public var accountKey: Int64
    public var target: MessageTarget
    public var message: String
    /// "json" or nil.
    public var structure: String?
    public var subject: String?
    /// The message attributes as a JSON object text (`{"Name": {"DataType": ..., "StringValue": ...}}`).
    public var attributesJSON: String
    public var expiresAt: Date?

    public init(externalID: UUID, accountKey: Int64, target: MessageTarget, message: String, structure: String? = nil,
                subject: String? = nil, attributesJSON: String = "{}", expiresAt: Date? = nil) {
        self.externalID = externalID
        self.accountKey = accountKey
        self.target = target
        self.message = message
        self.structure = structure
        self.subject = subject
        self.attributesJSON = attributesJSON
        self.expiresAt = expiresAt
    }
}

public struct StoredMessage: Sendable, Equatable {
    public let id: MessageID
    public let accountKey: Int64
    /// endpoint | topic | user | audience
    public let targetKind: String
    public let targetKey: Int64?
    public let targetARN: String?
    public let message: String
    public let structure: String?
    public let subject: String?
    public let attributesJSON: String
    public let state: String
    public let planned: Bool
    public let publishedAt: Date
}

/// A fan-out shard as stored: targets in (lo, hi], progress at `checkpoint`.
public struct ShardRecord: Sendable, Equatable {
    public let lo: Int64
    public let hi: Int64
    public let checkpoint: Int64
    public let state: String

    public init(lo: Int64, hi: Int64, checkpoint: Int64, state: String) {
        self.lo = lo
        self.hi = hi
        self.checkpoint = checkpoint
        self.state = state
    }
}

/// Accepted publishes. A message is acknowledged only after its row (and, for a direct publish, its one
/// shard) is committed; the dispatcher is woken with `NOTIFY clarion_work`, which PostgreSQL delivers at commit.
public struct MessageRepository: Sendable {
    /// The LISTEN/NOTIFY channel dispatchers wait on.
    public static let workChannel = "clarion_work"

    public let pool: PGPool

    public init(pool: PGPool) { self.pool = pool }

    /// Stores one message in its own transaction (the batcher groups many).
    public func store(_ message: NewMessage) async throws(StoreError) -> MessageID {
        try await pool.withConnection { (c) throws(StoreError) -> MessageID in
            guard let result = Self.write([message], on: c).first else { throw StoreError(.invalidData, "nothing written") }
            return try result.get()
        }
    }

    public func get(externalID: UUID) async throws(StoreError) -> StoredMessage {
        try await pool.withConnection { (c) throws(StoreError) -> StoredMessage in
            guard let row = try c.query("""
                SELECT id, external_id, account, target_kind, target_id, target->>'arn', message, structure, subject,
                       attributes::text, state, planned, published_at
                FROM messages WHERE external_id = $1
                """, [externalID]).first, let id = row.uuid(1) else {
                throw StoreError(.notFound, "no message \(externalID)")
            }
            return StoredMessage(id: MessageID(key: try row.requireInt64(0), externalID: id), accountKey: try row.requireInt64(2),
                                 targetKind: try row.requireString(3), targetKey: row.int64(4), targetARN: row.string(5),
                                 message: try row.requireString(6), structure: row.string(7), subject: row.string(8),
                                 attributesJSON: row.string(9) ?? "{}", state: try row.requireString(10),
                                 planned: row.bool(11) ?? false, publishedAt: try row.requireDate(12))
        }
    }

    public func shards(messageKey: Int64) async throws(StoreError) -> [ShardRecord] {
        try await pool.withConnection { (c) throws(StoreError) -> [ShardRecord] in
            try c.query("SELECT lo, hi, checkpoint, state FROM fanout_shards WHERE message = $1 ORDER BY lo", [messageKey]).rows
                .map { ShardRecord(lo: $0.int64(0) ?? 0, hi: $0.int64(1) ?? 0, checkpoint: $0.int64(2) ?? 0, state: $0.string(3) ?? "") }
        }
    }

    // MARK: Writing (shared with PublishBatcher)

    /// A direct publish writes the message and its one shard in one statement. The shard is (lo, hi] with an
    /// exclusive lower bound, so one endpoint `e` is lo = e - 1, hi = e, checkpoint = lo ("nothing done yet"),
    /// which satisfies the table's `lo <= checkpoint <= hi`; `planned_targets` is 1, as the planner would write.
    static let insertDirect = """
        WITH m AS (
            INSERT INTO messages (external_id, account, target_kind, target_id, target, message, structure, subject,
                                  attributes, expires_at, planned)
            VALUES ($1, $2, 'endpoint', $3, jsonb_build_object('arn', $4::text), $5, $6, $7, $8, $9, true)
            RETURNING id
        ), s AS (
            INSERT INTO fanout_shards (message, lo, hi, checkpoint, planned_targets)
            SELECT id, $3::bigint - 1, $3, $3::bigint - 1, 1 FROM m
        )
        SELECT id FROM m
        """

    static let insertTopic = """
        INSERT INTO messages (external_id, account, target_kind, target_id, target, message, structure, subject,
                              attributes, expires_at, planned)
        VALUES ($1, $2, 'topic', $3, jsonb_build_object('arn', $4::text), $5, $6, $7, $8, $9, false)
        RETURNING id
        """

    static func command(_ message: NewMessage) -> PGCommand {
        let (sql, key, arn): (String, Int64, String)
        switch message.target {
        case .endpoint(let k, let a): (sql, key, arn) = (insertDirect, k, a)
        case .topic(let k, let a): (sql, key, arn) = (insertTopic, k, a)
        }
        return PGCommand(sql, [message.externalID, message.accountKey, key, arn, message.message, message.structure,
                               message.subject, PGJSON(text: message.attributesJSON), message.expiresAt])
    }

    /// A batch as one statement: every column as an array parameter, `unnest`ed into one INSERT, and the
    /// direct publishes' shards from its RETURNING rows. PostgreSQL parses and plans one statement per batch
    /// instead of one per message, which is most of a batch's cost.
    static let insertBatch = """
        WITH m AS (
            INSERT INTO messages (external_id, account, target_kind, target_id, target, message, structure, subject,
                                  attributes, expires_at, planned)
            SELECT external_id, account, kind, target_id, jsonb_build_object('arn', arn), message, structure, subject,
                   attributes, expires_at, kind = 'endpoint'
            FROM unnest($1::uuid[], $2::bigint[], $3::text[], $4::bigint[], $5::text[], $6::text[], $7::text[], $8::text[],
                        $9::jsonb[], $10::timestamptz[])
                AS t(external_id, account, kind, target_id, arn, message, structure, subject, attributes, expires_at)
            RETURNING id, external_id, target_kind, target_id
        ), s AS (
            INSERT INTO fanout_shards (message, lo, hi, checkpoint, planned_targets)
            SELECT id, target_id - 1, target_id, target_id - 1, 1 FROM m WHERE target_kind = 'endpoint'
        )
        SELECT id, external_id FROM m
        """

    static func batchCommand(_ messages: [NewMessage]) -> PGCommand {
        var kinds: [String?] = [], keys: [String?] = [], arns: [String?] = []
        for message in messages {
            switch message.target {
            case .endpoint(let key, let arn): kinds.append("endpoint"); keys.append(String(key)); arns.append(arn)
            case .topic(let key, let arn): kinds.append("topic"); keys.append(String(key)); arns.append(arn)
            }
        }
        return PGCommand(insertBatch, [
            PGArrayText(messages.map { $0.externalID.uuidString.lowercased() }),
            PGArrayText(messages.map { String($0.accountKey) }),
            PGArrayText(kinds), PGArrayText(keys), PGArrayText(arns),
            PGArrayText(messages.map { $0.message }), PGArrayText(messages.map { $0.structure }),
            PGArrayText(messages.map { $0.subject }), PGArrayText(messages.map { $0.attributesJSON }),
            PGArrayText(messages.map { $0.expiresAt?.pgText }),
        ])
    }

    /// Writes messages with one statement, one round trip and one commit (the pipeline's implicit transaction),
    /// ending with the NOTIFY. When the batch fails for a reason of one message (a constraint), each message
    /// is written on its own so the others still commit; a lost connection fails them all (none was answered).
    static func write(_ messages: [NewMessage], on c: PGConnection) -> [Result<MessageID, StoreError>] {
        guard !messages.isEmpty else { return [] }
        let notify = PGCommand("SELECT pg_notify($1, '')", [workChannel])
        do {
            var keys: [UUID: Int64] = [:]
            if messages.count == 1 {
                let results = try c.pipeline([command(messages[0]), notify])
                keys[messages[0].externalID] = results.first?.first?.int64(0)
            } else {
                let results = try c.pipeline([batchCommand(messages), notify])
                for row in results.first?.rows ?? [] {
                    if let key = row.int64(0), let id = row.uuid(1) { keys[id] = key }
                }
            }
            return messages.map { message -> Result<MessageID, StoreError> in
                guard let key = keys[message.externalID] else {
                    return .failure(StoreError(.invalidData, "the insert returned no id"))
                }
                return .success(MessageID(key: key, externalID: message.externalID))
            }
        } catch {
            if error.code == .connectionLost || error.code == .unavailable || messages.count == 1 {
                return messages.map { _ in .failure(error) }
            }
            return messages.map { message -> Result<MessageID, StoreError> in
                do throws(StoreError) {
                    let results = try c.pipeline([command(message), notify])
                    guard let key = results.first?.first?.int64(0) else {
                        return .failure(StoreError(.invalidData, "the insert returned no id"))
                    }
                    return .success(MessageID(key: key, externalID: message.externalID))
                } catch {
                    return .failure(error)
                }
            }
        }
    }
}

/// A PostgreSQL array literal bound as one text parameter (`$1::text[]`): elements double-quoted with `"` and
/// `\` escaped, nil as NULL.
struct PGArrayText: PGEncodable {
    let text: String

    init(_ values: [String?]) {
        var out = "{"
        out.reserveCapacity(values.reduce(2) { $0 + ($1?.utf8.count ?? 4) + 3 })
        for (index, value) in values.enumerated() {
            if index > 0 { out.append(",") }
            guard let value else { out.append("NULL"); continue }
            out.append("\"")
            for scalar in value.unicodeScalars {
                if scalar == "\"" || scalar == "\\" { out.append("\\") }
                out.unicodeScalars.append(scalar)
            }
            out.append("\"")
        }
        out.append("}")
        text = out
    }

    var pgText: String? { text }
}
