internal import COpenSSL

/// A P-256 key pair for ECDH (RFC 8291 section 3.1: the application server's ephemeral key and the
/// user agent's `p256dh` key are both P-256).
///
/// Key material moves in the Web Push wire forms: the public key as the 65-byte uncompressed point
/// (SEC 1 section 2.3.3, `0x04 || X || Y`), the private key as the 32-byte scalar. The OpenSSL key is built
/// from DER (SEC 1 `ECPrivateKey`, `SubjectPublicKeyInfo`) so that OpenSSL itself checks the point lies
/// on the curve; a point that does not is refused when the key is read, before any key agreement.
///
/// `@unchecked Sendable`: the wrapped `EVP_PKEY` is never mutated after init; each derivation has its own
/// `EVP_PKEY_CTX` (the same reasoning as `SigningKey`).
public final class P256KeyAgreementKey: @unchecked Sendable {
    let pkey: OpaquePointer
    /// `0x04 || X || Y`, 65 bytes.
    public let publicKey: [UInt8]

    /// A fresh key pair (one per Web Push message: RFC 8291 section 3.1 requires a new ephemeral key).
    public static func generate() -> P256KeyAgreementKey {
        let signing = SigningKey.generateP256()
        return try! P256KeyAgreementKey(pkcs8DER: signing.pkcs8DER)
    }

    /// A key from its 32-byte private scalar (the RFC 8291 Appendix A keys are given this way).
    public convenience init(privateScalar: [UInt8]) throws(CryptoError) {
        guard privateScalar.count == 32 else {
            throw CryptoError(.invalidKey, "a P-256 private scalar is 32 bytes, got \(privateScalar.count)")
        }
        // SEC 1 ECPrivateKey { version 1, privateKey OCTET STRING, [0] namedCurve prime256v1 }, no public key:
        // d2i_ECPrivateKey computes the public point from the scalar.
        let der: [UInt8] = [0x30, 0x31, 0x02, 0x01, 0x01, 0x04, 0x20] + privateScalar
            + [0xa0, 0x0a, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07]
        let key: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var pointer = buffer.baseAddress
            return d2i_PrivateKey(EVP_PKEY_EC, nil, &pointer, buffer.count)
        }
        guard let key else {
            throw CryptoError(.invalidKey, "not a usable P-256 private scalar: \(OpenSSLErrors.drain())")
        }
        try self.init(taking: key)
    }

    /// A key from PKCS#8 DER (a generated key, or a VAPID key given as PEM).
    public convenience init(pkcs8DER der: [UInt8]) throws(CryptoError) {
        let key: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var pointer = buffer.baseAddress
            return d2i_AutoPrivateKey(nil, &pointer, buffer.count)
        }
        guard let key else {
            throw CryptoError(.invalidKey, "not a readable private key: \(OpenSSLErrors.drain())")
        }
        try self.init(taking: key)
    }

    init(taking key: OpaquePointer) throws(CryptoError) {
        let algorithm: SigningAlgorithm
        do throws(CryptoError) {
            algorithm = try KeyKind.algorithm(of: key)
        } catch {
            EVP_PKEY_free(key)
            throw error
        }
        guard algorithm == .es256 else {
            EVP_PKEY_free(key)
            throw CryptoError(.invalidKey, "ECDH needs a P-256 key")
        }
        pkey = key
        publicKey = P256PublicKey.uncompressedPoint(ofSubjectPublicKeyInfo: KeyKind.subjectPublicKeyInfo(key))
    }

    deinit { EVP_PKEY_free(pkey) }

    /// The ECDH shared secret with `peer` (the X coordinate of the shared point, 32 bytes: RFC 8291 section 3.1).
    public func sharedSecret(with peer: P256PublicKey) throws(CryptoError) -> [UInt8] {
        try withExtendedLifetime(self) { () throws(CryptoError) -> [UInt8] in
            try withExtendedLifetime(peer) { () throws(CryptoError) -> [UInt8] in
                guard let context = EVP_PKEY_CTX_new_from_pkey(nil, pkey, nil) else {
                    throw CryptoError(.invalidKey, "EVP_PKEY_CTX_new_from_pkey: \(OpenSSLErrors.drain())")
                }
                defer { EVP_PKEY_CTX_free(context) }
                var length = 0
                guard EVP_PKEY_derive_init(context) == 1,
                      EVP_PKEY_derive_set_peer(context, peer.pkey) == 1,
                      EVP_PKEY_derive(context, nil, &length) == 1
                else {
                    throw CryptoError(.invalidKey, "ECDH key agreement refused: \(OpenSSLErrors.drain())")
                }
                var secret = [UInt8](repeating: 0, count: length)
                let ok = secret.withUnsafeMutableBufferPointer { EVP_PKEY_derive(context, $0.baseAddress, &length) }
                guard ok == 1 else {
                    throw CryptoError(.invalidKey, "ECDH key agreement failed: \(OpenSSLErrors.drain())")
                }
                return Array(secret.prefix(length))
            }
        }
    }
}

