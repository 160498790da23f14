@testable import ClarionHTTP2
import Testing

/// The pool's scheduling logic with no sockets and no clock.
@Suite struct HTTP2PoolStateMachineTests {
    struct Item: HTTP2PoolItem, Equatable {
        var name: Int
        var deadline: UInt64 = .max
        var refusals = 0
    }

    typealias Machine = HTTP2PoolStateMachine<Item>

    private func machine(connections: Int = 1, maxQueued: Int = 100, initialStreams: Int = 1, ceiling: Int = 1000,
                         maxRefusals: Int = 2, backoff: HTTP2Backoff = HTTP2Backoff(jitter: 0)) -> Machine {
        Machine(configuration: .init(connectionCount: connections, maxQueued: maxQueued,
                                     initialMaxStreams: initialStreams, maxStreamsCeiling: ceiling,
                                     maxRefusals: maxRefusals, backoff: backoff))
    }

    private func connectIDs(_ actions: [Machine.Action]) -> [UInt64] {
        actions.compactMap { if case .connect(_, let id) = $0 { id } else { nil } }
    }

    private func drainDispatches(_ machine: inout Machine) -> [(UInt64, Int)] {
        var out: [(UInt64, Int)] = []
        while let (_, id, item) = machine.nextDispatch() { out.append((id, item.name)) }
        return out
    }

    @Test func firstRequestOpensOneConnectionAndWaitsForIt() {
        var m = machine(connections: 3)
        guard case .queued = m.enqueue(Item(name: 1)) else { Issue.record("not queued"); return }
        #expect(m.nextDispatch() == nil)
        let ids = connectIDs(m.connectionsNeeded())
        #expect(ids.count == 1)
        #expect(connectIDs(m.connectionsNeeded()).isEmpty, "one queued request needs one connection")
        m.connectionEstablished(ids[0])
        #expect(drainDispatches(&m).map(\.1) == [1])
    }

    @Test func apnsRuleOneStreamBeforeSettingsThenWhatSettingsSay() {
        var m = machine()
        for i in 0..<10 { _ = m.enqueue(Item(name: i)) }
        let id = connectIDs(m.connectionsNeeded())[0]
        m.connectionEstablished(id)
        #expect(drainDispatches(&m).map(\.1) == [0], "a new connection carries a single probe stream")
        m.maxConcurrentStreamsChanged(id, to: 4)
        #expect(drainDispatches(&m).map(\.1) == [1, 2, 3])
        _ = m.streamClosed(id)
        #expect(drainDispatches(&m).map(\.1) == [4])
    }

    @Test func loweredLimitStopsDispatchUntilOpenStreamsFallBelowIt() {
        var m = machine()
        for i in 0..<20 { _ = m.enqueue(Item(name: i)) }
        let id = connectIDs(m.connectionsNeeded())[0]
        m.connectionEstablished(id)
        m.maxConcurrentStreamsChanged(id, to: 10)
        #expect(drainDispatches(&m).count == 10)
        m.maxConcurrentStreamsChanged(id, to: 2)
        for _ in 0..<8 {
            _ = m.streamClosed(id)
            #expect(m.nextDispatch() == nil, "still at or above the lowered limit")
        }
        _ = m.streamClosed(id)
        #expect(drainDispatches(&m).count == 1)
        #expect(m.openStreams(slot: 0) == 2)
    }

    @Test func ourCeilingCapsTheServersLimit() {
        var m = machine(ceiling: 5)
        for i in 0..<20 { _ = m.enqueue(Item(name: i)) }
        let id = connectIDs(m.connectionsNeeded())[0]
        m.connectionEstablished(id)
        m.maxConcurrentStreamsChanged(id, to: 1000)
        #expect(drainDispatches(&m).count == 5)
    }

