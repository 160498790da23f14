import ClarionCore
import ClarionCrypto
import Foundation

/// A mobile app: one platform application per platform, the registration API's tokens, and the Firebase project
/// the event collector routes by.
public struct MobileAppRecord: Sendable, Equatable {
    public let key: Int64
    public let externalID: UUID
    public let accountKey: Int64
    public let name: String
    public let apnsApplication: Int64?
    public let fcmApplication: Int64?
    public let admApplication: Int64?
    public let firebaseProjectID: String?
    public let dryRunValidation: Bool
    /// Every event to the event collector must carry one of the app's API tokens (docs/security.md).
    public let eventsRequireAPIToken: Bool
    /// An event may move a device token bound to one `user_id` to another only with one of the app's API tokens.
    public let eventsRequireAPITokenForUserChange: Bool
    public let createdAt: Date
    /// At most so many campaign pushes per endpoint per rolling window (schema v22); nil: no cap.
    public var frequencyCap: FrequencyCap? = nil
    /// Quiet hours in each endpoint's local time (schema v22); nil: none.
    public var quietHours: QuietHours? = nil
    /// The quiet hours' zone for endpoints without one (when the campaign gives no fallback zone).
    public var quietTimeZone: String? = nil
    /// The WEBPUSH application the registration API's `WebPushSubscription` goes to (schema v24).
    public var webPushApplication: Int64? = nil
}

/// One line of the account's overview (`clarion apps list`): a platform application of a mobile app, a mobile app
/// without any, or a platform application that belongs to no mobile app (`mobileAppName` and `mobileAppID` nil).
public struct MobileAppListingRow: Sendable, Equatable {
    public let mobileAppName: String?
    public let mobileAppID: UUID?
    /// The platform application, nil for a mobile app that has none.
    public let platform: String?
    public let applicationName: String?
    public let enabled: Bool
    public let disabledReason: String?
    public let disabledAt: Date?

    public init(mobileAppName: String?, mobileAppID: UUID?, platform: String?, applicationName: String?, enabled: Bool,
                disabledReason: String?, disabledAt: Date?) {
        self.mobileAppName = mobileAppName
        self.mobileAppID = mobileAppID
        self.platform = platform
        self.applicationName = applicationName
        self.enabled = enabled
        self.disabledReason = disabledReason
        self.disabledAt = disabledAt
    }
}

/// What a new mobile app is made of.
public struct NewMobileApp: Sendable {
    public var name: String
    public var apnsApplication: Int64?
    public var fcmApplication: Int64?
    public var admApplication: Int64?
    public var webPushApplication: Int64?
    public var firebaseProjectID: String?
    public var dryRunValidation: Bool
    public var eventsRequireAPIToken: Bool
    public var eventsRequireAPITokenForUserChange: Bool

    public init(name: String, apnsApplication: Int64? = nil, fcmApplication: Int64? = nil, admApplication: Int64? = nil,
                firebaseProjectID: String? = nil, dryRunValidation: Bool = false, eventsRequireAPIToken: Bool = false,
                eventsRequireAPITokenForUserChange: Bool = true, webPushApplication: Int64? = nil) {
        self.name = name
        self.webPushApplication = webPushApplication
        self.apnsApplication = apnsApplication
        self.fcmApplication = fcmApplication
        self.admApplication = admApplication
        self.firebaseProjectID = firebaseProjectID
        self.dryRunValidation = dryRunValidation
        self.eventsRequireAPIToken = eventsRequireAPIToken
        self.eventsRequireAPITokenForUserChange = eventsRequireAPITokenForUserChange
    }
}

/// Settings of an existing mobile app to change; nil leaves a setting as it is.
public struct MobileAppChanges: Sendable {
    public var dryRunValidation: Bool?
    public var eventsRequireAPIToken: Bool?
    public var eventsRequireAPITokenForUserChange: Bool?
    /// `.some(nil)` removes the cap.
    public var frequencyCap: FrequencyCap??
    /// `.some(nil)` removes the quiet hours; the zone goes with them.
    public var quietHours: (hours: QuietHours, timeZone: String?)??

    public init(dryRunValidation: Bool? = nil, eventsRequireAPIToken: Bool? = nil, eventsRequireAPITokenForUserChange: Bool? = nil) {
        self.dryRunValidation = dryRunValidation
        self.eventsRequireAPIToken = eventsRequireAPIToken
        self.eventsRequireAPITokenForUserChange = eventsRequireAPITokenForUserChange
    }
}

/// A new registration API token: `token` is the only copy of the plaintext handed out.
public struct NewMobileAppToken: Sendable {
    public let id: Int64
    public let token: String
}

/// Mobile apps and their API tokens.
///
/// A token is compared by SHA-256 (the lookup is one indexed equality); it is also sealed with the master key,
/// because the webhook signature is an HMAC keyed by the token itself. The sealed copy's associated data is the
/// token row's hash, so it does not open when copied to another row.
public struct MobileAppRepository: Sendable {
    public let pool: PGPool
    private let masterKey: AESGCMKey

