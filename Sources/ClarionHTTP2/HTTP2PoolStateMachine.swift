import ClarionTransport
/// What the pool machine needs to know about a queued request.
protocol HTTP2PoolItem {
    /// When the request times out (monotonic nanoseconds).
    var deadline: NanoTime { get }
    /// How many times a server refused it (GOAWAY above last-stream-id, REFUSED_STREAM).
    var refusals: Int { get set }
}

/// The pool's scheduling logic, with no sockets and no clock: which connection gets the next request, when to
/// open, reopen or give up on connections, and which requests to fail. Events in, actions out; the driver
/// (`HTTP2PoolDriver`) does the I/O.
///
/// Each of the `connectionCount` slots is in one of these states:
/// - `idle`: no connection. -> `connecting` when requests wait and no other connecting slot will take them.
/// - `connecting(id)`: socket/TLS under way. -> `active` (`connectionEstablished`), -> `backingOff`
///   (`connectionClosed` before establishment: a failed attempt).
/// - `active(id)`: takes up to `maxStreams` streams (starts at `initialMaxStreams`, follows SETTINGS both ways).
///   -> `idle` when it closes (GOAWAY or recycling first move the connection out to `draining`, freeing the slot).
/// - `backingOff`: waiting `backoff.delay(afterFailures:)`. -> `idle` (`backoffExpired`).
/// A draining connection keeps its streams but takes no new ones; it is forgotten once it reports closed.
///
/// With a connection budget (`budgeted`, `HTTP2ConnectionBudget`), an idle slot connects only with a unit in hand.
/// Every connection holds one unit (connecting, active, draining) until it reports closed; the machine asks for
/// units (`.acquireUnits`) when queued requests need connections, keeps the ones granted or returned as `spareUnits`
/// only for the length of one event, and hands back whatever it cannot use at once (`.releaseUnits`). A failed
/// attempt gives its unit back while it backs off. Under pressure (other pools wait for units), a connection with no
/// stream and nothing queued is drained at once instead of waiting for the idle timeout.
struct HTTP2PoolStateMachine<Request: HTTP2PoolItem> {
    struct Configuration {
        var connectionCount: Int
        var maxQueued: Int
        /// Streams per connection before the server's first SETTINGS (APNs: one probe until the token is accepted).
        var initialMaxStreams: Int
        /// Our own ceiling on top of the server's SETTINGS_MAX_CONCURRENT_STREAMS.
        var maxStreamsCeiling: Int
        var maxRefusals: Int
        var backoff: HTTP2Backoff
        /// Each connection needs a unit of a shared budget (`.acquireUnits` / `.releaseUnits`).
        var budgeted = false
    }

    enum SlotState: Equatable {
        case idle
        case connecting(UInt64)
        case active(UInt64)
        case backingOff
    }

    struct Slot {
        var state: SlotState = .idle
        var maxStreams = 0
        var openStreams = 0
        /// Consecutive failed attempts; reset by the server's first SETTINGS.
        var failures = 0
    }

    enum Action {
        /// Open a connection with this id for this slot.
        case connect(slot: Int, connectionID: UInt64)
        /// Call `backoffExpired(slot:)` after this many nanoseconds.
        case scheduleReconnect(slot: Int, afterNanoseconds: UInt64)
        /// Complete these requests with this error.
        case fail([Request], HTTP2Error)
        /// Stop giving this connection new streams; let it finish its streams and close (GOAWAY).
        case drain(connectionID: UInt64)
        /// Shutdown finished: no connection remains.
        case shutdownComplete
        /// Ask the budget for this many units; each comes back as `unitsGranted`.
        case acquireUnits(Int)
        /// Give this many units back to the budget.
        case releaseUnits(Int)
        /// Withdraw the units still asked for (nothing is queued any more); answer with `unitRequestsWithdrawn`.
        case withdrawUnitRequests
    }

    enum EnqueueResult {
        case queued
        case rejected(Request, HTTP2Error)
    }

    private(set) var slots: [Slot]
    private var queue: RingBuffer<Request>
    /// Draining connections and their open streams.
    private(set) var draining: [UInt64: Int] = [:]
    private var nextConnectionID: UInt64 = 1
    private(set) var isShuttingDown = false
    private var shutdownReported = false
    private var earliestQueuedDeadline: NanoTime = .max
    private var roundRobin = 0
    /// Budget units in hand and not yet given to a connection (only between an event and its actions).
    private(set) var spareUnits = 0
    /// Units asked for and not yet granted.
    private(set) var unitsRequested = 0
    let configuration: Configuration

