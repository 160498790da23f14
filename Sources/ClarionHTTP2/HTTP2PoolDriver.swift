import ClarionCore
import Synchronization
import ClarionTransport

/// Counts requests admitted but not yet on a stream (in hand-over to the loop, or queued), so callers on any
/// thread learn at once that the queue is full.
final class PoolGate: Sendable {
    let limit: Int
    private let waiting = Atomic<Int>(0)

    init(limit: Int) {
        self.limit = limit
    }

    /// Admits up to `count` requests; returns how many were admitted (a prefix).
    func reserve(_ count: Int) -> Int {
        let before = waiting.wrappingAdd(count, ordering: .relaxed).oldValue
        let admitted = max(0, min(count, limit - before))
        if admitted < count { waiting.wrappingSubtract(count - admitted, ordering: .relaxed) }
        return admitted
    }

    /// A refused request re-enters the queue: it was admitted before, so it is not turned away here.
    func readmit() {
        waiting.wrappingAdd(1, ordering: .relaxed)
    }

    func release(_ count: Int = 1) {
        waiting.wrappingSubtract(count, ordering: .relaxed)
    }

    var count: Int { waiting.load(ordering: .relaxed) }
}

/// Collects batch-path results for one sink and hands them over once per loop turn.
final class CompletionBatcher: EventLoopFlushable {
    let sink: any HTTP2CompletionSink
    private let loop: EventLoop
    // Loop-confined; the sink runs with a swapped-out array, never while these are being mutated.
    @exclusivity(unchecked) private var buffer: [HTTP2Completion] = []
    @exclusivity(unchecked) private var spare: [HTTP2Completion] = []
    @exclusivity(unchecked) private var scheduled = false
    /// Admitted requests whose result has not been added yet; at 0 the driver forgets this batcher.
    var outstanding = 0

    init(sink: any HTTP2CompletionSink, loop: EventLoop) {
        self.sink = sink
        self.loop = loop
        buffer.reserveCapacity(256)
    }

    func add(_ completion: HTTP2Completion) {
        buffer.append(completion)
        if !scheduled {
            scheduled = true
            loop.scheduleFlush(self, phase: .completions)
        }
    }

    func flushAtEndOfTurn() {
        scheduled = false
        guard !buffer.isEmpty else { return }
        var batch = spare
        swap(&batch, &buffer)  // the sink may submit (and complete) more while it runs
        sink.receive(batch)
        batch.removeAll(keepingCapacity: true)
        spare = batch
    }
}

/// Runs an `HTTP2PoolStateMachine` on one event loop: opens connections, hands requests to them, delivers results.
/// Everything here runs on `loop`; `@unchecked Sendable` only so the public pool can hand jobs to it.
final class HTTP2PoolDriver: EventLoopFlushable, HTTP2ConnectionBudget.Waiter, @unchecked Sendable {
    let loop: EventLoop
    /// The node's provider-connection budget, if the pool has one: every connection holds a unit of it.
    let budget: HTTP2ConnectionBudget?
    let configuration: HTTP2PoolConfiguration
    let connectionConfiguration: HTTP2ConnectionStateMachine.Configuration
    let defaultAuthority: String
    let gate: PoolGate
    /// Built on the loop at the first TLS connect: loading the system CA store reads files, which must not happen
    /// on the caller's (possibly cooperative) thread.
    private var tlsContext: TLSContext?
    private let resolver: HostResolver
    // A pure state machine: its mutating methods never call out, so the per-call exclusivity check is skipped.
    @exclusivity(unchecked) private var machine: HTTP2PoolStateMachine<PendingRequest>
    private var connections: [UInt64: HTTP2ClientConnection] = [:]
    private var closeOnArrival: Set<UInt64> = []
    /// Batchers of sinks with requests outstanding.
    private var batchers: [ObjectIdentifier: CompletionBatcher] = [:]
    @exclusivity(unchecked) private var dispatchScheduled = false
    /// The connection the last request went to. Strong (a weak reference would move every retain of this hot
    /// object to a side table) and dropped in `connectionClosed`.
    private var lastDispatched: HTTP2ClientConnection?
    private var tickTimer: UInt64 = 0
    private var shutdownWaiters: [CheckedContinuation<Void, Never>] = []
    private var shutdownDone = false
    private var connectionsOpened = 0
    private var connectAttemptsFailed = 0
    private var goAwaysReceived = 0

