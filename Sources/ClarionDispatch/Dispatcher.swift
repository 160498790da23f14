import ClarionCore
import ClarionStore
import Foundation
import Synchronization

/// The fan-out dispatcher of one process: plans published messages into shards, claims shards under leases,
/// runs up to `shardWorkers` shard workers (plus `expressWorkers` for small shards), up to `directWorkers` direct
/// batches (`DirectBatchWorker`: direct messages claimed `directBatchSize` at a time) and a retry worker, and hands
/// everything back on shutdown.
///
/// Wiring (the app's job): build a `PGPool` (about `3 * shardWorkers + directWorkers + 2` connections: a worker
/// may read its next page while it checkpoints, up to `drainingWorkers` more finish their shards' tails, each
/// direct batch checkpoints on one, and the planner/claimer and retry worker need one each), a `PushTransportDirectory`
/// (`ProviderRegistryDirectory` over the provider registry and `PlatformApplicationRepository.credentials`), then
///
///     let dispatcher = Dispatcher(pool: pool, directory: directory, configuration: .init(shardWorkers: 4))
///     async let done: Void = dispatcher.run()
///     ...
///     dispatcher.shutdown()   // stop claiming, drain or hand back in-flight work, release leases
///     await done
///
/// Wake-ups: a thread of its own LISTENs on `clarion_work` (the publish path NOTIFYs after commit); polling with
/// backoff up to `maxPollInterval` is the fallback, and also finds shards whose lease expired (a node died).
///
/// Scheduled and cancelled messages (docs/architecture.md, "Scheduled and cancelled messages"): each claim round first
/// moves due scheduled messages to `Enqueued` (`FanOutJobs.promoteDue`, with this dispatcher's clock), and an idle
/// loop sleeps no later than the next `send_at`. The listener also LISTENs on `clarion_cancel`: a cancelled message's
/// shard workers in this process stop sending at their next loop turn.
public final class Dispatcher: Sendable {
    public let configuration: DispatcherConfiguration
    let context: DispatchContext
    private let listenConninfo: String
    private let signal = WakeSignal()
    private let retrySignal = WakeSignal()
    private let slots = Mutex(WorkerSlots())
    /// Direct batches being worked.
    private let directBatches = Mutex(0)

    public init(
        pool: PGPool, directory: any PushTransportDirectory, configuration: DispatcherConfiguration = DispatcherConfiguration(),
        observer: (any DispatcherObserver)? = nil, listenConninfo: String? = nil
    ) {
        self.configuration = configuration
        self.context = DispatchContext(
            jobs: FanOutJobs(pool: pool), directory: directory, configuration: configuration, observer: observer)
        self.listenConninfo = listenConninfo ?? pool.conninfo
    }

    public var owner: String { configuration.owner }

    /// Where the shard workers that ended so far spent their time (diagnosis, the load test).
    public var timings: DispatcherTimings { context.totalTimings }

    /// Works until `shutdown()` (then returns after every shard was finished or handed back).
    public func run() async {
        let listener = WorkListener(conninfo: listenConninfo, channels: [FanOutJobs.workChannel, FanOutJobs.cancelChannel]) {
            [signal, context] channel, payload in
            // A cancel (any node's) stops this node's workers of that message at once, not at their next checkpoint.
            if channel == FanOutJobs.cancelChannel {
                if let message = Int64(payload) { context.markCancelled(message) }
            } else {
                signal.raise()
            }
        }
        listener.start()
        await withDiscardingTaskGroup { group in
            group.addTask { await self.retryLoop() }
            await self.claimLoop(group: &group)
        }
        listener.stop()
        if !context.isAbandoned {
            // Anything still leased under this owner (a worker that failed on a store error) goes back now,
            // not when the lease expires.
            _ = try? await context.jobs.releaseAll(owner: configuration.owner)
        }
    }

    /// Stops claiming; in-flight deliveries finish (up to `shutdownGrace`), then shards are released at their
    /// checkpoints. `run()` returns when that is done.
    public func shutdown() {
        context.stop(abandon: false)
        signal.raise()
        retrySignal.raise()
    }

