import ClarionCrypto
import Foundation

/// An account: the owner of every other resource, named by its 12-digit AWS-style account id.
public struct AccountRecord: Sendable, Equatable {
    /// Internal key (other tables reference it).
    public let key: Int64
    /// The 12-digit account id that appears in ARNs.
    public let accountID: String
    public let name: String
    public let createdAt: Date
}

/// A SigV4 key pair with its secret opened. Only ever held in memory, never logged.
public struct AccessKeyRecord: Sendable, Equatable {
    public let accessKeyID: String
    public let secretAccessKey: String
    public let accountKey: Int64
    public let accountID: String
    public let createdAt: Date
    public let disabled: Bool
}

/// A native-API key as stored: its hash stays in the database, only the prefix is shown.
public struct APIKeyRecord: Sendable, Equatable {
    public let id: Int64
    public let accountKey: Int64
    public let accountID: String
    /// The first characters of the key, enough to tell keys apart in a listing; not a secret.
    public let prefix: String
    public let name: String
    public let createdAt: Date
    public let revoked: Bool
}

/// A new API key. `key` is the only copy of the plaintext: the store keeps its SHA-256 hash.
public struct NewAPIKey: Sendable {
    public let record: APIKeyRecord
    public let key: String
}

/// Accounts, SigV4 access keys and native-API keys.
///
/// SigV4 needs the secret in clear to recompute signatures, so secrets are sealed with the master key
/// (AES-256-GCM; associated data = the access key id, so a sealed secret moved to another key's row does
/// not open). API keys are bearer secrets we never need back: only their SHA-256 is stored.
public struct AccountRepository: Sendable {
    public let pool: PGPool
    private let masterKey: AESGCMKey

    public init(pool: PGPool, masterKey: AESGCMKey) {
        self.pool = pool
        self.masterKey = masterKey
    }

    // MARK: Accounts

    /// Returns the account, creating it when missing. Safe to call concurrently and at every start.
    @discardableResult
    public func ensureAccount(accountID: String, name: String = "") async throws(StoreError) -> AccountRecord {
        try Self.checkAccountID(accountID)
        return try await pool.withConnection { (c) throws(StoreError) -> AccountRecord in
            // ON CONFLICT DO NOTHING returns no row for an existing account; the SELECT finds it then.
            let inserted = try c.query("""
                INSERT INTO accounts (account_id, name) VALUES ($1, $2)
                ON CONFLICT (account_id) DO NOTHING
                RETURNING id, account_id, name, created_at
                """, [accountID, name])
            if let row = inserted.first { return try Self.account(row) }
            guard let row = try c.query("SELECT id, account_id, name, created_at FROM accounts WHERE account_id = $1",
                                        [accountID]).first else {
                throw StoreError(.notFound, "account \(accountID) vanished while being ensured")
            }
            return try Self.account(row)
        }
    }

    /// The account, or `.notFound`.
    public func account(accountID: String) async throws(StoreError) -> AccountRecord {
        try await pool.withConnection { (c) throws(StoreError) -> AccountRecord in
            guard let row = try c.query("SELECT id, account_id, name, created_at FROM accounts WHERE account_id = $1",
                                        [accountID]).first else {
                throw StoreError(.notFound, "no account \(accountID)")
            }
            return try Self.account(row)
        }
    }

    // MARK: SigV4 access keys

