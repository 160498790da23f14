import ClarionCore
import ClarionStore
import Foundation

/// Works a batch of direct messages claimed together (`FanOutJobs.claimDirect`): each is a one-endpoint shard
/// under this dispatcher's lease, claimed with its message and endpoint in one statement. The batch reads its
/// applications once, renders each message once, hands every delivery to its transport (one `submit` per
/// message: each has its own rendered push), and writes the outcomes of many messages in one checkpoint
/// transaction (`FanOutJobs.checkpoint(batch:)`), finishing their messages there.
///
/// Why: a `ShardWorker` per direct message cost a claim, a message read, an applications query, a targets page
/// and a checkpoint with the finish, two commits per message; the store work, not the providers, bounded direct
/// delivery at under a thousand messages a second (docs/benchmarks.md).
///
/// Campaign pushes (and publishes that opt in) are capped and held by quiet hours exactly as in a fan-out: the
/// batch is decided by `TimingRules` before anything is submitted (`decideTiming`).
///
/// Per member: pending (not yet handed to a transport) -> awaiting (outcome due) -> resolved (outcome recorded,
/// not yet written) -> written (finished, released, or lost); nothing-to-send members start resolved, and members
/// the timing decided (capped, quiet-skipped, deferred) go from pending to resolved without a transport.
/// Checkpoints: resolved members are finished every `checkpointInterval` (so a few slow or rate-limited
/// deliveries do not hold the others' completion back); open members' leases are renewed every
/// `leaseDuration / 3`. Shutdown: nothing new is submitted, in-flight outcomes are awaited up to `shutdownGrace`,
/// then resolved members are finished and open ones released (ready at their checkpoint, sent again by the next
/// holder). Abandon (simulated crash): nothing is written; the leases expire and `claimDirect` takes the
/// shards again. A member whose lease was taken over is dropped: its outcome is not written.
final class DirectBatchWorker {
    enum Phase {
        case pending, awaiting, resolved, written
    }

    struct Member {
        let claim: DirectClaim
        var phase: Phase
        var lane: ApplicationLane?
        var facts: DeliveryFacts?
        var delivery: PushDelivery?
        var effects = OutcomeEffects()
    }

    let context: DispatchContext
    private var members: [Member]
    private let inbox = CompletionInbox()
    private var pendingCount = 0
    private var awaiting = 0
    private var unwritten = 0
    private var finishedAny = false
    private var disabledHere: [Int64] = []
    private let clock = ContinuousClock()
    private var lastFlush: ContinuousClock.Instant
    private var lastRenewal: ContinuousClock.Instant
    private var lastOutcome: ContinuousClock.Instant
    private var rateWait: Double?
    private var timings = DispatcherTimings()
    private var configuration: DispatcherConfiguration { context.configuration }

    /// The outcome of a direct message whose endpoint was deleted before it was sent.
    static let endpointDeleted = DeliveryOutcome.rejected(reason: "EndpointDeleted")

    init(claims: [DirectClaim], context: DispatchContext) {
        self.context = context
        members = claims.map { Member(claim: $0, phase: .resolved) }
        let now = ContinuousClock.now
        lastFlush = now
        lastRenewal = now
        lastOutcome = now
    }

    /// Works the batch to its end; true when at least one message's shard was finished.
    func run() async -> Bool {
        let started = clock.now
        context.register(inbox)
        do {
            try await work()
        } catch {
            inbox.close()
            configuration.log.error("direct batch failed; the leases will expire and the messages be claimed again",
                              ["error": error.description, "messages": String(members.count)])
            end(.failed(error.description))
        }
        context.unregister(inbox)
        timings.workers = 1
        timings.workerSeconds = DispatcherTimings.seconds(started.duration(to: clock.now))
        context.record(timings)
        for application in disabledHere { await context.directory.applicationDisabled(application) }
        return finishedAny
    }