    /// Checks for work now (the publish path in the same process can call it instead of waiting for NOTIFY).
    public func wake() {
        signal.raise()
        retrySignal.raise()
    }

    /// Stops at once without writing anything, as if the process were killed: leases stay until they expire
    /// and deliveries since the last checkpoint will be sent again by whoever resumes. For tests.
    func abandon() {
        context.stop(abandon: true)
        signal.raise()
        retrySignal.raise()
    }

    private func claimLoop(group: inout DiscardingTaskGroup) async {
        let jobs = context.jobs
        var idle = 0.02
        var lastPromotion: ContinuousClock.Instant?
        while !context.isStopping {
            var progressed = false
            do {
                // At most every 100 ms while the loop is busy (a round trip per claim round would tax the direct
                // publish path), and on every idle turn: scheduled messages start within a fraction of a second.
                if lastPromotion.map({ $0.duration(to: .now) >= .milliseconds(100) }) ?? true {
                    lastPromotion = .now
                    if try await jobs.promoteDue(now: configuration.now(), limit: configuration.promotionBatchSize) > 0 {
                        progressed = true
                        lastPromotion = nil  // more may be due
                    }
                }
            } catch {
                if !context.jobs.pool.reportsOutage(error) {
                    configuration.log.error("scheduled message promotion failed", ["error": error.code.rawValue, "detail": error.message])
                }
            }
            do {
                if try await jobs.planPending(limit: 16, shardSize: configuration.shardSize) > 0 { progressed = true }
            } catch {
                if !context.jobs.pool.reportsOutage(error) {
                    configuration.log.error("fan-out planning failed", ["error": error.code.rawValue, "detail": error.message])
                }
            }
            if configuration.directBatchSize > 0, !context.isStopping, await claimDirectBatches(group: &group) {
                progressed = true
            }
            // Express slots first (small shards only), then the general ones (any shard).
            for express in [true, false] where !context.isStopping {
                let capacity = express ? configuration.expressWorkers : configuration.shardWorkers
                let free = capacity - slots.withLock { express ? $0.express : $0.general }
                guard free > 0 else { continue }
                let claims: [ShardClaim]
                do {
                    claims = try await jobs.claim(
                        owner: configuration.owner, limit: free, leaseSeconds: configuration.leaseDuration,
                        maxPlannedTargets: express ? configuration.expressShardTargets : nil,
                        direct: configuration.directBatchSize == 0)
                } catch {
                    if !context.jobs.pool.reportsOutage(error) {
                        configuration.log.error("shard claim failed", ["error": error.code.rawValue, "detail": error.message])
                    }
                    claims = []
                }
                for claim in claims {
                    progressed = true
                    slots.withLock { if express { $0.express += 1 } else { $0.general += 1 } }
                    context.observer?.shardClaimed(
                        shard: claim.shard, message: claim.message, owner: configuration.owner, checkpoint: claim.checkpoint)
                    group.addTask {
                        let worker = ShardWorker(claim: claim, context: self.context)
                        // Read to the end, only outcomes awaited: the slot goes to the next shard (its claim and
                        // first page overlap this tail) while the worker keeps its lease until it finishes.
                        worker.onStreamEnd = { [self] in
                            let released = slots.withLock { $0.startDraining(express: express, limit: self.drainLimit(express)) }
                            if released { signal.raise() }
                            return released
                        }
                        let exit = await worker.run()
                        self.context.observer?.shardEnded(shard: claim.shard, owner: self.configuration.owner, how: exit)
                        switch exit {
                        case .failed(let reason):
                            self.configuration.log.error("shard worker failed; the lease will expire and the shard resume",
                                                   ["shard": String(claim.shard), "message": String(claim.message), "error": reason])
                        case .leaseLost:
                            self.configuration.log.warning("shard lease taken over", ["shard": String(claim.shard), "message": String(claim.message)])
                        case .cancelled:
                            self.configuration.log.info("shard stopped, its message was cancelled",
                                                        ["shard": String(claim.shard), "message": String(claim.message)])
                        default:
                            break
                        }
                        let draining = worker.slotReleased
                        self.slots.withLock { $0.end(express: express, draining: draining) }
                        self.signal.raise()
                        if exit == .finished { self.retrySignal.raise() }
                    }
                }
            }
            if progressed {
                idle = 0.02
                continue
            }
            var timeout = idle
            if let due = try? await jobs.nextScheduledDue() {
                // Not before it is due by this dispatcher's clock, and not later than the usual poll.
                timeout = max(0.01, min(timeout, due.timeIntervalSince(configuration.now())))
            }
            let woken = await signal.wait(timeout: timeout)
            idle = woken ? 0.02 : min(configuration.maxPollInterval, idle * 2)
            lastPromotion = nil
        }
    }

