import Foundation

/// A platform endpoint (one device token of one application), with what an ARN and a publish need to know
/// about its application.
public struct EndpointRecord: Sendable, Equatable {
    public let key: Int64
    public let externalID: UUID
    public let applicationKey: Int64
    /// The owning account's key (the application's).
    public let accountKey: Int64
    public let applicationName: String
    public let platform: String
    public let applicationEnabled: Bool
    public let token: String
    public let userID: String?
    public let customUserData: String?
    public let enabled: Bool
    public let disabledReason: String?
    /// When the endpoint was disabled (nil while enabled: re-enabling clears it with the reason).
    public let disabledAt: Date?
    /// Attributes without a column of their own.
    public let attributes: [String: String]
    public let createdAt: Date
    public let updatedAt: Date
    /// The application's SNS region: an endpoint lives where its application does.
    public var region: String = ""
}

/// What a create asks for. Optional fields that are nil were not given.
public struct NewEndpoint: Sendable {
    public var applicationKey: Int64
    public var token: String
    public var customUserData: String?
    public var enabled: Bool?
    public var userID: String?
    public var attributes: [String: String]

    public init(applicationKey: Int64, token: String, customUserData: String? = nil, enabled: Bool? = nil,
                userID: String? = nil, attributes: [String: String] = [:]) {
        self.applicationKey = applicationKey
        self.token = token
        self.customUserData = customUserData
        self.enabled = enabled
        self.userID = userID
        self.attributes = attributes
    }
}

/// The outcome of a create under SNS's idempotency rule (docs/providers.md C.8).
public enum EndpointCreation: Sendable, Equatable {
    /// A new endpoint.
    case created(EndpointRecord)
    /// The token exists and every attribute the request gave matches: the existing endpoint (not re-enabled).
    case existing(EndpointRecord)
    /// The token exists with different attributes: SNS refuses ("already exists with the same Token, but
    /// different attributes").
    case conflict(EndpointRecord)

    public var record: EndpointRecord {
        switch self {
        case .created(let r), .existing(let r), .conflict(let r): r
        }
    }
}

/// The changes of an update; nil leaves a field as it is.
public struct EndpointChanges: Sendable {
    public var token: String?
    public var enabled: Bool?
    /// Kept when the endpoint is disabled (why: "provider said Unregistered", "set by API").
    public var disabledReason: String?
    /// `.some(nil)` clears the data.
    public var customUserData: String??
    public var userID: String??
    public var attributes: [String: String]

    public init(token: String? = nil, enabled: Bool? = nil, disabledReason: String? = nil,
                customUserData: String?? = nil, userID: String?? = nil, attributes: [String: String] = [:]) {
        self.token = token
        self.enabled = enabled
        self.disabledReason = disabledReason
        self.customUserData = customUserData
        self.userID = userID
        self.attributes = attributes
    }
}

/// Platform endpoints. Unique per (application, token): the constraint `endpoints_application_token_key`
/// decides races between two creates of the same token.
public struct EndpointRepository: Sendable {
    public let pool: PGPool

    public init(pool: PGPool) { self.pool = pool }

    static let select = """
        SELECT e.id, e.external_id, e.application, a.name, a.platform, a.enabled, e.token, e.user_id, e.custom_user_data,
               e.enabled, e.disabled_reason, e.attributes::text, e.created_at, e.updated_at, a.account, e.disabled_at, a.region
        FROM endpoints e JOIN platform_applications a ON a.id = e.application
        """

    /// Creates the endpoint, or applies SNS's rule when the application already has this token: the existing
    /// endpoint when every given attribute matches, a conflict otherwise.
    public func create(_ endpoint: NewEndpoint, externalID: UUID) async throws(StoreError) -> EndpointCreation {
        try await pool.withConnection { (c) throws(StoreError) -> EndpointCreation in
            let inserted = try c.query("""
                INSERT INTO endpoints (external_id, application, token, user_id, custom_user_data, enabled,
                                       disabled_reason, disabled_at, attributes, token_refreshed_at)
                VALUES ($1, $2, $3, $4, $5, coalesce($6, true), CASE WHEN $6 = false THEN 'created disabled' END,
                        CASE WHEN $6 = false THEN now() END, $7, now())
                ON CONFLICT ON CONSTRAINT endpoints_application_token_key DO NOTHING
                RETURNING id
                """, [externalID, endpoint.applicationKey, endpoint.token, endpoint.userID, endpoint.customUserData,
                      endpoint.enabled, RepositoryJSON.encode(endpoint.attributes)])
            if let key = inserted.first?.int64(0) {
                return .created(try Self.fetch(c, "e.id = $1", [key]))
            }
            let existing = try Self.fetch(c, "e.application = $1 AND e.token = $2", [endpoint.applicationKey, endpoint.token])
            var same = true
            if let data = endpoint.customUserData, data != (existing.customUserData ?? "") { same = false }
            if let enabled = endpoint.enabled, enabled != existing.enabled { same = false }
            if let user = endpoint.userID, user != existing.userID { same = false }
            for (name, value) in endpoint.attributes where existing.attributes[name] != value { same = false }
            return same ? .existing(existing) : .conflict(existing)
        }
    }

