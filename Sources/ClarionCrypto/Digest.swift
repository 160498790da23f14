internal import COpenSSL
import Foundation

/// SHA-256 and HMAC-SHA256 over OpenSSL's one-shot EVP calls.
///
/// These run on hot-ish paths (SigV4 verification, delivery ids), so they take any contiguous bytes
/// and allocate only the 32-byte result.
public enum Digest {
    public static let sha256Length = 32

    public static func sha256<D: ContiguousBytes>(_ data: D) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: sha256Length)
        data.withUnsafeBytes { input in
            out.withUnsafeMutableBytes { output in
                var length: UInt32 = 0
                let ok = EVP_Digest(input.baseAddress, input.count,
                                    output.baseAddress!.assumingMemoryBound(to: UInt8.self), &length,
                                    EVP_sha256(), nil)
                precondition(ok == 1, "EVP_Digest(sha256) failed")
            }
        }
        return out
    }

    public static func sha256(_ string: String) -> [UInt8] {
        sha256(Array(string.utf8))
    }

    public static func hmacSHA256<K: ContiguousBytes, D: ContiguousBytes>(key: K, data: D) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: sha256Length)
        key.withUnsafeBytes { k in
            data.withUnsafeBytes { d in
                out.withUnsafeMutableBytes { o in
                    var length: UInt32 = 0
                    // HMAC with an empty key needs a non-null pointer.
                    var zero: UInt8 = 0
                    let keyPointer = k.baseAddress ?? withUnsafePointer(to: &zero) { UnsafeRawPointer($0) }
                    let result = HMAC(EVP_sha256(), keyPointer, Int32(k.count),
                                      d.baseAddress?.assumingMemoryBound(to: UInt8.self), d.count,
                                      o.baseAddress!.assumingMemoryBound(to: UInt8.self), &length)
                    precondition(result != nil, "HMAC(sha256) failed")
                }
            }
        }
        return out
    }

    public static func hmacSHA256(key: [UInt8], string: String) -> [UInt8] {
        hmacSHA256(key: key, data: Array(string.utf8))
    }

    /// Constant-time comparison for MACs and signatures.
    public static func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var diff: UInt8 = 0
        for i in 0..<a.count { diff |= a[i] ^ b[i] }
        return diff == 0
    }
}

extension Array where Element == UInt8 {
    /// Lower-case hexadecimal, as SigV4 and logs want it.
    public var hexString: String {
        let digits: [UInt8] = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(count * 2)
        for byte in self {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
