import Synchronization
import Testing
@testable import ClarionAPI

@Suite("SigV4 access key cache")
struct AccessKeyCacheTests {
    final class CountingResolver: AccessKeyResolver {
        let lookups = Mutex(0)
        func credentials(forAccessKeyID accessKeyID: String) async throws -> AccessKeyCredentials? {
            lookups.withLock { $0 += 1 }
            guard accessKeyID == "AKIAKNOWNKEY00000001" else { return nil }
            return AccessKeyCredentials(accessKeyID: accessKeyID, secretAccessKey: "s", accountID: "123456789012")
        }
    }

    @Test("a known key costs one store lookup per lifetime; an unknown key is looked up every time")
    func oneLookupPerLifetime() async throws {
        let base = CountingResolver()
        let cache = CachingAccessKeyResolver(base: base, lifetime: .seconds(60))
        for _ in 0..<100 {
            #expect(try await cache.credentials(forAccessKeyID: "AKIAKNOWNKEY00000001")?.accountID == "123456789012")
        }
        #expect(base.lookups.withLock { $0 } == 1)
        for _ in 0..<3 { #expect(try await cache.credentials(forAccessKeyID: "AKIAUNKNOWN000000001") == nil) }
        #expect(base.lookups.withLock { $0 } == 4)
    }
}