    @Test func requestsSpreadOverConnectionsByFreeCapacity() {
        var m = machine(connections: 2)
        for i in 0..<8 { _ = m.enqueue(Item(name: i)) }
        let ids = connectIDs(m.connectionsNeeded())
        #expect(ids.count == 2)
        for id in ids {
            m.connectionEstablished(id)
            m.maxConcurrentStreamsChanged(id, to: 4)
        }
        let dispatched = drainDispatches(&m)
        #expect(dispatched.filter { $0.0 == ids[0] }.count == 4)
        #expect(dispatched.filter { $0.0 == ids[1] }.count == 4)
    }

    @Test func fullQueueRejectsWithOverloaded() {
        var m = machine(maxQueued: 3)
        for i in 0..<3 { guard case .queued = m.enqueue(Item(name: i)) else { Issue.record("rejected early"); return } }
        guard case .rejected(let item, let error) = m.enqueue(Item(name: 9)) else {
            Issue.record("queue grew past its bound")
            return
        }
        #expect(item.name == 9)
        #expect(error == .overloaded)
        #expect(m.queuedCount == 3)
    }

    @Test func failedConnectBacksOffExponentiallyUpToSixtySeconds() {
        var m = machine()
        var delays: [UInt64] = []
        for attempt in 0..<9 {
            _ = m.enqueue(Item(name: attempt))
            let id = connectIDs(m.connectionsNeeded())[0]
            let actions = m.connectionClosed(id, error: .connectFailed("refused"))
            for action in actions {
                if case .scheduleReconnect(let slot, let delay) = action {
                    delays.append(delay)
                    #expect(connectIDs(m.connectionsNeeded()).isEmpty, "no attempt while backing off")
                    _ = m.backoffExpired(slot: slot)
                }
            }
        }
        #expect(delays.map { $0 / 1_000_000_000 } == [1, 2, 4, 8, 16, 32, 60, 60, 60])
    }

    @Test func settingsResetTheFailureCount() {
        var m = machine()
        _ = m.enqueue(Item(name: 0))
        var id = connectIDs(m.connectionsNeeded())[0]
        _ = m.connectionClosed(id, error: .connectFailed("refused"))
        _ = m.backoffExpired(slot: 0)
        _ = m.enqueue(Item(name: 1))
        id = connectIDs(m.connectionsNeeded())[0]
        m.connectionEstablished(id)
        m.maxConcurrentStreamsChanged(id, to: 10)
        _ = drainDispatches(&m)
        _ = m.connectionClosed(id, error: .connectionLost("reset"))
        _ = m.enqueue(Item(name: 2))
        id = connectIDs(m.connectionsNeeded())[0]
        let actions = m.connectionClosed(id, error: .connectFailed("refused"))
        let delay = actions.compactMap { if case .scheduleReconnect(_, let d) = $0 { d } else { nil } }.first
        #expect(delay == 1_000_000_000, "back to the initial delay after a connection that worked")
    }

    @Test func failedConnectWithNoOtherConnectionFailsTheQueueWithItsError() {
        var m = machine(connections: 1)
        for i in 0..<3 { _ = m.enqueue(Item(name: i)) }
        let id = connectIDs(m.connectionsNeeded())[0]
        let actions = m.connectionClosed(id, error: .tlsVerificationFailed("self-signed certificate"))
        let failed = actions.compactMap { if case .fail(let items, let error) = $0 { (items, error) } else { nil } }
        #expect(failed.count == 1)
        #expect(failed.first?.0.map(\.name) == [0, 1, 2])
        #expect(failed.first?.1 == .tlsVerificationFailed("self-signed certificate"))
        #expect(m.queuedCount == 0)
    }

    @Test func failedConnectKeepsTheQueueWhileAnotherConnectionIsUp() {
        var m = machine(connections: 2)
        _ = m.enqueue(Item(name: 0))
        _ = m.enqueue(Item(name: 1))
        let ids = connectIDs(m.connectionsNeeded())
        m.connectionEstablished(ids[0])
        let actions = m.connectionClosed(ids[1], error: .connectFailed("refused"))
        #expect(!actions.contains { if case .fail = $0 { true } else { false } })
        #expect(drainDispatches(&m).map(\.1) == [0])
    }

