import ClarionCore
@testable import ClarionDispatch
import ClarionEmulator
import ClarionProviders
import ClarionStore
import ClarionTestSupport
import Foundation
import Synchronization
import Testing

/// The dispatcher end to end: PostgreSQL, the real provider clients (HTTP/2 over h2c) and the emulator's record
/// of what it received.
@Suite("Fan-out through the provider clients to the emulator", .serialized)
struct EmulatorFanOutTests {
    static let demo: EmulatorDemoCredentials = try! EmulatorDemoCredentials.generate()

    /// A 64-hex-digit APNs token: a counter, then filler, then `suffix` (the emulator's rules match suffixes).
    static func apnsToken(_ n: Int, suffix: String = "") -> String {
        let head = String(format: "%08x", n)
        return head + String(repeating: "c", count: 64 - 8 - suffix.count) + suffix
    }

    final class Harness: Sendable {
        let emulator: EmulatorHandle
        let registry: ProviderRegistry

        init(faults: EmulatorFaults = EmulatorFaults()) throws {
            var configuration = EmulatorFanOutTests.demo.configuration()
            configuration.faults = faults
            configuration.recordInMemory = true
            configuration.recordLimit = 200_000
            emulator = try runEmulator(configuration: configuration)
            registry = try ProviderRegistry(options: ProviderOptions(
                connectionsPerPool: 1, requestTimeout: .seconds(10), pingInterval: nil))
        }

        func apnsAttributes() -> String {
            let attributes = [
                ProviderAttribute.appleTeamID: EmulatorFanOutTests.demo.apns.teamID,
                ProviderAttribute.appleBundleID: EmulatorFanOutTests.demo.apns.bundleID,
                ProviderAttribute.providerEndpoint: emulator.baseURL,
            ]
            return String(decoding: try! JSONSerialization.data(withJSONObject: attributes), as: UTF8.self)
        }

        func fcmAttributes() -> String {
            let attributes = [ProviderAttribute.providerEndpoint: emulator.baseURL]
            return String(decoding: try! JSONSerialization.data(withJSONObject: attributes), as: UTF8.self)
        }

        /// Credentials by application name, as the repository would open them.
        func directory(_ fixture: FanOutFixture, strangerFCM: EmulatorDemoCredentials? = nil) -> ProviderRegistryDirectory {
            let ios = fixture.applications["ios"]
            let demo = EmulatorFanOutTests.demo
            let serviceAccount = (strangerFCM ?? demo).fcm.serviceAccountJSON
                .replacingOccurrences(of: (strangerFCM ?? demo).fcm.tokenURI, with: emulator.fcmTokenURI)
            return ProviderRegistryDirectory(registry: registry, credentials: { key in
                key == ios
                    ? PlatformCredentials(credential: demo.apns.privateKeyPEM, principal: demo.apns.keyID)
                    : PlatformCredentials(credential: serviceAccount)
            })
        }

        func close() async {
            await registry.shutdown()
            await emulator.shutdown()
        }
    }