    public init(pool: PGPool, masterKey: AESGCMKey) {
        self.pool = pool
        self.masterKey = masterKey
    }

    static let columns = """
        m.id, m.external_id, m.account, m.name, m.apns_application, m.fcm_application, m.adm_application,
        m.firebase_project_id, m.dry_run_validation, m.created_at, m.events_require_api_token,
        m.events_require_api_token_for_user_change, m.frequency_cap_max, m.frequency_cap_window_seconds,
        m.quiet_start_minute, m.quiet_end_minute, m.quiet_time_zone, m.webpush_application
        """

    /// Creates the app. The platform applications must belong to the same account (`.notFound` otherwise); a
    /// second app of the same name is `.uniqueViolation` (constraint `mobile_apps_account_name_key`).
    public func create(accountKey: Int64, _ app: NewMobileApp, externalID: UUID = UUID()) async throws(StoreError) -> MobileAppRecord {
        try await pool.transaction { (c) throws(StoreError) -> MobileAppRecord in
            for application in [app.apnsApplication, app.fcmApplication, app.admApplication, app.webPushApplication].compactMap({ $0 }) {
                let owned = try c.query("SELECT 1 FROM platform_applications WHERE id = $1 AND account = $2", [application, accountKey])
                if owned.rowCount == 0 { throw StoreError(.notFound, "no platform application \(application) in this account") }
            }
            guard let row = try c.query("""
                WITH m AS (
                    INSERT INTO mobile_apps (external_id, account, name, apns_application, fcm_application, adm_application,
                                             firebase_project_id, dry_run_validation, events_require_api_token,
                                             events_require_api_token_for_user_change, webpush_application)
                    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING *)
                SELECT \(Self.columns) FROM m
                """, [externalID, accountKey, app.name, app.apnsApplication, app.fcmApplication, app.admApplication,
                      app.firebaseProjectID, app.dryRunValidation, app.eventsRequireAPIToken,
                      app.eventsRequireAPITokenForUserChange, app.webPushApplication]).first else {
                throw StoreError(.invalidData, "INSERT returned no row")
            }
            return try Self.record(row)
        }
    }

    /// The account's app by external id; `.notFound` when missing.
    public func get(externalID: UUID, accountKey: Int64) async throws(StoreError) -> MobileAppRecord {
        try await pool.withConnection { (c) throws(StoreError) -> MobileAppRecord in
            guard let row = try c.query("SELECT \(Self.columns) FROM mobile_apps m WHERE m.external_id = $1 AND m.account = $2",
                                        [externalID, accountKey]).first else {
                throw StoreError(.notFound, "no mobile app \(externalID)")
            }
            return try Self.record(row)
        }
    }

    /// Changes the account's app's settings and returns it; `.notFound` when missing.
    public func update(externalID: UUID, accountKey: Int64, _ changes: MobileAppChanges) async throws(StoreError) -> MobileAppRecord {
        try await pool.withConnection { (c) throws(StoreError) -> MobileAppRecord in
            guard let row = try c.query("""
                WITH m AS (
                    UPDATE mobile_apps SET dry_run_validation = coalesce($3, dry_run_validation),
                        events_require_api_token = coalesce($4, events_require_api_token),
                        events_require_api_token_for_user_change = coalesce($5, events_require_api_token_for_user_change),
                        frequency_cap_max = CASE WHEN $6 THEN $7 ELSE frequency_cap_max END,
                        frequency_cap_window_seconds = CASE WHEN $6 THEN $8 ELSE frequency_cap_window_seconds END,
                        quiet_start_minute = CASE WHEN $9 THEN $10 ELSE quiet_start_minute END,
                        quiet_end_minute = CASE WHEN $9 THEN $11 ELSE quiet_end_minute END,
                        quiet_time_zone = CASE WHEN $9 THEN $12 ELSE quiet_time_zone END
                    WHERE external_id = $1 AND account = $2 RETURNING *)
                SELECT \(Self.columns) FROM m
                """, [externalID, accountKey, changes.dryRunValidation, changes.eventsRequireAPIToken,
                      changes.eventsRequireAPITokenForUserChange, changes.frequencyCap != nil,
                      (changes.frequencyCap ?? nil)?.max, (changes.frequencyCap ?? nil)?.windowSeconds,
                      changes.quietHours != nil, (changes.quietHours ?? nil)?.hours.start.minutes,
                      (changes.quietHours ?? nil)?.hours.end.minutes, (changes.quietHours ?? nil)?.timeZone]).first else {
                throw StoreError(.notFound, "no mobile app \(externalID)")
            }
            return try Self.record(row)
        }
    }

    /// Apps whose Firebase project id is `projectID`, oldest first.
    public func find(firebaseProjectID projectID: String) async throws(StoreError) -> [MobileAppRecord] {
        try await pool.withConnection { (c) throws(StoreError) -> [MobileAppRecord] in
            var out: [MobileAppRecord] = []
            for row in try c.query("SELECT \(Self.columns) FROM mobile_apps m WHERE m.firebase_project_id = $1 ORDER BY m.id",
                                   [projectID]).rows {
                out.append(try Self.record(row))
            }
            return out
        }
    }

