internal import COpenSSL
import Foundation

/// The JWS algorithms Clarion signs and verifies: ES256 for APNs provider tokens and VAPID,
/// RS256 for Google service-account assertions.
public enum SigningAlgorithm: String, Sendable, Hashable, CaseIterable {
    /// ECDSA on P-256 with SHA-256; the JOSE signature is the raw 64-byte `R || S`.
    case es256 = "ES256"
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    case rs256 = "RS256"
}

/// A private key that signs with one `SigningAlgorithm`, decided by the key itself
/// (a P-256 key signs ES256, an RSA key RS256; other key types are refused at load time).
///
/// `@unchecked Sendable`: the wrapped `EVP_PKEY` is never mutated after init, and OpenSSL 3 allows a
/// fully built key to be used from several threads at once as long as each operation has its own
/// `EVP_MD_CTX`, which `sign` creates per call.
public final class SigningKey: @unchecked Sendable {
    let pkey: OpaquePointer
    public let algorithm: SigningAlgorithm

    /// Loads an unencrypted private key from PEM: PKCS#8 `PRIVATE KEY` (an APNs `.p8` file, a Google
    /// service account's `private_key`), `EC PRIVATE KEY` (SEC 1) or `RSA PRIVATE KEY` (PKCS#1).
    public convenience init(pem: String) throws(CryptoError) {
        let blocks = try PEMBlock.parseAll(pem)
        guard let block = blocks.first(where: { $0.label.hasSuffix("PRIVATE KEY") }) else {
            let found = blocks.map(\.label).joined(separator: ", ")
            throw CryptoError(.invalidPEM, "expected a PRIVATE KEY PEM block, found \(found.isEmpty ? "none" : found)")
        }
        try self.init(block: block)
    }

    /// Loads a private key from one PEM block (see `init(pem:)` for the accepted labels).
    public convenience init(block: PEMBlock) throws(CryptoError) {
        let type: Int32?
        switch block.label {
        case "PRIVATE KEY": type = nil
        case "EC PRIVATE KEY": type = EVP_PKEY_EC
        case "RSA PRIVATE KEY": type = EVP_PKEY_RSA
        case "ENCRYPTED PRIVATE KEY":
            throw CryptoError(.invalidPEM, "the private key is encrypted; an unencrypted key is required")
        default:
            throw CryptoError(.invalidPEM, "unsupported private key PEM label \(block.label)")
        }
        let key: OpaquePointer? = block.der.withUnsafeBufferPointer { buffer in
            var pointer = buffer.baseAddress
            if let type {
                return d2i_PrivateKey(type, nil, &pointer, buffer.count)
            }
            return d2i_AutoPrivateKey(nil, &pointer, buffer.count)
        }
        guard let key else {
            throw CryptoError(.invalidKey, "the \(block.label) block is not a readable key: \(OpenSSLErrors.drain())")
        }
        try self.init(taking: key)
        try KeyKind.checkPair(pkey, label: block.label)
    }

    /// Takes ownership of `pkey` (freed on failure too).
    init(taking pkey: OpaquePointer) throws(CryptoError) {
        do {
            self.algorithm = try KeyKind.algorithm(of: pkey)
        } catch {
            EVP_PKEY_free(pkey)
            throw error
        }
        self.pkey = pkey
    }

    deinit { EVP_PKEY_free(pkey) }