    @Test("a 10k-endpoint topic across APNs and FCM reaches the emulator exactly once per live token; 410/UNREGISTERED disable endpoints")
    func topicThroughEmulator() async throws {
        let harness = try Harness()
        var fixture = try FanOutFixture()
        try fixture.addApplication("ios", platform: "APNS", attributes: harness.apnsAttributes())
        try fixture.addApplication("android", platform: "GCM", attributes: harness.fcmAttributes())
        let c = try fixture.connection()
        let live = 5_000
        try c.query("""
            INSERT INTO endpoints (external_id, application, token)
            SELECT gen_random_uuid(), $1, lpad(to_hex(g), 8, '0') || repeat('c', 56) FROM generate_series(1, $2) g
            """, [fixture.applications["ios"]!, live])
        try c.query("""
            INSERT INTO endpoints (external_id, application, token)
            SELECT gen_random_uuid(), $1, lpad(to_hex(g), 8, '0') || repeat('c', 48) || 'dead0410' FROM generate_series(1, 25) g
            """, [fixture.applications["ios"]!])
        try fixture.addEndpoints("android", prefix: "fcm-token-", count: live)
        try fixture.addEndpoints("android", prefix: "unregistered-", count: 25)
        try c.query("""
            INSERT INTO subscriptions (external_id, topic, protocol, endpoint)
            SELECT gen_random_uuid(), $1, 'application', e.id FROM endpoints e WHERE e.application = $2
              AND NOT EXISTS (SELECT 1 FROM subscriptions s WHERE s.endpoint = e.id)
            """, [fixture.topic, fixture.applications["ios"]!])

        let dispatcher = RunningDispatcher(Dispatcher(
            pool: fixture.pool, directory: harness.directory(fixture), configuration: testConfiguration(owner: "node-a")))
        let message = try fixture.publishToTopic(#"{"default":"hello","APNS":"{\"aps\":{\"alert\":\"hi\"}}"}"#)
        let status = try await fixture.waitForFinal(message)
        await dispatcher.stop()

        #expect(status.state == .completed)
        #expect(status.counters.accepted == Int64(2 * live))
        #expect(status.counters.failed == 50)
        #expect(status.failuresByReason["Unregistered"] == 25)
        // FCM's reason carries the error code and the message ("UNREGISTERED: Requested entity was not found.").
        #expect(status.failuresByReason.filter { $0.key.hasPrefix("UNREGISTERED") }.values.reduce(0, +) == 25)

        let records = harness.emulator.records().filter { $0.token != nil && $0.status == 200 }
        var perToken: [String: Int] = [:]
        for record in records { perToken[record.token!, default: 0] += 1 }
        #expect(perToken.count == 2 * live)
        #expect(perToken.values.allSatisfy { $0 == 1 })
        #expect(perToken[Self.apnsToken(1)] == 1)
        #expect(perToken["fcm-token-7"] == 1)

        let disabled = try c.query("""
            SELECT count(*) FILTER (WHERE token LIKE '%dead0410' AND disabled_reason = 'Unregistered'),
                   count(*) FILTER (WHERE token LIKE 'unregistered-%' AND disabled_reason LIKE 'UNREGISTERED%'),
                   count(*)
            FROM endpoints WHERE NOT enabled
            """).first!
        #expect(disabled.int64(0) == 25)
        #expect(disabled.int64(1) == 25)
        #expect(disabled.int64(2) == 50)
        await harness.close()
    }

    @Test("a resolved transport is reused while the application row is the same; attributes, credentials or a new client resolve again")
    func transportsReusedPerApplicationRow() async throws {
        let harness = try Harness()
        let demo = EmulatorFanOutTests.demo
        let serviceAccount = demo.fcm.serviceAccountJSON.replacingOccurrences(of: demo.fcm.tokenURI, with: harness.emulator.fcmTokenURI)
        let opened = Mutex(0)
        let directory = ProviderRegistryDirectory(registry: harness.registry, credentials: { _ in
            opened.withLock { $0 += 1 }
            return PlatformCredentials(credential: serviceAccount)
        })
        func application(_ attributes: [String: String], version: String?) -> DispatchApplication {
            DispatchApplication(key: 7, account: 1, name: "android", platform: "GCM", enabled: true, disabledReason: nil,
                                attributes: attributes, credentialsVersion: version)
        }
        let attributes = [ProviderAttribute.providerEndpoint: harness.emulator.baseURL]
        func ready(_ resolution: TransportResolution) -> Bool { if case .ready = resolution { true } else { false } }

        #expect(ready(await directory.resolve(application(attributes, version: "v1"))))
        #expect(ready(await directory.resolve(application(attributes, version: "v1"))))
        #expect(opened.withLock { $0 } == 1)
        // New sealed credentials (another digest): opened again.
        #expect(ready(await directory.resolve(application(attributes, version: "v2"))))
        #expect(opened.withLock { $0 } == 2)
        // Changed attributes: resolved again.
        var changed = attributes
        changed["DefaultTTL"] = "60"
        #expect(ready(await directory.resolve(application(changed, version: "v2"))))
        #expect(opened.withLock { $0 } == 3)
        #expect(ready(await directory.resolve(application(changed, version: "v2"))))
        #expect(opened.withLock { $0 } == 3)
        // Disabled in this process (its client released): the next resolution opens the credentials again.
        await directory.applicationDisabled(7)
        #expect(ready(await directory.resolve(application(changed, version: "v2"))))
        #expect(opened.withLock { $0 } == 4)
        await harness.close()
    }

    @Test("credentials the provider refuses disable the application (emulator token exchange), other apps unaffected")
    func refusedCredentials() async throws {
        let harness = try Harness()
        var fixture = try FanOutFixture()
        try fixture.addApplication("ios", platform: "APNS", attributes: harness.apnsAttributes())
        try fixture.addApplication("android", platform: "GCM", attributes: harness.fcmAttributes())
        try fixture.addEndpoints("android", prefix: "fcm-token-", count: 500)
        let stranger = try EmulatorDemoCredentials.generate(projectID: "stranger-project")
        let dispatcher = RunningDispatcher(Dispatcher(
            pool: fixture.pool, directory: harness.directory(fixture, strangerFCM: stranger),
            configuration: testConfiguration(owner: "node-a")))
        let message = try fixture.publishToTopic()
        let status = try await fixture.waitForFinal(message)
        await dispatcher.stop()
        #expect(status.state == .failed)
        #expect(status.counters.accepted == 0)
        #expect(status.counters.failed == 500)
        let app = try fixture.connection().query(
            "SELECT enabled, disabled_reason FROM platform_applications WHERE name = 'android'").first!
        #expect(app.bool(0) == false)
        #expect(app.string(1) != nil)
        #expect(harness.emulator.records().filter { $0.path.contains("/messages:send") }.isEmpty)
        await harness.close()
    }

    @Test("a 429 storm from the emulator (FCM QUOTA_EXCEEDED with Retry-After: 1): everything delivered, no retry early")
    func throttleStorm() async throws {
        var faults = EmulatorFaults()
        faults.providers = [.fcm]
        faults.throttle = .fraction(0.3)
        faults.retryAfterSeconds = 1
        let harness = try Harness(faults: faults)
        var fixture = try FanOutFixture()
        try fixture.addApplication("android", platform: "GCM", attributes: harness.fcmAttributes())
        try fixture.addEndpoints("android", prefix: "fcm-token-", count: 400)
        let configuration = testConfiguration(
            owner: "node-a", retry: RetryPolicy(maxAttempts: 12, baseDelay: 0.05, maxDelay: 1, jitter: 0.5))
        let dispatcher = RunningDispatcher(Dispatcher(
            pool: fixture.pool, directory: harness.directory(fixture), configuration: configuration))
        let message = try fixture.publishToTopic()
        let status = try await fixture.waitForFinal(message)
        await dispatcher.stop()

        #expect(status.state == .completed)
        #expect(status.counters.accepted == 400)
        #expect(status.counters.failed == 0)
        #expect(status.counters.retried > 50)
        let sends = harness.emulator.records().filter { $0.token != nil }.sorted { $0.time < $1.time }
        var byToken: [String: [EmulatorRecord]] = [:]
        for record in sends { byToken[record.token!, default: []].append(record) }
        #expect(byToken.count == 400)
        #expect(byToken.values.allSatisfy { $0.last?.status == 200 && $0.filter { $0.status == 200 }.count == 1 })
        var early = 0
        for records in byToken.values {
            for (previous, next) in zip(records, records.dropFirst()) where previous.status == 429 {
                if next.time - previous.time < 1.0 { early += 1 }
            }
        }
        #expect(early == 0, "\(early) retries came before Retry-After")
        #expect(sends.filter { $0.status == 429 }.count == Int(status.counters.retried))
        await harness.close()
    }

    @Test("a publish whose TTL ran out reaches the emulator not at all and ends Expired")
    func expiredThroughEmulator() async throws {
        let harness = try Harness()
        var fixture = try FanOutFixture()
        try fixture.addApplication("ios", platform: "APNS", attributes: harness.apnsAttributes())
        try fixture.addApplication("android", platform: "GCM", attributes: harness.fcmAttributes())
        let c = try fixture.connection()
        try c.query("""
            INSERT INTO endpoints (external_id, application, token)
            SELECT gen_random_uuid(), $1, lpad(to_hex(g), 8, '0') || repeat('c', 56) FROM generate_series(1, 100) g
            """, [fixture.applications["ios"]!])
        try c.query("""
            INSERT INTO subscriptions (external_id, topic, protocol, endpoint)
            SELECT gen_random_uuid(), $1, 'application', e.id FROM endpoints e WHERE e.application = $2
            """, [fixture.topic, fixture.applications["ios"]!])
        try fixture.addEndpoints("android", prefix: "fcm-token-", count: 100)
        let dispatcher = RunningDispatcher(Dispatcher(
            pool: fixture.pool, directory: harness.directory(fixture), configuration: testConfiguration(owner: "node-a")))
        let attributes = #"{"AWS.SNS.MOBILE.APNS.TTL": {"DataType": "Number", "StringValue": "10"}, "AWS.SNS.MOBILE.FCM.TTL": {"DataType": "Number", "StringValue": "10"}}"#
        let message = try fixture.publishToTopic(attributes: attributes, publishedSecondsAgo: 60)
        let status = try await fixture.waitForFinal(message)
        await dispatcher.stop()
        #expect(status.state == .expired)
        #expect(status.counters.expired == 200)
        #expect(status.counters.sent == 0)
        #expect(harness.emulator.records().filter { $0.token != nil }.isEmpty)
        await harness.close()
    }
}