    private func work() async throws(StoreError) {
        let laneStart = clock.now
        try await prepare()
        timings.laneSeconds += DispatcherTimings.seconds(laneStart.duration(to: clock.now))
        var stoppingSince: ContinuousClock.Instant?
        while true {
            rateWait = nil
            if context.isAbandoned {
                inbox.close()
                end(.abandoned)
                return
            }
            if stoppingSince == nil, context.isStopping { stoppingSince = clock.now }
            if stoppingSince == nil { submitPending() }
            let absorbed = absorb(inbox.take())
            if absorbed > 0 || awaiting == 0 {
                lastOutcome = clock.now
            } else if stoppingSince == nil {
                giveUpOnSilentDeliveries()
            }
            if stoppingSince == nil, pendingCount + awaiting == 0 {
                try await flush(renewing: false, releasing: false)
                return
            }
            if let since = stoppingSince {
                if awaiting == 0 || since.duration(to: clock.now) > .seconds(configuration.shutdownGrace) {
                    inbox.close()
                    try await flush(renewing: false, releasing: true)
                    return
                }
            } else if renewalDue() || (unwritten > 0 && lastFlush.duration(to: clock.now) >= .seconds(configuration.checkpointInterval)) {
                try await flush(renewing: renewalDue(), releasing: false)
            }
            if absorbed == 0 {
                let waitStart = clock.now
                timings.outcomeWaits += 1
                await inbox.wait(timeout: waitTimeout())
                timings.outcomeWaitSeconds += DispatcherTimings.seconds(waitStart.duration(to: clock.now))
            }
        }
    }

    /// Applications once for the batch (one query), then each message's lane (rendered once; the transport comes
    /// from the directory's cache of resolved applications).
    private func prepare() async throws(StoreError) {
        var keys = Set<Int64>()
        for member in members {
            if let target = member.claim.target, target.enabled, !target.stale { keys.insert(target.application) }
        }
        var applications: [Int64: DispatchApplication] = [:]
        for application in try await context.jobs.applications(Array(keys)) { applications[application.key] = application }
        let now = configuration.now()
        for i in members.indices {
            guard let target = members[i].claim.target else {
                // Nothing to send. When no earlier holder's checkpoint passed the endpoint, it was deleted after the
                // publish was accepted: a failure with that reason, not a Completed message that says nothing.
                let shard = members[i].claim.shard
                if shard.checkpoint < shard.hi {
                    members[i].facts = DeliveryFacts(
                        endpoint: shard.hi, application: 0, token: "", attempt: 1, expiresAt: members[i].claim.job.expiresAt,
                        publishedAt: members[i].claim.job.publishedAt, successSampleRate: 0)
                    record(i, Self.endpointDeleted, sent: false)
                }
                continue
            }
            guard target.enabled, !target.stale, let application = applications[target.application] else {
                var accounting = DeliveryAccounting(configuration)
                accounting.recordSkipped(targeted: true, application: target.application)
                members[i].effects = accounting.take()
                continue
            }
            let job = members[i].claim.job
            let lane = await ApplicationLane.make(
                application, content: MessageContent(job), directory: context.directory,
                disabledInProcess: context.isApplicationDisabled(application.key), now: now, metrics: configuration.metrics)
            members[i].lane = lane
            members[i].facts = DeliveryFacts(
                endpoint: target.endpoint, application: target.application, token: target.token, attempt: 1,
                expiresAt: lane.expiresAt, publishedAt: job.publishedAt, successSampleRate: lane.successSampleRate,
                counters: lane.counters)
            if let unsent = lane.unsent {
                record(i, unsent, sent: false)
                continue
            }
            let deliveryID = configuration.deliveryIDs?.encode(DeliveryID(messageKey: job.key, endpointKey: target.endpoint))
            members[i].delivery = PushDelivery(
                token: target.token, deliveryID: deliveryID, tokenUpdatedAt: target.tokenUpdatedAt, tag: UInt64(i))
            members[i].phase = .pending
            pendingCount += 1
        }
        try await decideTiming(now: now)
        unwritten = members.count { $0.phase == .resolved }
    }

    /// Campaign pushes (and opted-in publishes) to endpoints and users: the frequency cap and quiet hours of the
    /// message's `Clarion.Timing`, decided by the same rules and statement as a topic's fan-out (`TimingRules`),
    /// for the whole batch at once (one cap statement per application). A `send_at_local` message whose endpoint
    /// moved zone since it was published goes at the local time of its new zone (`localTimeInMovedZone`).
    /// Decided members are resolved here: counted `capped`, `quiet_skipped` or `deferred` (a retry due later),
    /// never handed to a transport.
    private func decideTiming(now: Date) async throws(StoreError) {
        var candidates: [TimingRules.Candidate] = []
        for i in members.indices where members[i].phase == .pending {
            let job = members[i].claim.job
            // Most direct messages carry no timing: a substring test spares them a second parse of their attributes.
            guard job.attributesJSON.contains(CampaignTiming.attributeName),
                  let timing = CampaignTiming.parse(MessageContent.attributes(json: job.attributesJSON)[CampaignTiming.attributeName]),
                  let target = members[i].claim.target, let lane = members[i].lane else { continue }
            let notBefore = TimingRules.localTimeInMovedZone(timing, endpointZone: target.timeZone, now: now)
            guard timing.cap || timing.quiet != nil || notBefore != nil else { continue }
            candidates.append(TimingRules.Candidate(
                key: Int64(i), message: job.key, endpoint: target.endpoint, endpointZone: target.timeZone,
                application: lane.application, timing: timing, notBefore: notBefore))
        }
        guard !candidates.isEmpty else { return }
        for (key, decision) in try await TimingRules.decide(candidates, now: now, jobs: context.jobs) {
            let i = Int(key)
            guard members[i].phase == .pending, let facts = members[i].facts else { continue }
            var accounting = DeliveryAccounting(configuration)
            switch decision {
            case .capped: accounting.recordCapped(facts)
            case .quietSkipped: accounting.recordQuietSkipped(facts)
            case .deferred(let until, let reason): accounting.recordDeferred(facts, until: until, reason: reason)
            case .otherZone: continue  // never decided for a direct message
            }
            members[i].effects = accounting.take()
            members[i].phase = .resolved
            pendingCount -= 1
        }
    }

