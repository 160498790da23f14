import Foundation
import Synchronization

/// The thread that runs blocking token exchanges (libcurl), so they never block the cooperative pool or an
/// event loop. One per `ProviderRegistry`; jobs run one at a time, in order (token exchanges are rare: one per
/// credential about every 55 minutes).
///
/// Lifecycle: starts in `init`, runs until `shutdown()`; jobs submitted after shutdown are refused.
final class TokenWorker: Sendable {
    private struct State {
        var jobs: [@Sendable () -> Void] = []
        var stopping = false
    }

    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)
    private let stopped = DispatchSemaphore(value: 0)

    init(name: String = "clarion-provider-tokens") {
        let thread = Thread { [self] in run() }
        thread.name = name
        thread.start()
    }

    /// Queues `job`; false when the worker is shutting down (the job is dropped).
    @discardableResult
    func execute(_ job: @escaping @Sendable () -> Void) -> Bool {
        let accepted = state.withLock { state -> Bool in
            guard !state.stopping else { return false }
            state.jobs.append(job)
            return true
        }
        if accepted { wake.signal() }
        return accepted
    }

    private func run() {
        while true {
            wake.wait()
            let next = state.withLock { state -> (@Sendable () -> Void)?? in
                if !state.jobs.isEmpty { return .some(state.jobs.removeFirst()) }
                return state.stopping ? .some(nil) : nil
            }
            switch next {
            case .some(.some(let job)): job()
            case .some(.none): stopped.signal(); return
            case .none: continue
            }
        }
    }

    /// Runs the jobs already queued, then stops the thread. Waits off the cooperative pool.
    func shutdown() async {
        let first = state.withLock { state -> Bool in
            defer { state.stopping = true }
            return !state.stopping
        }
        guard first else { return }
        wake.signal()
        let stopped = self.stopped
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                stopped.wait()
                done.resume()
            }
        }
    }
}
