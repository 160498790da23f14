import ClarionCrypto
import ClarionStore
import ClarionTestSupport
import Foundation

/// A fresh migrated database with a pool and a master key, for one test. The pool's threads and connections
/// end with the fixture, so a long test run does not pile up idle sessions on the shared cluster.
final class RepositoryFixture: Sendable {
    let url: String
    let pool: PGPool
    let masterKey: AESGCMKey

    init() throws {
        url = try TestPostgres.migratedDatabase(prefix: "repo")
        pool = PGPool(conninfo: url, size: 3)
        masterKey = AESGCMKey.generate()
    }

    deinit { pool.shutdown() }

    var accounts: AccountRepository { AccountRepository(pool: pool, masterKey: masterKey) }

    /// A raw column read over a connection of its own (what an attacker with the database would see).
    func raw(_ sql: String, _ parameters: [any PGEncodable] = []) throws -> PGRow? {
        let connection = try PGConnection(conninfo: url)
        return try connection.query(sql, parameters).first
    }
}

/// The StoreError a body throws, or nil.
func storeError(_ body: () async throws -> Void) async -> StoreError? {
    do { try await body(); return nil } catch let error as StoreError { return error } catch { return nil }
}