    init(configuration: HTTP2PoolConfiguration, loop: EventLoop, resolver: HostResolver) throws(TLSConfigurationError) {
        self.loop = loop
        self.configuration = configuration
        self.resolver = resolver
        defaultAuthority = configuration.origin.authority
        budget = configuration.connectionBudget
        gate = PoolGate(limit: max(1, configuration.maxQueuedRequests))
        // Fail fast on a bad CA PEM, an unusable client certificate or a key that is not its key (in memory, no
        // I/O). The same check configuration-time callers run (the API, through ProviderRegistry).
        try configuration.validateTLS()
        connectionConfiguration = HTTP2ConnectionStateMachine.Configuration(
            pingInterval: configuration.pingInterval?.nanoseconds,
            pingTimeout: configuration.pingTimeout.nanoseconds,
            idleTimeout: configuration.idleTimeout?.nanoseconds,
            connectTimeout: configuration.connectTimeout.nanoseconds)
        machine = HTTP2PoolStateMachine(configuration: .init(
            connectionCount: configuration.connectionCount,
            maxQueued: max(1, configuration.maxQueuedRequests),
            initialMaxStreams: max(1, configuration.initialConcurrentStreams),
            maxStreamsCeiling: max(1, configuration.maxConcurrentStreamsPerConnection),
            maxRefusals: configuration.maxRefusedRetries,
            backoff: configuration.backoff,
            budgeted: configuration.connectionBudget != nil))
    }

    func start() {
        scheduleTick()
    }

    // MARK: - Requests in

    func enqueue(_ pending: PendingRequest) {
        ensureTicking()
        admit(pending)
        scheduleDispatch()
    }

    func enqueueBatch(_ requests: [HTTP2Request], count: Int, sink: any HTTP2CompletionSink, now: NanoTime) {
        ensureTicking()
        let batcher = batcher(for: sink)
        batcher.outstanding += count
        let defaultTimeout = configuration.requestTimeout.nanoseconds
        for i in 0..<count {
            let request = requests[i]
            admit(PendingRequest(request: request, batcher: batcher,
                                 deadline: now &+ (request.timeout?.nanoseconds ?? defaultTimeout)))
        }
        scheduleDispatch()
    }

    private func admit(_ pending: PendingRequest) {
        if case .rejected(let request, let error) = machine.enqueue(pending) {
            gate.release()
            complete(request, .failure(error))
        }
    }

    private func batcher(for sink: any HTTP2CompletionSink) -> CompletionBatcher {
        let key = ObjectIdentifier(sink)
        if let batcher = batchers[key] { return batcher }
        let batcher = CompletionBatcher(sink: sink, loop: loop)
        batchers[key] = batcher
        return batcher
    }

    func complete(_ pending: PendingRequest, _ result: HTTP2Result) {
        if let batcher = pending.batcher {
            batcher.add(HTTP2Completion(tag: pending.request.tag, result: result))
            batcher.outstanding -= 1
            if batcher.outstanding == 0 {
                // Nothing more will come for this sink: forget it (the pending flush still delivers what is
                // buffered), so a caller that uses a new sink per batch does not grow this table.
                batchers[ObjectIdentifier(batcher.sink)] = nil
            }
        } else {
            pending.continuation?.resume(returning: result)
        }
    }

    /// A request the server refused unprocessed goes back to the front of the queue.
    func retry(_ pending: PendingRequest) {
        gate.readmit()
        if case .rejected(let request, let error) = machine.retry(pending) {
            gate.release()
            complete(request, .failure(error))
        }
        scheduleDispatch()
    }

    // MARK: - Dispatch (end of turn, so many requests go out in one write)

    private func scheduleDispatch() {
        guard !dispatchScheduled else { return }
        dispatchScheduled = true
        loop.scheduleFlush(self, phase: .dispatch)
    }

    func flushAtEndOfTurn() {
        dispatchScheduled = false
        while let (_, id, pending) = machine.nextDispatch() {
            gate.release()
            // Consecutive requests mostly go to the same connection: skip the dictionary lookup then.
            let connection: HTTP2ClientConnection?
            if let last = lastDispatched, last.connectionID == id {
                connection = last
            } else {
                connection = connections[id]
                lastDispatched = connection
            }
            guard let connection else {
                // Cannot happen: an active slot always has its connection. Keep the books straight anyway.
                _ = machine.streamClosed(id)
                retry(pending)
                continue
            }
            if let back = connection.start(pending) {
                // The session cannot open streams any more (ids exhausted, going away): move it out, retry.
                _ = machine.streamClosed(id)
                perform(machine.goAwayReceived(id))
                retry(back)
            }
        }
        perform(machine.connectionsNeeded())
        perform(machine.unitRequestsNoLongerNeeded())
    }

