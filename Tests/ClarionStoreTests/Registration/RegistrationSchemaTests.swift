import ClarionCrypto
import ClarionStore
import ClarionTestSupport
import Foundation
import Testing

@Suite("Schema: event collector settings and webhook signing key")
struct RegistrationSchemaTests {
    /// Found by name, so a renumbered migration needs no change here.
    static var migration: Migration {
        Schema.migrations.first { $0.name.hasPrefix("event collector settings per mobile app") }!
    }

    @Test("on an existing database: apps get the user-change guard on and the token not required; queued webhooks stay unsigned")
    func upgrade() async throws {
        let url = try TestPostgres.freshDatabase(prefix: "mig")
        let c = try PGConnection(conninfo: url)
        let version = Self.migration.version
        #expect(try Migrator(migrations: Schema.migrations.filter { $0.version < version }).migrate(c).last == version - 1)
        let account = try c.query("INSERT INTO accounts (account_id) VALUES ('123456789012') RETURNING id").first!.int64(0)!
        let id = UUID()
        try c.query("INSERT INTO mobile_apps (external_id, account, name) VALUES ($1, $2, 'old')", [id, account])
        try c.query("INSERT INTO webhook_outbox (url, body) VALUES ('https://example.com/x', '{}')")

        #expect(try Migrator().migrate(c).contains(version))
        let pool = PGPool(conninfo: url, size: 1)
        defer { pool.shutdown() }
        let app = try await MobileAppRepository(pool: pool, masterKey: AESGCMKey.generate()).get(externalID: id, accountKey: account)
        #expect(app.eventsRequireAPIToken == false)
        #expect(app.eventsRequireAPITokenForUserChange == true)
        let claimed = try WebhookOutbox(pool: pool, masterKey: AESGCMKey.generate()).claimBlocking(limit: 10, leaseSeconds: 30)
        #expect(claimed.count == 1)
        #expect(claimed.first?.signingKey == nil)
    }

    @Test("a webhook's signing key is its API token, opened at claim; a deleted token leaves it unsigned")
    func signingKeyByReference() async throws {
        let url = try TestPostgres.migratedDatabase(prefix: "reg")
        let pool = PGPool(conninfo: url, size: 2)
        defer { pool.shutdown() }
        let masterKey = AESGCMKey.generate()
        let account = try await AccountRepository(pool: pool, masterKey: masterKey).ensureAccount(accountID: "123456789012")
        let apps = MobileAppRepository(pool: pool, masterKey: masterKey)
        let app = try await apps.create(accountKey: account.key, NewMobileApp(name: "shop"))
        let token = try await apps.createToken(appKey: app.key)
        let other = try await apps.createToken(appKey: app.key)
        try await pool.withConnection { (c) throws(StoreError) in
            try c.query("INSERT INTO webhook_outbox (url, body, signing_token) VALUES ('https://e.com/1', '{}', $1), ('https://e.com/2', '{}', $2)",
                        [token.id, other.id])
            try c.query("DELETE FROM mobile_app_tokens WHERE id = $1", [other.id])
        }
        let claimed = try WebhookOutbox(pool: pool, masterKey: masterKey).claimBlocking(limit: 10, leaseSeconds: 30)
        #expect(claimed.map(\.signingKey) == [token.token, nil])
        // Another master key cannot open it: unsigned, never garbage.
        try await pool.withConnection { (c) throws(StoreError) in _ = try c.query("UPDATE webhook_outbox SET lease_expires_at = NULL") }
        let foreign = try WebhookOutbox(pool: pool, masterKey: AESGCMKey.generate()).claimBlocking(limit: 10, leaseSeconds: 30)
        #expect(foreign.map(\.signingKey) == [nil, nil])
    }
}
