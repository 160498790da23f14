import Foundation
import Synchronization
import Testing
@testable import ClarionAPI

@Suite("Native API key cache")
struct NativeAPIKeyCacheTests {
    final class CountingResolver: APIKeyResolver {
        let lookups = Mutex(0)
        let revoked = Mutex(false)
        func principal(forAPIKey key: String) async throws -> APIPrincipal? {
            lookups.withLock { $0 += 1 }
            guard key.hasPrefix("clk_good"), !revoked.withLock({ $0 }) else { return nil }
            return APIPrincipal(accountID: "123456789012", keyID: "1")
        }
    }

    final class ManualClock: Sendable {
        let offset = Mutex(Duration.zero)
        let start = ContinuousClock.now
        var now: ContinuousClock.Instant { start + offset.withLock { $0 } }
        func advance(_ by: Duration) { offset.withLock { $0 += by } }
    }

    @Test("a verified key is remembered for its lifetime, then looked up again; unknown keys are never remembered")
    func lifetime() async throws {
        let base = CountingResolver(), clock = ManualClock()
        let cache = CachingAPIKeyResolver(base: base, lifetime: .seconds(10), now: { clock.now })
        #expect(try await cache.principal(forAPIKey: "clk_good")?.accountID == "123456789012")
        #expect(try await cache.principal(forAPIKey: "clk_good") != nil)
        #expect(base.lookups.withLock { $0 } == 1)
        #expect(try await cache.principal(forAPIKey: "clk_bad") == nil)
        #expect(try await cache.principal(forAPIKey: "clk_bad") == nil)
        #expect(base.lookups.withLock { $0 } == 3)
        base.revoked.withLock { $0 = true }
        clock.advance(.seconds(9))
        #expect(try await cache.principal(forAPIKey: "clk_good") != nil)  // within the lifetime
        clock.advance(.seconds(2))
        #expect(try await cache.principal(forAPIKey: "clk_good") == nil)  // revocation seen after it
        #expect(base.lookups.withLock { $0 } == 4)
    }

    @Test("the table is bounded: when full it starts over")
    func bounded() async throws {
        let base = CountingResolver()
        let cache = CachingAPIKeyResolver(base: base, capacity: 1)
        _ = try await cache.principal(forAPIKey: "clk_good_a")
        _ = try await cache.principal(forAPIKey: "clk_good_a")
        #expect(base.lookups.withLock { $0 } == 1)
        _ = try await cache.principal(forAPIKey: "clk_good_b")  // full: the table starts over with b
        _ = try await cache.principal(forAPIKey: "clk_good_a")
        #expect(base.lookups.withLock { $0 } == 3)
    }
}