    /// Signs `message` and returns the JOSE signature: raw `R || S` (64 bytes) for ES256, the
    /// PKCS#1 v1.5 signature for RS256.
    public func sign<M: ContiguousBytes>(_ message: M) throws(CryptoError) -> [UInt8] {
        guard let ctx = EVP_MD_CTX_new() else { throw CryptoError(.signingFailed, "EVP_MD_CTX_new failed") }
        defer { EVP_MD_CTX_free(ctx) }
        guard EVP_DigestSignInit(ctx, nil, EVP_sha256(), nil, pkey) == 1 else {
            throw CryptoError(.signingFailed, "EVP_DigestSignInit: \(OpenSSLErrors.drain())")
        }
        var length = 0
        let signature: [UInt8]? = message.withUnsafeBytes { input -> [UInt8]? in
            let data = input.baseAddress?.assumingMemoryBound(to: UInt8.self)
            guard EVP_DigestSign(ctx, nil, &length, data, input.count) == 1 else { return nil }
            var out = [UInt8](repeating: 0, count: length)
            let ok = out.withUnsafeMutableBufferPointer { EVP_DigestSign(ctx, $0.baseAddress, &length, data, input.count) }
            guard ok == 1 else { return nil }
            return Array(out.prefix(length))
        }
        guard let signature else {
            throw CryptoError(.signingFailed, "EVP_DigestSign: \(OpenSSLErrors.drain())")
        }
        switch algorithm {
        case .es256:
            guard let raw = ECSignature.rawFromDER(signature, componentLength: ECSignature.p256ComponentLength) else {
                throw CryptoError(.signingFailed, "OpenSSL produced an ECDSA signature that is not valid DER")
            }
            return raw
        case .rs256:
            return signature
        }
    }

    /// The matching public key.
    public var verifyingKey: VerifyingKey {
        // i2d_PUBKEY writes only the public half; reading it back gives an independent public key.
        try! VerifyingKey(subjectPublicKeyInfoDER: subjectPublicKeyInfoDER)
    }

    /// DER `SubjectPublicKeyInfo` of the public half.
    ///
    /// `pkey` is only valid while this object lives: `deinit` frees it. Code outside the class that took
    /// `key.pkey` and passed it to C after its last use of `key` (`KeyKind.subjectPublicKeyInfo(key.pkey)` on a
    /// temporary key) let an optimised build release the key first, and `i2d_PUBKEY` read a freed `EVP_PKEY`.
    /// Inside a member `self` is alive for the whole call; `withExtendedLifetime` says so where it matters.
    var subjectPublicKeyInfoDER: [UInt8] {
        withExtendedLifetime(self) { KeyKind.subjectPublicKeyInfo(pkey) }
    }

    /// The key as PKCS#8 DER (`PrivateKeyInfo`), the form inside a `.p8` file.
    public var pkcs8DER: [UInt8] {
        guard let info = EVP_PKEY2PKCS8(pkey) else {
            preconditionFailure("EVP_PKEY2PKCS8 failed for a loaded key: \(OpenSSLErrors.drain())")
        }
        defer { PKCS8_PRIV_KEY_INFO_free(info) }
        let length = i2d_PKCS8_PRIV_KEY_INFO(info, nil)
        precondition(length > 0, "i2d_PKCS8_PRIV_KEY_INFO failed")
        var out = [UInt8](repeating: 0, count: Int(length))
        out.withUnsafeMutableBufferPointer { buffer in
            var pointer = buffer.baseAddress
            _ = i2d_PKCS8_PRIV_KEY_INFO(info, &pointer)
        }
        return out
    }

    /// The key as a PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`), exactly the shape of an APNs `.p8`
    /// file and of a Google service account's `private_key`. This is secret material: never log it.
    public var pkcs8PEM: String { PEMBlock(label: "PRIVATE KEY", der: pkcs8DER).text }
}

/// A public key that verifies one `SigningAlgorithm`: a P-256 key verifies ES256, an RSA key RS256.
///
/// `@unchecked Sendable` for the same reason as `SigningKey`.
public final class VerifyingKey: @unchecked Sendable {
    let pkey: OpaquePointer
    public let algorithm: SigningAlgorithm

