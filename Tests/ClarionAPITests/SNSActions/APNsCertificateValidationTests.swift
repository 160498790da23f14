import ClarionProviders
import ClarionCrypto
@testable import ClarionHTTP1
import ClarionTransport
import ClarionStore
import ClarionTestSupport
import Foundation
import Testing
@testable import ClarionAPI

/// APNs certificate-based auth at the API edge (docs/providers.md C.7): the certificate in PlatformPrincipal and its
/// key in PlatformCredential must load and match when an application is created or changed, over the SNS actions
/// and the native API alike; token, GCM and ADM credentials are still only checked for presence.
@Suite("APNs certificate credentials at the API (SNS actions, native API)", .serialized)
struct APNsCertificateValidationTests {
    static let authority = try! CertificateAuthority.generate(commonName: "API test CA")
    static let push = try! authority.issueClientCertificate(subject: [("UID", "com.example.api"), ("CN", "Apple Push Services: com.example.api")],
                                                            keyType: .rsa2048)
    static let other = try! authority.issueClientCertificate(subject: [("UID", "com.example.other")])

    /// SNS's read-only AppleCertificateExpiryDate for a certificate: its notAfter, ISO 8601 in UTC.
    static func expiry(_ identity: TLSIdentity) throws -> String {
        let notAfter = try #require(try TLSCertificate(pem: identity.certificateChainPEM).notAfter)
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter.string(from: Date(timeIntervalSince1970: TimeInterval(notAfter)))
    }

    /// The SNS action table over a fresh database, called directly (the HTTP and SigV4 layers are tested elsewhere).
    struct Actions {
        let pool: PGPool
        let batcher: PublishBatcher
        let context: SNSActionContext
        let table: SNSActionTable

        init() throws {
            pool = PGPool(conninfo: try TestPostgres.migratedDatabase(prefix: "apnscert"), size: 2)
            batcher = PublishBatcher(pool: pool)
            context = SNSActionContext(pool: pool, masterKey: AESGCMKey.generate(), batcher: batcher, region: "us-east-1",
                                       settingsCheck: ProviderSettingsCheck())
            table = makeSNSActionTable(context: context)
        }

        func call(_ action: String, _ parameters: [String: String]) async throws(SNSError) -> XMLResponse {
            let request = SNSRequest(action: action, parameters: SNSParameters(parameters),
                                     caller: SNSCaller(accountID: "123456789012", accessKeyID: nil), region: "us-east-1",
                                     requestID: "test", http: HTTPRequest(method: .post, rawPath: "/", requestID: "test"))
            return try await table[action]!.handler(request)
        }

        /// The SNS error of `action`, nil when it succeeded.
        func refusal(_ action: String, _ parameters: [String: String]) async -> SNSError? {
            do {
                _ = try await call(action, parameters)
                return nil
            } catch {
                return error
            }
        }

        func stop() {
            batcher.shutdown()
            pool.shutdown()
        }
    }

    static func attributes(principal: String? = nil, credential: String? = nil, extra: [String: String] = [:]) -> [String: String] {
        var entries: [(String, String)] = []
        if let principal { entries.append(("PlatformPrincipal", principal)) }
        if let credential { entries.append(("PlatformCredential", credential)) }
        entries += extra.sorted { $0.key < $1.key }
        var parameters: [String: String] = [:]
        for (index, (key, value)) in entries.enumerated() {
            parameters["Attributes.entry.\(index + 1).key"] = key
            parameters["Attributes.entry.\(index + 1).value"] = value
        }
        return parameters
    }

