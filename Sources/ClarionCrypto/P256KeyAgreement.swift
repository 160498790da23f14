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
    ///
    /// Generated straight into an `EVP_PKEY` and its point read as a parameter: no DER round trip, since OpenSSL 3's
    /// encoders and decoders cost several times the key generation itself (loadtest/webpush, docs/benchmarks.md).
    public static func generate() -> P256KeyAgreementKey {
        guard let ctx = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else {
            preconditionFailure("EVP_PKEY_CTX_new_from_name(EC) failed: \(OpenSSLErrors.drain())")
        }
        defer { EVP_PKEY_CTX_free(ctx) }
        var key: OpaquePointer?
        guard EVP_PKEY_keygen_init(ctx) == 1, EVP_PKEY_CTX_set_group_name(ctx, "P-256") == 1,
              EVP_PKEY_generate(ctx, &key) == 1, let key
        else {
            preconditionFailure("P-256 key generation failed: \(OpenSSLErrors.drain())")
        }
        return try! P256KeyAgreementKey(taking: key)
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
        var point = [UInt8](repeating: 0, count: 65)
        var length = 0
        let read = point.withUnsafeMutableBufferPointer {
            EVP_PKEY_get_octet_string_param(key, "encoded-pub-key", $0.baseAddress, 65, &length)  // OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY
        }
        guard read == 1, length == 65, point[0] == 0x04 else {
            EVP_PKEY_free(key)
            throw CryptoError(.invalidKey, "the key's public point is not readable uncompressed: \(OpenSSLErrors.drain())")
        }
        pkey = key
        publicKey = point
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
                // No peer validation here (validate_peer 0): `P256PublicKey` was checked to be on the curve when it was
                // read, which for P-256 (cofactor 1) is the whole check; validating again costs a scalar multiplication.
                guard EVP_PKEY_derive_init(context) == 1,
                      EVP_PKEY_derive_set_peer_ex(context, peer.pkey, 0) == 1,
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

    /// `OSSL_PKEY_PARAM_GROUP_NAME` and `OSSL_PKEY_PARAM_PUB_KEY`, as C strings that live as long as the process.
    static let groupParameterName = Array("group".utf8CString)
    static let publicKeyParameterName = Array("pub".utf8CString)

    /// DER `SubjectPublicKeyInfo` prefix for an uncompressed P-256 point (id-ecPublicKey, prime256v1).
    static let subjectPublicKeyInfoPrefix: [UInt8] = [
        0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01,
        0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
    ]

    /// Refuses anything that is not `0x04 || X || Y` for a point on P-256 (OpenSSL checks the curve equation
    /// when it imports the point: `EC_POINT_oct2point`).
    ///
    /// Imported from parameters (`EVP_PKEY_fromdata`), not decoded from DER: OpenSSL 3's decoder framework made
    /// `d2i_PUBKEY` cost three ECDH operations per subscription (loadtest/webpush).
    public init(uncompressed point: [UInt8]) throws(CryptoError) {
        guard point.count == 65, point[0] == 0x04 else {
            throw CryptoError(.invalidKey, "a P-256 public key is the 65-byte uncompressed point starting 0x04, got \(point.count) bytes")
        }
        var key: OpaquePointer?
        if let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) {
            defer { EVP_PKEY_CTX_free(context) }
            // OSSL_PARAM keeps the pointers it is given, names included: every one must outlive `EVP_PKEY_fromdata`,
            // so none may be a temporary C string bridged from a Swift literal (valid only for the construct call).
            var group = Array("prime256v1".utf8CString)
            var bytes = point
            Self.groupParameterName.withUnsafeBufferPointer { groupName in
                Self.publicKeyParameterName.withUnsafeBufferPointer { pubName in
                    group.withUnsafeMutableBufferPointer { groupBuffer in
                        bytes.withUnsafeMutableBytes { pointBuffer in
                            var params = [
                                OSSL_PARAM_construct_utf8_string(groupName.baseAddress, groupBuffer.baseAddress, 0),
                                OSSL_PARAM_construct_octet_string(pubName.baseAddress, pointBuffer.baseAddress, 65),
                                OSSL_PARAM_construct_end(),
                            ]
                            if EVP_PKEY_fromdata_init(context) == 1 {
                                _ = EVP_PKEY_fromdata(context, &key, clarion_EVP_PKEY_PUBLIC_KEY(), &params)
                            }
                        }
                    }
                }
            }
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