    // MARK: Send

    /// Hands every pending delivery to its transport, in claim order (oldest message first). An application
    /// whose pool queue is full or whose send-rate bucket is empty is skipped for the rest of this turn.
    private func submitPending() {
        guard pendingCount > 0 else { return }
        var blocked = Set<Int64>()
        for i in members.indices where members[i].phase == .pending {
            guard let lane = members[i].lane, let delivery = members[i].delivery else { continue }
            let application = lane.application.key
            if blocked.contains(application) { continue }
            guard lane.unsent == nil, !context.isApplicationDisabled(application), let transport = lane.transport,
                  let push = lane.push else {
                pendingCount -= 1
                record(i, lane.unsent ?? ApplicationLane.applicationDisabled, sent: false)
                continue
            }
            if let rate = lane.sendRate {
                let grant = context.sendRates.take(application, rate: rate, want: 1)
                if grant.granted == 0 {
                    timings.rateLimitedSubmits += 1
                    rateWait = min(rateWait ?? grant.retryIn, grant.retryIn)
                    blocked.insert(application)
                    continue
                }
            }
            if transport.submit(push, deliveries: [delivery], sink: inbox) < 1 {
                if lane.sendRate != nil { context.sendRates.refund(application, 1) }
                timings.outcomeWaitsPoolFull += 1
                blocked.insert(application)
                continue
            }
            members[i].phase = .awaiting
            pendingCount -= 1
            awaiting += 1
        }
    }

    private func absorb(_ results: [PushResult]) -> Int {
        for result in results {
            let i = Int(result.tag)
            guard i < members.count, members[i].phase == .awaiting else { continue }
            awaiting -= 1
            record(i, result.outcome, sent: true, providerStatus: result.providerStatus)
            if result.outcome.disablesApplication, let application = members[i].facts?.application {
                // Stop this application's sends now, here and in every worker of this process.
                // (The warning is written once the checkpoint has disabled it in the store: `flush`.)
                if context.markApplicationDisabled(application) { disabledHere.append(application) }
                for j in members.indices where members[j].phase == .pending && members[j].facts?.application == application {
                    pendingCount -= 1
                    record(j, ApplicationLane.applicationDisabled, sent: false)
                }
            }
        }
        return results.count
    }

    /// Outcomes a transport never reported are given up after the delivery timeout as retryable (a retry is
    /// scheduled), so the batch never stalls behind them.
    private func giveUpOnSilentDeliveries() {
        guard awaiting > 0, lastOutcome.duration(to: clock.now) > .seconds(configuration.deliveryTimeout) else { return }
        for i in members.indices where members[i].phase == .awaiting {
            awaiting -= 1
            record(i, .retryable(reason: "NoProviderAnswer", retryAfter: nil), sent: true)
        }
        lastOutcome = clock.now
    }

    private func record(_ i: Int, _ outcome: DeliveryOutcome, sent: Bool, providerStatus: Int? = nil) {
        var accounting = DeliveryAccounting(configuration)
        if let facts = members[i].facts {
            accounting.record(outcome, facts: facts, sent: sent, targeted: true, now: configuration.now(),
                              providerStatus: providerStatus, unitRandom: configuration.unitRandom())
        }
        members[i].effects = accounting.take()
        members[i].phase = .resolved
        unwritten += 1
    }

    // MARK: Checkpoints

    private func renewalDue() -> Bool {
        pendingCount + awaiting > 0 && lastRenewal.duration(to: clock.now) >= .seconds(configuration.leaseDuration / 3)
    }

