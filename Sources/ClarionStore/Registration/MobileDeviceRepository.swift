import Foundation

/// What a device told the event collector about itself.
public struct MobileDeviceReport: Sendable, Equatable {
    public var userID: String
    public var token: String
    public var appVersion: String
    public var language: String?
    public var osType: String
    public var osVersion: String?
    public var manufacturer: String?
    public var model: String?
    /// When the token was (re)issued, as the device says; never later than the store's clock.
    public var refreshedAt: Date
    /// The device's IANA time zone (`app.time_zone`, schema v22): written to the endpoint's `TimeZone` attribute;
    /// nil keeps what the endpoint has.
    public var timeZone: String? = nil

    public init(userID: String, token: String, appVersion: String, language: String? = nil, osType: String,
                osVersion: String? = nil, manufacturer: String? = nil, model: String? = nil, refreshedAt: Date) {
        self.userID = userID
        self.token = token
        self.appVersion = appVersion
        self.language = language
        self.osType = osType
        self.osVersion = osVersion
        self.manufacturer = manufacturer
        self.model = model
        self.refreshedAt = refreshedAt
    }
}

/// What recording a device report did to the endpoints.
public enum MobileDeviceChange: Sendable, Equatable {
    /// A new endpoint.
    case created(endpointKey: Int64)
    /// The endpoint with this token was updated (its details and refresh time; its user was this one or none).
    case updated(endpointKey: Int64)
    /// The user's endpoint got the new token in place of its old one: same endpoint, same subscriptions.
    case tokenReplaced(endpointKey: Int64)
    /// The endpoint with this token belonged to `previousUserID` and now belongs to the report's user.
    case reassigned(endpointKey: Int64, previousUserID: String)
    /// The endpoint with this token belongs to `currentUserID`, and the report's user could not take it (the caller
    /// was not allowed to move tokens between users): nothing was written.
    case reassignmentRefused(endpointKey: Int64, currentUserID: String)

    public var endpointKey: Int64 {
        switch self {
        case .created(let k), .updated(let k), .tokenReplaced(let k), .reassigned(let k, _), .reassignmentRefused(let k, _): k
        }
    }
}

/// Devices as the mobile event collector reports them, kept on the same endpoints the SNS and native APIs see.
/// Creation and token changes go through `EndpointRepository` (one creation rule for every API); this adds the
/// device columns (app version, language, OS, model, refresh time).
public struct MobileDeviceRepository: Sendable {
    public let pool: PGPool
    private let endpoints: EndpointRepository

    public init(pool: PGPool) {
        self.pool = pool
        self.endpoints = EndpointRepository(pool: pool)
    }

    /// Records a registration or refresh of `report.token` for `report.userID` in the FCM application:
    /// - the application already has the token: that endpoint is updated (and enabled: the device says it works).
    ///   When it belongs to another `user_id`, it moves to this one only if `allowUserChange`
    ///   (`.reassigned`); otherwise nothing is written (`.reassignmentRefused`). An endpoint with no user is not
    ///   another user's;
    /// - otherwise, the user's endpoint for the same device (same manufacturer and model, when the report names
    ///   them; the most recently refreshed one otherwise) takes the new token in place of the old one, so its
    ///   subscriptions stay;
    /// - otherwise a new endpoint is created.
    public func record(applicationKey: Int64, _ report: MobileDeviceReport,
                       allowUserChange: Bool) async throws(StoreError) -> MobileDeviceChange {
        var attempt = 0
        while true {
            attempt += 1
            do {
                let change = try await apply(applicationKey: applicationKey, report, allowUserChange: allowUserChange)
                if case .reassignmentRefused = change { return change }
                try await writeDetails(change.endpointKey, report)
                return change
            } catch where (error.code == .uniqueViolation || error.code == .notFound) && attempt < 3 {
                // A concurrent report of the same token or user won a race: look again.
                continue
            }
        }
    }

