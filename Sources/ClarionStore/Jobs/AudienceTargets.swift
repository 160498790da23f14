import Foundation

/// Who a user or audience publish reaches: endpoints of the given platform applications, narrowed by user id or by
/// device columns. Stored as the message's `target` jsonb, so planning and streaming read the same filter.
///
/// An audience's app version range compares versions by their numeric parts (`1.10.0` > `1.9`), padded to four
/// parts, bounds inclusive. Language and OS type compare case-insensitively.
public struct AudienceFilter: Sendable, Hashable {
    public var applications: [Int64]
    /// Only this user's endpoints (a `user` publish).
    public var userID: String?
    public var languages: [String]?
    public var osTypes: [String]?
    public var minimumAppVersion: String?
    public var maximumAppVersion: String?

    public init(applications: [Int64], userID: String? = nil, languages: [String]? = nil, osTypes: [String]? = nil,
                minimumAppVersion: String? = nil, maximumAppVersion: String? = nil) {
        self.applications = applications
        self.userID = userID
        self.languages = languages
        self.osTypes = osTypes
        self.minimumAppVersion = minimumAppVersion
        self.maximumAppVersion = maximumAppVersion
    }

    /// A version's numeric parts, four of them (missing ones are 0); nil when it has no digits.
    public static func versionParts(_ version: String) -> [Int64]? {
        var parts: [Int64] = []
        var current: Int64?
        for byte in version.utf8 {
            if byte >= 0x30 && byte <= 0x39 {
                let digit = Int64(byte - 0x30)
                let (times, o1) = (current ?? 0).multipliedReportingOverflow(by: 10)
                let (sum, o2) = times.addingReportingOverflow(digit)
                current = (o1 || o2) ? Int64.max : sum
            } else if let value = current {
                parts.append(value)
                current = nil
            }
        }
        if let current { parts.append(current) }
        guard !parts.isEmpty else { return nil }
        return Array((parts + [0, 0, 0, 0]).prefix(4))
    }

    /// The `messages.target` document.
    var json: String {
        var members: [String] = []
        members.append("\"applications\":[" + applications.map(String.init).joined(separator: ",") + "]")
        func list(_ values: [String]) -> String {
            "[" + values.map { AudienceFilter.quote($0.lowercased()) }.joined(separator: ",") + "]"
        }
        if let userID { members.append("\"userId\":" + Self.quote(userID)) }
        if let languages { members.append("\"languages\":" + list(languages)) }
        if let osTypes { members.append("\"osTypes\":" + list(osTypes)) }
        if let minimum = minimumAppVersion.flatMap(Self.versionParts) {
            members.append("\"minAppVersion\":[" + minimum.map(String.init).joined(separator: ",") + "]")
        }
        if let maximum = maximumAppVersion.flatMap(Self.versionParts) {
            members.append("\"maxAppVersion\":[" + maximum.map(String.init).joined(separator: ",") + "]")
        }
        return "{" + members.joined(separator: ",") + "}"
    }

    static func quote(_ text: String) -> String {
        let data = (try? JSONSerialization.data(withJSONObject: [text], options: [.withoutEscapingSlashes])) ?? Data("[\"\"]".utf8)
        return String(String(decoding: data, as: UTF8.self).dropFirst().dropLast())
    }
}

/// A user or audience publish to store.
public struct NewAudienceMessage: Sendable {
    public var externalID: UUID
    public var accountKey: Int64
    public var filter: AudienceFilter
    public var message: String
    public var structure: String?
    public var subject: String?
    public var attributesJSON: String
    public var expiresAt: Date?
    /// A scheduled publish (schema v16): stored `Scheduled` until this time; nil sends at once.
    public var sendAt: Date?
    /// Spread the fan-out (schema v16).
    public var pace: MessagePace?

    public init(externalID: UUID, accountKey: Int64, filter: AudienceFilter, message: String, structure: String? = nil,
                subject: String? = nil, attributesJSON: String = "{}", expiresAt: Date? = nil, sendAt: Date? = nil,
                pace: MessagePace? = nil) {
        self.externalID = externalID
        self.accountKey = accountKey
        self.filter = filter
        self.message = message
        self.structure = structure
        self.subject = subject
        self.attributesJSON = attributesJSON
        self.expiresAt = expiresAt
        self.sendAt = sendAt
        self.pace = pace
    }
}

/// User and audience targeting in the fan-out job queue.
///
/// Keys are endpoint ids (like a direct publish), so a shard is a range of the applications' endpoints and the
/// checkpoint protocol is unchanged. Planning cuts the applications' endpoints into ranges of `shardSize` through
/// the `(application, id)` index without applying the filter (`planned_targets` is an upper estimate); streaming
/// applies the filter, so an endpoint outside the audience is never a target and is not counted.
extension FanOutJobs {
    /// Stores a user or audience publish (planned later by the dispatcher's planner) and wakes the dispatchers.
    /// Every application must belong to the message's account (`.notFound` otherwise).
    public func publish(_ message: NewAudienceMessage) async throws(StoreError) -> MessageID {
        try await pool.transaction { (c) throws(StoreError) -> MessageID in
            let id = try Self.insertAudience(c, message)
            try c.query("SELECT pg_notify($1, '')", [FanOutJobs.workChannel])
            return id
        }
    }

    /// Stores the messages of one audience publish together (`send_at_local`: one per zone), all or none.
    public func publish(_ messages: [NewAudienceMessage]) async throws(StoreError) -> [MessageID] {
        try await pool.transaction { (c) throws(StoreError) -> [MessageID] in
            var ids: [MessageID] = []
            for message in messages { ids.append(try Self.insertAudience(c, message)) }
            try c.query("SELECT pg_notify($1, '')", [FanOutJobs.workChannel])
            return ids
        }
    }