    private func waitTimeout() -> Double {
        func seconds(_ d: Duration) -> Double { Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18 }
        var timeout = configuration.leaseDuration / 3 - seconds(lastRenewal.duration(to: clock.now))
        if unwritten > 0 { timeout = min(timeout, configuration.checkpointInterval - seconds(lastFlush.duration(to: clock.now))) }
        // Deliveries a full pool did not admit: look again soon even if no outcome of ours frees a place.
        if pendingCount > 0 { timeout = min(timeout, 0.02) }
        if let rateWait { timeout = min(timeout, rateWait) }
        return max(0.001, timeout)
    }

    /// One transaction for the batch: resolved members finished, and (when renewing or releasing) open ones
    /// renewed or handed back. Retried with the same contents on a store error (nothing committed;
    /// `checkpointRetryDelay`: through a short database outage while the leases hold), then thrown: the leases
    /// expire and the messages are claimed again.
    private func flush(renewing: Bool, releasing: Bool) async throws(StoreError) {
        var batch: [ShardProgress] = []
        var indices: [Int] = []
        for i in members.indices {
            let claim = members[i].claim.shard
            switch members[i].phase {
            case .resolved:
                batch.append(ShardProgress(claim: claim, checkpoint: claim.hi, effects: members[i].effects, lease: .finish))
            case .pending, .awaiting:
                if releasing {
                    batch.append(ShardProgress(claim: claim, checkpoint: claim.checkpoint, effects: OutcomeEffects(), lease: .release))
                } else if renewing {
                    batch.append(ShardProgress(claim: claim, checkpoint: claim.checkpoint, effects: OutcomeEffects(),
                                               lease: .renew(seconds: configuration.leaseDuration)))
                } else {
                    continue
                }
            case .written:
                continue
            }
            indices.append(i)
        }
        guard !batch.isEmpty else { return }
        let started = clock.now
        var attempt = 0
        var results: [Int64: CheckpointResult]
        while true {
            do {
                let report: FailureReport
                (results, report) = try await context.jobs.checkpoint(batch: batch)
                configuration.committed(report)
                break
            } catch {
                attempt += 1
                let held = DispatcherTimings.seconds(lastRenewal.duration(to: clock.now))
                guard !context.isAbandoned, let delay = configuration.checkpointRetryDelay(
                    after: error, attempt: attempt, leaseHeldFor: held, stopping: context.isStopping) else { throw error }
                try? await Task.sleep(for: .seconds(delay))
            }
        }
        timings.checkpoints += 1
        timings.checkpointSeconds += DispatcherTimings.seconds(started.duration(to: clock.now))
        lastFlush = clock.now
        if renewing { lastRenewal = clock.now }
        var lost: [Int64] = []
        defer {
            // One line per checkpoint, not one per message. After a retry, the first attempt may have committed
            // before its answer was lost (PostgreSQL restarted mid-commit): then the shards are finished, not taken.
            if !lost.isEmpty {
                configuration.log.warning("direct shard leases taken over", [
                    "shards": String(lost.count), "first": String(lost[0]), "attempts": String(attempt + 1),
                    "note": attempt > 0 ? "an earlier attempt of this checkpoint may have committed before its answer was lost"
                                        : "another dispatcher holds them"])
            }
        }
        for (k, i) in indices.enumerated() {
            let progress = batch[k]
            let result = results[progress.claim.shard] ?? .leaseLost
            let exit: ShardWorkerExit?
            switch (result, progress.lease) {
            case (.leaseLost, _): exit = .leaseLost
            case (.cancelled, _): exit = .cancelled
            case (.applied(let finishedMessage), .finish):
                exit = .finished
                if finishedMessage != nil {
                    let job = members[i].claim.job
                    configuration.metrics?.messageFinished(job.targetKind, publishedAt: job.publishedAt, now: configuration.now())
                }
            case (.applied, .release): exit = .released
            case (.applied, .renew): exit = nil
            }
            guard let exit else { continue }
            switch members[i].phase {
            case .pending: pendingCount -= 1
            case .awaiting: awaiting -= 1
            case .resolved: unwritten -= 1
            case .written: break
            }
            members[i].phase = .written
            if exit == .finished { finishedAny = true }
            if exit == .leaseLost { lost.append(progress.claim.shard) }
            context.observer?.shardEnded(shard: progress.claim.shard, owner: progress.claim.owner, how: exit)
        }
    }

    /// Every member not written yet ends this way (a crash or a store error: the leases expire).
    private func end(_ exit: ShardWorkerExit) {
        for i in members.indices where members[i].phase != .written {
            members[i].phase = .written
            context.observer?.shardEnded(shard: members[i].claim.shard.shard, owner: members[i].claim.shard.owner, how: exit)
        }
    }
}
