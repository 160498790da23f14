import Synchronization

/// A node-wide cap on provider connections, shared by every pool that names it (`HTTP2PoolConfiguration.budget`).
///
/// Each connection (opening, open or draining) holds one unit from before its socket is made until it reports
/// closed, so the number of connections never exceeds `capacity`, however many applications (pools) there are.
/// A pool that cannot get a unit asks and waits: its requests stay queued within their deadlines, and the pools
/// waiting are served first come, first served as units return (a unit is handed over, never put back on the shelf
/// while someone waits). While any pool waits the budget is under pressure: pools then close a connection as soon
/// as it has no stream and nothing queued instead of keeping it for the idle timeout, so units held by idle pools
/// come back and a large fan-out over many applications never stalls on them.
///
/// Thread-safe; grants reach the waiting pool on its own event loop.
public final class HTTP2ConnectionBudget: Sendable {
    /// Something that waits for units (a pool driver). `unitsGranted` runs on the waiter's own loop.
    protocol Waiter: AnyObject, Sendable {
        func unitsGranted(_ count: Int)
    }

    private struct WaitingRequest {
        let waiter: any Waiter
        var count: Int
    }

    private struct State {
        var inUse = 0
        var peakInUse = 0
        /// FIFO of pools waiting, each with the units it still wants.
        var waiting: [WaitingRequest] = []
        var waitingHead = 0
        var unitsWaitedFor = 0
        var grantsAfterWaiting = 0
    }

    public let capacity: Int
    private let state: Mutex<State>
    private let pressure = Atomic<Bool>(false)

    public init(capacity: Int) {
        self.capacity = max(1, capacity)
        state = Mutex(State())
    }

    /// Takes up to `count` units now and queues the waiter for the rest. Returns the units taken now; the others
    /// come later through `waiter.unitsGranted`, one grant per returned unit, in the order pools asked.
    func acquire(_ count: Int, for waiter: any Waiter) -> Int {
        guard count > 0 else { return 0 }
        return state.withLock { state in
            // Nobody overtakes a waiting pool.
            let free = state.waitingHead < state.waiting.count ? 0 : max(0, capacity - state.inUse)
            let now = min(free, count)
            state.inUse += now
            state.peakInUse = max(state.peakInUse, state.inUse)
            if now < count {
                state.waiting.append(WaitingRequest(waiter: waiter, count: count - now))
                state.unitsWaitedFor += count - now
                pressure.store(true, ordering: .relaxed)
            }
            return now
        }
    }

    /// Returns `count` units: each goes to the first waiting pool, if any, else back to the shelf.
    func release(_ count: Int) {
        guard count > 0 else { return }
        let grants = state.withLock { state -> [(any Waiter, Int)] in
            var left = count
            var grants: [(any Waiter, Int)] = []
            while left > 0, state.waitingHead < state.waiting.count {
                let given = min(left, state.waiting[state.waitingHead].count)
                grants.append((state.waiting[state.waitingHead].waiter, given))
                state.waiting[state.waitingHead].count -= given
                state.grantsAfterWaiting += given
                left -= given
                if state.waiting[state.waitingHead].count == 0 { state.waitingHead += 1 }
            }
            if state.waitingHead == state.waiting.count {
                state.waiting.removeAll(keepingCapacity: true)
                state.waitingHead = 0
                pressure.store(false, ordering: .relaxed)
            } else if state.waitingHead > 64, state.waitingHead * 2 > state.waiting.count {
                state.waiting.removeFirst(state.waitingHead)
                state.waitingHead = 0
            }
            state.inUse -= left
            return grants
        }
        // Outside the lock: the waiter hops to its loop.
        for (waiter, units) in grants { waiter.unitsGranted(units) }
    }

    /// Withdraws what `waiter` still waits for (its queue emptied: it needs no more connections). Returns the units
    /// withdrawn; units already granted still arrive through `unitsGranted`.
    func cancel(for waiter: any Waiter) -> Int {
        state.withLock { state in
            var withdrawn = 0
            var i = state.waitingHead
            while i < state.waiting.count {
                if state.waiting[i].waiter === waiter {
                    withdrawn += state.waiting[i].count
                    state.waiting.remove(at: i)
                } else {
                    i += 1
                }
            }
            if state.waitingHead == state.waiting.count {
                state.waiting.removeAll(keepingCapacity: true)
                state.waitingHead = 0
                pressure.store(false, ordering: .relaxed)
            }
            return withdrawn
        }
    }

    /// True while some pool waits for a unit: idle connections should close at once.
    public var isUnderPressure: Bool { pressure.load(ordering: .relaxed) }

    public func statistics() -> HTTP2ConnectionBudgetStatistics {
        state.withLock { state in
            HTTP2ConnectionBudgetStatistics(
                capacity: capacity, inUse: state.inUse, peakInUse: state.peakInUse,
                waitingPools: state.waiting.count - state.waitingHead,
                unitsWaitedFor: state.unitsWaitedFor, unitsHandedOver: state.grantsAfterWaiting)
        }
    }
}

/// A snapshot of a connection budget.
public struct HTTP2ConnectionBudgetStatistics: Sendable, Equatable {
    public var capacity: Int
    /// Units held now: connections opening, open or draining (and grants on their way to a pool).
    public var inUse: Int
    /// The most units ever held at once: never above `capacity`.
    public var peakInUse: Int
    /// Pools waiting for a unit now.
    public var waitingPools: Int
    /// Units asked for that had to wait, since the budget was made.
    public var unitsWaitedFor: Int
    /// Units handed from a closing connection straight to a waiting pool.
    public var unitsHandedOver: Int
}
