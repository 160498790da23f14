import ClarionCrypto
import ClarionStore
import ClarionTestSupport
import Foundation
import Testing

@Suite("Repositories: accounts and keys")
struct AccountRepositoryTests {
    @Test("ensureAccount is idempotent and refuses an id that is not 12 digits")
    func ensureAccount() async throws {
        let fixture = try RepositoryFixture()
        let first = try await fixture.accounts.ensureAccount(accountID: "123456789012")
        let again = try await fixture.accounts.ensureAccount(accountID: "123456789012")
        #expect(first == again)
        #expect(try await fixture.accounts.account(accountID: "123456789012") == first)
        #expect(await storeError { _ = try await fixture.accounts.account(accountID: "999999999999") }?.code == .notFound)
        #expect(await storeError { _ = try await fixture.accounts.ensureAccount(accountID: "12345") }?.code == .checkViolation)
    }

    @Test("access key secrets are ciphertext at rest and open only with the right master key")
    func accessKeySealed() async throws {
        let fixture = try RepositoryFixture()
        let secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
        let created = try await fixture.accounts.ensureAccessKey(accountID: "123456789012",
                                                                 accessKeyID: "AKIAIOSFODNN7EXAMPLE", secret: secret)
        #expect(created.secretAccessKey == secret)
        let raw = try #require(try fixture.raw("SELECT secret_sealed FROM access_keys WHERE access_key_id = $1",
                                               ["AKIAIOSFODNN7EXAMPLE"])?.bytes(0))
        #expect(!String(decoding: raw, as: UTF8.self).contains(secret))
        #expect(try fixture.masterKey.open(raw, associatedData: Array("AKIAIOSFODNN7EXAMPLE".utf8)) == Array(secret.utf8))
        #expect(throws: CryptoError.self) { try AESGCMKey.generate().open(raw, associatedData: Array("AKIAIOSFODNN7EXAMPLE".utf8)) }
        #expect(throws: CryptoError.self) { try fixture.masterKey.open(raw, associatedData: Array("AKIAOTHERKEY0000".utf8)) }

        let found = try #require(try await fixture.accounts.accessKey(accessKeyID: "AKIAIOSFODNN7EXAMPLE"))
        #expect(found.secretAccessKey == secret && found.accountID == "123456789012")
        #expect(try await fixture.accounts.accessKey(accessKeyID: "AKIAUNKNOWN00000") == nil)

        // A repository with another master key cannot open it: invalidData, not a wrong secret.
        let wrong = AccountRepository(pool: fixture.pool, masterKey: AESGCMKey.generate())
        #expect(await storeError { _ = try await wrong.accessKey(accessKeyID: "AKIAIOSFODNN7EXAMPLE") }?.code == .invalidData)
    }

    @Test("ensureAccessKey replaces the secret of the same account, refuses a key of another account; disabled keys are not found")
    func ensureAccessKeyRules() async throws {
        let fixture = try RepositoryFixture()
        _ = try await fixture.accounts.ensureAccessKey(accountID: "111111111111", accessKeyID: "AKIAKEY000000001", secret: "one")
        _ = try await fixture.accounts.ensureAccessKey(accountID: "111111111111", accessKeyID: "AKIAKEY000000001", secret: "two")
        #expect(try await fixture.accounts.accessKey(accessKeyID: "AKIAKEY000000001")?.secretAccessKey == "two")
        let clash = await storeError {
            _ = try await fixture.accounts.ensureAccessKey(accountID: "222222222222", accessKeyID: "AKIAKEY000000001", secret: "x")
        }
        #expect(clash?.code == .uniqueViolation && clash?.constraint == "access_keys_pkey")
        try await fixture.accounts.disableAccessKey(accessKeyID: "AKIAKEY000000001")
        #expect(try await fixture.accounts.accessKey(accessKeyID: "AKIAKEY000000001") == nil)
        let generated = try await fixture.accounts.createAccessKey(accountID: "111111111111")
        #expect(generated.accessKeyID.hasPrefix("AKIA") && generated.accessKeyID.count == 20 && generated.secretAccessKey.count == 40)
        #expect(try await fixture.accounts.accessKey(accessKeyID: generated.accessKeyID)?.secretAccessKey == generated.secretAccessKey)
    }

    @Test("API keys: only the SHA-256 hash is stored; the plaintext resolves until revoked")
    func apiKeys() async throws {
        let fixture = try RepositoryFixture()
        let created = try await fixture.accounts.createAPIKey(accountID: "123456789012", name: "ci")
        let hash = try #require(try fixture.raw("SELECT key_hash FROM api_keys WHERE id = $1", [created.record.id])?.bytes(0))
        #expect(hash == Digest.sha256(created.key))
        let columns = try #require(try fixture.raw("SELECT row_to_json(k)::text FROM api_keys k WHERE id = $1", [created.record.id])?.string(0))
        #expect(!columns.contains(created.key))
        #expect(try await fixture.accounts.apiKey(matching: created.key)?.accountID == "123456789012")
        #expect(try await fixture.accounts.apiKey(matching: created.key + "x") == nil)
        #expect(try await fixture.accounts.apiKeys(accountID: "123456789012").map(\.id) == [created.record.id])
        try await fixture.accounts.revokeAPIKey(id: created.record.id, accountID: "123456789012")
        #expect(try await fixture.accounts.apiKey(matching: created.key) == nil)
        #expect(await storeError { try await fixture.accounts.revokeAPIKey(id: created.record.id, accountID: "999999999999") }?.code == .notFound)
    }
}
