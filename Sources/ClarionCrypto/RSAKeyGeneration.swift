internal import COpenSSL

extension SigningKey {
    /// A fresh RSA key for RS256 (the kind inside a Google service-account JSON), public exponent 65537.
    /// For tests, demos and emulator credentials. `bits` below 2048 is refused, as RS256 requires.
    public static func generateRSA(bits: Int = 2048) throws(CryptoError) -> SigningKey {
        guard bits >= 2048, bits <= 16384 else {
            throw CryptoError(.invalidKey, "RSA keys for RS256 are 2048 to 16384 bits, asked for \(bits)")
        }
        guard let ctx = EVP_PKEY_CTX_new_from_name(nil, "RSA", nil) else {
            throw CryptoError(.invalidKey, "EVP_PKEY_CTX_new_from_name(RSA) failed: \(OpenSSLErrors.drain())")
        }
        defer { EVP_PKEY_CTX_free(ctx) }
        var key: OpaquePointer?
        guard EVP_PKEY_keygen_init(ctx) == 1,
              EVP_PKEY_CTX_set_rsa_keygen_bits(ctx, Int32(bits)) == 1,
              EVP_PKEY_generate(ctx, &key) == 1,
              let key
        else {
            throw CryptoError(.invalidKey, "RSA key generation failed: \(OpenSSLErrors.drain())")
        }
        return try SigningKey(taking: key)
    }
}