    // MARK: - Connection events

    func connectionEstablished(_ connection: HTTP2ClientConnection) {
        connectionsOpened += 1
        machine.connectionEstablished(connection.connectionID)
        if closeOnArrival.remove(connection.connectionID) != nil { connection.drain() }
        scheduleDispatch()
    }

    func maxConcurrentStreamsChanged(_ connection: HTTP2ClientConnection, to value: Int) {
        machine.maxConcurrentStreamsChanged(connection.connectionID, to: value)
        scheduleDispatch()
    }

    func streamClosed(_ connection: HTTP2ClientConnection) {
        perform(machine.streamClosed(connection.connectionID, underPressure: budget?.isUnderPressure ?? false))
        scheduleDispatch()
    }

    func goAwayReceived(_ connection: HTTP2ClientConnection) {
        goAwaysReceived += 1
        perform(machine.goAwayReceived(connection.connectionID))
        scheduleDispatch()
    }

    func connectionClosed(_ connection: HTTP2ClientConnection, error: HTTP2Error?) {
        connections[connection.connectionID] = nil
        if lastDispatched === connection { lastDispatched = nil }
        closeOnArrival.remove(connection.connectionID)
        if case .connectFailed = error { connectAttemptsFailed += 1 }
        if case .tlsVerificationFailed = error { connectAttemptsFailed += 1 }
        if case .tlsHandshakeFailed = error { connectAttemptsFailed += 1 }
        if case .tlsClientCertificateRejected = error { connectAttemptsFailed += 1 }
        perform(machine.connectionClosed(connection.connectionID, error: error))
        scheduleDispatch()
    }

    private func perform(_ actions: [HTTP2PoolStateMachine<PendingRequest>.Action]) {
        for action in actions {
            switch action {
            case .connect(_, let id):
                connect(id)
            case .scheduleReconnect(let slot, let delay):
                // Timers hold the driver strongly (no weak reference: it would move every retain of this hot
                // object to a side table). The driver lives until `shutdown`, which cancels the tick.
                loop.addTimer(after: delay) { [self] in
                    perform(machine.backoffExpired(slot: slot))
                    scheduleDispatch()
                }
            case .fail(let requests, let error):
                gate.release(requests.count)
                for request in requests { complete(request, .failure(error)) }
            case .drain(let id):
                if let connection = connections[id] {
                    connection.drain()
                } else {
                    closeOnArrival.insert(id)
                }
            case .acquireUnits(let count):
                guard let budget else { continue }
                let now = budget.acquire(count, for: self)
                if now > 0 { perform(machine.unitsGranted(now)) }
            case .releaseUnits(let count):
                budget?.release(count)
            case .withdrawUnitRequests:
                if let budget { machine.unitRequestsWithdrawn(budget.cancel(for: self)) }
            case .shutdownComplete:
                shutdownDone = true
                if tickTimer != 0 { loop.cancelTimer(tickTimer) }
                tickTimer = 0
                let waiters = shutdownWaiters
                shutdownWaiters.removeAll()
                for waiter in waiters { waiter.resume() }
            }
        }
    }

    /// Units this pool waited for (called by the budget, on any thread).
    func unitsGranted(_ count: Int) {
        loop.execute { [self] in
            perform(machine.unitsGranted(count))
            scheduleDispatch()
        }
    }

    // MARK: - Connecting

    private func connect(_ id: UInt64) {
        let origin = configuration.origin
        resolver.resolve(host: origin.host, port: origin.port) { [self] resolved in
            let result = resolved.mapError(HTTP2Error.init)
            if loop.inEventLoop {
                finishConnect(id, result)
            } else {
                loop.execute { self.finishConnect(id, result) }
            }
        }
    }

