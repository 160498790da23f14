internal import COpenSSL
import Foundation

/// AES-256-GCM sealing for secrets at rest (platform credentials, account secrets).
///
/// Sealed form: `version(1) || nonce(12) || ciphertext || tag(16)`. The version byte lets the format
/// change later without guessing. Associated data binds a ciphertext to its row (for example the
/// application's id), so a ciphertext copied onto another row does not decrypt.
public struct AESGCMKey: Sendable {
    public static let keyLength = 32
    static let nonceLength = 12
    static let tagLength = 16
    static let formatVersion: UInt8 = 1

    let key: [UInt8]

    public init(bytes: [UInt8]) throws(CryptoError) {
        guard bytes.count == Self.keyLength else {
            throw CryptoError(.invalidKey, "an AES-256-GCM key is 32 bytes, got \(bytes.count)")
        }
        self.key = bytes
    }

    /// A key from its base64 or 64-hex-digit text form (the CLARION_MASTER_KEY format).
    public init(text: String) throws(CryptoError) {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.count == 64, let hex = [UInt8](hexString: trimmed) {
            try self.init(bytes: hex)
        } else if let data = Data(base64Encoded: trimmed) {
            try self.init(bytes: [UInt8](data))
        } else {
            throw CryptoError(.invalidKey, "the master key must be 32 bytes as base64 or 64 hex digits")
        }
    }

    public static func generate() -> AESGCMKey {
        try! AESGCMKey(bytes: SecureRandom.bytes(keyLength))
    }

    public var base64: String { Data(key).base64EncodedString() }

    public func seal(_ plaintext: [UInt8], associatedData: [UInt8] = []) -> [UInt8] {
        let nonce = SecureRandom.bytes(Self.nonceLength)
        var ciphertext = [UInt8](repeating: 0, count: plaintext.count)
        var tag = [UInt8](repeating: 0, count: Self.tagLength)
        let ctx = EVP_CIPHER_CTX_new()!
        defer { EVP_CIPHER_CTX_free(ctx) }
        var ok = EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), nil, nil, nil)
        ok &= EVP_CIPHER_CTX_ctrl(ctx, clarion_EVP_CTRL_GCM_SET_IVLEN(), Int32(Self.nonceLength), nil)
        ok &= EVP_EncryptInit_ex(ctx, nil, nil, key, nonce)
        var length: Int32 = 0
        if !associatedData.isEmpty {
            ok &= EVP_EncryptUpdate(ctx, nil, &length, associatedData, Int32(associatedData.count))
        }
        if !plaintext.isEmpty {
            ok &= ciphertext.withUnsafeMutableBufferPointer { out in
                EVP_EncryptUpdate(ctx, out.baseAddress, &length, plaintext, Int32(plaintext.count))
            }
        }
        var finalLength: Int32 = 0
        var scratch = [UInt8](repeating: 0, count: 16)
        ok &= EVP_EncryptFinal_ex(ctx, &scratch, &finalLength)
        ok &= tag.withUnsafeMutableBytes { EVP_CIPHER_CTX_ctrl(ctx, clarion_EVP_CTRL_GCM_GET_TAG(), Int32(Self.tagLength), $0.baseAddress) }
        precondition(ok == 1, "AES-256-GCM encryption failed")
        return [Self.formatVersion] + nonce + ciphertext + tag
    }

    public func open(_ sealed: [UInt8], associatedData: [UInt8] = []) throws(CryptoError) -> [UInt8] {
        let overhead = 1 + Self.nonceLength + Self.tagLength
        guard sealed.count >= overhead, sealed[0] == Self.formatVersion else {
            throw CryptoError(.decryptionFailed, "sealed value is malformed")
        }
        let nonce = Array(sealed[1..<(1 + Self.nonceLength)])
        let ciphertext = Array(sealed[(1 + Self.nonceLength)..<(sealed.count - Self.tagLength)])
        var tag = Array(sealed[(sealed.count - Self.tagLength)...])
        var plaintext = [UInt8](repeating: 0, count: ciphertext.count)
        let ctx = EVP_CIPHER_CTX_new()!
        defer { EVP_CIPHER_CTX_free(ctx) }
        var ok = EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), nil, nil, nil)
        ok &= EVP_CIPHER_CTX_ctrl(ctx, clarion_EVP_CTRL_GCM_SET_IVLEN(), Int32(Self.nonceLength), nil)
        ok &= EVP_DecryptInit_ex(ctx, nil, nil, key, nonce)
        var length: Int32 = 0
        if !associatedData.isEmpty {
            ok &= EVP_DecryptUpdate(ctx, nil, &length, associatedData, Int32(associatedData.count))
        }
        if !ciphertext.isEmpty {
            ok &= plaintext.withUnsafeMutableBufferPointer { out in
                EVP_DecryptUpdate(ctx, out.baseAddress, &length, ciphertext, Int32(ciphertext.count))
            }
        }
        ok &= tag.withUnsafeMutableBytes { EVP_CIPHER_CTX_ctrl(ctx, clarion_EVP_CTRL_GCM_SET_TAG(), Int32(Self.tagLength), $0.baseAddress) }
        var finalLength: Int32 = 0
        var scratch = [UInt8](repeating: 0, count: 16)
        let final = EVP_DecryptFinal_ex(ctx, &scratch, &finalLength)
        guard ok == 1, final == 1 else {
            throw CryptoError(.decryptionFailed, "authentication failed: wrong key or altered ciphertext")
        }
        return plaintext
    }
}

extension Array where Element == UInt8 {
    /// Bytes from hexadecimal text; nil when the text is not an even number of hex digits.
    public init?(hexString: String) {
        let utf8 = Array(hexString.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        func value(_ c: UInt8) -> UInt8? {
            switch c {
            case 0x30...0x39: return c - 0x30
            case 0x61...0x66: return c - 0x61 + 10
            case 0x41...0x46: return c - 0x41 + 10
            default: return nil
            }
        }
        var out = [UInt8]()
        out.reserveCapacity(utf8.count / 2)
        var i = 0
        while i < utf8.count {
            guard let hi = value(utf8[i]), let lo = value(utf8[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
            i += 2
        }
        self = out
    }
}
