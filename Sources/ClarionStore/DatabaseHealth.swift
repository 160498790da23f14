import Synchronization

/// Whether the database answers, as the node's store calls see it, so that an outage is reported once.
///
/// Every pool and writer of a node reports its failures and successes here. The first failure that means the
/// database is out (`StoreError.isOutage`: it cannot be reached, the session was lost, or it is out of a
/// resource such as disk space) gives one `.unavailable` event with that failure as the cause; later failures
/// are only counted. The first success after the failures stopped for `settle` gives one `.available` event.
/// Without it, a restart of PostgreSQL wrote an error line per request, per worker and per poll (the fault test
/// in Tests/e2e/test_fault_database_restart.py), and the cause was lost among them.
///
/// Why `settle`: on a full disk PostgreSQL still answers reads (the readiness probe, the claims that find
/// nothing) while every insert fails, so a success right after a failure does not end the outage.
///
/// States: up -> down (`failed` with an outage error; reports `.unavailable`); down -> down (`failed`: counted;
/// `succeeded` within `settle` of the last failure: ignored); down -> up (`succeeded` at least `settle` after the
/// last failure; reports `.available`). `succeeded` while up is one relaxed atomic load.
public final class DatabaseHealth: Sendable {
    public enum Event: Sendable {
        /// The database stopped answering; `cause` is the first failure.
        case unavailable(cause: StoreError)
        /// It answers again after `downFor`, during which `failures` store calls failed.
        case available(downFor: Duration, failures: Int)
    }

    private struct State {
        var since: ContinuousClock.Instant?
        var lastFailure: ContinuousClock.Instant?
        var failures = 0
    }

    private let down = Atomic<Bool>(false)
    private let state = Mutex(State())
    private let settle: Duration
    private let report: @Sendable (Event) -> Void

    /// `report` is called outside any lock, once per change.
    public init(settle: Duration = .seconds(1), report: @escaping @Sendable (Event) -> Void) {
        self.settle = settle
        self.report = report
    }

    /// True from the first outage failure until the database answers again.
    public var isDown: Bool { down.load(ordering: .relaxed) }

    /// Failed store calls since start, by `StoreError.Code` (for `/metrics`). Every failure is counted here, outage
    /// or not; failures are rare, so the lock costs nothing on the paths that succeed.
    private let errorCounts = Mutex<[String: Int]>([:])

    public var errorsByCode: [String: Int] { errorCounts.withLock { $0 } }

    /// A store call failed; only outage errors count as an outage (a constraint violation is the caller's business).
    public func failed(_ error: StoreError) {
        errorCounts.withLock { $0[error.code.rawValue, default: 0] += 1 }
        guard error.isOutage else { return }
        let now = ContinuousClock.now
        let started = state.withLock { state -> Bool in
            state.failures += 1
            state.lastFailure = now
            guard state.since == nil else { return false }
            state.since = now
            state.failures = 1
            down.store(true, ordering: .relaxed)
            return true
        }
        if started { report(.unavailable(cause: error)) }
    }

    /// A store call succeeded.
    public func succeeded() {
        guard down.load(ordering: .relaxed) else { return }
        let now = ContinuousClock.now
        let ended = state.withLock { state -> Event? in
            guard let since = state.since, let last = state.lastFailure, last.duration(to: now) >= settle else { return nil }
            let event = Event.available(downFor: since.duration(to: now), failures: state.failures)
            state = State()
            down.store(false, ordering: .relaxed)
            return event
        }
        if let ended { report(ended) }
    }
}

extension PGPool {
    /// Whether this pool's `DatabaseHealth` already reports `error` (an outage, once per outage). Callers that log
    /// their own store failures skip those, so a restart of PostgreSQL is one line, not one per poll and worker.
    public func reportsOutage(_ error: StoreError) -> Bool { health != nil && error.isOutage }
}
