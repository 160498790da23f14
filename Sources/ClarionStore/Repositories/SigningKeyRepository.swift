import ClarionCrypto
import Foundation

/// The private key (PEM) and certificate (PEM) that sign HTTP/S subscription deliveries.
public struct MessageSigningIdentity: Sendable, Equatable {
    public let privateKeyPEM: String
    public let certificatePEM: String

    public init(privateKeyPEM: String, certificatePEM: String) {
        self.privateKeyPEM = privateKeyPEM
        self.certificatePEM = certificatePEM
    }
}

/// The one message signing identity of the installation (`sns_signing_keys`, schema v17): made by the first node
/// that needs it and shared by every node, so a receiver that cached the certificate keeps verifying whichever
/// node sends. The private key is sealed under the master key (AES-256-GCM) with the table and row as associated
/// data, like platform credentials; it is never returned by any API and never logged.
public struct SigningKeyRepository: Sendable {
    public let pool: PGPool
    let masterKey: AESGCMKey

    public init(pool: PGPool, masterKey: AESGCMKey) {
        self.pool = pool
        self.masterKey = masterKey
    }

    static let associatedData = Array("sns_signing_keys:1".utf8)

    /// The stored identity, or `make()`'s stored now. Two nodes starting together both may make one; the insert
    /// keeps the first and both read it back.
    public func loadOrCreate(_ make: @Sendable () throws -> MessageSigningIdentity) throws(StoreError) -> MessageSigningIdentity {
        if let existing = try load() { return existing }
        let made: MessageSigningIdentity
        do { made = try make() } catch {
            throw StoreError(.invalidData, "message signing key generation failed: \(error)")
        }
        let sealed = masterKey.seal(Array(made.privateKeyPEM.utf8), associatedData: Self.associatedData)
        try pool.withConnectionBlocking { (c) throws(StoreError) in
            _ = try c.query("""
                INSERT INTO sns_signing_keys (id, private_key_sealed, certificate_pem) VALUES (1, $1, $2)
                ON CONFLICT (id) DO NOTHING
                """, [PGBytes(sealed), made.certificatePEM])
        }
        guard let stored = try load() else { throw StoreError(.notFound, "message signing key not stored") }
        return stored
    }

    func load() throws(StoreError) -> MessageSigningIdentity? {
        let row = try pool.withConnectionBlocking { (c) throws(StoreError) -> (sealed: [UInt8]?, certificate: String?)? in
            guard let row = try c.query("SELECT private_key_sealed, certificate_pem FROM sns_signing_keys WHERE id = 1").first else {
                return nil
            }
            return (row.bytes(0), row.string(1))
        }
        guard let row else { return nil }
        guard let sealed = row.sealed, let certificate = row.certificate else {
            throw StoreError(.invalidData, "sns_signing_keys row is incomplete")
        }
        let opened: [UInt8]
        do { opened = try masterKey.open(sealed, associatedData: Self.associatedData) } catch {
            throw StoreError(.invalidData, "the message signing key does not open with this master key")
        }
        return MessageSigningIdentity(privateKeyPEM: String(decoding: opened, as: UTF8.self), certificatePEM: certificate)
    }
}