    /// Makes sure `accessKeyID` exists for the account with this secret (creating the account too). A key
    /// configured at start wins over a stored one of the same account: the secret is replaced. A key id that
    /// belongs to another account is refused (`.uniqueViolation`, constraint `access_keys_pkey`).
    @discardableResult
    public func ensureAccessKey(accountID: String, accessKeyID: String, secret: String) async throws(StoreError) -> AccessKeyRecord {
        let account = try await ensureAccount(accountID: accountID)
        let sealed = PGBytes(masterKey.seal(Array(secret.utf8), associatedData: Array(accessKeyID.utf8)))
        let key = masterKey
        return try await pool.withConnection { (c) throws(StoreError) -> AccessKeyRecord in
            let row = try c.query("""
                INSERT INTO access_keys (access_key_id, account, secret_sealed) VALUES ($1, $2, $3)
                ON CONFLICT (access_key_id) DO UPDATE SET secret_sealed = EXCLUDED.secret_sealed, disabled_at = NULL
                    WHERE access_keys.account = EXCLUDED.account
                RETURNING access_key_id, secret_sealed, account, created_at, disabled_at IS NOT NULL
                """, [accessKeyID, account.key, sealed]).first
            guard let row else {
                throw StoreError(.uniqueViolation, "access key \(accessKeyID) belongs to another account",
                                 constraint: "access_keys_pkey")
            }
            return try Self.accessKey(row, accountID: accountID, masterKey: key)
        }
    }

    /// Generates a new key pair for the account (AWS-like shapes: a 20-character `AKIA…` id, a 40-character secret).
    public func createAccessKey(accountID: String) async throws(StoreError) -> AccessKeyRecord {
        let id = "AKIA" + Self.randomText(16, alphabet: Self.upperAlphanumerics)
        let secret = Self.randomText(40, alphabet: Self.base64Alphabet)
        return try await ensureAccessKey(accountID: accountID, accessKeyID: id, secret: secret)
    }

    /// The key with its secret opened; nil when the key is unknown or disabled.
    public func accessKey(accessKeyID: String) async throws(StoreError) -> AccessKeyRecord? {
        let key = masterKey
        return try await pool.withConnection { (c) throws(StoreError) -> AccessKeyRecord? in
            guard let row = try c.query("""
                SELECT k.access_key_id, k.secret_sealed, k.account, k.created_at, k.disabled_at IS NOT NULL, a.account_id
                FROM access_keys k JOIN accounts a ON a.id = k.account
                WHERE k.access_key_id = $1
                """, [accessKeyID]).first else { return nil }
            let record = try Self.accessKey(row, accountID: try row.requireString(5), masterKey: key)
            return record.disabled ? nil : record
        }
    }

    /// Disables a key (kept for audit). `.notFound` when there is no such key.
    public func disableAccessKey(accessKeyID: String) async throws(StoreError) {
        try await pool.withConnection { (c) throws(StoreError) in
            let result = try c.query("UPDATE access_keys SET disabled_at = coalesce(disabled_at, now()) WHERE access_key_id = $1",
                                     [accessKeyID])
            if result.affectedRows == 0 { throw StoreError(.notFound, "no access key \(accessKeyID)") }
        }
    }

    // MARK: Native-API keys

    /// Creates a bearer key `clk_<43 base64url characters>`; the plaintext is returned once and not stored.
    public func createAPIKey(accountID: String, name: String = "") async throws(StoreError) -> NewAPIKey {
        let account = try await ensureAccount(accountID: accountID)
        let plaintext = "clk_" + Base64URL.encode(SecureRandom.bytes(32))
        let prefix = String(plaintext.prefix(12))
        let hash = PGBytes(Digest.sha256(plaintext))
        let record = try await pool.withConnection { (c) throws(StoreError) -> APIKeyRecord in
            guard let row = try c.query("""
                INSERT INTO api_keys (account, key_hash, prefix, name) VALUES ($1, $2, $3, $4)
                RETURNING id, account, prefix, name, created_at, revoked_at IS NOT NULL
                """, [account.key, hash, prefix, name]).first else {
                throw StoreError(.invalidData, "INSERT returned no row")
            }
            return try Self.apiKey(row, accountID: accountID)
        }
        return NewAPIKey(record: record, key: plaintext)
    }

