internal import COpenSSL

/// A throwaway certificate authority for the emulator, the demo and tests: it issues TLS client certificates
/// (for APNs certificate-based auth against the emulator) that a server trusting `certificatePEM` verifies.
///
/// The CA's private key lives only in this value: keep the value to issue more certificates, drop it and none
/// can be issued again. Never a production CA.
public struct CertificateAuthority: Sendable {
    /// The CA certificate (PEM): what a server verifying client certificates trusts.
    public let certificatePEM: String
    let privateKeyPEM: String

    /// The key of an issued certificate.
    public enum KeyType: Sendable, Hashable {
        /// EC P-256: fast to generate.
        case p256
        /// RSA 2048: the kind Apple issues push certificates with.
        case rsa2048
    }

    /// A new self-signed CA (EC P-256, `CA:TRUE`, keyCertSign).
    public static func generate(commonName: String = "Clarion test CA", validityDays: Int = 3650) throws(TLSConfigurationError) -> CertificateAuthority {
        let key = try X509Builder.generateKey(.p256)
        defer { EVP_PKEY_free(key) }
        let certificate = try X509Builder.certificate(
            subject: [("CN", commonName)], publicKey: key, issuer: nil, signingKey: key, validityDays: validityDays,
            extensions: [
                (NID_basic_constraints, "critical,CA:TRUE"),
                (NID_key_usage, "critical,keyCertSign,cRLSign"),
            ], markerOIDs: [])
        defer { X509_free(certificate) }
        return CertificateAuthority(certificatePEM: try X509Builder.pem { PEM_write_bio_X509($0, certificate) },
                                    privateKeyPEM: try X509Builder.pem { PEM_write_bio_PrivateKey($0, key, nil, nil, 0, nil, nil) })
    }

    /// Issues a TLS client certificate (`clientAuth`) and returns it with its new private key.
    ///
    /// - Parameters:
    ///   - subject: name entries in order, by OpenSSL short name: `("UID", bundleID)`, `("CN", ...)`, `("OU", ...)`.
    ///   - markerOIDs: extensions added with an ASN.1 NULL value, e.g. Apple's APNs environment markers.
    ///   - validityDays: from an hour ago; 0 or less issues a certificate that has already expired.
    public func issueClientCertificate(
        subject: [(String, String)], keyType: KeyType = .p256, markerOIDs: [String] = [], validityDays: Int = 365
    ) throws(TLSConfigurationError) -> TLSIdentity {
        let caCertificates = try readCertificates(pem: certificatePEM)
        defer { caCertificates.forEach { X509_free($0) } }
        let caKey = try readPrivateKey(pem: privateKeyPEM)
        defer { EVP_PKEY_free(caKey) }
        let key = try X509Builder.generateKey(keyType)
        defer { EVP_PKEY_free(key) }
        let certificate = try X509Builder.certificate(
            subject: subject, publicKey: key, issuer: caCertificates[0], signingKey: caKey, validityDays: validityDays,
            extensions: [
                (NID_basic_constraints, "critical,CA:FALSE"),
                (NID_key_usage, "critical,digitalSignature,keyEncipherment"),
                (NID_ext_key_usage, "clientAuth"),
            ], markerOIDs: markerOIDs)
        defer { X509_free(certificate) }
        return TLSIdentity(certificateChainPEM: try X509Builder.pem { PEM_write_bio_X509($0, certificate) },
                           privateKeyPEM: try X509Builder.pem { PEM_write_bio_PrivateKey($0, key, nil, nil, 0, nil, nil) })
    }
}

/// Key generation and X.509 signing with OpenSSL, shared by `SelfSignedCertificate` and `CertificateAuthority`.
enum X509Builder {
    /// A new key; the caller frees it.
    static func generateKey(_ type: CertificateAuthority.KeyType) throws(TLSConfigurationError) -> OpaquePointer {
        let context: OpaquePointer?
        switch type {
        case .p256: context = EVP_PKEY_CTX_new_id(EVP_PKEY_EC, nil)
        case .rsa2048: context = EVP_PKEY_CTX_new_id(EVP_PKEY_RSA, nil)
        }
        guard let context else { throw TLSConfigurationError(reason: "EVP_PKEY_CTX_new_id: \(openSSLErrorText())") }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_keygen_init(context) == 1 else {
            throw TLSConfigurationError(reason: "key generation: \(openSSLErrorText())")
        }
        let configured: Bool
        switch type {
        case .p256: configured = EVP_PKEY_CTX_set_ec_paramgen_curve_nid(context, NID_X9_62_prime256v1) == 1
        case .rsa2048: configured = EVP_PKEY_CTX_set_rsa_keygen_bits(context, 2048) == 1
        }
        var key: OpaquePointer?
        guard configured, EVP_PKEY_keygen(context, &key) == 1, let key else {
            throw TLSConfigurationError(reason: "key generation: \(openSSLErrorText())")
        }
        return key
    }

