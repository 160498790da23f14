import ClarionCore
import ClarionCrypto
import ClarionHTTP2
import Foundation
import Synchronization
import Testing
@testable import ClarionEmulator
@testable import ClarionProviders

/// Many applications, each with its own APNs key (so its own signer and pool), against the emulator over real
/// sockets: the node-wide connection budget (`CLARION_PROVIDER_MAX_CONNECTIONS`) and the idle sweep.
@Suite struct ProviderConnectionBudgetTests {
    /// `count` APNs keys of one team, each registered with the emulator.
    struct TenantKeys {
        var keys: [(keyID: String, privateKeyPEM: String, publicKeyPEM: String)]

        init(count: Int) {
            keys = (0..<count).map { i in
                let key = SigningKey.generateP256()
                return (String(format: "TENANT%04d", i), key.pkcs8PEM, key.verifyingKey.pem)
            }
        }

        func register(_ configuration: inout EmulatorConfiguration) {
            for key in keys {
                configuration.apns.keys.append(.init(keyID: key.keyID, teamID: Demo.apns.teamID, publicKeyPEM: key.publicKeyPEM))
            }
        }

        func attributes(_ i: Int, harness: Harness) -> [String: String] {
            var attributes = harness.apnsAttributes()
            attributes[ProviderAttribute.platformCredential] = keys[i].privateKeyPEM
            attributes[ProviderAttribute.platformPrincipal] = keys[i].keyID
            return attributes
        }
    }

    @Test("CLARION_PROVIDER_MAX_CONNECTIONS: 12 applications with 2-connection pools on a budget of 3 all deliver, and the emulator never holds more than 3 connections")
    func manyPoolsShareTheBudget() async throws {
        let tenants = TenantKeys(count: 12)
        var options = ProviderOptions(connectionsPerPool: 2, requestTimeout: .seconds(20), pingInterval: nil)
        options.maxProviderConnections = 3
        let harness = try Harness(options: options) { tenants.register(&$0) }
        let budget = try #require(harness.registry.connectionBudget)
        #expect(budget.capacity == 3)

        // The kernel's count of our established connections to the emulator (client side), sampled
        // while the fan-out runs. (The emulator's own count lags: it still counts a connection we closed until it
        // reads the FIN, by which time the unit may already serve another pool.)
        #expect(Self.establishedConnections(toPort: harness.port) == 0)
        let peak = Atomic<Int>(0)
        let sampling = Atomic<Bool>(true)
        let port = harness.port
        let sampler = Thread {
            while sampling.load(ordering: .relaxed) {
                let live = Self.establishedConnections(toPort: port)
                if live > peak.load(ordering: .relaxed) { peak.store(live, ordering: .relaxed) }
            }
        }
        sampler.start()

        let push = harness.render(platform: .apns)
        let sink = CollectingSink()
        let perApplication = 100
        for i in 0..<12 {
            let client = try harness.client("tenant-\(i)", .apns, tenants.attributes(i, harness: harness))
            let deliveries = (0..<perApplication).map {
                ProviderDelivery(token: apnsToken(seed: i * 1000 + $0), tag: UInt64(i * 1000 + $0))
            }
            #expect(client.submit(push, deliveries: deliveries, sink: sink) == perApplication)
        }
        let results = try await sink.wait(for: 12 * perApplication)
        sampling.store(false, ordering: .relaxed)
        #expect(results.count == 12 * perApplication)
        let refused = results.filter { if case .accepted = $0.outcome { false } else { true } }
        #expect(refused.isEmpty, "\(refused.prefix(3).map(\.outcome))")
        #expect(Set(results.map(\.tag)).count == 12 * perApplication)
        #expect(harness.stats["apns"].statuses["200"] == 12 * perApplication)

        let statistics = budget.statistics()
        #expect(statistics.peakInUse <= 3)
        #expect(peak.load(ordering: .relaxed) <= 3, "the kernel saw \(peak.load(ordering: .relaxed)) connections at once")
        // The last pools' connections stay open once nobody waits (no pressure, no idle timeout yet): the
        // count sees them, so the peak above was measured, not missed.
        let afterwards = Self.establishedConnections(toPort: harness.port)
        #expect(afterwards >= 1 && afterwards <= 3, "\(afterwards) connections open after the fan-out")
        #expect(statistics.unitsWaitedFor > 0, "pools had to wait their turn")
        #expect(statistics.unitsHandedOver > 0)
        await harness.close()
    }

    /// Established TCP connections whose remote end is `port` (our side of connections to the emulator), as the
    /// kernel reports them over netlink (`ss`). Not /proc/net/tcp: it is read a page at a time and, while connections
    /// come and go (other processes on the machine have thousands), may list one twice or miss it.
    static func establishedConnections(toPort port: Int) -> Int {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/ss")
        process.arguments = ["-Htn", "state", "established", "dst", "127.0.0.1:\(port)"]
        let pipe = Pipe()
        process.standardOutput = pipe
        guard (try? process.run()) != nil else { return -1 }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self).split(separator: "\n").count
    }

    @Test("Idle sweep: an application with no request for the idle time loses its client, pool and signer; the next request builds them again")
    func idleApplicationsAreReleasedAndRebuilt() async throws {
        let tenants = TenantKeys(count: 3)
        let harness = try Harness { tenants.register(&$0) }
        let registry = harness.registry
        var clients: [ProviderClient] = []
        for i in 0..<3 { clients.append(try harness.client("tenant-\(i)", .apns, tenants.attributes(i, harness: harness))) }
        let push = harness.render(platform: .apns)
        for client in clients {
            #expect(await client.send(push, token: apnsToken()).label == "accepted")
        }
        #expect(await registry.poolStatistics().count == 3)

        // Nothing is idle yet.
        #expect(await registry.releaseIdleClients(idleFor: .seconds(600)) == 0)
        // Ten minutes later tenant-0 is asked for again (the dispatcher looks its client up before each shard).
        harness.clock.advance(601)
        #expect(registry.existingClient(applicationID: "tenant-0") === clients[0])
        #expect(await registry.releaseIdleClients(idleFor: .seconds(600)) == 2)
        #expect(registry.existingClient(applicationID: "tenant-1") == nil)
        #expect(registry.existingClient(applicationID: "tenant-2") == nil)
        #expect(registry.existingClient(applicationID: "tenant-0") === clients[0])
        // Their pools (and connections) are gone; tenant-0's stays.
        let remaining = await registry.poolStatistics()
        #expect(remaining.count == 1)
        #expect(await clients[1].poolStatistics().activeConnections == 0)

        // The next request for tenant-1 builds a new client with a new pool and signer, and is delivered.
        let rebuilt = try harness.client("tenant-1", .apns, tenants.attributes(1, harness: harness))
        #expect(rebuilt !== clients[1])
        #expect(rebuilt.apnsTokenSigner !== clients[1].apnsTokenSigner)
        #expect(await rebuilt.send(push, token: apnsToken()).label == "accepted")
        #expect(await registry.poolStatistics().count == 2)
        await harness.close()
    }
}
