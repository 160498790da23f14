import ClarionCrypto
import Foundation

/// A platform application (one push credential for one platform).
public struct PlatformApplicationRecord: Sendable, Equatable {
    public let key: Int64
    public let accountKey: Int64
    public let name: String
    /// SNS's platform name: APNS, APNS_SANDBOX, GCM or ADM.
    public let platform: String
    /// Every attribute except the credential pair (events, feedback roles, team/bundle ids, ...).
    public let attributes: [String: String]
    public let enabled: Bool
    public let disabledReason: String?
    public let disabledAt: Date?
    public let createdAt: Date
    public let updatedAt: Date
    /// The SNS region the application lives in (its ARN's); its endpoints live there too.
    public let region: String
}

/// `PlatformCredential` / `PlatformPrincipal` in clear. Never logged, never returned by the API.
public struct PlatformCredentials: Sendable, Equatable {
    public var credential: String?
    public var principal: String?

    public init(credential: String? = nil, principal: String? = nil) {
        self.credential = credential
        self.principal = principal
    }
}

/// Platform applications. Credentials are sealed with the master key; the associated data is the row's key,
/// so a ciphertext copied onto another application's row does not open.
public struct PlatformApplicationRepository: Sendable {
    public let pool: PGPool
    private let masterKey: AESGCMKey

    public init(pool: PGPool, masterKey: AESGCMKey) {
        self.pool = pool
        self.masterKey = masterKey
    }

    static let columns = "id, account, name, platform, attributes::text, enabled, disabled_reason, disabled_at, created_at, updated_at, region"

    /// Creates the application in `region`, or, when the account already has one there with this platform and name, updates its
    /// attributes and replaces the credentials given (SNS answers a repeated create with the same ARN).
    /// Returns the record and whether it was created.
    public func createOrUpdate(accountKey: Int64, region: String, name: String, platform: String, credentials: PlatformCredentials,
                               attributes: [String: String]) async throws(StoreError) -> (PlatformApplicationRecord, created: Bool) {
        let key = masterKey
        return try await pool.transaction { (c) throws(StoreError) -> (PlatformApplicationRecord, created: Bool) in
            guard let row = try c.query("""
                INSERT INTO platform_applications (account, region, name, platform, attributes) VALUES ($1, $2, $3, $4, $5)
                ON CONFLICT ON CONSTRAINT platform_applications_name_key
                DO UPDATE SET attributes = platform_applications.attributes || EXCLUDED.attributes, updated_at = now()
                RETURNING \(Self.columns), (xmax = 0)
                """, [accountKey, region, name, platform, RepositoryJSON.encode(attributes)]).first else {
                throw StoreError(.invalidData, "INSERT returned no row")
            }
            let record = try Self.record(row)
            let created = row.bool(11) ?? false
            var merged = created ? PlatformCredentials() : try Self.openCredentials(c, applicationKey: record.key, masterKey: key)
            if let credential = credentials.credential { merged.credential = credential }
            if let principal = credentials.principal { merged.principal = principal }
            try Self.sealCredentials(c, merged, applicationKey: record.key, masterKey: key)
            return (record, created)
        }
    }

    /// The account's application in `region` by platform and name; `.notFound` when missing (also when it exists in
    /// another region).
    public func get(accountKey: Int64, region: String, platform: String, name: String) async throws(StoreError) -> PlatformApplicationRecord {
        try await pool.withConnection { (c) throws(StoreError) -> PlatformApplicationRecord in
            guard let row = try c.query("""
                SELECT \(Self.columns) FROM platform_applications WHERE account = $1 AND region = $2 AND platform = $3 AND name = $4
                """, [accountKey, region, platform, name]).first else {
                throw StoreError(.notFound, "no platform application \(platform)/\(name)")
            }
            return try Self.record(row)
        }
    }

    public func get(key: Int64) async throws(StoreError) -> PlatformApplicationRecord {
        try await pool.withConnection { (c) throws(StoreError) -> PlatformApplicationRecord in
            guard let row = try c.query("SELECT \(Self.columns) FROM platform_applications WHERE id = $1", [key]).first else {
                throw StoreError(.notFound, "no platform application \(key)")
            }
            return try Self.record(row)
        }
    }

    /// The credentials in clear (for the dispatcher's provider clients). `.invalidData` when they do not open
    /// with this master key.
    public func credentials(applicationKey: Int64) async throws(StoreError) -> PlatformCredentials {
        let key = masterKey
        return try await pool.withConnection { (c) throws(StoreError) -> PlatformCredentials in
            try Self.openCredentials(c, applicationKey: applicationKey, masterKey: key)
        }
    }

