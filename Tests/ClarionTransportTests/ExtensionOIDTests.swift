@testable import ClarionTransport
import Testing

@Suite struct ExtensionOIDTests {
    /// Rule: OBJ_obj2txt returns the length the whole text needs, like snprintf: when that is not less than the
    /// buffer, the text was cut. A long extension OID is read whole.
    @Test func aLongExtensionOIDIsReadWhole() throws {
        let long = "1.3.6.1.4.1.55555." + (1...30).map { String(100_000 + $0) }.joined(separator: ".")
        #expect(long.utf8.count > 200)
        let identity = try CertificateAuthority.generate().issueClientCertificate(
            subject: [("CN", "oid")], markerOIDs: [long, "1.2.840.113635.100.6.3.1"])
        let certificate = try identity.leafCertificate()
        #expect(certificate.extensionOIDs.contains(long))
        #expect(certificate.extensionOIDs.contains("1.2.840.113635.100.6.3.1"))
        #expect(certificate.extensionOIDs.contains("2.5.29.19"))
    }
}
