@testable import ClarionHTTP2
@testable import ClarionTransport
import Testing

/// The provider-connection budget with the pool state machine, no sockets and no clock: many pools share a budget
/// smaller than their total size, and a small driver here plays the connections (they connect at once, and each
/// step finishes one stream of a pool).
@Suite struct HTTP2ConnectionBudgetTests {
    struct Item: HTTP2PoolItem, Equatable {
        var name: Int
        var deadline: UInt64 = .max
        var refusals = 0
    }

    typealias Machine = HTTP2PoolStateMachine<Item>

    /// One pool and its pretend connections. Grants are kept until the harness delivers them, as the real driver
    /// hops to its loop.
    final class Pool: HTTP2ConnectionBudget.Waiter, @unchecked Sendable {
        var machine: Machine
        var pendingGrants = 0
        var inFlight: [UInt64: [Int]] = [:]
        var drainingIDs: Set<UInt64> = []
        var completed: [Int] = []
        var failed: [Int] = []

        init(connections: Int) {
            machine = Machine(configuration: .init(connectionCount: connections, maxQueued: 10_000, initialMaxStreams: 1,
                                                   maxStreamsCeiling: 100, maxRefusals: 2,
                                                   backoff: HTTP2Backoff(jitter: 0), budgeted: true))
        }

        func unitsGranted(_ count: Int) { pendingGrants += count }
        var openConnections: Int { inFlight.count }
    }

    final class Harness {
        let budget: HTTP2ConnectionBudget
        var pools: [Pool]
        var peakOpen = 0

        init(capacity: Int, pools: Int, connectionsPerPool: Int) {
            budget = HTTP2ConnectionBudget(capacity: capacity)
            self.pools = (0..<pools).map { _ in Pool(connections: connectionsPerPool) }
        }

        var openConnections: Int { pools.reduce(0) { $0 + $1.openConnections } }

        func perform(_ pool: Pool, _ actions: [Machine.Action]) {
            for action in actions {
                switch action {
                case .connect(_, let id):
                    pool.inFlight[id] = []
                    peakOpen = max(peakOpen, openConnections)
                    pool.machine.connectionEstablished(id)
                    pool.machine.maxConcurrentStreamsChanged(id, to: 100)
                case .acquireUnits(let count):
                    let now = budget.acquire(count, for: pool)
                    if now > 0 { perform(pool, pool.machine.unitsGranted(now)) }
                case .releaseUnits(let count):
                    budget.release(count)
                case .drain(let id):
                    pool.drainingIDs.insert(id)
                    if pool.inFlight[id]?.isEmpty ?? false { close(pool, id) }
                case .fail(let items, _):
                    pool.failed += items.map(\.name)
                case .withdrawUnitRequests:
                    pool.machine.unitRequestsWithdrawn(budget.cancel(for: pool))
                case .scheduleReconnect, .shutdownComplete:
                    break
                }
            }
        }

        func close(_ pool: Pool, _ id: UInt64) {
            pool.inFlight[id] = nil
            pool.drainingIDs.remove(id)
            perform(pool, pool.machine.connectionClosed(id, error: nil))
        }

        func dispatch(_ pool: Pool) {
            if pool.pendingGrants > 0 {
                let count = pool.pendingGrants
                pool.pendingGrants = 0
                perform(pool, pool.machine.unitsGranted(count))
            }
            while let (_, id, item) = pool.machine.nextDispatch() { pool.inFlight[id, default: []].append(item.name) }
            perform(pool, pool.machine.connectionsNeeded())
            perform(pool, pool.machine.unitRequestsNoLongerNeeded())
        }

        /// Finishes one stream of `pool`, as a response would.
        func finishOne(_ pool: Pool) {
            guard let (id, items) = pool.inFlight.first(where: { !$0.value.isEmpty }) else { return }
            pool.completed.append(items[0])
            pool.inFlight[id] = Array(items.dropFirst())
            perform(pool, pool.machine.streamClosed(id, underPressure: budget.isUnderPressure))
            if pool.drainingIDs.contains(id), pool.inFlight[id]?.isEmpty ?? false { close(pool, id) }
        }

        /// The driver's tick: under pressure, idle connections close.
        func tick(_ pool: Pool) {
            if budget.isUnderPressure { perform(pool, pool.machine.closeIdleConnections()) }
        }

        /// Runs until every pool finished `perPool` requests or `maxSteps` rounds passed; returns the rounds.
        func run(perPool: Int, maxSteps: Int = 100_000) -> Int {
            for step in 0..<maxSteps {
                if pools.allSatisfy({ $0.completed.count + $0.failed.count == perPool }) { return step }
                for pool in pools {
                    dispatch(pool)
                    finishOne(pool)
                    tick(pool)
                    #expect(openConnections <= budget.capacity)
                }
            }
            return maxSteps
        }
    }