    /// Fills the free direct-batch slots, each with up to `directBatchSize` direct messages, oldest first.
    /// True when anything was claimed.
    private func claimDirectBatches(group: inout DiscardingTaskGroup) async -> Bool {
        var claimedAny = false
        while !context.isStopping, directBatches.withLock({ $0 }) < configuration.directWorkers {
            let claims: [DirectClaim]
            do {
                claims = try await context.jobs.claimDirect(
                    owner: configuration.owner, limit: configuration.directBatchSize,
                    leaseSeconds: configuration.leaseDuration,
                    staleBefore: configuration.staleAfter.map { configuration.now().addingTimeInterval(-$0) })
            } catch {
                if !context.jobs.pool.reportsOutage(error) {
                    configuration.log.error("direct claim failed", ["error": error.code.rawValue, "detail": error.message])
                }
                return claimedAny
            }
            guard !claims.isEmpty else { return claimedAny }
            claimedAny = true
            directBatches.withLock { $0 += 1 }
            for claim in claims {
                context.observer?.shardClaimed(shard: claim.shard.shard, message: claim.shard.message,
                                               owner: configuration.owner, checkpoint: claim.shard.checkpoint)
            }
            group.addTask {
                let finished = await DirectBatchWorker(claims: claims, context: self.context).run()
                self.directBatches.withLock { $0 -= 1 }
                self.signal.raise()
                if finished { self.retrySignal.raise() }
            }
            // A short batch took everything there was.
            if claims.count < configuration.directBatchSize { return claimedAny }
        }
        return claimedAny
    }

    private func drainLimit(_ express: Bool) -> Int {
        express ? configuration.expressWorkers : configuration.drainingWorkers
    }

    private func retryLoop() async {
        let worker = RetryWorker(context: context)
        var idle = 0.02
        var lastMaintenance: ContinuousClock.Instant?
        while !context.isStopping {
            if let retention = configuration.deliveryLogRetentionDays,
               lastMaintenance.map({ $0.duration(to: .now) > .seconds(3_600) }) ?? true {
                // Hourly (and at start): the coming days' partitions exist before their rows arrive.
                _ = try? await context.jobs.maintainDeliveryLog(retentionDays: retention, now: configuration.now())
                lastMaintenance = .now
            }
            var handled = 0
            do {
                handled = try await worker.runOnce()
            } catch {
                if !context.jobs.pool.reportsOutage(error) {
                    configuration.log.error("retry round failed", ["error": error.code.rawValue, "detail": error.message])
                }
            }
            if handled > 0 {
                idle = 0.02
                continue
            }
            var timeout = min(configuration.maxPollInterval, idle)
            if let due = try? await context.jobs.nextRetryDue() {
                timeout = max(0.01, min(configuration.maxPollInterval, due.timeIntervalSince(configuration.now())))
            }
            _ = await retrySignal.wait(timeout: timeout)
            idle = min(configuration.maxPollInterval, idle * 2)
        }
    }
}

