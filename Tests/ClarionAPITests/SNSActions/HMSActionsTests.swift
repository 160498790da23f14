import ClarionCore
import ClarionStore
import Foundation
import Testing
@testable import ClarionAPI

/// HMS (Huawei Push Kit) applications through the SNS actions and the native API (docs/providers.md E.1: the OAuth
/// client id is PlatformPrincipal, the secret PlatformCredential, the app id HMSAppID or else the client id).
@Suite("HMS applications (SNS actions, native API)", .serialized)
struct HMSActionsTests {
    typealias Actions = APNsCertificateValidationTests.Actions
    static let appARN = "arn:aws:sns:us-east-1:123456789012:app/HMS/huawei"

    static func create(principal: String?, credential: String?, extra: [String: String] = [:]) -> [String: String] {
        ["Name": "huawei", "Platform": "HMS"].merging(APNsCertificateValidationTests.attributes(principal: principal, credential: credential,
                                                                                             extra: extra)) { $1 }
    }

    @Test("CreatePlatformApplication HMS: client id and secret required, ids checked by name; the secret is stored encrypted and never shown")
    func create() async throws {
        let actions = try Actions()
        defer { actions.stop() }
        let missing = await actions.refusal("CreatePlatformApplication", Self.create(principal: "107000001", credential: nil))
        #expect(missing?.code == "InvalidParameter" && missing?.message.contains("PlatformCredential") == true, "\(missing?.message ?? "")")
        let slash = await actions.refusal("CreatePlatformApplication", Self.create(principal: "107/001", credential: "secret-1"))
        #expect(slash?.code == "InvalidParameter" && slash?.message.contains("PlatformPrincipal") == true, "\(slash?.message ?? "")")
        let badApp = await actions.refusal("CreatePlatformApplication", Self.create(principal: "107000001", credential: "secret-1",
                                                                                      extra: ["HMSAppID": "a b"]))
        #expect(badApp?.code == "InvalidParameter" && badApp?.message.contains("HMSAppID") == true, "\(badApp?.message ?? "")")
        #expect(await actions.refusal("CreatePlatformApplication", Self.create(principal: "107000001", credential: "huawei-secret-value",
                                                                              extra: ["HMSAppID": "107000002"])) == nil)
        let account = try await actions.context.accounts.account(accountID: "123456789012").key
        let record = try await actions.context.applications.get(accountKey: account, region: "us-east-1", platform: "HMS", name: "huawei")
        let visible = PlatformApplicationActions.visibleAttributes(record)
        #expect(visible["HMSAppID"] == "107000002")
        #expect(visible["PlatformCredential"] == nil && visible["PlatformPrincipal"] == nil)
        #expect(!visible.values.contains { $0.contains("huawei-secret-value") })
        let credentials = try await actions.context.applications.credentials(applicationKey: record.key)
        #expect(credentials.credential == "huawei-secret-value" && credentials.principal == "107000001")
        // Sealed at rest: neither half is anywhere in the row.
        let raw = try await actions.pool.withConnection { (c) throws(StoreError) -> String in
            try c.query("SELECT coalesce(encode(credentials_sealed, 'escape'), '') || attributes::text FROM platform_applications WHERE platform = 'HMS'")
                .first?.string(0) ?? ""
        }
        #expect(!raw.isEmpty && !raw.contains("huawei-secret-value"))
        // SetPlatformApplicationAttributes checks the same rules.
        let set = await actions.refusal("SetPlatformApplicationAttributes",
                                        ["PlatformApplicationArn": Self.appARN].merging(APNsCertificateValidationTests.attributes(principal: "x?y")) { $1 })
        #expect(set?.code == "InvalidParameter" && set?.message.contains("PlatformPrincipal") == true, "\(set?.message ?? "")")
    }

    @Test("native: HMS application needs credential and principal; a bad client id is refused on the principal field")
    func native() async throws {
        try await NativeAPIFixture.with { f in
            #expect(try await f.error("POST", "/v1/applications", #"{"name":"huawei","platform":"HMS","credential":"s"}"#)
                    == (400, "missing_field", "principal"))
            #expect(try await f.error("POST", "/v1/applications", #"{"name":"huawei","platform":"HMS","credential":"s","principal":"1/2"}"#)
                    == (400, "invalid_field", "principal"))
            let app = try await f.json("POST", "/v1/applications",
                                       #"{"name":"huawei","platform":"HMS","credential":"s3cr3t","principal":"107000001"}"#, expect: 201)
            #expect(app["platform"] as? String == "HMS")
            let text = String(describing: app)
            #expect(!text.contains("s3cr3t"))
        }
    }
}