    /// A signed X.509 v3 certificate; the caller frees it. `issuer` nil: self-signed (`signingKey` is the subject's).
    static func certificate(
        subject: [(String, String)], publicKey: OpaquePointer, issuer: OpaquePointer?, signingKey: OpaquePointer,
        validityDays: Int, extensions: [(Int32, String)], markerOIDs: [String]
    ) throws(TLSConfigurationError) -> OpaquePointer {
        guard let cert = X509_new() else { throw TLSConfigurationError(reason: "X509_new failed") }
        var done = false
        defer { if !done { X509_free(cert) } }
        X509_set_version(cert, 2)
        var serial = [UInt8](repeating: 0, count: 16)
        _ = RAND_bytes(&serial, Int32(serial.count))
        serial[0] &= 0x7F
        if let bn = BN_bin2bn(serial, Int32(serial.count), nil) {
            BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert))
            BN_free(bn)
        }
        X509_gmtime_adj(X509_getm_notBefore(cert), -3600)
        // An already expired certificate (validityDays <= 0) ends a minute ago, after it began.
        X509_gmtime_adj(X509_getm_notAfter(cert), validityDays > 0 ? validityDays * 86_400 : -60)
        X509_set_pubkey(cert, publicKey)
        let name = X509_get_subject_name(cert)
        for (field, value) in subject {
            let bytes = Array(value.utf8)
            guard X509_NAME_add_entry_by_txt(name, field, MBSTRING_UTF8, bytes, Int32(bytes.count), -1, 0) == 1 else {
                throw TLSConfigurationError(reason: "subject \(field): \(openSSLErrorText())")
            }
        }
        X509_set_issuer_name(cert, issuer.map { X509_get_subject_name($0) } ?? name)

        var extensionContext = X509V3_CTX()
        X509V3_set_ctx(&extensionContext, issuer ?? cert, cert, nil, nil, 0)
        for (nid, value) in extensions {
            guard let ext = X509V3_EXT_conf_nid(nil, &extensionContext, nid, value) else {
                throw TLSConfigurationError(reason: "extension \(value): \(openSSLErrorText())")
            }
            X509_add_ext(cert, ext, -1)
            X509_EXTENSION_free(ext)
        }
        for oid in markerOIDs {
            guard let object = OBJ_txt2obj(oid, 1) else { throw TLSConfigurationError(reason: "bad OID \(oid)") }
            defer { ASN1_OBJECT_free(object) }
            guard let value = ASN1_OCTET_STRING_new() else { throw TLSConfigurationError(reason: "ASN1_OCTET_STRING_new failed") }
            defer { ASN1_OCTET_STRING_free(value) }
            let null: [UInt8] = [0x05, 0x00]  // DER NULL
            guard ASN1_OCTET_STRING_set(value, null, Int32(null.count)) == 1,
                  let ext = X509_EXTENSION_create_by_OBJ(nil, object, 0, value) else {
                throw TLSConfigurationError(reason: "extension \(oid): \(openSSLErrorText())")
            }
            X509_add_ext(cert, ext, -1)
            X509_EXTENSION_free(ext)
        }
        guard X509_sign(cert, signingKey, EVP_sha256()) > 0 else {
            throw TLSConfigurationError(reason: "X509_sign: \(openSSLErrorText())")
        }
        done = true
        return cert
    }

    static func pem(_ write: (OpaquePointer) -> Int32) throws(TLSConfigurationError) -> String {
        guard let bio = BIO_new(BIO_s_mem()) else { throw TLSConfigurationError(reason: "BIO_new failed") }
        defer { BIO_free(bio) }
        guard write(bio) == 1 else { throw TLSConfigurationError(reason: "PEM write: \(openSSLErrorText())") }
        var data: UnsafeMutablePointer<CChar>?
        let length = clarion_BIO_get_mem_data(bio, &data)
        guard let data, length > 0 else { throw TLSConfigurationError(reason: "empty PEM") }
        return String(decoding: UnsafeRawBufferPointer(start: data, count: length), as: UTF8.self)
    }
}
