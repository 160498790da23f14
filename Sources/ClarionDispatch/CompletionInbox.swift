import Foundation
import Synchronization

/// Where a worker's outcomes land. Transports call `receive` from their threads with a batch of results; the
/// worker takes them all at once and, when there is nothing to do, suspends until the next batch or a
/// deadline: one continuation per wait, never one per push.
final class CompletionInbox: PushResultSink, Sendable {
    private struct State {
        var results: [PushResult] = []
        var waiter: CheckedContinuation<Void, Never>?
        var generation: UInt64 = 0
        var closed = false
    }

    private let state = Mutex(State())

    func receive(_ results: [PushResult]) {
        guard !results.isEmpty else { return }
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.closed else { return nil }
            state.results.append(contentsOf: results)
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// Everything received since the last call.
    func take() -> [PushResult] {
        state.withLock { state in
            defer { state.results.removeAll(keepingCapacity: true) }
            return state.results
        }
    }

    /// Wakes a waiting worker without results (shutdown, a claim hand-off).
    func poke() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// Later results are dropped (a worker that lost its lease or was abandoned).
    func close() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.closed = true
            state.results = []
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// Returns when results are waiting, `poke` is called, or `timeout` seconds pass.
    func wait(timeout: Double) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let generation = state.withLock { state -> UInt64? in
                if !state.results.isEmpty || state.closed { return nil }
                state.generation &+= 1
                state.waiter = continuation
                return state.generation
            }
            guard let generation else {
                continuation.resume()
                return
            }
            DispatchQueue.global().asyncAfter(deadline: .now() + max(0.001, timeout)) { [self] in
                let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                    guard state.generation == generation else { return nil }
                    defer { state.waiter = nil }
                    return state.waiter
                }
                waiter?.resume()
            }
        }
    }
}
