import Testing
@testable import ClarionCrypto

/// Lifetimes across C calls. Run these in an optimised build too (docs/testing.md): debug builds keep every
/// object alive to the end of its scope and hide the bugs.
@Suite struct KeyLifetimeTests {
    /// Rule: a raw `EVP_PKEY` taken from a Swift owner is valid only while the owner lives; the owner must be kept
    /// alive (`withExtendedLifetime`) across every C call that uses the pointer. `VerifyingKey(pem:)` of a private
    /// key reads the public half from a temporary `SigningKey` that was released before `i2d_PUBKEY` ran.
    @Test(arguments: ["P-256", "RSA"])
    func aPublicKeyReadFromAPrivateKeyPEMIsThatKeysPublicHalf(kind: String) throws {
        let key = kind == "RSA" ? try SigningKey.generateRSA() : SigningKey.generateP256()
        let pem = key.pkcs8PEM
        let expected = key.verifyingKey.subjectPublicKeyInfoDER
        var churn: [[UInt8]] = []
        // Reading an RSA private key checks that its halves agree (`EVP_PKEY_pairwise_check`), about 50 ms a key on
        // these machines: fewer rounds for RSA keep the test at a second while P-256 churns 500 times.
        let rounds = kind == "RSA" ? 40 : 500
        for round in 0..<rounds {
            let verifying = try VerifyingKey(pem: pem)
            #expect(verifying.subjectPublicKeyInfoDER == expected)
            #expect(verifying.algorithm == key.algorithm)
            // Allocation churn, so a freed key's memory is handed out and overwritten.
            churn.append([UInt8](repeating: UInt8(truncatingIfNeeded: round), count: 16 + (round * 37) % 700))
            if churn.count > 32 { churn.removeFirst(16) }
        }
    }
}