/// A P-256 public key read from its 65-byte uncompressed point (a subscription's `p256dh`, the
/// `dh`/keyid of an `aes128gcm` header, a VAPID `k=`).
public final class P256PublicKey: @unchecked Sendable {
    let pkey: OpaquePointer
    public let uncompressed: [UInt8]

    /// DER `SubjectPublicKeyInfo` prefix for an uncompressed P-256 point (id-ecPublicKey, prime256v1).
    static let subjectPublicKeyInfoPrefix: [UInt8] = [
        0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01,
        0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
    ]

    /// Refuses anything that is not `0x04 || X || Y` for a point on P-256 (OpenSSL checks the curve equation
    /// when it decodes the point).
    public init(uncompressed point: [UInt8]) throws(CryptoError) {
        guard point.count == 65, point[0] == 0x04 else {
            throw CryptoError(.invalidKey, "a P-256 public key is the 65-byte uncompressed point starting 0x04, got \(point.count) bytes")
        }
        let der = Self.subjectPublicKeyInfoPrefix + point
        let key: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var pointer = buffer.baseAddress
            return d2i_PUBKEY(nil, &pointer, buffer.count)
        }
        guard let key else {
            throw CryptoError(.invalidKey, "the point is not on the P-256 curve: \(OpenSSLErrors.drain())")
        }
        pkey = key
        uncompressed = point
    }

    deinit { EVP_PKEY_free(pkey) }

    /// The same key for ES256 signature checks (the emulator verifies VAPID tokens with `k=`).
    public var verifyingKey: VerifyingKey {
        try! VerifyingKey(subjectPublicKeyInfoDER: Self.subjectPublicKeyInfoPrefix + uncompressed)
    }

    /// The uncompressed point at the end of a P-256 `SubjectPublicKeyInfo` (always 91 bytes: the 26-byte prefix
    /// and the 65-byte point, as OpenSSL writes EC public keys uncompressed by default).
    static func uncompressedPoint(ofSubjectPublicKeyInfo der: [UInt8]) -> [UInt8] {
        precondition(der.count == 91 && Array(der.prefix(26)) == subjectPublicKeyInfoPrefix,
                     "a P-256 SubjectPublicKeyInfo is 91 bytes with an uncompressed point")
        return Array(der.suffix(65))
    }
}

extension SigningKey {
    /// The public half as the 65-byte uncompressed point, for an ES256 (P-256) key: the VAPID public key of
    /// RFC 8292 section 3.2 (`k=`) and the `applicationServerKey` a web page subscribes with. Nil for RSA.
    public var uncompressedPublicKey: [UInt8]? {
        guard algorithm == .es256 else { return nil }
        return P256PublicKey.uncompressedPoint(ofSubjectPublicKeyInfo: subjectPublicKeyInfoDER)
    }
}