    @Test func manyPoolsAboveTheBudgetAllCompleteAndNeverExceedIt() {
        // 50 FCM-like pools of 8 slots (400 possible connections) on a budget of 12.
        let harness = Harness(capacity: 12, pools: 50, connectionsPerPool: 8)
        for (p, pool) in harness.pools.enumerated() {
            for i in 0..<40 { _ = pool.machine.enqueue(Item(name: p * 1000 + i)) }
        }
        let steps = harness.run(perPool: 40)
        #expect(steps < 100_000, "no deadlock")
        for pool in harness.pools {
            #expect(pool.completed.count == 40)
            #expect(pool.failed.isEmpty)
        }
        #expect(harness.peakOpen <= 12)
        #expect(harness.peakOpen == 12, "the budget is used, not left idle")
        let stats = harness.budget.statistics()
        #expect(stats.peakInUse <= 12)
        #expect(stats.unitsHandedOver > 0, "pools waited and were served as units came back")
    }

    @Test func idlePoolsHoldingTheWholeBudgetDoNotStallANewFanOut() {
        // Two pools take the whole budget and go idle (their connections stay open: no idle timeout here).
        let harness = Harness(capacity: 2, pools: 3, connectionsPerPool: 1)
        let (a, b, c) = (harness.pools[0], harness.pools[1], harness.pools[2])
        _ = a.machine.enqueue(Item(name: 1))
        _ = b.machine.enqueue(Item(name: 2))
        for pool in [a, b] {
            harness.dispatch(pool)
            harness.dispatch(pool)
            harness.finishOne(pool)
        }
        #expect(a.openConnections == 1 && b.openConnections == 1, "idle connections stay open without pressure")
        #expect(harness.budget.statistics().inUse == 2)
        #expect(!harness.budget.isUnderPressure)
        // A third pool needs a connection: it waits, which puts the budget under pressure.
        _ = c.machine.enqueue(Item(name: 3))
        harness.dispatch(c)
        #expect(c.openConnections == 0)
        #expect(harness.budget.isUnderPressure)
        #expect(harness.budget.statistics().waitingPools == 1)
        // The idle pools' next tick closes their connections; the first unit back goes to the waiting pool.
        harness.tick(a)
        #expect(a.openConnections == 0)
        #expect(c.pendingGrants == 1)
        #expect(!harness.budget.isUnderPressure, "nobody waits any more")
        harness.tick(b)
        #expect(b.openConnections == 1, "without pressure an idle connection is kept")
        harness.dispatch(c)
        harness.dispatch(c)
        harness.finishOne(c)
        #expect(c.completed == [3])
        #expect(harness.budget.statistics().peakInUse == 2)
    }

    @Test func waitingPoolsAreServedFirstComeFirstServed() {
        let budget = HTTP2ConnectionBudget(capacity: 1)
        let holder = Pool(connections: 1)
        let first = Pool(connections: 1)
        let second = Pool(connections: 1)
        #expect(budget.acquire(1, for: holder) == 1)
        #expect(budget.acquire(2, for: first) == 0)
        #expect(budget.acquire(1, for: second) == 0)
        budget.release(1)
        #expect(first.pendingGrants == 1 && second.pendingGrants == 0)
        budget.release(1)
        #expect(first.pendingGrants == 2 && second.pendingGrants == 0)
        budget.release(1)
        #expect(second.pendingGrants == 1)
        #expect(!budget.isUnderPressure)
        // A newcomer does not overtake a waiter: with someone waiting, a free unit is never taken directly.
        let third = Pool(connections: 1)
        #expect(budget.acquire(1, for: third) == 0)
        #expect(budget.statistics().inUse == 1)
    }

    @Test func unitsGrantedAfterTheQueueEmptiedGoBack() {
        let budget = HTTP2ConnectionBudget(capacity: 1)
        let holder = Pool(connections: 1)
        #expect(budget.acquire(1, for: holder) == 1)
        let pool = Pool(connections: 2)
        _ = pool.machine.enqueue(Item(name: 1, deadline: 10))
        let actions = pool.machine.connectionsNeeded()
        guard case .acquireUnits(1)? = actions.first else { Issue.record("asked for \(actions)"); return }
        #expect(budget.acquire(1, for: pool) == 0)
        // The request times out while the pool waits: it fails with its deadline, not before.
        let expired = pool.machine.expireQueued(now: 11)
        guard case .fail(let items, .timeout)? = expired.first else { Issue.record("\(expired)"); return }
        #expect(items.map(\.name) == [1])
        budget.release(1)
        #expect(pool.pendingGrants == 1)
        let back = pool.machine.unitsGranted(1)
        guard case .releaseUnits(1)? = back.first, back.count == 1 else { Issue.record("\(back)"); return }
        budget.release(1)
        #expect(budget.statistics().inUse == 0)
    }

