internal import COpenSSL

/// A self-signed certificate (EC P-256, SHA-256) and its private key in PEM, for the emulator and tests.
///
/// The certificate is its own trust anchor: pass `certificatePEM` as a pool's `trustedCAPEM` and the pool verifies
/// the server like any other. Subject alternative names default to `localhost` and `127.0.0.1`.
public struct SelfSignedCertificate: Sendable {
    public var certificatePEM: String
    public var privateKeyPEM: String

    public var identity: TLSIdentity {
        TLSIdentity(certificateChainPEM: certificatePEM, privateKeyPEM: privateKeyPEM)
    }

    public static func generate(
        commonName: String = "localhost", dnsNames: [String] = ["localhost"], ipAddresses: [String] = ["127.0.0.1"],
        validityDays: Int = 365
    ) throws(TLSConfigurationError) -> SelfSignedCertificate {
        guard let keyContext = EVP_PKEY_CTX_new_id(EVP_PKEY_EC, nil) else {
            throw TLSConfigurationError(reason: "EVP_PKEY_CTX_new_id: \(openSSLErrorText())")
        }
        defer { EVP_PKEY_CTX_free(keyContext) }
        var key: OpaquePointer?
        guard EVP_PKEY_keygen_init(keyContext) == 1,
              EVP_PKEY_CTX_set_ec_paramgen_curve_nid(keyContext, NID_X9_62_prime256v1) == 1,
              EVP_PKEY_keygen(keyContext, &key) == 1, let key else {
            throw TLSConfigurationError(reason: "EC key generation: \(openSSLErrorText())")
        }
        defer { EVP_PKEY_free(key) }
        guard let cert = X509_new() else { throw TLSConfigurationError(reason: "X509_new failed") }
        defer { X509_free(cert) }
        X509_set_version(cert, 2)
        var serial = [UInt8](repeating: 0, count: 16)
        _ = RAND_bytes(&serial, Int32(serial.count))
        serial[0] &= 0x7F
        if let bn = BN_bin2bn(serial, Int32(serial.count), nil) {
            BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert))
            BN_free(bn)
        }
        X509_gmtime_adj(X509_getm_notBefore(cert), -3600)
        X509_gmtime_adj(X509_getm_notAfter(cert), validityDays * 86_400)
        X509_set_pubkey(cert, key)
        let name = X509_get_subject_name(cert)
        let cn = Array(commonName.utf8)
        X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, cn, Int32(cn.count), -1, 0)
        X509_set_issuer_name(cert, name)

        var extensionContext = X509V3_CTX()
        X509V3_set_ctx(&extensionContext, cert, cert, nil, nil, 0)
        let names = dnsNames.map { "DNS:\($0)" } + ipAddresses.map { "IP:\($0)" }
        let extensions: [(Int32, String)] = [
            (NID_basic_constraints, "critical,CA:TRUE"),
            (NID_key_usage, "critical,digitalSignature,keyCertSign"),
            (NID_ext_key_usage, "serverAuth"),
            (NID_subject_alt_name, names.joined(separator: ",")),
        ]
        for (nid, value) in extensions {
            guard let ext = X509V3_EXT_conf_nid(nil, &extensionContext, nid, value) else {
                throw TLSConfigurationError(reason: "extension \(value): \(openSSLErrorText())")
            }
            X509_add_ext(cert, ext, -1)
            X509_EXTENSION_free(ext)
        }
        guard X509_sign(cert, key, EVP_sha256()) > 0 else {
            throw TLSConfigurationError(reason: "X509_sign: \(openSSLErrorText())")
        }
        let certificatePEM = try pemString { PEM_write_bio_X509($0, cert) }
        let privateKeyPEM = try pemString { PEM_write_bio_PrivateKey($0, key, nil, nil, 0, nil, nil) }
        return SelfSignedCertificate(certificatePEM: certificatePEM, privateKeyPEM: privateKeyPEM)
    }

    private static func pemString(_ write: (OpaquePointer) -> Int32) throws(TLSConfigurationError) -> String {
        guard let bio = BIO_new(BIO_s_mem()) else { throw TLSConfigurationError(reason: "BIO_new failed") }
        defer { BIO_free(bio) }
        guard write(bio) == 1 else { throw TLSConfigurationError(reason: "PEM write: \(openSSLErrorText())") }
        var data: UnsafeMutablePointer<CChar>?
        let length = clarion_BIO_get_mem_data(bio, &data)
        guard let data, length > 0 else { throw TLSConfigurationError(reason: "empty PEM") }
        return String(decoding: UnsafeRawBufferPointer(start: data, count: length), as: UTF8.self)
    }
}
