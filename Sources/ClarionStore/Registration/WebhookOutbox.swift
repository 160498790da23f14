import ClarionCrypto
import Foundation

/// A queued webhook, claimed for its one attempt.
public struct OutboxWebhook: Sendable, Equatable {
    public let id: Int64
    public let url: String
    public let headers: [String: String]
    public let body: String
    /// The key of the attempt's `x-clarion-signature` (the mobile app's API token, opened from its sealed copy);
    /// nil when the token row is gone or the outbox was made without the master key. Never logged.
    public let signingKey: String?

    public init(id: Int64, url: String, headers: [String: String], body: String, signingKey: String? = nil) {
        self.id = id
        self.url = url
        self.headers = headers
        self.body = body
        self.signingKey = signingKey
    }
}

/// Outbound webhooks (`webhook_outbox`): written in the transaction that decides them, sent by a background
/// owner, never from a request. Each row gets one attempt: a claim takes it under a lease, and the row ends
/// `sent` or `failed` with the reason. A sender that dies mid-attempt leaves the row to be claimed again when the
/// lease runs out (at most one more attempt, the price of not losing it).
public struct WebhookOutbox: Sendable {
    /// Notified when a webhook is queued, so an idle sender wakes at once.
    public static let channel = "clarion_webhooks"

    public let pool: PGPool
    /// Opens signing keys; without it (readers of rows only) claims carry none.
    private let tokens: MobileAppRepository?

    public init(pool: PGPool, masterKey: AESGCMKey? = nil) {
        self.pool = pool
        self.tokens = masterKey.map { MobileAppRepository(pool: pool, masterKey: $0) }
    }

    /// Blocking form for the sender's own thread (never the cooperative pool).
    public func claimBlocking(limit: Int, leaseSeconds: Double) throws(StoreError) -> [OutboxWebhook] {
        let rows = try pool.withConnectionBlocking { (c) throws(StoreError) -> [ClaimedRow] in
            try Self.claim(c, limit: limit, leaseSeconds: leaseSeconds)
        }
        return rows.map { row in
            var key: String?
            if let tokens, let sealed = row.sealed, let hash = row.hash { key = tokens.openToken(sealed: sealed, hash: hash) }
            return OutboxWebhook(id: row.id, url: row.url, headers: row.headers, body: row.body, signingKey: key)
        }
    }

    /// Blocking form: records the attempt's result.
    public func finishBlocking(id: Int64, sent: Bool, error: String?) throws(StoreError) {
        try pool.withConnectionBlocking { (c) throws(StoreError) in
            _ = try c.query("""
                UPDATE webhook_outbox SET state = $2, attempts = attempts + 1, last_error = $3, lease_expires_at = NULL,
                    sent_at = CASE WHEN $2 = 'sent' THEN now() END
                WHERE id = $1
                """, [id, sent ? "sent" : "failed", error])
        }
    }

    struct ClaimedRow: Sendable {
        let id: Int64
        let url: String
        let headers: [String: String]
        let body: String
        let hash: [UInt8]?
        let sealed: [UInt8]?
    }

    static func claim(_ c: PGConnection, limit: Int, leaseSeconds: Double) throws(StoreError) -> [ClaimedRow] {
        let result = try c.query("""
            WITH c AS (
                SELECT id FROM webhook_outbox
                WHERE state = 'pending' AND (lease_expires_at IS NULL OR lease_expires_at < now())
                ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED)
            UPDATE webhook_outbox w SET lease_expires_at = now() + make_interval(secs => $2)
            FROM c WHERE w.id = c.id
            RETURNING w.id, w.url, w.headers::text, w.body,
                (SELECT t.token_hash FROM mobile_app_tokens t WHERE t.id = w.signing_token),
                (SELECT t.token_sealed FROM mobile_app_tokens t WHERE t.id = w.signing_token)
            """, [limit, leaseSeconds])
        var out: [ClaimedRow] = []
        for row in result.rows {
            out.append(ClaimedRow(id: try row.requireInt64(0), url: try row.requireString(1),
                                  headers: RepositoryJSON.decode(row.string(2)), body: try row.requireString(3),
                                  hash: row.bytes(4), sealed: row.bytes(5)))
        }
        return out.sorted { $0.id < $1.id }
    }

    /// A row's state and last error, for tests and operators.
    public func state(id: Int64) async throws(StoreError) -> (state: String, lastError: String?)? {
        try await pool.withConnection { (c) throws(StoreError) -> (state: String, lastError: String?)? in
            guard let row = try c.query("SELECT state, last_error FROM webhook_outbox WHERE id = $1", [id]).first else { return nil }
            return (row.string(0) ?? "", row.string(1))
        }
    }

    /// Every row (id, url, state, last error) in id order: for tests and `clarion` diagnostics.
    public func all() async throws(StoreError) -> [(id: Int64, url: String, state: String, lastError: String?)] {
        try await pool.withConnection { (c) throws(StoreError) -> [(id: Int64, url: String, state: String, lastError: String?)] in
            try c.query("SELECT id, url, state, last_error FROM webhook_outbox ORDER BY id").rows.map {
                (id: $0.int64(0) ?? 0, url: $0.string(1) ?? "", state: $0.string(2) ?? "", lastError: $0.string(3))
            }
        }
    }
}