    @Test func goAwayFreesTheSlotAndRefusedRequestsGoFirst() {
        var m = machine(connections: 1)
        for i in 0..<5 { _ = m.enqueue(Item(name: i)) }
        let first = connectIDs(m.connectionsNeeded())[0]
        m.connectionEstablished(first)
        m.maxConcurrentStreamsChanged(first, to: 3)
        #expect(drainDispatches(&m).map(\.1) == [0, 1, 2])
        // GOAWAY with last-stream-id covering request 0: 1 and 2 were refused.
        let actions = m.goAwayReceived(first)
        let second = connectIDs(actions)
        #expect(second.count == 1, "a replacement connection opens at once")
        _ = m.retry(Item(name: 2))
        _ = m.retry(Item(name: 1))
        #expect(m.draining[first] == 3)
        m.connectionEstablished(second[0])
        m.maxConcurrentStreamsChanged(second[0], to: 10)
        #expect(drainDispatches(&m).map(\.1) == [1, 2, 3, 4], "refused requests keep their place in line")
        // The draining connection finishes its last stream and closes; nothing else happens.
        for _ in 0..<3 { _ = m.streamClosed(first) }
        #expect(m.connectionClosed(first, error: nil).isEmpty)
        #expect(m.draining.isEmpty)
    }

    @Test func requestRefusedTooOftenFailsWithGoAwayRetryExhausted() {
        var m = machine(maxRefusals: 2)
        var item = Item(name: 7)
        for _ in 0..<2 {
            guard case .queued = m.retry(item) else { Issue.record("gave up too early"); return }
            item = m.nextDispatch()?.request ?? {
                // No connection: pop it back out of the queue by hand.
                var copy = item
                copy.refusals += 1
                return copy
            }()
        }
        guard case .rejected(_, let error) = m.retry(item) else {
            Issue.record("refused forever")
            return
        }
        #expect(error == .goAwayRetryExhausted)
    }

    @Test func queuedRequestsExpireAtTheirDeadline() {
        var m = machine()
        _ = m.enqueue(Item(name: 0, deadline: 100))
        _ = m.enqueue(Item(name: 1, deadline: 300))
        _ = m.enqueue(Item(name: 2, deadline: 200))
        #expect(m.expireQueued(now: 50).isEmpty)
        let actions = m.expireQueued(now: 250)
        guard case .fail(let items, let error) = actions.first else { Issue.record("nothing expired"); return }
        #expect(items.map(\.name) == [0, 2])
        #expect(error == .timeout)
        #expect(m.queuedCount == 1)
    }

    @Test func recycleDrainsActiveConnectionsAndOpensNewOnes() {
        var m = machine()
        _ = m.enqueue(Item(name: 0))
        let first = connectIDs(m.connectionsNeeded())[0]
        m.connectionEstablished(first)
        _ = drainDispatches(&m)
        _ = m.enqueue(Item(name: 1))
        let actions = m.recycleConnections()
        #expect(actions.contains { if case .drain(let id) = $0 { id == first } else { false } })
        #expect(connectIDs(actions).count == 1)
    }

    @Test func shutdownFailsTheQueueDrainsConnectionsAndCompletesWhenTheyClose() {
        var m = machine(connections: 2)
        for i in 0..<4 { _ = m.enqueue(Item(name: i)) }
        let ids = connectIDs(m.connectionsNeeded())
        m.connectionEstablished(ids[0])
        _ = drainDispatches(&m)
        let actions = m.shutdown()
        let failed = actions.compactMap { if case .fail(let items, let error) = $0 { (items.map(\.name), error) } else { nil } }
        #expect(failed.first?.0 == [1, 2, 3])
        #expect(failed.first?.1 == .shutdown)
        #expect(actions.filter { if case .drain = $0 { true } else { false } }.count == 2)
        guard case .rejected(_, .shutdown) = m.enqueue(Item(name: 9)) else { Issue.record("accepted after shutdown"); return }
        #expect(m.connectionClosed(ids[0], error: nil).isEmpty)
        let last = m.connectionClosed(ids[1], error: .shutdown)
        #expect(last.contains { if case .shutdownComplete = $0 { true } else { false } })
    }

