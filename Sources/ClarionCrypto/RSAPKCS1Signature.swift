internal import COpenSSL
import Foundation

/// The digests of RSASSA-PKCS1-v1_5 signatures outside JOSE: SNS signs HTTP/S deliveries with SHA1withRSA
/// (SignatureVersion 1) or SHA256withRSA (SignatureVersion 2).
public enum RSADigest: Sendable, Hashable {
    case sha1, sha256
}

extension SigningKey {
    /// An RSASSA-PKCS1-v1_5 signature of `message` with `digest` (RFC 8017 §8.2). Only RSA keys sign this way.
    public func rsaPKCS1Signature<M: ContiguousBytes>(_ message: M, digest: RSADigest) throws(CryptoError) -> [UInt8] {
        guard algorithm == .rs256 else { throw CryptoError(.signingFailed, "a PKCS#1 v1.5 signature needs an RSA key") }
        guard let ctx = EVP_MD_CTX_new() else { throw CryptoError(.signingFailed, "EVP_MD_CTX_new failed") }
        defer { EVP_MD_CTX_free(ctx) }
        let md = digest == .sha1 ? EVP_sha1() : EVP_sha256()
        guard EVP_DigestSignInit(ctx, nil, md, nil, pkey) == 1 else {
            throw CryptoError(.signingFailed, "EVP_DigestSignInit: \(OpenSSLErrors.drain())")
        }
        let signature: [UInt8]? = message.withUnsafeBytes { input -> [UInt8]? in
            let data = input.baseAddress?.assumingMemoryBound(to: UInt8.self)
            var length = 0
            guard EVP_DigestSign(ctx, nil, &length, data, input.count) == 1 else { return nil }
            var out = [UInt8](repeating: 0, count: length)
            let ok = out.withUnsafeMutableBufferPointer { EVP_DigestSign(ctx, $0.baseAddress, &length, data, input.count) }
            guard ok == 1 else { return nil }
            return Array(out.prefix(length))
        }
        guard let signature else { throw CryptoError(.signingFailed, "EVP_DigestSign: \(OpenSSLErrors.drain())") }
        return signature
    }
}
