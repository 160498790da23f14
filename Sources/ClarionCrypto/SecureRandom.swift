internal import COpenSSL

/// Cryptographically secure random bytes (OpenSSL's CSPRNG).
public enum SecureRandom {
    public static func bytes(_ count: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        guard count > 0 else { return out }
        let ok = out.withUnsafeMutableBytes { RAND_bytes($0.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(count)) }
        precondition(ok == 1, "RAND_bytes failed")
        return out
    }
}
