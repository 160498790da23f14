import Dispatch
import Foundation
import Synchronization

/// The thread that runs blocking token exchanges (libcurl), so they never block the cooperative pool or an
/// event loop. One per `ProviderRegistry`; jobs run one at a time, in order (token exchanges are rare: one per
/// credential about every 55 minutes), and timed jobs (refreshes ahead of expiry) run when due.
///
/// Lifecycle: starts in `init`, runs until `shutdown()`, which runs the jobs already queued and drops timers;
/// jobs submitted after shutdown are refused.
final class TokenWorker: Sendable {
    typealias Job = @Sendable () -> Void

    private struct Timer {
        var deadline: DispatchTime
        var job: Job
    }

    private struct State {
        var jobs: [Job] = []
        var timers: [Timer] = []
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
    func execute(_ job: @escaping Job) -> Bool {
        let accepted = state.withLock { state -> Bool in
            guard !state.stopping else { return false }
            state.jobs.append(job)
            return true
        }
        if accepted { wake.signal() }
        return accepted
    }

    /// Runs `job` on the worker after `seconds` (real time). Dropped at shutdown.
    func schedule(after seconds: TimeInterval, _ job: @escaping Job) {
        let nanoseconds = UInt64(max(0, min(seconds, 86_400)) * 1e9)
        let deadline = DispatchTime.now() + .nanoseconds(Int(nanoseconds))
        let accepted = state.withLock { state -> Bool in
            guard !state.stopping else { return false }
            state.timers.append(Timer(deadline: deadline, job: job))
            return true
        }
        if accepted { wake.signal() }  // re-evaluates the earliest deadline
    }

    private func run() {
        while true {
            let earliest = state.withLock { $0.timers.map(\.deadline).min() }
            if let earliest {
                _ = wake.wait(timeout: earliest)
            } else {
                wake.wait()
            }
            let now = DispatchTime.now()
            let (jobs, exit) = state.withLock { state -> ([Job], Bool) in
                var due = state.jobs
                state.jobs.removeAll()
                if state.stopping { return (due, true) }
                let (ready, later) = (state.timers.filter { $0.deadline <= now }, state.timers.filter { $0.deadline > now })
                state.timers = later
                due.append(contentsOf: ready.map(\.job))
                return (due, false)
            }
            for job in jobs { job() }
            if exit {
                stopped.signal()
                return
            }
        }
    }

    /// Runs the jobs already queued, then stops the thread. Waits off the cooperative pool.
    func shutdown() async {
        let first = state.withLock { state -> Bool in
            defer {
                state.stopping = true
                state.timers.removeAll()
            }
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