    /// The key's record when `key` is a live API key; nil for an unknown or revoked one. Compares hashes only.
    public func apiKey(matching key: String) async throws(StoreError) -> APIKeyRecord? {
        let hash = PGBytes(Digest.sha256(key))
        return try await pool.withConnection { (c) throws(StoreError) -> APIKeyRecord? in
            guard let row = try c.query("""
                SELECT k.id, k.account, k.prefix, k.name, k.created_at, k.revoked_at IS NOT NULL, a.account_id
                FROM api_keys k JOIN accounts a ON a.id = k.account
                WHERE k.key_hash = $1
                """, [hash]).first else { return nil }
            let record = try Self.apiKey(row, accountID: try row.requireString(6))
            return record.revoked ? nil : record
        }
    }

    /// The account's API keys (no secrets), oldest first.
    public func apiKeys(accountID: String) async throws(StoreError) -> [APIKeyRecord] {
        try await pool.withConnection { (c) throws(StoreError) -> [APIKeyRecord] in
            var out: [APIKeyRecord] = []
            for row in try c.query("""
                SELECT k.id, k.account, k.prefix, k.name, k.created_at, k.revoked_at IS NOT NULL
                FROM api_keys k JOIN accounts a ON a.id = k.account
                WHERE a.account_id = $1 ORDER BY k.id
                """, [accountID]).rows {
                out.append(try Self.apiKey(row, accountID: accountID))
            }
            return out
        }
    }

    /// Revokes a key; `.notFound` when the account has no key with this id.
    public func revokeAPIKey(id: Int64, accountID: String) async throws(StoreError) {
        try await pool.withConnection { (c) throws(StoreError) in
            let result = try c.query("""
                UPDATE api_keys k SET revoked_at = coalesce(k.revoked_at, now())
                FROM accounts a WHERE a.id = k.account AND a.account_id = $2 AND k.id = $1
                """, [id, accountID])
            if result.affectedRows == 0 { throw StoreError(.notFound, "no API key \(id)") }
        }
    }

    // MARK: Rows

    static func checkAccountID(_ accountID: String) throws(StoreError) {
        guard accountID.utf8.count == 12, accountID.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
            throw StoreError(.checkViolation, "an account id is 12 digits", constraint: "accounts_account_id_check")
        }
    }

    private static func account(_ row: PGRow) throws(StoreError) -> AccountRecord {
        AccountRecord(key: try row.requireInt64(0), accountID: try row.requireString(1), name: row.string(2) ?? "",
                      createdAt: try row.requireDate(3))
    }

    private static func accessKey(_ row: PGRow, accountID: String, masterKey: AESGCMKey) throws(StoreError) -> AccessKeyRecord {
        let id = try row.requireString(0)
        guard let sealed = row.bytes(1) else { throw StoreError(.invalidData, "access key \(id) has no sealed secret") }
        let secret: [UInt8]
        do {
            secret = try masterKey.open(sealed, associatedData: Array(id.utf8))
        } catch {
            throw StoreError(.invalidData, "the secret of access key \(id) does not open with this master key")
        }
        return AccessKeyRecord(accessKeyID: id, secretAccessKey: String(decoding: secret, as: UTF8.self),
                               accountKey: try row.requireInt64(2), accountID: accountID,
                               createdAt: try row.requireDate(3), disabled: row.bool(4) ?? false)
    }

    private static func apiKey(_ row: PGRow, accountID: String) throws(StoreError) -> APIKeyRecord {
        APIKeyRecord(id: try row.requireInt64(0), accountKey: try row.requireInt64(1), accountID: accountID,
                     prefix: try row.requireString(2), name: row.string(3) ?? "", createdAt: try row.requireDate(4),
                     revoked: row.bool(5) ?? false)
    }

    static let upperAlphanumerics = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".utf8)
    static let base64Alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// Uniform characters from a 32- or 64-letter alphabet (a power of two, so no modulo bias).
    static func randomText(_ count: Int, alphabet: [UInt8]) -> String {
        let mask = UInt8(alphabet.count - 1)
        return String(decoding: SecureRandom.bytes(count).map { alphabet[Int($0 & mask)] }, as: UTF8.self)
    }
}
