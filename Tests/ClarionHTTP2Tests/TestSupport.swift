@testable import ClarionHTTP2
import Foundation
import Synchronization
import Testing

/// Collects batch-path completions; `wait(for:)` returns once `count` arrived (or the timeout passed).
final class CollectingSink: HTTP2CompletionSink {
    private struct State {
        var completions: [HTTP2Completion] = []
        var batches = 0
        var waiter: (count: Int, continuation: CheckedContinuation<Void, Never>)?
    }

    private let state = Mutex(State())

    func receive(_ completions: [HTTP2Completion]) {
        let resume = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.completions.append(contentsOf: completions)
            state.batches += 1
            if let waiter = state.waiter, state.completions.count >= waiter.count {
                state.waiter = nil
                return waiter.continuation
            }
            return nil
        }
        resume?.resume()
    }

    var completions: [HTTP2Completion] { state.withLock { $0.completions } }
    var batches: Int { state.withLock { $0.batches } }

    /// Waits until `count` completions arrived or `timeout` passed; returns what arrived.
    func wait(for count: Int, timeout: Duration = .seconds(30)) async -> [HTTP2Completion] {
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await withCheckedContinuation { continuation in
                    let ready = self.state.withLock { state -> Bool in
                        if state.completions.count >= count { return true }
                        state.waiter = (count, continuation)
                        return false
                    }
                    if ready { continuation.resume() }
                }
            }
            group.addTask { try? await Task.sleep(for: timeout) }
            await group.next()
            group.cancelAll()
            // Release the waiter if the timeout won.
            let stale = self.state.withLock { state -> CheckedContinuation<Void, Never>? in
                defer { state.waiter = nil }
                return state.waiter?.continuation
            }
            stale?.resume()
            await group.waitForAll()
        }
        return completions
    }
}

/// Counts things across loop threads.
final class Counter: Sendable {
    private let value = Atomic<Int>(0)
    @discardableResult
    func increment() -> Int { value.wrappingAdd(1, ordering: .relaxed).newValue }
    func decrement() { value.wrappingSubtract(1, ordering: .relaxed) }
    var current: Int { value.load(ordering: .relaxed) }
}

/// Records the largest value seen.
final class Maximum: Sendable {
    private let value = Atomic<Int>(0)
    func record(_ candidate: Int) {
        var current = value.load(ordering: .relaxed)
        while candidate > current {
            let (exchanged, original) = value.compareExchange(expected: current, desired: candidate, ordering: .relaxed)
            if exchanged { return }
            current = original
        }
    }
    func reset() { value.store(0, ordering: .relaxed) }
    var current: Int { value.load(ordering: .relaxed) }
}

func poolConfiguration(_ scheme: HTTP2Origin.Scheme, port: Int, trusting pem: String? = nil,
                       connections: Int = 1) -> HTTP2PoolConfiguration {
    HTTP2PoolConfiguration(origin: HTTP2Origin(scheme: scheme, host: "127.0.0.1", port: port), identity: "test",
                           connectionCount: connections, requestTimeout: .seconds(20), trustedCAPEM: pem)
}

let okResponse = HTTP2ServerResponse(status: 200, headers: [("content-type", "application/json")], body: Array("{}".utf8))

extension HTTP2Result {
    var status: Int? {
        if case .success(let response) = self { return response.status }
        return nil
    }

    var error: HTTP2Error? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
