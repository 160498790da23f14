/// The `aes128gcm` HTTP content coding (RFC 8188), the body format of every Web Push message (RFC 8291).
///
/// Body: a header `salt(16) || rs(uint32, big-endian) || idlen(1) || keyid(idlen)`, then records of at most
/// `rs` octets, each `AES-128-GCM(plaintext || delimiter || zero padding)`. The delimiter is 0x02 in the last
/// record and 0x01 in the others (RFC 8188 section 2). Keys (section 2.2, 2.3):
///
///     PRK   = HMAC-SHA-256(salt, IKM)
///     CEK   = HMAC-SHA-256(PRK, "Content-Encoding: aes128gcm" || 0x00 || 0x01)[0..16]
///     NONCE = HMAC-SHA-256(PRK, "Content-Encoding: nonce" || 0x00 || 0x01)[0..12] XOR SEQ
///
/// `SEQ` is the record number as a 96-bit big-endian integer. Encryption writes one record (RFC 8291 section 4
/// requires a single record for Web Push); decryption reads any number, as the emulator must accept what RFC 8188
/// allows and then apply Web Push's stricter rules itself.
public enum AES128GCMContentCoding {
    public static let saltLength = 16
    /// The smallest record size RFC 8188 section 2 allows: one octet of delimiter plus the 16-octet tag, plus one.
    public static let minimumRecordSize: UInt32 = 18
    static let cekInfo = Array("Content-Encoding: aes128gcm".utf8) + [0]
    static let nonceInfo = Array("Content-Encoding: nonce".utf8) + [0]

    /// The parsed header of a body.
    public struct Header: Sendable, Equatable {
        public var salt: [UInt8]
        public var recordSize: UInt32
        public var keyID: [UInt8]
        /// Octets the header takes at the start of the body.
        public var length: Int { saltLength + 5 + keyID.count }
    }

    /// The content-encryption key and base nonce for `ikm` and `salt`.
    public static func keys(inputKeyingMaterial ikm: [UInt8], salt: [UInt8]) -> (contentEncryptionKey: [UInt8], nonce: [UInt8]) {
        let prk = HKDF.extract(salt: salt, inputKeyingMaterial: ikm)
        return (HKDF.expand(pseudorandomKey: prk, info: cekInfo, length: AES128GCM.keyLength),
                HKDF.expand(pseudorandomKey: prk, info: nonceInfo, length: AES128GCM.nonceLength))
    }

    /// One record holding `plaintext`, its 0x02 delimiter and `paddingLength` zero octets. Throws when that does
    /// not fit `recordSize`.
    public static func encrypt(plaintext: [UInt8], inputKeyingMaterial ikm: [UInt8], salt: [UInt8], keyID: [UInt8],
                               recordSize: UInt32 = 4096, paddingLength: Int = 0) throws(CryptoError) -> [UInt8] {
        guard salt.count == saltLength else {
            throw CryptoError(.invalidKey, "the aes128gcm salt is 16 octets, got \(salt.count)")
        }
        guard keyID.count <= 255 else { throw CryptoError(.invalidKey, "an aes128gcm keyid is at most 255 octets") }
        guard recordSize >= minimumRecordSize else {
            throw CryptoError(.invalidKey, "the aes128gcm record size must be at least \(minimumRecordSize)")
        }
        guard paddingLength >= 0, plaintext.count + 1 + paddingLength + AES128GCM.tagLength <= Int(recordSize) else {
            throw CryptoError(.invalidKey, "\(plaintext.count) octets of plaintext and \(paddingLength) of padding do not fit one record of \(recordSize)")
        }
        let (cek, nonce) = keys(inputKeyingMaterial: ikm, salt: salt)
        var record = plaintext
        record.reserveCapacity(plaintext.count + 1 + paddingLength)
        record.append(0x02)
        record.append(contentsOf: repeatElement(0, count: paddingLength))
        var body = salt
        body.reserveCapacity(saltLength + 5 + keyID.count + record.count + AES128GCM.tagLength)
        body.append(contentsOf: [UInt8(recordSize >> 24), UInt8(recordSize >> 16 & 0xff), UInt8(recordSize >> 8 & 0xff), UInt8(recordSize & 0xff)])
        body.append(UInt8(keyID.count))
        body.append(contentsOf: keyID)
        body.append(contentsOf: AES128GCM.seal(key: cek, nonce: nonce, plaintext: record))  // SEQ 0: the nonce as derived
        return body
    }

    /// The header at the start of `body`.
    public static func header(of body: [UInt8]) throws(CryptoError) -> Header {
        guard body.count >= saltLength + 5 else {
            throw CryptoError(.decryptionFailed, "an aes128gcm body starts with a header of at least 21 octets, this one has \(body.count)")
        }
        let recordSize = body[16..<20].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        let idLength = Int(body[20])
        guard body.count >= saltLength + 5 + idLength else {
            throw CryptoError(.decryptionFailed, "the aes128gcm header's keyid is cut short")
        }
        return Header(salt: Array(body[0..<saltLength]), recordSize: recordSize, keyID: Array(body[21..<(21 + idLength)]))
    }

    /// The plaintext of every record, padding removed. Refuses a record that does not authenticate, a record
    /// larger than `rs`, a missing or misplaced delimiter, and non-zero padding (RFC 8188 section 2, 4).
    public static func decrypt(body: [UInt8], inputKeyingMaterial ikm: [UInt8]) throws(CryptoError) -> [UInt8] {
        let header = try header(of: body)
        guard header.recordSize >= minimumRecordSize else {
            throw CryptoError(.decryptionFailed, "the aes128gcm record size \(header.recordSize) is below the minimum of 18")
        }
        let (cek, baseNonce) = keys(inputKeyingMaterial: ikm, salt: header.salt)
        let recordSize = Int(header.recordSize)
        var offset = header.length
        guard offset < body.count else { throw CryptoError(.decryptionFailed, "the aes128gcm body has no record") }
        var sequence: UInt64 = 0
        var plaintext: [UInt8] = []
        while offset < body.count {
            let end = min(offset + recordSize, body.count)
            let isLast = end == body.count
            var nonce = baseNonce
            for i in 0..<8 { nonce[11 - i] ^= UInt8(truncatingIfNeeded: sequence >> (8 * UInt64(i))) }
            guard var record = AES128GCM.open(key: cek, nonce: nonce, sealed: body[offset..<end]) else {
                throw CryptoError(.decryptionFailed, "record \(sequence) does not authenticate: wrong key or altered body")
            }
            while let last = record.last, last == 0 { record.removeLast() }
            guard let delimiter = record.popLast() else {
                throw CryptoError(.decryptionFailed, "record \(sequence) has no padding delimiter")
            }
            guard delimiter == (isLast ? 0x02 : 0x01) else {
                throw CryptoError(.decryptionFailed, "record \(sequence) ends with delimiter \(delimiter), expected \(isLast ? 2 : 1)")
            }
            plaintext.append(contentsOf: record)
            offset = end
            sequence += 1
        }
        return plaintext
    }
}
