#if canImport(Glibc)
import Glibc
#endif
internal import COpenSSL

/// What Clarion reads from an X.509 certificate: its identity (SHA-256 of the DER, which keys client-certificate
/// pools) and the few subject fields and extensions push providers give meaning to (APNs puts the bundle id in the
/// subject's UID and marks the environment with extensions). A value: no OpenSSL handle is kept.
public struct TLSCertificate: Sendable, Hashable {
    /// The certificate, DER.
    public let der: [UInt8]
    /// Lowercase hex SHA-256 of `der`: the certificate's identity (a renewed certificate has a new one).
    public let sha256: String
    /// Subject CN, if any.
    public let subjectCommonName: String?
    /// Subject UID (0.9.2342.19200300.100.1.1), if any: the bundle id in an APNs certificate.
    public let subjectUserID: String?
    /// Subject OU, if any (an APNs certificate's team id).
    public let subjectOrganizationalUnit: String?
    /// Expiry as seconds since the Unix epoch; nil if unreadable.
    public let notAfter: Int64?
    /// Dotted OIDs of every extension present (e.g. "2.5.29.19" basic constraints).
    public let extensionOIDs: Set<String>

    /// Reads the first certificate of a PEM string.
    public init(pem: String) throws(TLSConfigurationError) {
        let certificates = try readCertificates(pem: pem)
        defer { certificates.forEach { X509_free($0) } }
        self.init(x509: certificates[0])
    }

    /// Reads `x509` without taking ownership.
    init(x509: OpaquePointer) {
        var der: [UInt8] = []
        let length = i2d_X509(x509, nil)
        if length > 0 {
            der = [UInt8](repeating: 0, count: Int(length))
            der.withUnsafeMutableBufferPointer { buffer in
                var pointer = buffer.baseAddress
                _ = i2d_X509(x509, &pointer)
            }
        }
        self.der = der
        var digest = [UInt8](repeating: 0, count: 32)
        var digestLength: UInt32 = 0
        _ = X509_digest(x509, EVP_sha256(), &digest, &digestLength)
        sha256 = hexString(digest.prefix(Int(digestLength)))
        let subject = X509_get_subject_name(x509)
        subjectCommonName = nameEntry(subject, NID_commonName)
        subjectUserID = nameEntry(subject, NID_userId)
        subjectOrganizationalUnit = nameEntry(subject, NID_organizationalUnitName)
        var time = tm()
        if let notAfter = X509_get0_notAfter(x509), ASN1_TIME_to_tm(notAfter, &time) == 1 {
            self.notAfter = Int64(timegm(&time))
        } else {
            notAfter = nil
        }
        var oids = Set<String>()
        for index in 0..<max(0, X509_get_ext_count(x509)) {
            guard let ext = X509_get_ext(x509, index), let object = X509_EXTENSION_get_object(ext),
                  let oid = dottedOID(object) else { continue }
            oids.insert(oid)
        }
        extensionOIDs = oids
        ERR_clear_error()
    }
}

/// The certificate a TLS client presented to an `HTTP2Server` that asked for one, and whether it chained to the
/// server's trusted CAs. The handshake completes either way (unless the server requires a verified certificate):
/// the handler decides, as APNs answers `403 BadCertificate` rather than dropping the connection.
public struct TLSPeerCertificate: Sendable, Hashable {
    public let certificate: TLSCertificate
    /// nil when the certificate verified against the server's `TLSClientCertificateRequest.trustedCAPEM`; else
    /// OpenSSL's reason (e.g. "unable to get local issuer certificate").
    public let verificationError: String?

    public init(certificate: TLSCertificate, verificationError: String?) {
        self.certificate = certificate
        self.verificationError = verificationError
    }

    public var isVerified: Bool { verificationError == nil }
}

/// A server's request for TLS client certificates (mutual TLS).
public struct TLSClientCertificateRequest: Sendable {
    /// CA certificates (PEM) client certificates are verified against; their names go in the CertificateRequest.
    /// nil: any certificate is asked for and none verifies (the handler may still recognise one by fingerprint).
    public var trustedCAPEM: String?
    /// true: a handshake without a certificate that verifies fails (the client gets a TLS alert). false: every
    /// handshake completes and the handler sees `peerCertificate` (nil when the client sent none).
    public var requireVerified: Bool

    public init(trustedCAPEM: String?, requireVerified: Bool = false) {
        self.trustedCAPEM = trustedCAPEM
        self.requireVerified = requireVerified
    }
}

/// The dotted form of `object` ("2.5.29.19"), whatever its length; nil if OpenSSL cannot write it.
///
/// `OBJ_obj2txt` returns, like `snprintf`, the length the whole text needs, and writes at most `size - 1` bytes
/// of it: a result not below the buffer size means the text was cut, so it is written again into a buffer that
/// fits. (OIDs under a private enterprise arc can be long; a cut one never matched what a caller looked for.)
func dottedOID(_ object: OpaquePointer) -> String? {
    var size = 128
    while true {
        var buffer = [CChar](repeating: 0, count: size)
        let needed = Int(OBJ_obj2txt(&buffer, Int32(size), object, 1))
        guard needed > 0 else { return nil }
        if needed < size {
            return String(decoding: buffer.prefix(needed).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        guard size < needed + 1, needed < 1 << 20 else { return nil }  // never loops: the size grows each time
        size = needed + 1
    }
}

/// The text of the first `nid` entry of `name`, as UTF-8.
private func nameEntry(_ name: OpaquePointer?, _ nid: Int32) -> String? {
    guard let name else { return nil }
    let index = X509_NAME_get_index_by_NID(name, nid, -1)
    guard index >= 0, let entry = X509_NAME_get_entry(name, index), let data = X509_NAME_ENTRY_get_data(entry) else {
        return nil
    }
    var utf8: UnsafeMutablePointer<UInt8>?
    let length = ASN1_STRING_to_UTF8(&utf8, data)
    guard length >= 0, let utf8 else { return nil }
    defer { CRYPTO_free(utf8, nil, 0) }
    return String(decoding: UnsafeBufferPointer(start: utf8, count: Int(length)), as: UTF8.self)
}

func hexString(_ bytes: some Sequence<UInt8>) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var out: [UInt8] = []
    for byte in bytes {
        out.append(digits[Int(byte >> 4)])
        out.append(digits[Int(byte & 0x0f)])
    }
    return String(decoding: out, as: UTF8.self)
}
