import ClarionCore
import Foundation
import Testing
@testable import ClarionProviders

@Suite(.serialized) struct ProviderTransportTests {
    @Test("TLS: APNs, FCM (token exchange over libcurl) and ADM against the emulator's self-signed certificate trusted through ProviderCACertificate")
    func tlsWithTrustedCA() async throws {
        let harness = try Harness(tls: true)
        #expect(harness.baseURL.hasPrefix("https://"))
        let apns = try harness.client("apns", .apns, harness.apnsAttributes())
        let fcm = try harness.client("fcm", .gcm, harness.fcmAttributes())
        let adm = try harness.client("adm", .adm, harness.admAttributes())
        #expect(await apns.send(harness.render(platform: .apns), token: apnsToken()).label == "accepted")
        #expect(await fcm.send(harness.render(platform: .gcm), token: "device-a").label == "accepted")
        #expect(await adm.send(harness.render(platform: .adm), token: "device-a").label == "accepted")
        #expect(harness.stats["fcm-oauth"].statuses["200"] == 1)
        #expect(harness.stats["adm-oauth"].statuses["200"] == 1)
        await harness.close()
    }

    @Test("TLS: without ProviderCACertificate the emulator's certificate is not trusted: sends and token exchanges fail as retryable, never sent")
    func tlsWithoutTrustedCA() async throws {
        let harness = try Harness(tls: true)
        let apns = try harness.client("apns", .apns, harness.apnsAttributes(trustCA: false))
        let fcm = try harness.client("fcm", .gcm, harness.fcmAttributes(trustCA: false))
        let apnsOutcome = await apns.send(harness.render(platform: .apns), token: apnsToken())
        #expect(apnsOutcome.label == "retryable")
        #expect(apnsOutcome.reason?.contains("TLS") == true)
        let fcmOutcome = await fcm.send(harness.render(platform: .gcm), token: "device-a")
        #expect(fcmOutcome.label == "retryable")
        #expect(harness.stats.totalRequests == 0)
        await harness.close()
    }

    @Test("Registry: a changed application gets a new client, an unchanged one the same; disabling releases its pool and tokens")
    func registryLifecycle() async throws {
        let harness = try Harness()
        let first = try harness.client("fcm", .gcm, harness.fcmAttributes())
        #expect(try harness.client("fcm", .gcm, harness.fcmAttributes()) === first)
        #expect(harness.registry.existingClient(applicationID: "fcm") === first)
        #expect(await first.send(harness.render(platform: .gcm), token: "device-a").label == "accepted")

        var changed = harness.fcmAttributes()
        changed[ProviderAttribute.fcmProjectID] = "renamed-project"
        let application = try ProviderApplication(id: "fcm", platform: .gcm, attributes: changed)
        let second = try await harness.registry.applicationChanged(application)
        #expect(second !== first)
        #expect(harness.registry.existingClient(applicationID: "fcm") === second)
        #expect(harness.registry.http.poolKeys.count == 1, "the old pool was released")

        await harness.registry.applicationDisabled(applicationID: "fcm")
        #expect(harness.registry.existingClient(applicationID: "fcm") == nil)
        #expect(harness.registry.http.poolKeys.isEmpty)
        // Re-enabled: a fresh client (and a fresh token source, no remembered failure).
        let third = try harness.client("fcm", .gcm, harness.fcmAttributes())
        #expect(third !== first)
        #expect(third.accessTokenSource !== first.accessTokenSource)
        await harness.close()
    }

    @Test("APNs pools keyed by team + key + environment: production and sandbox applications on one endpoint get separate pools, one shared JWT")
    func poolPerEnvironment() async throws {
        let harness = try Harness()
        let production = try harness.client("prod", .apns, harness.apnsAttributes())
        let sandbox = try harness.client("sandbox", .apnsSandbox, harness.apnsAttributes())
        #expect(production.pool !== sandbox.pool)
        #expect(production.apnsTokenSigner === sandbox.apnsTokenSigner)
        #expect(harness.registry.http.poolKeys.count == 2)
        #expect(await production.send(harness.render(platform: .apns), token: apnsToken()).label == "accepted")
        #expect(await sandbox.send(harness.render(platform: .apnsSandbox), token: apnsToken()).label == "accepted")
        #expect(harness.apnsAuthorizations.connections.count == 2)
        #expect(harness.apnsAuthorizations.tokens.count == 1)
        await harness.close()
    }

    @Test("A push rendered for another provider is refused without a round trip")
    func wrongPlatform() async throws {
        let harness = try Harness()
        let adm = try harness.client("adm", .adm, harness.admAttributes())
        let outcome = await adm.send(harness.render(platform: .gcm), token: "device-a")
        #expect(outcome.label == "message_invalid")
        #expect(harness.stats.totalRequests == 0)
        await harness.close()
    }
}