    private func apply(applicationKey: Int64, _ report: MobileDeviceReport,
                       allowUserChange: Bool) async throws(StoreError) -> MobileDeviceChange {
        if let existing = try await endpoints.find(applicationKey: applicationKey, token: report.token) {
            let previous = existing.userID
            let moves = previous != nil && previous != report.userID
            if moves, !allowUserChange {
                return .reassignmentRefused(endpointKey: existing.key, currentUserID: previous ?? "")
            }
            try await takeEndpoint(existing.key, user: report.userID, expectedUser: previous)
            return moves ? .reassigned(endpointKey: existing.key, previousUserID: previous ?? "") : .updated(endpointKey: existing.key)
        }
        if let previous = try await previousDevice(applicationKey: applicationKey, report) {
            let updated = try await endpoints.update(externalID: previous, EndpointChanges(token: report.token, enabled: true))
            return .tokenReplaced(endpointKey: updated.key)
        }
        let creation = try await endpoints.create(
            NewEndpoint(applicationKey: applicationKey, token: report.token, userID: report.userID), externalID: UUID())
        switch creation {
        case .created(let record): return .created(endpointKey: record.key)
        case .existing(let record): return .updated(endpointKey: record.key)
        case .conflict:
            // Created a moment ago for another user: the next round updates it.
            throw StoreError(.uniqueViolation, "the token was registered concurrently", constraint: "endpoints_application_token_key")
        }
    }

    /// Gives the endpoint to `user` and enables it, provided its user is still `expectedUser` (what the decision to
    /// move it or not was based on); `.notFound` otherwise, so `record` looks again.
    private func takeEndpoint(_ endpointKey: Int64, user: String, expectedUser: String?) async throws(StoreError) {
        try await pool.withConnection { (c) throws(StoreError) in
            let result = try c.query("""
                UPDATE endpoints SET user_id = $2, enabled = true, disabled_reason = NULL, disabled_at = NULL, updated_at = now()
                WHERE id = $1 AND user_id IS NOT DISTINCT FROM $3
                """, [endpointKey, user, expectedUser])
            if result.affectedRows == 0 { throw StoreError(.notFound, "the endpoint changed user or was deleted meanwhile") }
        }
    }

    /// The user's endpoint of the same device in the application, if any.
    private func previousDevice(applicationKey: Int64, _ report: MobileDeviceReport) async throws(StoreError) -> UUID? {
        let sameDevice = report.manufacturer != nil || report.model != nil
        return try await pool.withConnection { (c) throws(StoreError) -> UUID? in
            try c.query("""
                SELECT external_id FROM endpoints
                WHERE application = $1 AND user_id = $2
                  AND (NOT $3 OR (device_manufacturer IS NOT DISTINCT FROM $4 AND device_model IS NOT DISTINCT FROM $5))
                ORDER BY coalesce(token_refreshed_at, updated_at) DESC, id DESC LIMIT 1
                """, [applicationKey, report.userID, sameDevice, report.manufacturer, report.model]).first?.uuid(0)
        }
    }

    private func writeDetails(_ endpointKey: Int64, _ report: MobileDeviceReport) async throws(StoreError) {
        try await pool.withConnection { (c) throws(StoreError) in
            _ = try c.query("""
                UPDATE endpoints SET app_version = $2, language = $3, os_type = $4, os_version = $5,
                    device_manufacturer = $6, device_model = $7, token_refreshed_at = least($8::timestamptz, now()),
                    attributes = CASE WHEN $9::text IS NULL THEN attributes ELSE attributes || jsonb_build_object('TimeZone', $9::text) END,
                    updated_at = now()
                WHERE id = $1
                """, [endpointKey, report.appVersion, report.language, report.osType, report.osVersion, report.manufacturer,
                      report.model, report.refreshedAt, report.timeZone])
        }
    }

    /// The device columns of an endpoint, for tests and reports.
    public func details(endpointKey: Int64) async throws(StoreError) -> MobileDeviceReport? {
        try await pool.withConnection { (c) throws(StoreError) -> MobileDeviceReport? in
            guard let row = try c.query("""
                SELECT user_id, token, app_version, language, os_type, os_version, device_manufacturer, device_model,
                       token_refreshed_at
                FROM endpoints WHERE id = $1
                """, [endpointKey]).first else { return nil }
            return MobileDeviceReport(userID: row.string(0) ?? "", token: row.string(1) ?? "", appVersion: row.string(2) ?? "",
                                      language: row.string(3), osType: row.string(4) ?? "", osVersion: row.string(5),
                                      manufacturer: row.string(6), model: row.string(7),
                                      refreshedAt: row.date(8) ?? Date(timeIntervalSince1970: 0))
        }
    }
}
