/// Message encryption for Web Push (RFC 8291): an ECDH key agreement between a per-message key of the
/// application server and the subscription's `p256dh` key, mixed with the subscription's 16-octet `auth`
/// secret, gives the input keying material of one `aes128gcm` record (RFC 8188).
///
/// RFC 8291 section 3.3 and 3.4:
///
///     ecdh_secret = ECDH(as_private, ua_public)
///     PRK_key     = HMAC-SHA-256(auth_secret, ecdh_secret)
///     key_info    = "WebPush: info" || 0x00 || ua_public || as_public
///     IKM         = HMAC-SHA-256(PRK_key, key_info || 0x01)
///
/// then `aes128gcm` with a random 16-octet salt, `keyid` = as_public (65 octets) and one record (section 4).
public enum WebPushEncryption {
    /// The body size every push service must accept (RFC 8030 section 7.2, RFC 8291 section 4).
    public static let maximumBodyLength = 4096
    /// The header of a Web Push body: salt, record size, keyid length and the 65-octet key.
    public static let headerLength = 86
    /// 4096 - 86 header - 16 tag - 1 delimiter (RFC 8291 section 4: "at most 3993 octets of plaintext").
    public static let maximumPlaintextLength = maximumBodyLength - headerLength - 16 - 1
    public static let authSecretLength = 16
    static let keyInfoPrefix = Array("WebPush: info".utf8) + [0]

    /// The `aes128gcm` body for `plaintext`. `ephemeralKey` and `salt` are fresh per message in production
    /// (RFC 8291 section 3.1); tests pass the RFC's fixed ones.
    public static func encrypt(plaintext: [UInt8], subscriberPublicKey: P256PublicKey, authSecret: [UInt8],
                               ephemeralKey: P256KeyAgreementKey = .generate(), salt: [UInt8] = SecureRandom.bytes(16),
                               paddingLength: Int = 0) throws(CryptoError) -> [UInt8] {
        guard authSecret.count == authSecretLength else {
            throw CryptoError(.invalidKey, "the Web Push auth secret is 16 octets, got \(authSecret.count)")
        }
        guard plaintext.count + paddingLength <= maximumPlaintextLength else {
            throw CryptoError(.invalidKey, "a Web Push message holds at most \(maximumPlaintextLength) octets, got \(plaintext.count + paddingLength)")
        }
        let ecdhSecret = try ephemeralKey.sharedSecret(with: subscriberPublicKey)
        let ikm = inputKeyingMaterial(ecdhSecret: ecdhSecret, authSecret: authSecret,
                                      subscriberPublicKey: subscriberPublicKey.uncompressed, serverPublicKey: ephemeralKey.publicKey)
        return try AES128GCMContentCoding.encrypt(plaintext: plaintext, inputKeyingMaterial: ikm, salt: salt,
                                                  keyID: ephemeralKey.publicKey, recordSize: UInt32(maximumBodyLength),
                                                  paddingLength: paddingLength)
    }

    /// What a browser does with a push (RFC 8291 section 3.4 from the user agent's side): the sender's key is the
    /// header's keyid; the body must be a single record (section 4).
    public static func decrypt(body: [UInt8], subscriberKey: P256KeyAgreementKey, authSecret: [UInt8]) throws(CryptoError) -> [UInt8] {
        let header = try AES128GCMContentCoding.header(of: body)
        guard header.keyID.count == 65 else {
            throw CryptoError(.decryptionFailed, "the keyid must be the sender's 65-octet P-256 key, it has \(header.keyID.count) octets")
        }
        guard body.count - header.length <= Int(header.recordSize) else {
            throw CryptoError(.decryptionFailed, "a Web Push message is one record (RFC 8291 section 4), this body holds more")
        }
        let sender = try P256PublicKey(uncompressed: header.keyID)
        let ecdhSecret = try subscriberKey.sharedSecret(with: sender)
        let ikm = inputKeyingMaterial(ecdhSecret: ecdhSecret, authSecret: authSecret,
                                      subscriberPublicKey: subscriberKey.publicKey, serverPublicKey: header.keyID)
        return try AES128GCMContentCoding.decrypt(body: body, inputKeyingMaterial: ikm)
    }

    /// IKM from the shared secret, the auth secret and both public keys (RFC 8291 section 3.3).
    public static func inputKeyingMaterial(ecdhSecret: [UInt8], authSecret: [UInt8], subscriberPublicKey: [UInt8],
                                           serverPublicKey: [UInt8]) -> [UInt8] {
        let prkKey = HKDF.extract(salt: authSecret, inputKeyingMaterial: ecdhSecret)
        return HKDF.expand(pseudorandomKey: prkKey, info: keyInfoPrefix + subscriberPublicKey + serverPublicKey, length: 32)
    }
}
