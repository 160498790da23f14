import ClarionCore
import ClarionCrypto
import Foundation

/// The platform a registration names: `ApnsDeviceToken`, `FcmDeviceToken` or `WebPushSubscription`.
public enum RegistrationPlatform: String, Sendable, Hashable {
    case apns = "APNS"
    case fcm = "FCM"
    case webPush = "WEBPUSH"
}

/// A mobile app and the live API token a request presented.
public struct RegistrationCaller: Sendable, Equatable {
    public let appKey: Int64
    public let appExternalID: UUID
    public let tokenID: Int64
}

/// One accepted registration, stored Pending until the processor takes it.
public struct NewRegistrationRequest: Sendable {
    public var id: UUID
    public var userID: String
    public var platform: RegistrationPlatform
    public var deviceToken: String
    public var callbackURL: String?
    public var callbackHeaders: [String: String]
    /// `TimeZone`: the device's IANA zone (schema v22), the endpoint's `TimeZone` attribute; nil leaves it.
    public var timeZone: String? = nil

    public init(id: UUID, userID: String, platform: RegistrationPlatform, deviceToken: String, callbackURL: String? = nil,
                callbackHeaders: [String: String] = [:]) {
        self.id = id
        self.userID = userID
        self.platform = platform
        self.deviceToken = deviceToken
        self.callbackURL = callbackURL
        self.callbackHeaders = callbackHeaders
    }
}

/// `registration_requests.status`.
public enum RegistrationStatus: String, Sendable, Hashable {
    case pending = "Pending"
    case success = "Success"
    case failed = "Failed"
}

/// Why a registration failed (the registration API's `FailureReason`).
public enum RegistrationFailure: String, Sendable, Hashable {
    case deviceTokenTooLong = "DeviceTokenTooLong"
    case duplicateExists = "DuplicateExists"
    case dryRunSendingFailed = "DryRunSendingFailed"
    case failedToStoreDevice = "FailedToStoreDevice"
    case apiTokenNotValid = "ApiTokenNotValid"
}

public struct RegistrationState: Sendable, Hashable {
    public let status: RegistrationStatus
    public let failureReason: String?

    public static let pending = RegistrationState(status: .pending, failureReason: nil)
}

/// A pending registration claimed by a processor, with what processing it needs: the app's platform
/// applications, whether the token is still valid, and the token itself (opened) for the webhook signature.
public struct ClaimedRegistration: Sendable {
    public let id: UUID
    public let appKey: Int64
    public let accountKey: Int64
    public let apnsApplication: Int64?
    public let fcmApplication: Int64?
    public let webPushApplication: Int64?
    public let dryRunValidation: Bool
    public let userID: String
    public let platform: RegistrationPlatform?
    public let deviceToken: String
    /// False when the token was revoked or deleted after the request was accepted.
    public let tokenValid: Bool
    /// The API token in clear, when it can be opened (the webhook's HMAC key). Never logged.
    public let apiToken: String?
    /// The token's row, nil when it was deleted: the webhook's `x-clarion-signature` is keyed by it at send time.
    public let tokenID: Int64?
    public let callbackURL: String?
    public let callbackHeaders: [String: String]
    public let attempts: Int
    /// The request's `TimeZone` (schema v22), written to the endpoint's `TimeZone` attribute.
    public let timeZone: String?
}

/// A webhook to queue with a registration's final state, in the same transaction.
public struct WebhookEnvelope: Sendable, Equatable {
    public var url: String
    public var headers: [String: String]
    public var body: String
    /// The API token (`mobile_app_tokens.id`) whose sealed copy keys the signature header of each attempt.
    public var signingTokenID: Int64?

    public init(url: String, headers: [String: String], body: String, signingTokenID: Int64? = nil) {
        self.url = url
        self.headers = headers
        self.body = body
        self.signingTokenID = signingTokenID
    }
}

/// Registration requests: stored when accepted, claimed under a lease by a processor (so a processor that dies
/// leaves them to another after the lease), finished with their webhook queued in the same transaction.
public struct RegistrationRepository: Sendable {
    public let pool: PGPool
    private let apps: MobileAppRepository

    public init(pool: PGPool, masterKey: AESGCMKey) {
        self.pool = pool
        self.apps = MobileAppRepository(pool: pool, masterKey: masterKey)
    }

    /// The app and token when `apiToken` is a live token of the app `appExternalID` of account `accountID`; nil
    /// otherwise (unknown account, app or token, or a revoked token). Compares hashes only.
    public func authenticate(accountID: String, appExternalID: UUID, apiToken: String) async throws(StoreError) -> RegistrationCaller? {
        try await caller(apiToken: apiToken, where: "m.external_id = $2 AND a.account_id = $3", [appExternalID, accountID])
    }

    /// The same check for an app already found by its key (the event collector finds it by Firebase project).
    public func authenticate(appKey: Int64, apiToken: String) async throws(StoreError) -> RegistrationCaller? {
        try await caller(apiToken: apiToken, where: "m.id = $2", [appKey])
    }