    static func insertAudience(_ c: PGConnection, _ message: NewAudienceMessage) throws(StoreError) -> MessageID {
        let kind = message.filter.userID == nil ? "audience" : "user"
        let perSecond: Double? = if case .perSecond(let rate)? = message.pace { rate } else { nil }
        let overSeconds: Int? = if case .overSeconds(let seconds)? = message.pace { seconds } else { nil }
        let applications = PGArrayParameter(text: PGArrayLiteral.int64s(message.filter.applications))
        let owned = try c.query("""
            SELECT count(*) FROM platform_applications WHERE id = ANY($1::bigint[]) AND account = $2
            """, [applications, message.accountKey]).first?.int64(0) ?? 0
        guard owned == Int64(Set(message.filter.applications).count), owned > 0 else {
            throw StoreError(.notFound, "a platform application of the audience is not in this account")
        }
        guard let row = try c.query("""
            INSERT INTO messages (external_id, account, target_kind, target, message, structure, subject, attributes,
                                  expires_at, planned, send_at, state, pace_per_second, pace_over_seconds)
            VALUES ($1, $2, $3, $4::jsonb, $5, $6, $7, $8::jsonb, $9, false, $10,
                    CASE WHEN $10::timestamptz IS NULL THEN 'Enqueued' ELSE 'Scheduled' END, $11, $12)
            RETURNING id
            """, [message.externalID, message.accountKey, kind, message.filter.json, message.message, message.structure,
                  message.subject, message.attributesJSON, message.expiresAt, message.sendAt, perSecond, overSeconds]).first else {
            throw StoreError(.invalidData, "INSERT returned no row")
        }
        return MessageID(key: try row.requireInt64(0), externalID: message.externalID)
    }

    /// Cuts a user or audience message into shards of endpoint-id ranges (lo, hi].
    static func planAudience(_ c: PGConnection, message: Int64, shardSize: Int) throws(StoreError) -> (los: [Int64], his: [Int64], counts: [Int64]) {
        var los: [Int64] = [], his: [Int64] = [], counts: [Int64] = []
        let scope = """
            FROM endpoints e, messages m
            WHERE m.id = $1 AND e.application IN (SELECT jsonb_array_elements_text(m.target->'applications')::bigint)
              AND (m.target->>'userId' IS NULL OR e.user_id = m.target->>'userId') AND e.id > $2
            """
        var last: Int64 = 0
        while true {
            let boundary = try c.query("SELECT e.id \(scope) ORDER BY e.id OFFSET $3 LIMIT 1", [message, last, shardSize - 1])
            if let hi = boundary.first?.int64(0) {
                los.append(last)
                his.append(hi)
                counts.append(Int64(shardSize))
                last = hi
                continue
            }
            let tail = try c.query("SELECT count(*), max(id) FROM (SELECT e.id \(scope) ORDER BY e.id LIMIT $3) t",
                                   [message, last, shardSize])
            if let row = tail.first, let count = row.int64(0), count > 0, let hi = row.int64(1) {
                los.append(last)
                his.append(hi)
                counts.append(count)
            }
            return (los, his, counts)
        }
    }

    /// A shard's targets: $1 message, $2 after, $3 hi, $4 limit, $5 stale-before. Same columns as the topic and
    /// endpoint queries, then the endpoint's `TimeZone` (for the quiet hours of its mobile app, schema v22).
    static let audienceTargetsSQL = """
        WITH m AS (SELECT target FROM messages WHERE id = $1)
        SELECT e.id, e.id, e.application, e.token, e.enabled,
            coalesce(e.token_refreshed_at, e.updated_at) < $5, coalesce(e.token_refreshed_at, e.created_at),
            e.attributes->>'TimeZone'
        FROM m, endpoints e
        WHERE e.application IN (SELECT jsonb_array_elements_text(m.target->'applications')::bigint)
          AND e.id > $2 AND e.id <= $3
          AND (m.target->>'userId' IS NULL OR e.user_id = m.target->>'userId')
          AND (m.target->'languages' IS NULL
               OR lower(e.language) IN (SELECT jsonb_array_elements_text(m.target->'languages')))
          AND (m.target->'osTypes' IS NULL
               OR lower(e.os_type) IN (SELECT jsonb_array_elements_text(m.target->'osTypes')))
          AND (m.target->'minAppVersion' IS NULL OR (e.app_version IS NOT NULL
               AND (ARRAY(SELECT left(x[1], 18)::bigint FROM regexp_matches(e.app_version, '[0-9]+', 'g') AS x)
                    || '{0,0,0,0}'::bigint[])[1:4]
                   >= ARRAY(SELECT jsonb_array_elements_text(m.target->'minAppVersion')::bigint)))
          AND (m.target->'maxAppVersion' IS NULL OR (e.app_version IS NOT NULL
               AND (ARRAY(SELECT left(x[1], 18)::bigint FROM regexp_matches(e.app_version, '[0-9]+', 'g') AS x)
                    || '{0,0,0,0}'::bigint[])[1:4]
                   <= ARRAY(SELECT jsonb_array_elements_text(m.target->'maxAppVersion')::bigint)))
        ORDER BY e.id LIMIT $4
        """

    static func audienceTargets(_ c: PGConnection, message: Int64, after: Int64, hi: Int64, limit: Int,
                                staleBefore: Date) throws(StoreError) -> PGResult {
        try c.query(audienceTargetsSQL, [message, after, hi, limit, staleBefore])
    }
}
