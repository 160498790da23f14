internal import COpenSSL

/// AES-128-GCM with a caller-given nonce and no associated data: the AEAD of RFC 8188's `aes128gcm`
/// content coding. (Secrets at rest use `AESGCMKey`, AES-256 with its own random nonce and framing.)
enum AES128GCM {
    static let keyLength = 16
    static let nonceLength = 12
    static let tagLength = 16

    /// `ciphertext || tag`.
    static func seal(key: [UInt8], nonce: [UInt8], plaintext: [UInt8]) -> [UInt8] {
        precondition(key.count == keyLength && nonce.count == nonceLength, "AES-128-GCM needs a 16-byte key and a 12-byte nonce")
        var out = [UInt8](repeating: 0, count: plaintext.count + tagLength)
        let ctx = EVP_CIPHER_CTX_new()!
        defer { EVP_CIPHER_CTX_free(ctx) }
        var ok = EVP_EncryptInit_ex(ctx, EVP_aes_128_gcm(), nil, nil, nil)
        ok &= EVP_CIPHER_CTX_ctrl(ctx, clarion_EVP_CTRL_GCM_SET_IVLEN(), Int32(nonceLength), nil)
        ok &= EVP_EncryptInit_ex(ctx, nil, nil, key, nonce)
        var length: Int32 = 0
        var finalLength: Int32 = 0
        ok &= out.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var result: Int32 = 1
            if !plaintext.isEmpty {
                result &= EVP_EncryptUpdate(ctx, buffer.baseAddress, &length, plaintext, Int32(plaintext.count))
            }
            result &= EVP_EncryptFinal_ex(ctx, buffer.baseAddress! + Int(length), &finalLength)
            result &= EVP_CIPHER_CTX_ctrl(ctx, clarion_EVP_CTRL_GCM_GET_TAG(), Int32(tagLength), buffer.baseAddress! + plaintext.count)
            return result
        }
        precondition(ok == 1, "AES-128-GCM encryption failed")
        return out
    }

    /// The plaintext of `ciphertext || tag`; nil when the tag does not verify.
    static func open(key: [UInt8], nonce: [UInt8], sealed: ArraySlice<UInt8>) -> [UInt8]? {
        guard key.count == keyLength, nonce.count == nonceLength, sealed.count >= tagLength else { return nil }
        let ciphertext = Array(sealed.dropLast(tagLength))
        var tag = Array(sealed.suffix(tagLength))
        var plaintext = [UInt8](repeating: 0, count: ciphertext.count + 16)
        let ctx = EVP_CIPHER_CTX_new()!
        defer { EVP_CIPHER_CTX_free(ctx) }
        var ok = EVP_DecryptInit_ex(ctx, EVP_aes_128_gcm(), nil, nil, nil)
        ok &= EVP_CIPHER_CTX_ctrl(ctx, clarion_EVP_CTRL_GCM_SET_IVLEN(), Int32(nonceLength), nil)
        ok &= EVP_DecryptInit_ex(ctx, nil, nil, key, nonce)
        var length: Int32 = 0
        var finalLength: Int32 = 0
        let final = plaintext.withUnsafeMutableBufferPointer { buffer -> Int32 in
            if !ciphertext.isEmpty {
                ok &= EVP_DecryptUpdate(ctx, buffer.baseAddress, &length, ciphertext, Int32(ciphertext.count))
            }
            ok &= tag.withUnsafeMutableBytes { EVP_CIPHER_CTX_ctrl(ctx, clarion_EVP_CTRL_GCM_SET_TAG(), Int32(tagLength), $0.baseAddress) }
            return EVP_DecryptFinal_ex(ctx, buffer.baseAddress! + Int(length), &finalLength)
        }
        guard ok == 1, final == 1 else {
            OpenSSLErrors.clear()
            return nil
        }
        return Array(plaintext.prefix(Int(length + finalLength)))
    }
}