    /// A live (not revoked) token of the app the condition selects, compared by hash; `$1` is the hash.
    private func caller(apiToken: String, where condition: String, _ parameters: [any PGEncodable]) async throws(StoreError) -> RegistrationCaller? {
        let hash = PGBytes(Digest.sha256(apiToken))
        return try await pool.withConnection { (c) throws(StoreError) -> RegistrationCaller? in
            guard let row = try c.query("""
                SELECT m.id, m.external_id, t.id FROM mobile_app_tokens t
                JOIN mobile_apps m ON m.id = t.mobile_app JOIN accounts a ON a.id = m.account
                WHERE t.token_hash = $1 AND t.revoked_at IS NULL AND \(condition)
                """, [hash] + parameters).first, let external = row.uuid(1) else { return nil }
            return RegistrationCaller(appKey: try row.requireInt64(0), appExternalID: external, tokenID: try row.requireInt64(2))
        }
    }

    /// Stores accepted requests (one statement) as Pending.
    public func enqueue(_ requests: [NewRegistrationRequest], caller: RegistrationCaller) async throws(StoreError) {
        guard !requests.isEmpty else { return }
        var ids: [String?] = [], bodies: [String?] = [], urls: [String?] = [], headers: [String?] = []
        for request in requests {
            ids.append(request.id.lowercasedText)
            var body = ["userId": request.userID, "platform": request.platform.rawValue, "token": request.deviceToken]
            if let zone = request.timeZone { body["timeZone"] = zone }
            bodies.append(PGJSON(body).text)
            urls.append(request.callbackURL)
            headers.append(request.callbackURL == nil ? nil : PGJSON(request.callbackHeaders).text)
        }
        let parameters: [any PGEncodable] = [caller.appKey, caller.tokenID, PGArrayParameter(ids), PGArrayParameter(bodies),
                                             PGArrayParameter(urls), PGArrayParameter(headers)]
        try await pool.withConnection { (c) throws(StoreError) in
            _ = try c.query("""
                INSERT INTO registration_requests (id, mobile_app, token_id, request, callback_url, callback_headers)
                SELECT i, $1, $2, r, u, h FROM unnest($3::uuid[], $4::jsonb[], $5::text[], $6::jsonb[]) AS t(i, r, u, h)
                """, parameters)
        }
    }

    /// The state of each id, in the order given. An id that was never stored for this app, or a token that is
    /// not one of the app's (revoked ones included: they may read what they submitted), reads Pending, so an
    /// unauthenticated caller learns nothing.
    public func states(ids: [UUID], accountID: String, appExternalID: UUID, apiToken: String) async throws(StoreError) -> [RegistrationState] {
        guard !ids.isEmpty else { return [] }
        let hash = PGBytes(Digest.sha256(apiToken))
        let list = PGArrayParameter(ids.map { $0.lowercasedText })
        let found = try await pool.withConnection { (c) throws(StoreError) -> [UUID: RegistrationState] in
            var out: [UUID: RegistrationState] = [:]
            for row in try c.query("""
                SELECT r.id, r.status, r.failure_reason FROM registration_requests r
                JOIN mobile_apps m ON m.id = r.mobile_app JOIN accounts a ON a.id = m.account
                WHERE r.id = ANY($1::uuid[]) AND m.external_id = $2 AND a.account_id = $3
                  AND EXISTS (SELECT 1 FROM mobile_app_tokens t WHERE t.mobile_app = m.id AND t.token_hash = $4)
                """, [list, appExternalID, accountID, hash]).rows {
                guard let id = row.uuid(0), let status = RegistrationStatus(rawValue: row.string(1) ?? "") else { continue }
                out[id] = RegistrationState(status: status, failureReason: row.string(2))
            }
            return out
        }
        return ids.map { found[$0] ?? .pending }
    }

