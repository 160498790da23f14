import ClarionCore
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
    /// A direct publish: stored unplanned; the dispatcher's claim writes its one-endpoint shard (schema v10).
    case endpoint(key: Int64, arn: String)
    /// A topic publish: the dispatcher's planner cuts shards later (`planned = false`).
    case topic(key: Int64, arn: String)
    /// A direct publish named by the endpoint's external id, checked by the statement that stores it (no
    /// lookup round trip before the publish, and no gap between check and insert): the endpoint must belong to
    /// the message's account under this platform and application name, in the region `arn` names, and both must be
    /// enabled. Otherwise
    /// the publish fails with `.notFound`, or `.checkViolation` with constraint `platform_applications_enabled`
    /// or `endpoints_enabled`.
    case endpointReference(id: UUID, platform: String, application: String, arn: String)
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
    /// A scheduled publish (schema v16): stored `Scheduled` and dispatched at this time; nil sends at once. The
    /// caller decides (a time not in the future is nil).
    public var sendAt: Date?
    /// Spread the fan-out (schema v16; topic messages).
    public var pace: MessagePace?

    public init(externalID: UUID, accountKey: Int64, target: MessageTarget, message: String, structure: String? = nil,
                subject: String? = nil, attributesJSON: String = "{}", expiresAt: Date? = nil, sendAt: Date? = nil,
                pace: MessagePace? = nil) {
        self.externalID = externalID
        self.accountKey = accountKey
        self.target = target
        self.message = message
        self.structure = structure
        self.subject = subject
        self.attributesJSON = attributesJSON
        self.expiresAt = expiresAt
        self.sendAt = sendAt
        self.pace = pace
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

/// Accepted publishes. A message is acknowledged only after its row is committed; the dispatcher is woken with
/// `NOTIFY clarion_work`, which PostgreSQL delivers at commit.
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

    /// A batch as one statement: every column as an array parameter, `unnest`ed into one INSERT. PostgreSQL
    /// parses and plans one statement per batch instead of one per message, which is most of a batch's cost.
    /// Endpoint references are resolved and checked in the same statement; each input row comes back with its
    /// status. So is the account: `messages` has no foreign key (schema v9), and an index probe without a row lock
    /// keeps "no message without its account". Every message is stored unplanned (`planned` defaults to false):
    /// the planner cuts topic, user and audience messages into shards, and a dispatcher's claim writes a direct
    /// message's one-endpoint shard, already leased (schema v10, `FanOutJobs.claim`). A message with `send_at` is
    /// stored `Scheduled` (schema v16) and waits for `FanOutJobs.promoteDue`.
    static let insertBatch = """
        WITH input AS (
            SELECT * FROM unnest($1::uuid[], $2::bigint[], $3::text[], $4::bigint[], $5::text[], $6::text[], $7::text[],
                                 $8::text[], $9::jsonb[], $10::timestamptz[], $11::uuid[], $12::text[], $13::text[],
                                 $14::timestamptz[], $15::float8[], $16::int[])
                AS t(external_id, account, kind, target_id, arn, message, structure, subject, attributes, expires_at,
                     ref, ref_platform, ref_application, send_at, pace_per_second, pace_over_seconds)
        ), resolved AS (
            SELECT i.external_id, i.account, i.kind, coalesce(i.target_id, e.id) AS target_id, i.arn, i.message, i.structure,
                   i.subject, i.attributes, i.expires_at, i.send_at, i.pace_per_second, i.pace_over_seconds,
                   CASE WHEN NOT EXISTS (SELECT 1 FROM accounts WHERE id = i.account) THEN 'noAccount'
                        WHEN i.ref IS NULL THEN 'ok'
                        WHEN a.id IS NULL THEN 'notFound'
                        WHEN NOT a.enabled THEN 'applicationDisabled'
                        WHEN NOT e.enabled THEN 'endpointDisabled'
                        ELSE 'ok' END AS status
            FROM input i
            LEFT JOIN endpoints e ON e.external_id = i.ref
            LEFT JOIN platform_applications a ON a.id = e.application AND a.account = i.account
                AND a.platform = i.ref_platform AND a.name = i.ref_application AND a.region = split_part(i.arn, ':', 4)
        ), m AS (
            INSERT INTO messages (external_id, account, target_kind, target_id, target, message, structure, subject,
                                  attributes, expires_at, send_at, state, pace_per_second, pace_over_seconds)
            SELECT external_id, account, kind, target_id, jsonb_build_object('arn', arn), message, structure, subject,
                   attributes, expires_at, send_at, CASE WHEN send_at IS NULL THEN 'Enqueued' ELSE 'Scheduled' END,
                   pace_per_second, pace_over_seconds
            FROM resolved WHERE status = 'ok'
            RETURNING id, external_id
        )
        SELECT r.external_id, r.status, m.id FROM resolved r LEFT JOIN m ON m.external_id = r.external_id
        """

    static func batchCommand(_ messages: [NewMessage]) -> PGCommand {
        var kinds: [String?] = [], keys: [String?] = [], arns: [String?] = []
        var references: [String?] = [], platforms: [String?] = [], applications: [String?] = []
        for message in messages {
            switch message.target {
            case .endpoint(let key, let arn):
                kinds.append("endpoint"); keys.append(String(key)); arns.append(arn)
                references.append(nil); platforms.append(nil); applications.append(nil)
            case .topic(let key, let arn):
                kinds.append("topic"); keys.append(String(key)); arns.append(arn)
                references.append(nil); platforms.append(nil); applications.append(nil)
            case .endpointReference(let id, let platform, let application, let arn):
                kinds.append("endpoint"); keys.append(nil); arns.append(arn)
                references.append(id.lowercasedText); platforms.append(platform); applications.append(application)
            }
        }
        return PGCommand(prepared: "clarion_publish_batch", insertBatch, [
            PGArrayParameter(messages.map { $0.externalID.lowercasedText }),
            PGArrayParameter(messages.map { String($0.accountKey) }),
            PGArrayParameter(kinds), PGArrayParameter(keys), PGArrayParameter(arns),
            PGArrayParameter(messages.map { $0.message }), PGArrayParameter(messages.map { $0.structure }),
            PGArrayParameter(messages.map { $0.subject }), PGArrayParameter(messages.map { $0.attributesJSON }),
            PGArrayParameter(messages.map { $0.expiresAt?.pgText }),
            PGArrayParameter(references), PGArrayParameter(platforms), PGArrayParameter(applications),
            PGArrayParameter(messages.map { $0.sendAt?.pgText }),
            PGArrayParameter(messages.map { message -> String? in
                if case .perSecond(let rate)? = message.pace { return String(rate) } else { return nil } }),
            PGArrayParameter(messages.map { message -> String? in
                if case .overSeconds(let seconds)? = message.pace { return String(seconds) } else { return nil } }),
        ])
    }

    /// Writes messages with one statement, one round trip and one commit (the pipeline's implicit transaction),
    /// ending with the NOTIFY. When the batch fails for a reason of one message (a constraint), each message
    /// is written on its own so the others still commit; a lost connection fails them all (none was answered).
    static func write(_ messages: [NewMessage], on c: PGConnection) -> [Result<MessageID, StoreError>] {
        guard !messages.isEmpty else { return [] }
        let notify = PGCommand(prepared: "clarion_notify_work", "SELECT pg_notify($1, '')", [workChannel])
        func outcomes(_ batch: [NewMessage]) throws(StoreError) -> [Result<MessageID, StoreError>] {
            let results = try c.pipeline([batchCommand(batch), notify])
            var rows: [UUID: (status: String, key: Int64?)] = [:]
            for row in results.first?.rows ?? [] {
                if let id = row.uuid(0) { rows[id] = (row.string(1) ?? "", row.int64(2)) }
            }
            return batch.map { message -> Result<MessageID, StoreError> in
                switch rows[message.externalID] {
                case let (status, key?)? where status == "ok":
                    return .success(MessageID(key: key, externalID: message.externalID))
                case ("noAccount", _)?:
                    return .failure(StoreError(.foreignKeyViolation, "no such account", constraint: "messages_account"))
                case ("notFound", _)?:
                    return .failure(StoreError(.notFound, "no such endpoint in this account"))
                case ("applicationDisabled", _)?:
                    return .failure(StoreError(.checkViolation, "the platform application is disabled",
                                               constraint: "platform_applications_enabled"))
                case ("endpointDisabled", _)?:
                    return .failure(StoreError(.checkViolation, "the endpoint is disabled", constraint: "endpoints_enabled"))
                default:
                    return .failure(StoreError(.invalidData, "the insert returned no id"))
                }
            }
        }
        do {
            return try outcomes(messages)
        } catch {
            // One by one only helps when one message was the cause; an outage (or a full disk) fails them all alike.
            if error.isTransient || messages.count == 1 {
                return messages.map { _ in .failure(error) }
            }
            return messages.map { message -> Result<MessageID, StoreError> in
                do throws(StoreError) {
                    return try outcomes([message])[0]
                } catch {
                    return .failure(error)
                }
            }
        }
    }
}