    @Test func backoffJitterStaysWithinBounds() {
        let low = HTTP2Backoff(jitter: 0.2, random: { 0 })
        let high = HTTP2Backoff(jitter: 0.2, random: { 0.999_999 })
        #expect(low.delay(afterFailures: 1) == .seconds(1), "never below the initial delay")
        #expect(low.delay(afterFailures: 3) == .milliseconds(3200))
        #expect(high.delay(afterFailures: 3) > .milliseconds(4790))
        #expect(high.delay(afterFailures: 3) < .milliseconds(4810))
        #expect(high.delay(afterFailures: 20) == .seconds(60), "never above the maximum")
    }
}

/// One connection's liveness logic with no sockets and no clock.
@Suite struct HTTP2ConnectionStateMachineTests {
    typealias Machine = HTTP2ConnectionStateMachine
    let ms: UInt64 = 1_000_000

    private func machine(ping: UInt64? = 100, pingTimeout: UInt64 = 50, idle: UInt64? = nil) -> Machine {
        var m = Machine(configuration: .init(pingInterval: ping.map { $0 * ms }, pingTimeout: pingTimeout * ms,
                                             idleTimeout: idle.map { $0 * ms }, connectTimeout: 1000 * ms), now: 0)
        m.established(now: 0)
        return m
    }

    @Test func connectTimesOut() {
        var m = Machine(configuration: .init(pingInterval: nil, pingTimeout: 0, idleTimeout: nil,
                                             connectTimeout: 1000 * ms), now: 0)
        #expect(m.tick(now: 999 * ms) == .none)
        #expect(m.tick(now: 1000 * ms) == .close(.connectFailed("connect timed out")))
    }

    @Test func pingAfterQuietIntervalThenDeadPeerWithoutAnswer() {
        var m = machine()
        #expect(m.tick(now: 99 * ms) == .none)
        #expect(m.tick(now: 100 * ms) == .sendPing)
        #expect(m.tick(now: 120 * ms) == .none, "one PING at a time")
        #expect(m.tick(now: 150 * ms) == .close(.connectionLost("no PING acknowledgement (dead peer)")))
        #expect(m.state == .closed)
    }

    @Test func anyReadProvesLiveness() {
        var m = machine()
        #expect(m.tick(now: 100 * ms) == .sendPing)
        m.bytesRead(now: 130 * ms)
        #expect(m.tick(now: 160 * ms) == .none)
        #expect(m.tick(now: 230 * ms) == .sendPing)
    }

    @Test func idleConnectionClosesOnlyWithoutStreams() {
        var m = machine(ping: nil, idle: 200)
        m.streamOpened()
        #expect(m.tick(now: 500 * ms) == .none)
        #expect(m.streamClosed(now: 600 * ms) == .none)
        #expect(m.tick(now: 799 * ms) == .none)
        #expect(m.tick(now: 800 * ms) == .close(nil))
    }

    @Test func goAwayDrainsThenClosesWhenTheLastStreamEnds() {
        var m = machine(ping: nil)
        m.streamOpened()
        m.streamOpened()
        #expect(m.goAwayReceived() == .none)
        #expect(!m.acceptsStreams)
        #expect(m.streamClosed(now: 1) == .none)
        #expect(m.streamClosed(now: 2) == .close(nil))
    }

    @Test func drainRequestSendsGoAwayOrClosesAtOnce() {
        var busy = machine(ping: nil)
        busy.streamOpened()
        #expect(busy.drainRequested() == .sendGoAway)
        var quiet = machine(ping: nil)
        #expect(quiet.drainRequested() == .close(nil))
    }
}
