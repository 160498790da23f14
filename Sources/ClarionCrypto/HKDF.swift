/// HKDF with HMAC-SHA256 (RFC 5869), the key derivation of RFC 8188 and RFC 8291.
///
/// Only what those need: `expand` to at most one hash length (RFC 8188 and 8291 never ask for more than
/// 32 bytes), so the expansion is the single block `T(1) = HMAC(PRK, info || 0x01)`.
public enum HKDF {
    /// `PRK = HMAC-SHA256(salt, IKM)` (RFC 5869 section 2.2).
    public static func extract(salt: [UInt8], inputKeyingMaterial: [UInt8]) -> [UInt8] {
        Digest.hmacSHA256(key: salt, data: inputKeyingMaterial)
    }

    /// The first `length` bytes of `T(1)` (RFC 5869 section 2.3), `length` at most 32.
    public static func expand(pseudorandomKey: [UInt8], info: [UInt8], length: Int) -> [UInt8] {
        precondition(length > 0 && length <= Digest.sha256Length, "one HKDF-SHA256 block is 32 bytes")
        return Array(Digest.hmacSHA256(key: pseudorandomKey, data: info + [0x01]).prefix(length))
    }
}
