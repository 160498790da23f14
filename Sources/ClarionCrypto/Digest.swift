internal import COpenSSL
import Foundation

/// The SHA-256 implementation fetched once. OpenSSL 3's one-shot calls (`EVP_Digest` with `EVP_sha256()`,
/// `HMAC()`) look the algorithm up in the provider store on every call, which costs more than hashing the SigV4
/// path's short inputs. The fetched method is immutable and safe to share.
nonisolated(unsafe) private let fetchedSHA256: OpaquePointer = {
    guard let md = EVP_MD_fetch(nil, "SHA256", nil) else { fatalError("OpenSSL has no SHA256") }
    return md
}()

/// SHA-256 and HMAC-SHA256 (RFC 2104 over the fetched SHA-256).
///
/// These run on hot paths (SigV4 verification, delivery ids), so they take any contiguous bytes and allocate
/// only the 32-byte result and one digest context.
public enum Digest {
    public static let sha256Length = 32
    static let blockLength = 64

    public static func sha256<D: ContiguousBytes>(_ data: D) -> [UInt8] {
        data.withUnsafeBytes { input in digest([input]) }
    }

    public static func sha256(_ string: String) -> [UInt8] {
        var string = string
        return string.withUTF8 { digest([UnsafeRawBufferPointer($0)]) }
    }

    public static func hmacSHA256<K: ContiguousBytes, D: ContiguousBytes>(key: K, data: D) -> [UInt8] {
        key.withUnsafeBytes { k in
            data.withUnsafeBytes { d in hmac(key: k, data: d) }
        }
    }

    public static func hmacSHA256(key: [UInt8], string: String) -> [UInt8] {
        var string = string
        return key.withUnsafeBytes { k in
            string.withUTF8 { hmac(key: k, data: UnsafeRawBufferPointer($0)) }
        }
    }

    /// SHA-256 of the concatenation of `parts`.
    private static func digest(_ parts: [UnsafeRawBufferPointer]) -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { fatalError("EVP_MD_CTX_new failed") }
        defer { EVP_MD_CTX_free(context) }
        precondition(EVP_DigestInit_ex2(context, fetchedSHA256, nil) == 1, "EVP_DigestInit_ex2(sha256) failed")
        for part in parts where part.count > 0 {
            precondition(EVP_DigestUpdate(context, part.baseAddress, part.count) == 1, "EVP_DigestUpdate failed")
        }
        var out = [UInt8](repeating: 0, count: sha256Length)
        out.withUnsafeMutableBytes { output in
            var length: UInt32 = 0
            precondition(EVP_DigestFinal_ex(context, output.baseAddress!.assumingMemoryBound(to: UInt8.self), &length) == 1,
                         "EVP_DigestFinal_ex failed")
        }
        return out
    }

    /// HMAC(K, m) = H((K' ^ opad) || H((K' ^ ipad) || m)), K' the key padded to the block (hashed first when
    /// longer than a block).
    private static func hmac(key: UnsafeRawBufferPointer, data: UnsafeRawBufferPointer) -> [UInt8] {
        var block = [UInt8](repeating: 0, count: blockLength)
        if key.count > blockLength {
            let hashed = digest([key])
            block.replaceSubrange(0..<hashed.count, with: hashed)
        } else if key.count > 0 {
            block.withUnsafeMutableBytes { $0.copyMemory(from: key) }
        }
        var inner = block
        for i in 0..<blockLength { inner[i] ^= 0x36; block[i] ^= 0x5c }
        let innerHash = inner.withUnsafeBytes { i in digest([i, data]) }
        return block.withUnsafeBytes { o in innerHash.withUnsafeBytes { h in digest([o, h]) } }
    }

    /// Constant-time comparison for MACs and signatures.
    public static func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        a.withUnsafeBufferPointer { a in b.withUnsafeBufferPointer { b in constantTimeEquals(a, b) } }
    }

    /// Constant-time comparison of two byte buffers (the time depends only on their lengths).
    public static func constantTimeEquals(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        guard a.count == b.count else { return false }
        var diff: UInt8 = 0
        for i in 0..<a.count { diff |= a[i] ^ b[i] }
        return diff == 0
    }
}

extension Array where Element == UInt8 {
    /// Lower-case hexadecimal, as SigV4 and logs want it.
    public var hexString: String {
        String(unsafeUninitializedCapacity: count * 2) { out in
            for (i, byte) in enumerated() { (out[2 * i], out[2 * i + 1]) = Self.hexDigits(byte) }
            return count * 2
        }
    }

    /// The lower-case hexadecimal digits appended to `out` (bytes built for hashing, without a String between).
    public func appendHex(to out: inout [UInt8]) {
        out.reserveCapacity(out.count + 2 * count)
        for byte in self {
            let (high, low) = Self.hexDigits(byte)
            out.append(high)
            out.append(low)
        }
    }

    @inline(__always)
    static func hexDigits(_ byte: UInt8) -> (UInt8, UInt8) {
        func digit(_ nibble: UInt8) -> UInt8 { nibble < 10 ? 0x30 + nibble : 0x57 + nibble }  // '0'..'9', 'a'..'f'
        return (digit(byte >> 4), digit(byte & 0x0f))
    }
}
