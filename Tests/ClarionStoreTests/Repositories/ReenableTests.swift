import ClarionCrypto
import ClarionStore
import ClarionTestSupport
import Foundation
import Testing

@Suite("Re-enabling platform applications and endpoints")
struct ReenableTests {
    // Rule: re-enabling a platform application or an endpoint through the repositories (what SNS Set*Attributes
    // Enabled=true and the native PATCH call) clears both the disabled reason and the disabled time.
    @Test("re-enabling clears disabled_reason and disabled_at for applications and endpoints")
    func reenablingClears() async throws {
        let fixture = try RepositoryFixture()
        let account = try await fixture.accounts.ensureAccount(accountID: "123456789012")
        let applications = PlatformApplicationRepository(pool: fixture.pool, masterKey: fixture.masterKey)
        let endpoints = EndpointRepository(pool: fixture.pool)
        let app = try await applications.createOrUpdate(accountKey: account.key, region: "us-east-1", name: "a", platform: "GCM",
                                                        credentials: PlatformCredentials(credential: "k"), attributes: [:]).0
        let endpoint = try await endpoints.create(NewEndpoint(applicationKey: app.key, token: "tok"), externalID: UUID()).record
        // As the dispatcher's checkpoint leaves them.
        _ = try fixture.raw("UPDATE platform_applications SET enabled = false, disabled_reason = 'InvalidProviderToken', disabled_at = now() WHERE id = $1", [app.key])
        _ = try fixture.raw("UPDATE endpoints SET enabled = false, disabled_reason = 'Unregistered', disabled_at = now() WHERE id = $1", [endpoint.key])
        #expect(try await endpoints.get(key: endpoint.key).disabledAt != nil)
        #expect(try await applications.get(key: app.key).disabledAt != nil)

        let reenabledApp = try await applications.update(applicationKey: app.key, enabled: true)
        #expect(reenabledApp.enabled && reenabledApp.disabledReason == nil && reenabledApp.disabledAt == nil)
        let reenabled = try await endpoints.update(externalID: endpoint.externalID, EndpointChanges(enabled: true))
        #expect(reenabled.enabled && reenabled.disabledReason == nil && reenabled.disabledAt == nil)
        let row = try #require(try fixture.raw("SELECT disabled_reason, disabled_at FROM endpoints WHERE id = $1", [endpoint.key]))
        #expect(row.string(0) == nil && row.date(1) == nil)

        // Disabled again by a client: a reason and a time; a change that does not touch `enabled` keeps both.
        let disabled = try await endpoints.update(externalID: endpoint.externalID, EndpointChanges(enabled: false, disabledReason: "set by the API"))
        #expect(!disabled.enabled && disabled.disabledReason == "set by the API" && disabled.disabledAt != nil)
        let touched = try await endpoints.update(externalID: endpoint.externalID, EndpointChanges(customUserData: .some("x")))
        #expect(touched.disabledReason == "set by the API" && touched.disabledAt == disabled.disabledAt)
    }
}