/// Workers running per kind: those holding a slot (streaming their shard) and those that gave their slot back
/// after reading their shard to the end and only await its last outcomes (bounded separately, so a slow
/// provider cannot pile up draining shards without limit).
struct WorkerSlots {
    var general = 0
    var express = 0
    var generalDraining = 0
    var expressDraining = 0

    /// Moves a worker from its slot to the draining set if there is room; true when its slot is free now.
    mutating func startDraining(express: Bool, limit: Int) -> Bool {
        if express {
            guard expressDraining < limit else { return false }
            self.express -= 1
            expressDraining += 1
        } else {
            guard generalDraining < limit else { return false }
            general -= 1
            generalDraining += 1
        }
        return true
    }

    mutating func end(express: Bool, draining: Bool) {
        switch (express, draining) {
        case (true, true): expressDraining -= 1
        case (true, false): self.express -= 1
        case (false, true): generalDraining -= 1
        case (false, false): general -= 1
        }
    }
}

/// A level-triggered wake-up: a raise while nobody waits is remembered until the next wait.
final class WakeSignal: Sendable {
    private struct State {
        var raised = false
        var waiter: CheckedContinuation<Bool, Never>?
        var generation: UInt64 = 0
    }

    private let state = Mutex(State())

    func raise() {
        let waiter = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            guard let waiter = state.waiter else {
                state.raised = true
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume(returning: true)
    }

    /// True when raised, false on timeout.
    func wait(timeout: Double) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let generation = state.withLock { state -> UInt64? in
                if state.raised {
                    state.raised = false
                    return nil
                }
                state.generation &+= 1
                state.waiter = continuation
                return state.generation
            }
            guard let generation else {
                continuation.resume(returning: true)
                return
            }
            DispatchQueue.global().asyncAfter(deadline: .now() + max(0.001, timeout)) { [self] in
                let waiter = state.withLock { state -> CheckedContinuation<Bool, Never>? in
                    guard state.generation == generation, let waiter = state.waiter else { return nil }
                    state.waiter = nil
                    return waiter
                }
                waiter?.resume(returning: false)
            }
        }
    }
}

/// LISTENs on the dispatcher's channels on a thread of its own (libpq blocks; the cooperative pool never waits on
/// it), reconnecting after errors. Each notification calls `onNotification` with its channel and payload; after
/// (re)connecting it is called once with the first channel and an empty payload (anything published while nobody
/// listened).
final class WorkListener: Sendable {
    private let conninfo: String
    private let channels: [String]
    private let onNotification: @Sendable (_ channel: String, _ payload: String) -> Void
    private let stopped = Mutex(false)
    private let finished = DispatchSemaphore(value: 0)

    init(conninfo: String, channels: [String], onNotification: @escaping @Sendable (_ channel: String, _ payload: String) -> Void) {
        self.conninfo = conninfo
        self.channels = channels
        self.onNotification = onNotification
    }

    func start() {
        let thread = Thread { [self] in
            loop()
            finished.signal()
        }
        thread.name = "clarion-dispatch-listen"
        thread.start()
    }

    /// Returns once the thread has closed its connection (within about half a second).
    func stop() {
        stopped.withLock { $0 = true }
        finished.wait()
    }

    private func loop() {
        var connection: PGConnection?
        while !stopped.withLock({ $0 }) {
            do throws(StoreError) {
                if connection == nil {
                    let fresh = try PGConnection(conninfo: conninfo, applicationName: "clarion-dispatch-listen")
                    for channel in channels { try fresh.listen(channel) }
                    connection = fresh
                    onNotification(channels[0], "")  // anything published while we were not listening
                }
                guard let connection else { continue }
                var woken = false
                for note in try connection.waitForNotifications(timeout: 0.5) {
                    // Work notifications come in bursts (one per publish batch): one wake-up per batch is enough.
                    if note.channel == channels[0] {
                        if !woken { onNotification(note.channel, note.payload) }
                        woken = true
                    } else {
                        onNotification(note.channel, note.payload)
                    }
                }
            } catch {
                connection = nil
                usleep(500_000)
            }
        }
        connection = nil
    }
}