    @Test("SNS C.7 CreatePlatformApplication (APNs certificate auth): a key of another certificate or an unreadable certificate is InvalidParameter naming the attribute; the matching pair is created")
    func createValidatesThePair() async throws {
        let actions = try Actions()
        defer { actions.stop() }
        var create = ["Name": "certapp", "Platform": "APNS"]
        let mismatched = await actions.refusal("CreatePlatformApplication",
                                               create.merging(Self.attributes(principal: Self.push.certificateChainPEM,
                                                                              credential: Self.other.privateKeyPEM)) { $1 })
        #expect(mismatched?.code == "InvalidParameter")
        #expect(mismatched?.message.contains("PlatformCredential") == true, "\(mismatched?.message ?? "")")
        #expect(mismatched?.message.contains("does not match") == true)
        let unreadable = await actions.refusal("CreatePlatformApplication",
                                               create.merging(Self.attributes(principal: "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
                                                                              credential: Self.push.privateKeyPEM)) { $1 })
        #expect(unreadable?.code == "InvalidParameter")
        #expect(unreadable?.message.contains("PlatformPrincipal") == true, "\(unreadable?.message ?? "")")
        // Nothing was stored by the refusals.
        #expect(await actions.refusal("GetPlatformApplicationAttributes",
                                      ["PlatformApplicationArn": "arn:aws:sns:us-east-1:123456789012:app/APNS/certapp"])?.code == "NotFound")

        // A team id does not make it token auth: the principal decides (C.7).
        create.merge(Self.attributes(principal: Self.push.certificateChainPEM, credential: Self.push.privateKeyPEM,
                                     extra: ["ApplePlatformTeamID": "TEAM123456"])) { $1 }
        #expect(await actions.refusal("CreatePlatformApplication", create) == nil)
        let record = try await actions.context.applications.get(
            accountKey: try await actions.context.accounts.account(accountID: "123456789012").key, region: "us-east-1", platform: "APNS", name: "certapp")
        #expect(PlatformApplicationActions.visibleAttributes(record)["AuthenticationMethod"] == "Certificate")
        // C.7 read-only AppleCertificateExpiryDate: the certificate's notAfter; SNS refuses it as an input.
        let expiry = try Self.expiry(Self.push)
        #expect(expiry.hasSuffix("Z") && expiry.count == 20, "\(expiry)")
        #expect(PlatformApplicationActions.visibleAttributes(record)["AppleCertificateExpiryDate"] == expiry)
        #expect(await actions.refusal("SetPlatformApplicationAttributes", [
            "PlatformApplicationArn": "arn:aws:sns:us-east-1:123456789012:app/APNS/certapp",
        ].merging(Self.attributes(extra: ["AppleCertificateExpiryDate": "2099-01-01T00:00:00Z"])) { $1 })?.code == "InvalidParameter")
        // Token auth (a key id) and other platforms keep their presence-only checks, and show no certificate expiry.
        #expect(await actions.refusal("CreatePlatformApplication",
                                      ["Name": "tokenapp", "Platform": "APNS"].merging(Self.attributes(principal: "ABCDE12345", credential: "k")) { $1 }) == nil)
        let token = try await actions.context.applications.get(
            accountKey: try await actions.context.accounts.account(accountID: "123456789012").key, region: "us-east-1", platform: "APNS", name: "tokenapp")
        #expect(PlatformApplicationActions.visibleAttributes(token)["AppleCertificateExpiryDate"] == nil)
    }

    @Test("SNS C.7 SetPlatformApplicationAttributes (APNs certificate auth): a new key alone is checked against the stored certificate, a new certificate alone against the stored key; a matching new pair is accepted")
    func setValidatesAgainstTheStoredHalf() async throws {
        let actions = try Actions()
        defer { actions.stop() }
        _ = try await actions.call("CreatePlatformApplication", ["Name": "certapp", "Platform": "APNS_SANDBOX"]
            .merging(Self.attributes(principal: Self.push.certificateChainPEM, credential: Self.push.privateKeyPEM)) { $1 })
        let arn = ["PlatformApplicationArn": "arn:aws:sns:us-east-1:123456789012:app/APNS_SANDBOX/certapp"]
        let keyOnly = await actions.refusal("SetPlatformApplicationAttributes", arn.merging(Self.attributes(credential: Self.other.privateKeyPEM)) { $1 })
        #expect(keyOnly?.code == "InvalidParameter")
        #expect(keyOnly?.message.contains("does not match") == true, "\(keyOnly?.message ?? "")")
        let certificateOnly = await actions.refusal("SetPlatformApplicationAttributes",
                                                    arn.merging(Self.attributes(principal: Self.other.certificateChainPEM)) { $1 })
        #expect(certificateOnly?.code == "InvalidParameter")
        #expect(await actions.refusal("SetPlatformApplicationAttributes",
                                      arn.merging(Self.attributes(principal: Self.other.certificateChainPEM, credential: Self.other.privateKeyPEM)) { $1 }) == nil)
        // The stored pair is the new one: its own key alone is accepted now, the old one refused.
        #expect(await actions.refusal("SetPlatformApplicationAttributes", arn.merging(Self.attributes(credential: Self.other.privateKeyPEM)) { $1 }) == nil)
        #expect(await actions.refusal("SetPlatformApplicationAttributes", arn.merging(Self.attributes(credential: Self.push.privateKeyPEM)) { $1 }) != nil)
        let record = try await actions.context.applications.get(
            accountKey: try await actions.context.accounts.account(accountID: "123456789012").key, region: "us-east-1", platform: "APNS_SANDBOX", name: "certapp")
        let stored = try await actions.context.applications.credentials(applicationKey: record.key)
        #expect(stored.principal == Self.other.certificateChainPEM)
        #expect(stored.credential == Self.other.privateKeyPEM)
        // The expiry follows the stored certificate, and goes when the application moves to token auth.
        #expect(PlatformApplicationActions.visibleAttributes(record)["AppleCertificateExpiryDate"] == (try Self.expiry(Self.other)))
        #expect(await actions.refusal("SetPlatformApplicationAttributes",
                                      arn.merging(Self.attributes(principal: "ABCDE12345", credential: "p8 key")) { $1 }) == nil)
        let token = try await actions.context.applications.get(accountKey: record.accountKey, region: "us-east-1", platform: "APNS_SANDBOX", name: "certapp")
        #expect(PlatformApplicationActions.visibleAttributes(token)["AppleCertificateExpiryDate"] == nil)
        #expect(PlatformApplicationActions.visibleAttributes(token)["AuthenticationMethod"] == "Token")
    }

    @Test("Native API C.7 (APNs certificate auth): POST /v1/applications with a key of another certificate is 400 naming credential; PATCH with a mismatched key alone is 400; the matching pair is 201")
    func nativeValidatesThePair() async throws {
        func body(_ fields: [String: String]) throws -> String {
            String(decoding: try JSONSerialization.data(withJSONObject: fields), as: UTF8.self)
        }
        try await NativeAPIFixture.with { f in
            let mismatched = try await f.error("POST", "/v1/applications", try body([
                "name": "certapp", "platform": "APNS", "principal": Self.push.certificateChainPEM, "credential": Self.other.privateKeyPEM,
            ]))
            #expect(mismatched.status == 400)
            #expect(mismatched.field == "credential")
            _ = try await f.json("POST", "/v1/applications", try body([
                "name": "certapp", "platform": "APNS", "principal": Self.push.certificateChainPEM, "credential": Self.push.privateKeyPEM,
            ]), expect: 201)
            let patch = try await f.error("PATCH", "/v1/applications/APNS:certapp", try body(["credential": Self.other.privateKeyPEM]))
            #expect(patch.status == 400)
            #expect(patch.field == "credential")
            let application = try await f.json("GET", "/v1/applications/APNS:certapp", expect: 200)
            #expect((application["attributes"] as? [String: String])?["AuthenticationMethod"] == "Certificate")
            #expect((application["attributes"] as? [String: String])?["AppleCertificateExpiryDate"] == (try Self.expiry(Self.push)))
        }
    }
}