    /// Loads a public key from PEM: `PUBLIC KEY` (SubjectPublicKeyInfo), `RSA PUBLIC KEY` (PKCS#1),
    /// `CERTIFICATE` (the certificate's key), or any private key block (its public half).
    public convenience init(pem: String) throws(CryptoError) {
        let blocks = try PEMBlock.parseAll(pem)
        guard let block = blocks.first(where: { Self.acceptedLabel($0.label) }) else {
            let found = blocks.map(\.label).joined(separator: ", ")
            throw CryptoError(.invalidPEM, "expected a PUBLIC KEY or CERTIFICATE PEM block, found \(found.isEmpty ? "none" : found)")
        }
        switch block.label {
        case "PUBLIC KEY":
            try self.init(subjectPublicKeyInfoDER: block.der)
        case "RSA PUBLIC KEY":
            let key: OpaquePointer? = block.der.withUnsafeBufferPointer { buffer in
                var pointer = buffer.baseAddress
                return d2i_PublicKey(EVP_PKEY_RSA, nil, &pointer, buffer.count)
            }
            guard let key else {
                throw CryptoError(.invalidKey, "the RSA PUBLIC KEY block is not readable: \(OpenSSLErrors.drain())")
            }
            try self.init(taking: key)
        case "CERTIFICATE":
            let certificate: OpaquePointer? = block.der.withUnsafeBufferPointer { buffer in
                var pointer = buffer.baseAddress
                return d2i_X509(nil, &pointer, buffer.count)
            }
            guard let certificate else {
                throw CryptoError(.certificateFailed, "the CERTIFICATE block is not readable: \(OpenSSLErrors.drain())")
            }
            defer { X509_free(certificate) }
            guard let key = X509_get_pubkey(certificate) else {
                throw CryptoError(.certificateFailed, "the certificate has no usable public key: \(OpenSSLErrors.drain())")
            }
            try self.init(taking: key)
        default:
            let privateKey = try SigningKey(block: block)
            try self.init(subjectPublicKeyInfoDER: privateKey.subjectPublicKeyInfoDER)
        }
    }

    /// Loads a public key from DER `SubjectPublicKeyInfo` (the body of a `PUBLIC KEY` PEM block).
    public convenience init(subjectPublicKeyInfoDER der: [UInt8]) throws(CryptoError) {
        let key: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var pointer = buffer.baseAddress
            return d2i_PUBKEY(nil, &pointer, buffer.count)
        }
        guard let key else {
            throw CryptoError(.invalidKey, "not a readable SubjectPublicKeyInfo: \(OpenSSLErrors.drain())")
        }
        try self.init(taking: key)
    }

    init(taking pkey: OpaquePointer) throws(CryptoError) {
        do {
            self.algorithm = try KeyKind.algorithm(of: pkey)
        } catch {
            EVP_PKEY_free(pkey)
            throw error
        }
        self.pkey = pkey
    }

    deinit { EVP_PKEY_free(pkey) }

    private static func acceptedLabel(_ label: String) -> Bool {
        switch label {
        case "PUBLIC KEY", "RSA PUBLIC KEY", "CERTIFICATE", "PRIVATE KEY", "EC PRIVATE KEY", "RSA PRIVATE KEY": return true
        default: return false
        }
    }

    /// True when `signature` (JOSE form: raw `R || S` for ES256) is valid for `message`.
    /// A signature of the wrong shape is simply invalid; this never throws.
    public func verify<S: ContiguousBytes, M: ContiguousBytes>(signature: S, message: M) -> Bool {
        let encoded: [UInt8]
        switch algorithm {
        case .es256:
            let raw = signature.withUnsafeBytes { [UInt8]($0) }
            guard raw.count == 2 * ECSignature.p256ComponentLength, let der = ECSignature.derFromRaw(raw) else { return false }
            encoded = der
        case .rs256:
            encoded = signature.withUnsafeBytes { [UInt8]($0) }
        }
        guard let ctx = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(ctx) }
        guard EVP_DigestVerifyInit(ctx, nil, EVP_sha256(), nil, pkey) == 1 else {
            OpenSSLErrors.clear()
            return false
        }
        let result = message.withUnsafeBytes { input in
            EVP_DigestVerify(ctx, encoded, encoded.count, input.baseAddress?.assumingMemoryBound(to: UInt8.self), input.count)
        }
        if result != 1 { OpenSSLErrors.clear() }
        return result == 1
    }

    /// DER `SubjectPublicKeyInfo`.
    public var subjectPublicKeyInfoDER: [UInt8] { withExtendedLifetime(self) { KeyKind.subjectPublicKeyInfo(pkey) } }

    /// The key as a `-----BEGIN PUBLIC KEY-----` PEM.
    public var pem: String { PEMBlock(label: "PUBLIC KEY", der: subjectPublicKeyInfoDER).text }
}