    private func finishConnect(_ id: UInt64, _ result: Result<[SocketAddress], HTTP2Error>) {
        func failed(_ error: HTTP2Error) {
            connectAttemptsFailed += 1
            closeOnArrival.remove(id)
            perform(machine.connectionClosed(id, error: error))
            scheduleDispatch()
        }
        if closeOnArrival.contains(id) {
            failed(.shutdown)
            return
        }
        let address: SocketAddress
        switch result {
        case .failure(let error):
            failed(error)
            return
        case .success(let addresses):
            // Every address the host resolves to is judged, and the one connected to is among them (no second
            // resolution to rebind).
            if let policy = configuration.addressPolicy, !policy.allowsHost(configuration.origin.host),
               let refused = addresses.first(where: { !policy.allows(address: $0.addressText) }) {
                failed(.connectFailed("\(configuration.origin.host) resolves to \(refused.addressText), which the node's "
                    + "outbound address policy refuses (loopback, private and reserved ranges need CLARION_PROVIDER_ALLOW_HOSTS)"))
                return
            }
            address = addresses[0]
        }
        var tls: TLSSession?
        if configuration.origin.scheme == .https {
            if tlsContext == nil {
                do {
                    tlsContext = configuration.offersHTTP1
                        ? try TLSContext(clientTrusting: configuration.trustedCAPEM, identity: configuration.clientIdentity,
                                         offering: ["h2", "http/1.1"])
                        : try TLSContext(clientTrusting: configuration.trustedCAPEM, identity: configuration.clientIdentity,
                                         alpn: "h2")
                } catch {
                    failed(.tlsHandshakeFailed("\(error)"))
                    return
                }
            }
            do {
                tls = try TLSSession(context: tlsContext!, serverName: configuration.origin.host)
            } catch {
                failed(HTTP2Error(error))
                return
            }
        }
        let fd = SocketIO.makeTCPSocket(family: address.family)
        guard fd >= 0 else {
            failed(.connectFailed("socket: \(SocketIO.errorString(errno))"))
            return
        }
        if case .failed(let code) = SocketIO.connect(fd, to: address) {
            _ = closeFD(fd)
            failed(.connectFailed("\(address): \(SocketIO.errorString(code))"))
            return
        }
        let connection = HTTP2ClientConnection(pool: self, connectionID: id, fd: fd, tls: tls, now: monotonicNow())
        connections[id] = connection
        connection.register()
    }

    // MARK: - Time

    private func scheduleTick() {
        tickTimer = loop.addTimer(after: configuration.tickInterval.nanoseconds) { [self] in tick() }
    }

    /// An idle pool (no connection, nothing queued) stops its tick: with thousands of applications' pools loaded,
    /// their ticks were the CPU an idle application cost. Work arriving starts it again; connections only open
    /// for queued requests, so a pool with a connection always ticks.
    private func ensureTicking() {
        if tickTimer == 0 && !shutdownDone { scheduleTick() }
    }

    private func tick() {
        let now = monotonicNow()
        perform(machine.expireQueued(now: now))
        for connection in Array(connections.values) { connection.tick(now: now) }
        // Pressure that began while this pool's connections were busy: they close once idle.
        if let budget, budget.isUnderPressure { perform(machine.closeIdleConnections()) }
        if shutdownDone { return }
        if connections.isEmpty && machine.queuedCount == 0 {
            tickTimer = 0
            return
        }
        scheduleTick()
    }

    // MARK: - Operator

    func recycleConnections() {
        perform(machine.recycleConnections())
        scheduleDispatch()
    }

    func shutdown(_ done: CheckedContinuation<Void, Never>) {
        if shutdownDone {
            done.resume()
            return
        }
        shutdownWaiters.append(done)
        perform(machine.shutdown())
    }

    var batcherCount: Int { batchers.count }

    func statistics() -> HTTP2PoolStatistics {
        var limits: [Int] = []
        var inFlight = 0
        var connecting = 0
        var backingOff = 0
        for (i, slot) in machine.slots.enumerated() {
            switch slot.state {
            case .active: limits.append(machine.maxStreams(slot: i))
            case .connecting: connecting += 1
            case .backingOff: backingOff += 1
            default: break
            }
        }
        for connection in connections.values { inFlight += connection.openStreamCount }
        return HTTP2PoolStatistics(
            activeConnections: machine.activeConnectionCount, drainingConnections: machine.draining.count,
            queuedRequests: machine.queuedCount, inFlightRequests: inFlight, maxConcurrentStreams: limits,
            connectionsOpened: connectionsOpened, connectAttemptsFailed: connectAttemptsFailed,
            goAwaysReceived: goAwaysReceived, connectingConnections: connecting, backingOffSlots: backingOff)
    }
}

#if canImport(Glibc)
import Glibc
private func closeFD(_ fd: Int32) -> Int32 { Glibc.close(fd) }
#endif