    /// The endpoint by its external id; `.notFound` when missing.
    public func get(externalID: UUID) async throws(StoreError) -> EndpointRecord {
        try await pool.withConnection { (c) throws(StoreError) -> EndpointRecord in
            try Self.fetch(c, "e.external_id = $1", [externalID])
        }
    }

    public func get(key: Int64) async throws(StoreError) -> EndpointRecord {
        try await pool.withConnection { (c) throws(StoreError) -> EndpointRecord in
            try Self.fetch(c, "e.id = $1", [key])
        }
    }

    /// The application's endpoint with this token, or nil.
    public func find(applicationKey: Int64, token: String) async throws(StoreError) -> EndpointRecord? {
        try await pool.withConnection { (c) throws(StoreError) -> EndpointRecord? in
            try c.query(Self.select + " WHERE e.application = $1 AND e.token = $2", [applicationKey, token]).first.map(Self.record)
        }
    }

    /// The application's endpoints of one user (native API: publish to a user id), in key order.
    public func find(applicationKey: Int64, userID: String, limit: Int = 1000) async throws(StoreError) -> [EndpointRecord] {
        try await pool.withConnection { (c) throws(StoreError) -> [EndpointRecord] in
            var out: [EndpointRecord] = []
            for row in try c.query(Self.select + " WHERE e.application = $1 AND e.user_id = $2 ORDER BY e.id LIMIT $3",
                                   [applicationKey, userID, limit]).rows {
                out.append(try Self.record(row))
            }
            return out
        }
    }

    /// Applies changes. A token already used by another endpoint of the application is `.uniqueViolation`
    /// with constraint `endpoints_application_token_key`; a missing endpoint is `.notFound`.
    public func update(externalID: UUID, _ changes: EndpointChanges) async throws(StoreError) -> EndpointRecord {
        let setsData = changes.customUserData != nil
        let setsUser = changes.userID != nil
        return try await pool.withConnection { (c) throws(StoreError) -> EndpointRecord in
            let result = try c.query("""
                UPDATE endpoints SET
                    token = coalesce($2, token),
                    token_refreshed_at = CASE WHEN $2 IS NULL THEN token_refreshed_at ELSE now() END,
                    enabled = coalesce($3, enabled),
                    disabled_reason = CASE WHEN $3 IS NULL THEN disabled_reason WHEN $3 THEN NULL ELSE $4 END,
                    disabled_at = CASE WHEN $3 IS NULL THEN disabled_at WHEN $3 THEN NULL ELSE coalesce(disabled_at, now()) END,
                    custom_user_data = CASE WHEN $5 THEN $6 ELSE custom_user_data END,
                    user_id = CASE WHEN $7 THEN $8 ELSE user_id END,
                    attributes = attributes || $9,
                    updated_at = now()
                WHERE external_id = $1
                RETURNING id
                """, [externalID, changes.token, changes.enabled, changes.disabledReason, setsData,
                      changes.customUserData ?? nil, setsUser, changes.userID ?? nil, RepositoryJSON.encode(changes.attributes)])
            guard let key = result.first?.int64(0) else { throw StoreError(.notFound, "no endpoint \(externalID)") }
            return try Self.fetch(c, "e.id = $1", [key])
        }
    }

    /// Deletes the endpoint (and its subscriptions). Idempotent: false when it did not exist.
    @discardableResult
    public func delete(externalID: UUID) async throws(StoreError) -> Bool {
        try await pool.withConnection { (c) throws(StoreError) -> Bool in
            try c.query("DELETE FROM endpoints WHERE external_id = $1", [externalID]).affectedRows > 0
        }
    }

    /// The application's endpoints in key order (keyset paging on the (application, id) index).
    public func list(applicationKey: Int64, after: Int64? = nil, limit: Int = 100) async throws(StoreError) -> Page<EndpointRecord> {
        try await pool.withConnection { (c) throws(StoreError) -> Page<EndpointRecord> in
            try c.page(Self.select + " WHERE e.application = $1 AND e.id > $2 ORDER BY e.id LIMIT $3",
                       [applicationKey, after ?? 0, limit + 1], limit: limit, key: \.key, Self.record)
        }
    }

    static func fetch(_ c: PGConnection, _ condition: String, _ parameters: [any PGEncodable]) throws(StoreError) -> EndpointRecord {
        guard let row = try c.query(select + " WHERE " + condition, parameters).first else {
            throw StoreError(.notFound, "no such endpoint")
        }
        return try record(row)
    }

    static func record(_ row: PGRow) throws(StoreError) -> EndpointRecord {
        guard let id = row.uuid(1) else { throw StoreError(.invalidData, "endpoint without external id") }
        return EndpointRecord(key: try row.requireInt64(0), externalID: id, applicationKey: try row.requireInt64(2),
                              accountKey: try row.requireInt64(14),
                              applicationName: try row.requireString(3), platform: try row.requireString(4),
                              applicationEnabled: row.bool(5) ?? true, token: try row.requireString(6), userID: row.string(7),
                              customUserData: row.string(8), enabled: row.bool(9) ?? true, disabledReason: row.string(10),
                              disabledAt: row.date(15), attributes: RepositoryJSON.decode(row.string(11)), createdAt: try row.requireDate(12),
                              updatedAt: try row.requireDate(13), region: try row.requireString(16))
    }
}