/// Key inspection shared by `SigningKey` and `VerifyingKey`.
enum KeyKind {
    /// The one algorithm a key is used with. P-256 only for EC: ES256 is defined on that curve.
    static func algorithm(of pkey: OpaquePointer) throws(CryptoError) -> SigningAlgorithm {
        switch EVP_PKEY_get_base_id(pkey) {
        case EVP_PKEY_EC:
            var name = [CChar](repeating: 0, count: 64)
            var length = 0
            guard EVP_PKEY_get_group_name(pkey, &name, name.count, &length) == 1 else {
                OpenSSLErrors.clear()
                throw CryptoError(.invalidKey, "the EC key has no named curve")
            }
            let curve = String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            guard curve == "prime256v1" || curve == "P-256" || curve == "secp256r1" else {
                throw CryptoError(.invalidKey, "EC keys must be on P-256 for ES256, this one is on \(curve)")
            }
            return .es256
        case EVP_PKEY_RSA:
            let bits = EVP_PKEY_get_bits(pkey)
            guard bits >= 2048 else {
                throw CryptoError(.invalidKey, "RSA keys must be at least 2048 bits for RS256, this one has \(bits)")
            }
            return .rs256
        default:
            throw CryptoError(.invalidKey, "only P-256 EC and RSA keys are supported")
        }
    }

    /// Refuses a private key whose parts disagree. The d2i readers take a key's fields as written, so a damaged key
    /// (an RSA modulus that is not p·q, an EC public point that is not the private scalar's) loads, then signs what
    /// its own public half rejects: the provider would refuse every token it signs. OpenSSL's pairwise check (RSA:
    /// n = p·q and the exponents agree, no primality tests; EC: one point multiplication) catches it at load time.
    static func checkPair(_ pkey: OpaquePointer, label: String) throws(CryptoError) {
        guard let context = EVP_PKEY_CTX_new_from_pkey(nil, pkey, nil) else {
            throw CryptoError(.invalidKey, "EVP_PKEY_CTX_new_from_pkey: \(OpenSSLErrors.drain())")
        }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_pairwise_check(context) == 1 else {
            throw CryptoError(.invalidKey, "the \(label) block is damaged: its public and private parts do not match (\(OpenSSLErrors.drain()))")
        }
    }

    static func subjectPublicKeyInfo(_ pkey: OpaquePointer) -> [UInt8] {
        let length = i2d_PUBKEY(pkey, nil)
        precondition(length > 0, "i2d_PUBKEY failed for a loaded key")
        var out = [UInt8](repeating: 0, count: Int(length))
        out.withUnsafeMutableBufferPointer { buffer in
            var pointer = buffer.baseAddress
            _ = i2d_PUBKEY(pkey, &pointer)
        }
        return out
    }
}

/// OpenSSL's per-thread error queue. Every failure path drains it: a stale entry left behind would
/// make a later, unrelated `SSL_get_error` on the same thread (the HTTP/2 event loop) misreport.
enum OpenSSLErrors {
    /// The queued errors as one line, and an empty queue afterwards.
    static func drain() -> String {
        var messages: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
            messages.append(String(decoding: bytes, as: UTF8.self))
        }
        return messages.isEmpty ? "no OpenSSL detail" : messages.joined(separator: "; ")
    }

    static func clear() { ERR_clear_error() }
}
