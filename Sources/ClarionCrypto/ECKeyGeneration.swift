internal import COpenSSL

extension SigningKey {
    /// A fresh P-256 key for ES256 (what Apple issues as an APNs `.p8` key).
    /// For tests, demos and emulator credentials; production APNs keys come from Apple.
    public static func generateP256() -> SigningKey {
        guard let ctx = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else {
            preconditionFailure("EVP_PKEY_CTX_new_from_name(EC) failed: \(OpenSSLErrors.drain())")
        }
        defer { EVP_PKEY_CTX_free(ctx) }
        var key: OpaquePointer?
        guard EVP_PKEY_keygen_init(ctx) == 1,
              EVP_PKEY_CTX_set_group_name(ctx, "P-256") == 1,
              EVP_PKEY_generate(ctx, &key) == 1,
              let key
        else {
            preconditionFailure("P-256 key generation failed: \(OpenSSLErrors.drain())")
        }
        return try! SigningKey(taking: key)
    }
}
