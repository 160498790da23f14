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

    @Test("on an existing database: apps get the user-change guard on and the token not required")
    func upgrade() async throws {
        let url = try TestPostgres.freshDatabase(prefix: "mig")
        let c = try PGConnection(conninfo: url)
        let version = Self.migration.version
        #expect(try Migrator(migrations: Schema.migrations.filter { $0.version < version }).migrate(c).last == version - 1)
        let account = try c.query("INSERT INTO accounts (account_id) VALUES ('123456789012') RETURNING id").first!.int64(0)!
        let id = UUID()
        try c.query("INSERT INTO mobile_apps (external_id, account, name) VALUES ($1, $2, 'old')", [id, account])

        #expect(try Migrator().migrate(c).contains(version))
        let pool = PGPool(conninfo: url, size: 1)
        defer { pool.shutdown() }
        let app = try await MobileAppRepository(pool: pool, masterKey: AESGCMKey.generate()).get(externalID: id, accountKey: account)
        #expect(app.eventsRequireAPIToken == false)
        #expect(app.eventsRequireAPITokenForUserChange == true)
    }
}
