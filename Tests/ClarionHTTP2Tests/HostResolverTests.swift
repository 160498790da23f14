@testable import ClarionTransport
import Foundation
import Synchronization
import Testing

@Suite struct HostResolverTests {
    /// Rule: `pthread_create` reports failure by its result (EAGAIN when the process is out of threads), and then
    /// no thread runs: check it. A resolver whose thread cannot start fails the lookup at once, with the reason,
    /// instead of queueing it for a thread that never comes (the caller waited forever).
    @Test func aLookupFailsWhenTheResolverThreadCannotStart() async {
        let attempts = Atomic<Int>(0)
        let resolver = HostResolver(startThread: { _ in
            attempts.wrappingAdd(1, ordering: .relaxed)
            return EAGAIN
        })
        defer { resolver.stop() }
        let outcomes = Mutex<[Result<[SocketAddress], TransportError>]>([])
        for _ in 0..<2 {
            resolver.resolve(host: "localhost", port: 443) { result in outcomes.withLock { $0.append(result) } }
        }
        let arrived = await eventually(timeout: .seconds(10)) { outcomes.withLock { $0.count } == 2 }
        #expect(arrived, "the lookups were left waiting for a resolver thread that never started")
        for outcome in outcomes.withLock({ $0 }) {
            guard case .failure(let error) = outcome, error.code == .connectFailed else {
                Issue.record("expected a connect failure, got \(outcome)")
                continue
            }
            #expect(error.reason.contains("localhost") && error.reason.contains("pthread_create"))
        }
        #expect(attempts.load(ordering: .relaxed) == 2, "each lookup tries to start the thread again")
        // Numeric addresses never need the thread.
        let numeric = Mutex<Result<[SocketAddress], TransportError>?>(nil)
        resolver.resolve(host: "127.0.0.1", port: 443) { result in numeric.withLock { $0 = result } }
        #expect(numeric.withLock { (try? $0?.get())?.first?.port } == 443)
    }

    /// The default thread starter starts a real thread: names resolve.
    @Test func aLookupResolvesOnTheResolverThread() async {
        let resolver = HostResolver()
        defer { resolver.stop() }
        let outcome = Mutex<Result<[SocketAddress], TransportError>?>(nil)
        resolver.resolve(host: "localhost", port: 80) { result in outcome.withLock { $0 = result } }
        #expect(await eventually(timeout: .seconds(10)) { outcome.withLock { $0 != nil } })
        #expect(outcome.withLock { (try? $0?.get())?.isEmpty } == false)
    }
}
