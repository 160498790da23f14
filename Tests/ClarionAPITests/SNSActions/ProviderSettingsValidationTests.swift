import ClarionTransport
import ClarionStore
import Foundation
import Testing
@testable import ClarionAPI

/// Settings that would disable an application at its first delivery are refused when they are given.
@Suite("Provider settings refused at create and set (SNS actions, native API)", .serialized)
struct ProviderSettingsValidationTests {
    typealias Actions = APNsCertificateValidationTests.Actions
    static let garbageCA = "-----BEGIN CERTIFICATE-----\nZ2FyYmFnZQ==\n-----END CERTIFICATE-----\n"
    static let authority = try! CertificateAuthority.generate(commonName: "settings test CA")
    static let appARN = "arn:aws:sns:us-east-1:123456789012:app/GCM/chat"

    static func create(_ extra: [String: String]) -> [String: String] {
        ["Name": "chat", "Platform": "GCM"].merging(APNsCertificateValidationTests.attributes(credential: "AAAA-key", extra: extra)) { $1 }
    }

    // Rule: a ProviderCACertificate the provider pool cannot load (checked by the pool's own code) is 400
    // InvalidParameter naming the attribute at CreatePlatformApplication and at SetPlatformApplicationAttributes,
    // and nothing is stored; a loadable one is accepted.
    @Test("SNS: a garbage ProviderCACertificate is InvalidParameter naming it at create and at set; nothing stored")
    func snsRefusesGarbageCA() async throws {
        let actions = try Actions()
        defer { actions.stop() }
        let refused = await actions.refusal("CreatePlatformApplication", Self.create(["ProviderCACertificate": Self.garbageCA]))
        #expect(refused?.code == "InvalidParameter" && refused?.status == 400)
        #expect(refused?.message.contains("ProviderCACertificate") == true, "\(refused?.message ?? "")")
        #expect(await actions.refusal("GetPlatformApplicationAttributes", ["PlatformApplicationArn": Self.appARN])?.code == "NotFound")

        #expect(await actions.refusal("CreatePlatformApplication", Self.create(["ProviderCACertificate": Self.authority.certificatePEM])) == nil)
        let set = await actions.refusal("SetPlatformApplicationAttributes", ["PlatformApplicationArn": Self.appARN]
            .merging(APNsCertificateValidationTests.attributes(extra: ["ProviderCACertificate": Self.garbageCA])) { $1 })
        #expect(set?.code == "InvalidParameter" && set?.message.contains("ProviderCACertificate") == true, "\(set?.message ?? "")")
        let account = try await actions.context.accounts.account(accountID: "123456789012").key
        let stored = try await actions.context.applications.get(accountKey: account, region: "us-east-1", platform: "GCM", name: "chat")
        #expect(stored.attributes["ProviderCACertificate"] == Self.authority.certificatePEM)
        // Other changes to an application with loadable settings go through.
        #expect(await actions.refusal("SetPlatformApplicationAttributes", ["PlatformApplicationArn": Self.appARN]
            .merging(APNsCertificateValidationTests.attributes(extra: ["SuccessFeedbackSampleRate": "10"])) { $1 }) == nil)
    }

    // Rule: the native API refuses the same settings with invalid_field on the attribute, at POST and PATCH.
    @Test("native: a garbage ProviderCACertificate is invalid_field attributes.ProviderCACertificate at POST and PATCH")
    func nativeRefusesGarbageCA() async throws {
        try await NativeAPIFixture.with { f in
            let garbage = quoted(Self.garbageCA)
            #expect(try await f.error("POST", "/v1/applications",
                                      #"{"name":"chat","platform":"GCM","credential":"k","attributes":{"ProviderCACertificate":\#(garbage)}}"#)
                    == (400, "invalid_field", "attributes.ProviderCACertificate"))
            _ = try await f.json("POST", "/v1/applications", #"{"name":"chat","platform":"GCM","credential":"k"}"#, expect: 201)
            #expect(try await f.error("PATCH", "/v1/applications/GCM:chat", #"{"attributes":{"ProviderCACertificate":\#(garbage)}}"#)
                    == (400, "invalid_field", "attributes.ProviderCACertificate"))
            let good = quoted(Self.authority.certificatePEM)
            _ = try await f.json("PATCH", "/v1/applications/GCM:chat", #"{"attributes":{"ProviderCACertificate":\#(good)}}"#, expect: 200)
        }
    }
}