    init(configuration: Configuration) {
        self.configuration = configuration
        slots = Array(repeating: Slot(), count: max(1, configuration.connectionCount))
        queue = RingBuffer(initialCapacity: min(1024, max(16, configuration.maxQueued)))
    }

    var queuedCount: Int { queue.count }

    // MARK: - Requests

    /// A new request. It waits in the queue until `nextDispatch()` hands it to a connection.
    mutating func enqueue(_ request: Request) -> EnqueueResult {
        if isShuttingDown { return .rejected(request, .shutdown) }
        if queue.count >= configuration.maxQueued { return .rejected(request, .overloaded) }
        queue.append(request)
        earliestQueuedDeadline = min(earliestQueuedDeadline, request.deadline)
        return .queued
    }

    /// A request a server refused without processing it: back to the front of the queue, unless it was refused
    /// too often. Refused requests are already admitted, so they may go past `maxQueued` (bounded by the number
    /// that were in flight).
    mutating func retry(_ request: Request) -> EnqueueResult {
        var request = request
        request.refusals += 1
        if request.refusals > configuration.maxRefusals { return .rejected(request, .goAwayRetryExhausted) }
        if isShuttingDown { return .rejected(request, .shutdown) }
        queue.prepend(request)
        earliestQueuedDeadline = min(earliestQueuedDeadline, request.deadline)
        return .queued
    }

    /// The next request and the connection to send it on, or nil when nothing can go now. Call until nil after
    /// every event; it takes a stream from the chosen connection.
    mutating func nextDispatch() -> (slot: Int, connectionID: UInt64, request: Request)? {
        guard !queue.isEmpty, let slot = slotWithCapacity() else { return nil }
        guard case .active(let id) = slots[slot].state, let request = queue.popFirst() else { return nil }
        slots[slot].openStreams += 1
        if queue.isEmpty { earliestQueuedDeadline = .max }
        return (slot, id, request)
    }

    /// Connections to open for the requests still queued: one per queued request not covered by a connection
    /// already under way, up to the idle slots.
    /// With a budget, a connection opens only with a unit in hand: spare units first, then units asked for (the
    /// slots stay idle until they come); units that no slot can use go back at once.
    mutating func connectionsNeeded() -> [Action] {
        guard !isShuttingDown, !queue.isEmpty else { return releaseSpareUnits() }
        var connecting = 0
        var idle = 0
        for slot in slots {
            if case .connecting = slot.state { connecting += 1 }
            if slot.state == .idle { idle += 1 }
        }
        var actions: [Action] = []
        if configuration.budgeted {
            let wanted = min(idle, max(0, queue.count - connecting))
            let missing = wanted - spareUnits - unitsRequested
            if missing > 0 {
                unitsRequested += missing
                actions.append(.acquireUnits(missing))
            }
        }
        for i in slots.indices where queue.count > connecting {
            guard slots[i].state == .idle else { continue }
            if configuration.budgeted {
                guard spareUnits > 0 else { break }
                spareUnits -= 1
            }
            let id = nextConnectionID
            nextConnectionID += 1
            slots[i].state = .connecting(id)
            slots[i].openStreams = 0
            slots[i].maxStreams = 0
            connecting += 1
            actions.append(.connect(slot: i, connectionID: id))
        }
        return actions + releaseSpareUnits()
    }

    /// Units that reached the pool with nothing to use them on go back.
    private mutating func releaseSpareUnits() -> [Action] {
        guard spareUnits > 0 else { return [] }
        defer { spareUnits = 0 }
        return [.releaseUnits(spareUnits)]
    }

    // MARK: - Budget

    /// The budget granted units asked for with `.acquireUnits`: they open connections for the queue, or go back.
    mutating func unitsGranted(_ count: Int) -> [Action] {
        unitsRequested = max(0, unitsRequested - count)
        spareUnits += count
        return connectionsNeeded()
    }

    /// Nothing is queued but units are still asked for: withdraw the request, so this pool neither keeps the
    /// budget under pressure (closing others' idle connections) nor takes a unit it would hand straight back.
    mutating func unitRequestsNoLongerNeeded() -> [Action] {
        guard configuration.budgeted, queue.isEmpty, unitsRequested > 0 else { return [] }
        return [.withdrawUnitRequests]
    }

