import Foundation
import Testing
@testable import ClarionProviders

/// Failures that repeat per delivery (a host that cannot be reached, credentials refused) are logged, but not once
/// per delivery: the first at once, then at most one line a minute per reason with the count left out.
@Suite("Provider log limiter")
struct ProviderLogLimiterTests {
    @Test("first occurrence admitted, repeats within the interval left out and counted, then one line with the count")
    func limits() {
        let limiter = ProviderLogLimiter(interval: 60)
        let start = Date(timeIntervalSince1970: 1_000_000)
        #expect(limiter.admit("connect refused", now: start) == 0)
        #expect(limiter.admit("connect refused", now: start.addingTimeInterval(1)) == nil)
        #expect(limiter.admit("connect refused", now: start.addingTimeInterval(59)) == nil)
        // Another reason is its own line.
        #expect(limiter.admit("tls unverified", now: start.addingTimeInterval(2)) == 0)
        #expect(limiter.admit("connect refused", now: start.addingTimeInterval(60)) == 2)
        #expect(limiter.admit("connect refused", now: start.addingTimeInterval(61)) == nil)
    }
}