    /// Claims up to `limit` pending requests whose lease is free or expired, oldest first.
    public func claimPending(limit: Int, leaseSeconds: Double) async throws(StoreError) -> [ClaimedRegistration] {
        let rows = try await pool.transaction { (c) throws(StoreError) -> [ClaimedRow] in
            let result = try c.query("""
                WITH c AS (
                    SELECT id FROM registration_requests
                    WHERE status = 'Pending' AND (lease_expires_at IS NULL OR lease_expires_at < now())
                    ORDER BY created_at LIMIT $1 FOR UPDATE SKIP LOCKED)
                UPDATE registration_requests r SET lease_expires_at = now() + make_interval(secs => $2), attempts = r.attempts + 1
                FROM c WHERE r.id = c.id
                RETURNING r.id
                """, [limit, leaseSeconds])
            let ids = result.rows.compactMap { $0.uuid(0)?.lowercasedText }
            guard !ids.isEmpty else { return [] }
            var out: [ClaimedRow] = []
            for row in try c.query("""
                SELECT r.id, m.id, m.account, m.apns_application, m.fcm_application, m.dry_run_validation,
                       r.request->>'userId', r.request->>'platform', r.request->>'token',
                       t.id IS NOT NULL AND t.revoked_at IS NULL, t.token_hash, t.token_sealed,
                       r.callback_url, r.callback_headers::text, r.attempts, t.id, r.request->>'timeZone', m.webpush_application
                FROM registration_requests r JOIN mobile_apps m ON m.id = r.mobile_app
                LEFT JOIN mobile_app_tokens t ON t.id = r.token_id
                WHERE r.id = ANY($1::uuid[]) ORDER BY r.created_at
                """, [PGArrayParameter(ids)]).rows {
                guard let id = row.uuid(0) else { continue }
                out.append(ClaimedRow(
                    id: id, appKey: try row.requireInt64(1), accountKey: try row.requireInt64(2), apns: row.int64(3),
                    fcm: row.int64(4), dryRun: row.bool(5) ?? false, userID: row.string(6) ?? "",
                    platform: RegistrationPlatform(rawValue: row.string(7) ?? ""), token: row.string(8) ?? "",
                    tokenValid: row.bool(9) ?? false, hash: row.bytes(10), sealed: row.bytes(11), url: row.string(12),
                    headers: RepositoryJSON.decode(row.string(13)), attempts: row.int(14) ?? 1, tokenID: row.int64(15),
                    timeZone: row.string(16), webPush: row.int64(17)))
            }
            return out
        }
        return rows.map { row in
            var apiToken: String?
            if let sealed = row.sealed, let hash = row.hash { apiToken = apps.openToken(sealed: sealed, hash: hash) }
            return ClaimedRegistration(
                id: row.id, appKey: row.appKey, accountKey: row.accountKey, apnsApplication: row.apns, fcmApplication: row.fcm,
                webPushApplication: row.webPush, dryRunValidation: row.dryRun, userID: row.userID, platform: row.platform, deviceToken: row.token,
                tokenValid: row.tokenValid, apiToken: apiToken, tokenID: row.tokenID, callbackURL: row.url, callbackHeaders: row.headers,
                attempts: row.attempts, timeZone: row.timeZone)
        }
    }

    private struct ClaimedRow: Sendable {
        let id: UUID
        let appKey: Int64
        let accountKey: Int64
        let apns: Int64?
        let fcm: Int64?
        let dryRun: Bool
        let userID: String
        let platform: RegistrationPlatform?
        let token: String
        let tokenValid: Bool
        let hash: [UInt8]?
        let sealed: [UInt8]?
        let url: String?
        let headers: [String: String]
        let attempts: Int
        let tokenID: Int64?
        let timeZone: String?
        let webPush: Int64?
    }

    /// Records the final state and queues the webhook, in one transaction. Returns false when the request was no
    /// longer Pending (another processor finished it after this one's lease ran out): nothing is written then.
    @discardableResult
    public func finish(_ id: UUID, status: RegistrationStatus, failure: RegistrationFailure?,
                       webhook: WebhookEnvelope?) async throws(StoreError) -> Bool {
        try await pool.transaction { (c) throws(StoreError) -> Bool in
            let updated = try c.query("""
                UPDATE registration_requests SET status = $2, failure_reason = $3, processed_at = now(), lease_expires_at = NULL
                WHERE id = $1 AND status = 'Pending'
                """, [id, status.rawValue, failure?.rawValue])
            guard updated.affectedRows == 1 else { return false }
            if let webhook {
                try c.query("INSERT INTO webhook_outbox (url, headers, body, signing_token) VALUES ($1, $2, $3, $4)",
                            [webhook.url, PGJSON(webhook.headers), webhook.body, webhook.signingTokenID])
                try c.query("SELECT pg_notify($1, '')", [WebhookOutbox.channel])
            }
            return true
        }
    }

    /// Gives a claimed request back at once (a transient store failure while processing it).
    public func release(_ id: UUID) async throws(StoreError) {
        try await pool.withConnection { (c) throws(StoreError) in
            _ = try c.query("UPDATE registration_requests SET lease_expires_at = NULL WHERE id = $1 AND status = 'Pending'", [id])
        }
    }

    /// Deletes the user's endpoints in the app's platform applications (only the one with `deviceToken` when
    /// given), with their subscriptions. Returns how many were removed.
    @discardableResult
    public func cleanup(appKey: Int64, userID: String, deviceToken: String?) async throws(StoreError) -> Int {
        try await pool.withConnection { (c) throws(StoreError) -> Int in
            try c.query("""
                DELETE FROM endpoints e USING mobile_apps m
                WHERE m.id = $1 AND e.application IN (m.apns_application, m.fcm_application, m.adm_application, m.webpush_application)
                  AND e.user_id = $2 AND ($3::text IS NULL OR e.token = $3)
                """, [appKey, userID, deviceToken]).affectedRows
        }
    }
}