    /// The budget withdrew this many of the units asked for.
    mutating func unitRequestsWithdrawn(_ count: Int) {
        unitsRequested = max(0, unitsRequested - count)
    }

    /// Other pools wait for units: drain every connection that has no stream while nothing is queued.
    mutating func closeIdleConnections() -> [Action] {
        guard queue.isEmpty else { return [] }
        var actions: [Action] = []
        for i in slots.indices {
            guard case .active(let id) = slots[i].state, slots[i].openStreams == 0 else { continue }
            draining[id] = 0
            slots[i] = Slot(state: .idle, maxStreams: 0, openStreams: 0, failures: slots[i].failures)
            actions.append(.drain(connectionID: id))
        }
        return actions
    }

    /// A connection (opening, open or draining) is gone: its unit is spare until `connectionsNeeded` uses or
    /// releases it.
    private mutating func unitReturned() {
        if configuration.budgeted { spareUnits += 1 }
    }

    /// The least loaded active slot with a free stream (ties broken round robin).
    private mutating func slotWithCapacity() -> Int? {
        var best: Int?
        var bestFree = 0
        let count = slots.count
        for k in 0..<count {
            let i = (roundRobin + k) % count
            guard case .active = slots[i].state else { continue }
            let free = slots[i].maxStreams - slots[i].openStreams
            if free > bestFree {
                best = i
                bestFree = free
            }
        }
        if best != nil { roundRobin = (roundRobin + 1) % count }
        return best
    }

    private func slotIndex(of id: UInt64) -> Int? {
        for i in slots.indices {
            switch slots[i].state {
            case .connecting(let c) where c == id: return i
            case .active(let a) where a == id: return i
            default: continue
            }
        }
        return nil
    }

    // MARK: - Connection events

    /// TCP (and TLS) are up: the connection takes `initialMaxStreams` until the server's SETTINGS say otherwise.
    mutating func connectionEstablished(_ id: UInt64) {
        guard let i = slotIndex(of: id), case .connecting = slots[i].state else { return }
        slots[i].state = .active(id)
        slots[i].maxStreams = min(configuration.initialMaxStreams, configuration.maxStreamsCeiling)
        slots[i].openStreams = 0
    }

    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS (first or changed). The first SETTINGS proves the server
    /// speaks HTTP/2, so the failure count resets.
    mutating func maxConcurrentStreamsChanged(_ id: UInt64, to value: Int) {
        guard let i = slotIndex(of: id), case .active = slots[i].state else { return }
        slots[i].maxStreams = max(0, min(value, configuration.maxStreamsCeiling))
        slots[i].failures = 0
    }

    /// A stream of this connection finished (any outcome). Under budget pressure a connection left with no stream
    /// and nothing queued is drained at once.
    mutating func streamClosed(_ id: UInt64, underPressure: Bool = false) -> [Action] {
        if let open = draining[id] {
            draining[id] = max(0, open - 1)
            return []
        }
        guard let i = slotIndex(of: id) else { return [] }
        slots[i].openStreams = max(0, slots[i].openStreams - 1)
        if underPressure, configuration.budgeted, slots[i].openStreams == 0, queue.isEmpty, case .active = slots[i].state {
            draining[id] = 0
            slots[i] = Slot(state: .idle, maxStreams: 0, openStreams: 0, failures: slots[i].failures)
            return [.drain(connectionID: id)]
        }
        return []
    }

    /// The server sent GOAWAY: the connection finishes what it has and takes nothing new; the slot is free for a
    /// new connection at once.
    mutating func goAwayReceived(_ id: UInt64) -> [Action] {
        guard let i = slotIndex(of: id), case .active = slots[i].state else { return [] }
        draining[id] = slots[i].openStreams
        slots[i] = Slot(state: .idle, maxStreams: 0, openStreams: 0, failures: slots[i].failures)
        return connectionsNeeded()
    }

