import ClarionCore
import ClarionTransport
import Foundation
import Testing
@testable import ClarionProviders

/// The API's check of an application's settings and the dispatcher's pool creation are one judgement: the same
/// pool configuration (`ProviderRegistry.poolConfiguration`), checked by the same code (`validateTLS`).
@Suite("Pool configuration checked without a pool")
struct PoolConfigurationCheckTests {
    /// PEM-shaped with base64 that decodes, but no certificate: a PEM check passes, OpenSSL reads nothing.
    static let garbageCA = "-----BEGIN CERTIFICATE-----\nZ2FyYmFnZQ==\n-----END CERTIFICATE-----\n"

    static func fcm(_ extra: [String: String] = [:]) -> [String: String] {
        [ProviderAttribute.platformCredential: Demo.credentials.fcm.serviceAccountJSON,
         ProviderAttribute.providerEndpoint: "http://127.0.0.1:1"].merging(extra) { $1 }
    }

    // Rule: an application the registry could not make a pool for is refused by `checkSettings` with the very
    // error `client(for:)` throws (code, attribute, message), and one `checkSettings` accepts gets its client.
    @Test("a CA OpenSSL cannot load: checkSettings and the registry's client(for:) fail alike; a loadable CA passes both")
    func sameJudgement() async throws {
        let registry = try ProviderRegistry(options: ProviderOptions(connectionsPerPool: 1, pingInterval: nil))
        let bad = try ProviderApplication(id: "bad", platform: .gcm,
                                          attributes: Self.fcm([ProviderAttribute.providerCACertificate: Self.garbageCA]))
        var fromCheck: ProviderError?
        do { try ProviderApplication.checkSettings(platform: .gcm, attributes: Self.fcm([ProviderAttribute.providerCACertificate: Self.garbageCA])) }
        catch { fromCheck = error }
        var fromRegistry: ProviderError?
        do { _ = try registry.client(for: bad) } catch { fromRegistry = error }
        #expect(fromCheck != nil && fromCheck == fromRegistry)
        #expect(fromCheck?.code == .transportConfiguration && fromCheck?.attribute == ProviderAttribute.providerCACertificate)
        #expect(registry.existingClient(applicationID: "bad") == nil)

        let authority = try CertificateAuthority.generate(commonName: "check test CA")
        let good = Self.fcm([ProviderAttribute.providerCACertificate: authority.certificatePEM])
        try ProviderApplication.checkSettings(platform: .gcm, attributes: good)
        _ = try registry.client(for: try ProviderApplication(id: "good", platform: .gcm, attributes: good))
        await registry.shutdown()
    }

    // Rule: credentials only the provider can judge (placeholders the API has always taken) are not judged by
    // `checkSettings`, but the connection settings beside them still are.
    @Test("placeholder credentials pass; with them, a bad CA or endpoint is still refused naming the attribute")
    func placeholdersStillCheckConnection() throws {
        let placeholder = [ProviderAttribute.platformCredential: "AAAA-server-key-secret"]
        try ProviderApplication.checkSettings(platform: .gcm, attributes: placeholder)
        try ProviderApplication.checkSettings(platform: .apns, attributes: [
            ProviderAttribute.platformCredential: "-----BEGIN PRIVATE KEY-----\nsecret\n-----END PRIVATE KEY-----",
            ProviderAttribute.platformPrincipal: "ABCDE12345"])
        #expect(throws: ProviderError.self) {
            try ProviderApplication.checkSettings(platform: .gcm, attributes: placeholder.merging(
                [ProviderAttribute.providerCACertificate: Self.garbageCA]) { $1 })
        }
        do {
            try ProviderApplication.checkSettings(platform: .gcm, attributes: placeholder.merging(
                [ProviderAttribute.providerCACertificate: Self.garbageCA]) { $1 })
        } catch {
            #expect(error.attribute == ProviderAttribute.providerCACertificate && error.code == .transportConfiguration)
        }
        do {
            try ProviderApplication.checkSettings(platform: .gcm, attributes: placeholder.merging(
                [ProviderAttribute.providerEndpoint: "https://fcm.example/with/a/path"]) { $1 })
            Issue.record("an endpoint with a path was accepted")
        } catch {
            #expect(error.attribute == ProviderAttribute.providerEndpoint)
        }
    }
}