    /// Merges attributes, replaces the credentials given, and enables or disables (with a reason).
    public func update(applicationKey: Int64, attributes: [String: String] = [:], credentials: PlatformCredentials = PlatformCredentials(),
                       enabled: Bool? = nil, disabledReason: String? = nil) async throws(StoreError) -> PlatformApplicationRecord {
        let key = masterKey
        return try await pool.transaction { (c) throws(StoreError) -> PlatformApplicationRecord in
            guard let row = try c.query("""
                UPDATE platform_applications SET
                    attributes = attributes || $2,
                    enabled = coalesce($3, enabled),
                    disabled_reason = CASE WHEN $3 IS NULL THEN disabled_reason WHEN $3 THEN NULL ELSE $4 END,
                    disabled_at = CASE WHEN $3 IS NULL THEN disabled_at WHEN $3 THEN NULL
                                       ELSE coalesce(disabled_at, now()) END,
                    updated_at = now()
                WHERE id = $1
                RETURNING \(Self.columns)
                """, [applicationKey, RepositoryJSON.encode(attributes), enabled, disabledReason]).first else {
                throw StoreError(.notFound, "no platform application \(applicationKey)")
            }
            if credentials.credential != nil || credentials.principal != nil {
                var merged = try Self.openCredentials(c, applicationKey: applicationKey, masterKey: key)
                if let credential = credentials.credential { merged.credential = credential }
                if let principal = credentials.principal { merged.principal = principal }
                try Self.sealCredentials(c, merged, applicationKey: applicationKey, masterKey: key)
            }
            return try Self.record(row)
        }
    }

    /// Deletes the application and (by cascade) its endpoints and their subscriptions. Returns false when
    /// there was nothing to delete.
    @discardableResult
    public func delete(applicationKey: Int64) async throws(StoreError) -> Bool {
        try await pool.withConnection { (c) throws(StoreError) -> Bool in
            try c.query("DELETE FROM platform_applications WHERE id = $1", [applicationKey]).affectedRows > 0
        }
    }

    /// The account's applications in `region`, in key order.
    public func list(accountKey: Int64, region: String, after: Int64? = nil,
                     limit: Int = 100) async throws(StoreError) -> Page<PlatformApplicationRecord> {
        try await pool.withConnection { (c) throws(StoreError) -> Page<PlatformApplicationRecord> in
            try c.page("SELECT \(Self.columns) FROM platform_applications WHERE account = $1 AND region = $2 AND id > $3 ORDER BY id LIMIT $4",
                       [accountKey, region, after ?? 0, limit + 1], limit: limit, key: \.key, Self.record)
        }
    }

    // MARK: Rows and sealing

    static func record(_ row: PGRow) throws(StoreError) -> PlatformApplicationRecord {
        PlatformApplicationRecord(key: try row.requireInt64(0), accountKey: try row.requireInt64(1), name: try row.requireString(2),
                                  platform: try row.requireString(3), attributes: RepositoryJSON.decode(row.string(4)),
                                  enabled: row.bool(5) ?? true, disabledReason: row.string(6), disabledAt: row.date(7),
                                  createdAt: try row.requireDate(8), updatedAt: try row.requireDate(9), region: try row.requireString(10))
    }

    /// The associated data binding a sealed credential to its row.
    static func associatedData(_ applicationKey: Int64) -> [UInt8] { Array("platform_application:\(applicationKey)".utf8) }

    static func sealCredentials(_ c: PGConnection, _ credentials: PlatformCredentials, applicationKey: Int64,
                                masterKey: AESGCMKey) throws(StoreError) {
        var object: [String: String] = [:]
        object["PlatformCredential"] = credentials.credential
        object["PlatformPrincipal"] = credentials.principal
        let plaintext = Array(PGJSON(object).text.utf8)
        let sealed = masterKey.seal(plaintext, associatedData: associatedData(applicationKey))
        try c.query("UPDATE platform_applications SET credentials_sealed = $2 WHERE id = $1", [applicationKey, PGBytes(sealed)])
    }

    static func openCredentials(_ c: PGConnection, applicationKey: Int64, masterKey: AESGCMKey) throws(StoreError) -> PlatformCredentials {
        guard let row = try c.query("SELECT credentials_sealed FROM platform_applications WHERE id = $1", [applicationKey]).first else {
            throw StoreError(.notFound, "no platform application \(applicationKey)")
        }
        guard let sealed = row.bytes(0) else { return PlatformCredentials() }
        let plaintext: [UInt8]
        do {
            plaintext = try masterKey.open(sealed, associatedData: associatedData(applicationKey))
        } catch {
            throw StoreError(.invalidData, "the credentials of platform application \(applicationKey) do not open with this master key")
        }
        let map = RepositoryJSON.decode(String(decoding: plaintext, as: UTF8.self))
        return PlatformCredentials(credential: map["PlatformCredential"], principal: map["PlatformPrincipal"])
    }
}