    /// The account's mobile apps with their platform applications (APNs, FCM, ADM, Web Push order), then the platform
    /// applications no mobile app uses, each with its enabled state and why it is disabled. Mobile apps by name,
    /// loose applications by platform and name.
    public func listing(accountKey: Int64) async throws(StoreError) -> [MobileAppListingRow] {
        try await pool.withConnection { (c) throws(StoreError) -> [MobileAppListingRow] in
            let result = try c.query("""
                SELECT m.name, m.external_id, a.platform, a.name, coalesce(a.enabled, true), a.disabled_reason, a.disabled_at, 0, s.n
                FROM mobile_apps m
                CROSS JOIN LATERAL (VALUES (1, m.apns_application), (2, m.fcm_application), (3, m.adm_application),
                                           (4, m.webpush_application)) AS s(n, app)
                LEFT JOIN platform_applications a ON a.id = s.app
                WHERE m.account = $1
                  AND (s.app IS NOT NULL OR (s.n = 1 AND num_nonnulls(m.apns_application, m.fcm_application, m.adm_application,
                                                                      m.webpush_application) = 0))
                UNION ALL
                SELECT NULL, NULL, a.platform, a.name, a.enabled, a.disabled_reason, a.disabled_at, 1, 0
                FROM platform_applications a
                WHERE a.account = $1 AND NOT EXISTS (
                    SELECT 1 FROM mobile_apps m WHERE m.account = a.account
                      AND a.id IN (m.apns_application, m.fcm_application, m.adm_application, m.webpush_application))
                ORDER BY 8, 1, 9, 3, 4
                """, [accountKey])
            var rows: [MobileAppListingRow] = []
            for row in result.rows {
                rows.append(MobileAppListingRow(
                    mobileAppName: row.string(0), mobileAppID: row.uuid(1), platform: row.string(2), applicationName: row.string(3),
                    enabled: row.bool(4) ?? true, disabledReason: row.string(5), disabledAt: row.date(6)))
            }
            return rows
        }
    }

    /// Creates an API token `cmt_<43 base64url characters>` for the app; the plaintext is returned once.
    public func createToken(appKey: Int64) async throws(StoreError) -> NewMobileAppToken {
        let plaintext = "cmt_" + Base64URL.encode(SecureRandom.bytes(32))
        let hash = Digest.sha256(plaintext)
        let sealed = masterKey.seal(Array(plaintext.utf8), associatedData: Self.associatedData(hash))
        let id = try await pool.withConnection { (c) throws(StoreError) -> Int64 in
            guard let row = try c.query("""
                INSERT INTO mobile_app_tokens (mobile_app, token_hash, token_sealed) VALUES ($1, $2, $3) RETURNING id
                """, [appKey, PGBytes(hash), PGBytes(sealed)]).first else {
                throw StoreError(.invalidData, "INSERT returned no row")
            }
            return try row.requireInt64(0)
        }
        return NewMobileAppToken(id: id, token: plaintext)
    }

    /// Revokes a token of the app; `.notFound` when the app has no such token.
    public func revokeToken(id: Int64, appKey: Int64) async throws(StoreError) {
        try await pool.withConnection { (c) throws(StoreError) in
            let result = try c.query("""
                UPDATE mobile_app_tokens SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1 AND mobile_app = $2
                """, [id, appKey])
            if result.affectedRows == 0 { throw StoreError(.notFound, "no token \(id)") }
        }
    }

    /// Opens a token's sealed copy (the webhook signature's key). nil when it does not open with this master key.
    func openToken(sealed: [UInt8], hash: [UInt8]) -> String? {
        guard let plain = try? masterKey.open(sealed, associatedData: Self.associatedData(hash)) else { return nil }
        return String(decoding: plain, as: UTF8.self)
    }

    static func associatedData(_ hash: [UInt8]) -> [UInt8] { Array("mobile_app_token:".utf8) + hash }

    static func record(_ row: PGRow) throws(StoreError) -> MobileAppRecord {
        guard let id = row.uuid(1) else { throw StoreError(.invalidData, "mobile app without external id") }
        var record = MobileAppRecord(key: try row.requireInt64(0), externalID: id, accountKey: try row.requireInt64(2),
                               name: try row.requireString(3), apnsApplication: row.int64(4), fcmApplication: row.int64(5),
                               admApplication: row.int64(6), firebaseProjectID: row.string(7),
                               dryRunValidation: row.bool(8) ?? false, eventsRequireAPIToken: row.bool(10) ?? false,
                               eventsRequireAPITokenForUserChange: row.bool(11) ?? true, createdAt: try row.requireDate(9))
        if let max = row.int(12), let window = row.int(13) { record.frequencyCap = FrequencyCap(max: max, windowSeconds: window) }
        if let start = row.int(14).flatMap(LocalClockTime.init(minutes:)), let end = row.int(15).flatMap(LocalClockTime.init(minutes:)) {
            record.quietHours = QuietHours(start: start, end: end)
            record.quietTimeZone = row.string(16)
        }
        record.webPushApplication = row.int64(17)
        return record
    }
}