    @Test func aPoolWhoseQueueEmptiedWithdrawsItsRequestAndLiftsThePressure() {
        // One pool holds the only unit; a second waits for two: pressure. The first pool's own 2-slot pool asks
        // for a second unit while its first connection already serves everything.
        let harness = Harness(capacity: 1, pools: 2, connectionsPerPool: 2)
        let (a, b) = (harness.pools[0], harness.pools[1])
        for i in 0..<5 { _ = a.machine.enqueue(Item(name: i)) }
        harness.dispatch(a)
        #expect(a.openConnections == 1)
        #expect(a.machine.unitsRequested == 1, "5 queued, 2 slots: a second connection was asked for")
        #expect(harness.budget.isUnderPressure)
        // Its connection takes all five (SETTINGS came): the queue is empty, the request is withdrawn.
        harness.dispatch(a)
        #expect(a.machine.queuedCount == 0)
        #expect(a.machine.unitsRequested == 0)
        #expect(!harness.budget.isUnderPressure, "nobody waits: a's idle connection will not be closed for nothing")
        // b now waits: pressure again, and a's connection closes once its streams are done.
        _ = b.machine.enqueue(Item(name: 100))
        harness.dispatch(b)
        #expect(harness.budget.isUnderPressure)
        for _ in 0..<5 { harness.finishOne(a) }
        #expect(a.openConnections == 0)
        #expect(b.pendingGrants == 1)
        harness.dispatch(b)
        harness.dispatch(b)
        harness.finishOne(b)
        #expect(b.completed == [100])
        #expect(harness.budget.statistics().peakInUse == 1)
    }

    @Test func aFailedAttemptGivesItsUnitBackWhileItBacksOff() {
        let budget = HTTP2ConnectionBudget(capacity: 4)
        let pool = Pool(connections: 1)
        _ = pool.machine.enqueue(Item(name: 1))
        var connected: UInt64 = 0
        var actions = pool.machine.connectionsNeeded()
        guard case .acquireUnits(let n)? = actions.first else { Issue.record("\(actions)"); return }
        actions = pool.machine.unitsGranted(budget.acquire(n, for: pool))
        for case .connect(_, let id) in actions { connected = id }
        #expect(connected != 0)
        #expect(budget.statistics().inUse == 1)
        actions = pool.machine.connectionClosed(connected, error: .connectFailed("refused"))
        var released = 0
        for case .releaseUnits(let count) in actions { released += count }
        #expect(released == 1)
    }

    @Test func shutdownReturnsEveryUnit() {
        let harness = Harness(capacity: 3, pools: 1, connectionsPerPool: 3)
        let pool = harness.pools[0]
        for i in 0..<10 { _ = pool.machine.enqueue(Item(name: i)) }
        harness.dispatch(pool)
        harness.dispatch(pool)
        #expect(harness.budget.statistics().inUse == 3)
        harness.perform(pool, pool.machine.shutdown())
        while pool.inFlight.contains(where: { !$0.value.isEmpty }) { harness.finishOne(pool) }
        #expect(pool.openConnections == 0)
        #expect(harness.budget.statistics().inUse == 0)
    }

    /// The driver over a real event loop: a pool with no connection and nothing queued stops its tick (thousands of
    /// idle applications' pools would otherwise wake 10 times a second each), and work arriving starts it again, so a
    /// request waiting for a unit still fails at its deadline.
    @Test func anIdlePoolStopsTickingYetAQueuedRequestStillTimesOut() async throws {
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        let budget = HTTP2ConnectionBudget(capacity: 1)
        let holder = Pool(connections: 1)
        #expect(budget.acquire(1, for: holder) == 1, "the only unit is taken: the pool below cannot connect")
        var configuration = HTTP2PoolConfiguration(origin: HTTP2Origin(scheme: .http, host: "127.0.0.1", port: 9),
                                                   requestTimeout: .milliseconds(300), tickInterval: .milliseconds(20))
        configuration.connectionBudget = budget
        let pool = try HTTP2ClientPool(configuration: configuration, group: group)
        try await Task.sleep(for: .milliseconds(200))  // several tick intervals with nothing to do
        let started = ContinuousClock.now
        let result = await pool.send(HTTP2Request(path: "/", body: []))
        let waited = ContinuousClock.now - started
        guard case .failure(.timeout) = result else { Issue.record("expected a timeout, got \(result)"); return }
        #expect(waited >= .milliseconds(280) && waited < .seconds(3), "\(waited)")
        #expect(budget.statistics().waitingPools == 1)
        #expect(budget.statistics().peakInUse == 1)
        await pool.shutdown()
    }

    @Test func withoutABudgetNothingIsAskedFor() {
        var machine = Machine(configuration: .init(connectionCount: 2, maxQueued: 10, initialMaxStreams: 1,
                                                   maxStreamsCeiling: 10, maxRefusals: 2, backoff: HTTP2Backoff(jitter: 0)))
        _ = machine.enqueue(Item(name: 1))
        let actions = machine.connectionsNeeded()
        #expect(actions.count == 1)
        guard case .connect? = actions.first else { Issue.record("\(actions)"); return }
    }
}
