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
        let key = try X509Builder.generateKey(.p256)
        defer { EVP_PKEY_free(key) }
        let names = dnsNames.map { "DNS:\($0)" } + ipAddresses.map { "IP:\($0)" }
        let cert = try X509Builder.certificate(
            subject: [("CN", commonName)], publicKey: key, issuer: nil, signingKey: key, validityDays: validityDays,
            extensions: [
                (NID_basic_constraints, "critical,CA:TRUE"),
                (NID_key_usage, "critical,digitalSignature,keyCertSign"),
                (NID_ext_key_usage, "serverAuth"),
                (NID_subject_alt_name, names.joined(separator: ",")),
            ], markerOIDs: [])
        defer { X509_free(cert) }
        let certificatePEM = try X509Builder.pem { PEM_write_bio_X509($0, cert) }
        let privateKeyPEM = try X509Builder.pem { PEM_write_bio_PrivateKey($0, key, nil, nil, 0, nil, nil) }
        return SelfSignedCertificate(certificatePEM: certificatePEM, privateKeyPEM: privateKeyPEM)
    }

    /// A self-signed RSA 2048 certificate for signing documents, not for serving TLS (CA:FALSE, digitalSignature
    /// only): the certificate SNS-style HTTP/S deliveries name in `SigningCertURL`. SNS signs with RSA
    /// (SHA1withRSA or SHA256withRSA), so the key is RSA.
    public static func generateMessageSigning(commonName: String, validityDays: Int = 3650) throws(TLSConfigurationError)
        -> SelfSignedCertificate {
        let key = try X509Builder.generateKey(.rsa2048)
        defer { EVP_PKEY_free(key) }
        let cert = try X509Builder.certificate(
            subject: [("CN", commonName)], publicKey: key, issuer: nil, signingKey: key, validityDays: validityDays,
            extensions: [
                (NID_basic_constraints, "critical,CA:FALSE"),
                (NID_key_usage, "critical,digitalSignature"),
            ], markerOIDs: [])
        defer { X509_free(cert) }
        let certificatePEM = try X509Builder.pem { PEM_write_bio_X509($0, cert) }
        let privateKeyPEM = try X509Builder.pem { PEM_write_bio_PrivateKey($0, key, nil, nil, 0, nil, nil) }
        return SelfSignedCertificate(certificatePEM: certificatePEM, privateKeyPEM: privateKeyPEM)
    }
}