    /// The connection closed. Before establishment this is a failed attempt: back off, and if no connection is
    /// left to serve the queue, fail the waiting requests with `error` rather than let them time out.
    mutating func connectionClosed(_ id: UInt64, error: HTTP2Error?) -> [Action] {
        var actions: [Action] = []
        if draining.removeValue(forKey: id) != nil {
            unitReturned()
            actions += connectionsNeeded()
        } else if let i = slotIndex(of: id) {
            switch slots[i].state {
            case .connecting:
                unitReturned()
                slots[i].failures += 1
                slots[i].state = .backingOff
                slots[i].openStreams = 0
                slots[i].maxStreams = 0
                if !isShuttingDown {
                    let delay = configuration.backoff.delayNanoseconds(afterFailures: slots[i].failures)
                    actions.append(.scheduleReconnect(slot: i, afterNanoseconds: delay))
                }
                if !hasUsableConnection && !queue.isEmpty {
                    actions.append(.fail(queue.removeAll(), error ?? .connectFailed("connection closed")))
                    earliestQueuedDeadline = .max
                }
                // The backing-off slot gives its unit back: another pool may connect meanwhile.
                actions += releaseSpareUnits()
            case .active:
                unitReturned()
                slots[i].state = .idle
                slots[i].openStreams = 0
                slots[i].maxStreams = 0
                actions += connectionsNeeded()
            case .idle, .backingOff:
                break
            }
        }
        if let done = shutdownIfFinished() { actions.append(done) }
        return actions
    }

    /// The backoff delay of a slot passed: it may connect again.
    mutating func backoffExpired(slot i: Int) -> [Action] {
        guard i < slots.count, slots[i].state == .backingOff else { return [] }
        slots[i].state = .idle
        return connectionsNeeded()
    }

    /// True when some connection is up or being opened (so queued requests have somewhere to go).
    private var hasUsableConnection: Bool {
        slots.contains { slot in
            switch slot.state {
            case .active, .connecting: true
            case .idle, .backingOff: false
            }
        }
    }

    // MARK: - Time

    /// Fails queued requests whose deadline passed.
    mutating func expireQueued(now: NanoTime) -> [Action] {
        guard earliestQueuedDeadline <= now else { return [] }
        let expired = queue.removeAll { $0.deadline <= now }
        var earliest = NanoTime.max
        var copy = queue
        while let r = copy.popFirst() { earliest = min(earliest, r.deadline) }
        earliestQueuedDeadline = earliest
        return expired.isEmpty ? [] : [.fail(expired, .timeout)]
    }

    // MARK: - Operator

    /// Close every connection gracefully and open new ones as needed (APNs: after ExpiredProviderToken, or a
    /// changed key).
    mutating func recycleConnections() -> [Action] {
        var actions: [Action] = []
        for i in slots.indices {
            switch slots[i].state {
            case .active(let id):
                draining[id] = slots[i].openStreams
                slots[i] = Slot(state: .idle, maxStreams: 0, openStreams: 0, failures: 0)
                actions.append(.drain(connectionID: id))
            case .backingOff:
                slots[i].failures = 0
            case .idle, .connecting:
                break
            }
        }
        return actions + connectionsNeeded()
    }

    /// Fail the queue, drain every connection; `.shutdownComplete` comes once all have closed.
    mutating func shutdown() -> [Action] {
        guard !isShuttingDown else { return [] }
        isShuttingDown = true
        var actions: [Action] = []
        let queued = queue.removeAll()
        earliestQueuedDeadline = .max
        if !queued.isEmpty { actions.append(.fail(queued, .shutdown)) }
        for i in slots.indices {
            switch slots[i].state {
            case .active(let id):
                draining[id] = slots[i].openStreams
                actions.append(.drain(connectionID: id))
                slots[i] = Slot()
            case .connecting(let id):
                // Let the attempt finish or fail; it is drained as soon as it reports.
                draining[id] = 0
                actions.append(.drain(connectionID: id))
                slots[i] = Slot()
            case .idle, .backingOff:
                slots[i] = Slot()
            }
        }
        if let done = shutdownIfFinished() { actions.append(done) }
        return actions
    }

    private mutating func shutdownIfFinished() -> Action? {
        guard isShuttingDown, !shutdownReported, draining.isEmpty else { return nil }
        shutdownReported = true
        return .shutdownComplete
    }

    // MARK: - Inspection (tests, statistics)

    var activeConnectionCount: Int {
        slots.reduce(0) { count, slot in if case .active = slot.state { count + 1 } else { count } }
    }

    func maxStreams(slot i: Int) -> Int { slots[i].maxStreams }
    func openStreams(slot i: Int) -> Int { slots[i].openStreams }
}
