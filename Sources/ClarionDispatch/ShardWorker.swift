import ClarionCore
import ClarionStore
import Foundation

/// Works one claimed shard: streams its targets in key order from the checkpoint, renders once per application
/// (platform) of the message, feeds the transports with a bounded number in flight, and checkpoints every few
/// thousand outcomes or few hundred milliseconds.
///
/// One task runs the worker; transports report outcomes in batches through a `CompletionInbox`. Nothing here
/// allocates a task, a continuation or a statement per push: memory is the window (`maxInFlightPerShard`
/// entries), one keyset page and the writes of one checkpoint interval.
///
/// States: streaming -> draining (targets exhausted, outcomes awaited) -> finished; streaming/draining ->
/// handing back (shutdown: no new sends, in-flight outcomes awaited up to the grace period) -> released;
/// streaming/draining -> cancelling (the message was cancelled: `clarion_cancel` heard, or a checkpoint found the
/// shard done; no new sends, what was not handed to a provider dropped uncounted, in-flight outcomes awaited up to
/// `cancelGrace`) -> cancelled (a last checkpoint writes what came back; the shard is already done);
/// any -> lease lost (a checkpoint found the lease taken) or abandoned (simulated crash: nothing written).
final class ShardWorker {
    struct Entry {
        var key: Int64
        /// The target's platform application (its counts in `application_delivery_counts`).
        var application: Int64
        var facts: DeliveryFacts?
        var skipped: Bool
        /// The subscription's filter policy did not match the message: not sent, counted `filtered`.
        var filtered = false
        /// A campaign variant's message: the endpoint's variant is another one (that message counts it).
        var otherVariant = false
        /// A campaign variant's message: the endpoint is in the holdout, counted `held_out`, not sent.
        var heldOut = false
        /// What the message's timing (`Clarion.Timing`) decided for this delivery; nil: send now.
        var timing: TimingDecision? = nil
    }

    let claim: ShardClaim
    let context: DispatchContext
    private let inbox = CompletionInbox()
    private var window = DeliveryWindow<Entry>()
    private var accounting: DeliveryAccounting
    private var lanes: [Int64: ApplicationLane] = [:]
    private var pending: [Int64: [PushDelivery]] = [:]
    private var pendingCount = 0
    private var awaiting = 0
    private var checkpointKey: Int64
    private var poppedSinceCheckpoint = 0
    private var lastCheckpoint = ContinuousClock.now
    /// Last time an outcome arrived (or the first send), for the delivery timeout.
    private var lastOutcome = ContinuousClock.now
    /// Applications this worker disabled: their pools are released once the worker is done with them.
    private var disabledHere: [Int64] = []
    private let clock = ContinuousClock()
    private var timings = DispatcherTimings()
    private var configuration: DispatcherConfiguration { context.configuration }
    /// Called once when the stream is read to the end (only outcomes and the final checkpoint remain); returns
    /// whether the dispatcher took this worker's slot back for another shard.
    var onStreamEnd: (() -> Bool)?
    /// This worker gave its slot back and is draining.
    private(set) var slotReleased = false
    private var drainStarted: ContinuousClock.Instant?
    /// Seconds until a send-rate bucket that held deliveries back has a token again (this loop turn).
    private var rateWait: Double?
    /// Compiled filter policies of this shard's subscriptions (set once the message is read).
    private var filters: SubscriptionFilters?
    /// A campaign variant's message (`Clarion.Variant`): which endpoints it sends to.
    private var split: VariantSplit?
    /// `Clarion.Timing` of the message (local-time zone, cap, quiet hours), and the decisions for the current page
    /// by target key (made once per page: `decideTiming`).
    private var timing: CampaignTiming?
    private var timingDecisions: [Int64: TimingDecision] = [:]
    /// A paced message (`"pace"`): sends are taken from the budget all nodes share (`FanOutJobs.takePaceBudget`);
    /// `paceTokens` were granted and not used yet, and the next ask is not before `nextPaceAsk`.
    private var paced = false
    private var paceTokens = 0
    private var nextPaceAsk = ContinuousClock.now

    init(claim: ShardClaim, context: DispatchContext) {
        self.claim = claim
        self.context = context
        self.checkpointKey = claim.checkpoint
        self.accounting = DeliveryAccounting(context.configuration)
    }

    func run() async -> ShardWorkerExit {
        let started = clock.now
        context.register(inbox)
        let exit: ShardWorkerExit
        do {
            exit = try await work()
        } catch {
            inbox.close()
            exit = .failed(error.description)
        }
        context.unregister(inbox)
        timings.workers = 1
        timings.workerSeconds = DispatcherTimings.seconds(started.duration(to: clock.now))
        if let drainStarted { timings.drainingSeconds = DispatcherTimings.seconds(drainStarted.duration(to: clock.now)) }
        context.record(timings)
        // Only now: releasing a pool while this worker still waited on it could strand outcomes.
        for application in disabledHere { await context.directory.applicationDisabled(application) }
        return exit
    }

    /// Outcomes a transport never reported (it broke its contract, or a pool went away) are given up after the
    /// delivery timeout as retryable, so the window and the checkpoint never stall behind them.
    private func giveUpOnSilentDeliveries() {
        guard awaiting > 0, lastOutcome.duration(to: clock.now) > .seconds(configuration.deliveryTimeout) else { return }
        let waiting = Set(pending.values.flatMap { $0.map(\.tag) })
        let given = window.completeIncomplete(.retryable(reason: "NoProviderAnswer", retryAfter: nil), skipping: waiting)
        awaiting = max(0, awaiting - given)
        lastOutcome = clock.now
    }

    private func work() async throws(StoreError) -> ShardWorkerExit {
        let job = try await context.jobs.message(claim.message)
        let content = MessageContent(job)
        filters = SubscriptionFilters(job: job)
        let reserved = MessageContent.attributes(json: job.attributesJSON)
        split = VariantSplit.parse(reserved[VariantSplit.attributeName])
        timing = CampaignTiming.parse(reserved[CampaignTiming.attributeName])
        paced = job.paced
        let staleBefore = configuration.staleAfter.map { configuration.now().addingTimeInterval(-$0) }
        var page: [ShardTarget] = []
        var index = 0
        var cursor = claim.checkpoint
        var exhausted = false
        var stoppingSince: ContinuousClock.Instant?
        var cancelledSince: ContinuousClock.Instant?
        var nextPage: Task<Result<[ShardTarget], StoreError>, Never>?

        while true {
            rateWait = nil
            if context.isAbandoned {
                inbox.close()
                return .abandoned
            }
            if cancelledSince == nil, stoppingSince == nil, context.isCancelled(claim.message) {
                cancelledSince = clock.now
                dropPendingUncounted()
            }
            if stoppingSince == nil, cancelledSince == nil, context.isStopping {
                stoppingSince = clock.now
                dropPending()
            }
            // Fill the window from the stream.
            if stoppingSince == nil, cancelledSince == nil {
                while window.count < configuration.maxInFlightPerShard, !exhausted {
                    if index == page.count {
                        let waitStart = clock.now
                        timings.pagesRead += 1
                        if let prefetch = nextPage {
                            page = try await prefetch.value.get()
                            nextPage = nil
                        } else {
                            page = try await context.jobs.targets(
                                of: job, shard: claim, after: cursor, limit: configuration.pageSize, staleBefore: staleBefore)
                        }
                        timings.pageWaitSeconds += DispatcherTimings.seconds(waitStart.duration(to: clock.now))
                        index = 0
                        if page.isEmpty {
                            exhausted = true
                            break
                        }
                        // Read the next page while this one is sent: the stream never waits on the database.
                        if page.count == configuration.pageSize, let last = page.last?.key {
                            nextPage = prefetch(job: job, after: last, staleBefore: staleBefore)
                        }
                        let laneStart = clock.now
                        try await context.lanes(for: page.map(\.application), content: content, into: &lanes)
                        timings.laneSeconds += DispatcherTimings.seconds(laneStart.duration(to: clock.now))
                        if timing != nil { try await decideTiming(page, message: job.key, kind: job.targetKind) }
                    }
                    let target = page[index]
                    index += 1
                    cursor = target.key
                    enqueue(target, publishedAt: job.publishedAt, message: job.key)
                }
                if !exhausted, index == page.count, page.count < configuration.pageSize { exhausted = true }
                logUnusableFilterPolicies()
                if paced { try await refillPace() }
                submitAll()
                if exhausted, !slotReleased, let onStreamEnd {
                    slotReleased = onStreamEnd()
                    if slotReleased { drainStarted = clock.now }
                }
            }
            let absorbed = absorb(inbox.take())
            if absorbed > 0 || awaiting == 0 {
                lastOutcome = clock.now
            } else if stoppingSince == nil {
                giveUpOnSilentDeliveries()
            }
            popCompleted()

            if let since = cancelledSince {
                if awaiting == 0 || since.duration(to: clock.now) > .seconds(configuration.cancelGrace) {
                    // What never came back within the grace is not counted: nobody knows whether it was delivered.
                    _ = window.completeIncomplete(Self.uncounted, skipping: [])
                    popCompleted()
                    inbox.close()
                    switch try await writeCheckpoint(.finish) {
                    case .applied, .cancelled: return .cancelled
                    case .leaseLost: return .leaseLost
                    }
                }
            } else if exhausted, window.isEmpty, pendingCount == 0, stoppingSince == nil {
                switch try await writeCheckpoint(.finish) {
                case .applied(let finishedMessage):
                    if finishedMessage != nil {
                        configuration.metrics?.messageFinished(job.targetKind, publishedAt: job.publishedAt, now: configuration.now())
                    }
                    return .finished
                case .leaseLost: return leaseLost()
                case .cancelled: return .cancelled
                }
            }
            if let since = stoppingSince {
                if awaiting == 0 || since.duration(to: clock.now) > .seconds(configuration.shutdownGrace) {
                    inbox.close()
                    switch try await writeCheckpoint(.release) {
                    case .applied: return .released
                    case .cancelled: return .cancelled
                    case .leaseLost: return .leaseLost
                    }
                }
            } else if cancelledSince == nil, checkpointDue() {
                switch try await writeCheckpoint(.renew(seconds: configuration.leaseDuration)) {
                case .leaseLost: return leaseLost()
                case .cancelled: context.markCancelled(claim.message)  // this worker (and its siblings) stop next turn
                case .applied: break
                }
            }
            let canFill = stoppingSince == nil && cancelledSince == nil && !exhausted && window.count < configuration.maxInFlightPerShard
                && pendingCount == 0
            if absorbed == 0, !canFill {
                let waitStart = clock.now
                timings.outcomeWaits += 1
                if window.count >= configuration.maxInFlightPerShard { timings.outcomeWaitsWindowFull += 1 }
                if pendingCount > 0 { timings.outcomeWaitsPoolFull += 1 }
                timings.awaitingAtWaitSum += awaiting
                timings.windowAtWaitSum += window.count
                await inbox.wait(timeout: min(waitTimeout(), rateWait ?? .infinity))
                timings.outcomeWaitSeconds += DispatcherTimings.seconds(waitStart.duration(to: clock.now))
            }
        }
    }

    /// One task per keyset page (thousands of targets), never per push.
    private func prefetch(job: MessageJob, after: Int64, staleBefore: Date?) -> Task<Result<[ShardTarget], StoreError>, Never> {
        let jobs = context.jobs
        let claim = self.claim
        let limit = configuration.pageSize
        return Task {
            do throws(StoreError) {
                return .success(try await jobs.targets(of: job, shard: claim, after: after, limit: limit, staleBefore: staleBefore))
            } catch {
                return .failure(error)
            }
        }
    }

    private func leaseLost() -> ShardWorkerExit {
        inbox.close()
        return .leaseLost
    }

    // MARK: Stream -> window

    /// Decides a page's deliveries under the message's timing, before any is sent: the zone of a `send_at_local`
    /// message here, then the cap and quiet hours (`TimingRules`, shared with direct messages: one statement per
    /// application of the page, never one per endpoint). Only deliveries `enqueue` would send are candidates, so a
    /// filtered, disabled or held-out endpoint never uses up its cap.
    private func decideTiming(_ page: [ShardTarget], message: Int64, kind: MessageJob.TargetKind) async throws(StoreError) {
        timingDecisions.removeAll(keepingCapacity: true)
        guard let timing else { return }
        let now = configuration.now()
        var candidates: [TimingRules.Candidate] = []
        for target in page {
            // A zone's unit of a topic or audience sends only the endpoints now in its zone; a direct message (a
            // shard of an endpoint message: one stored before v10, or claimed here after its batch's lease expired)
            // follows its endpoint to its new zone, as in `DirectBatchWorker`.
            var notBefore: Date?
            if kind == .endpoint {
                notBefore = TimingRules.localTimeInMovedZone(timing, endpointZone: target.timeZone, now: now)
            } else if let zone = timing.zone, zone != timing.effectiveZoneName(target.timeZone) {
                timingDecisions[target.key] = .otherZone
                continue
            }
            if let split {
                guard case .variant(let chosen) = split.choose(endpointKey: target.endpoint), chosen == split.index else { continue }
            }
            if let policy = target.filterPolicy, filters?.passes(policy: policy, scope: target.filterPolicyScope) == false { continue }
            guard target.enabled, !target.stale, let lane = lanes[target.application], lane.unsent == nil else { continue }
            guard timing.cap || timing.quiet != nil || notBefore != nil else { continue }
            candidates.append(TimingRules.Candidate(
                key: target.key, message: message, endpoint: target.endpoint, endpointZone: target.timeZone,
                application: lane.application, timing: timing, notBefore: notBefore))
        }
        guard !candidates.isEmpty else { return }
        for (key, decision) in try await TimingRules.decide(candidates, now: now, jobs: context.jobs) {
            timingDecisions[key] = decision
        }
    }

    private func enqueue(_ target: ShardTarget, publishedAt: Date, message: Int64) {
        let decision = timingDecisions[target.key]
        if decision == .otherZone {
            let sequence = window.append(Entry(key: target.key, application: target.application, facts: nil, skipped: false, otherVariant: true))
            window.complete(sequence, .expired, sent: false)
            return
        }
        // A campaign variant's message decides first: an endpoint of another variant is that message's target, not
        // this one's (uncounted here); one in the holdout is counted `held_out` by its variant's message.
        if let split {
            let choice = split.choose(endpointKey: target.endpoint)
            if choice.variant != split.index {
                let sequence = window.append(Entry(key: target.key, application: target.application, facts: nil, skipped: false, otherVariant: true))
                window.complete(sequence, .expired, sent: false)
                return
            }
            if case .heldOut = choice {
                let sequence = window.append(Entry(key: target.key, application: target.application, facts: nil, skipped: false, heldOut: true))
                window.complete(sequence, .expired, sent: false)
                return
            }
        }
        // A subscriber whose filter policy does not match is decided first: it is not a target of this message,
        // whatever the state of its endpoint (counted `filtered`, in `popCompleted`).
        if let policy = target.filterPolicy, filters?.passes(policy: policy, scope: target.filterPolicyScope) == false {
            lanes[target.application]?.counters?.filtered.increment()
            let sequence = window.append(Entry(key: target.key, application: target.application, facts: nil, skipped: false, filtered: true))
            window.complete(sequence, .expired, sent: false)
            return
        }
        guard target.enabled, !target.stale, let lane = lanes[target.application] else {
            lanes[target.application]?.counters?.skipped(stale: target.stale)
            let sequence = window.append(Entry(key: target.key, application: target.application, facts: nil, skipped: true))
            window.complete(sequence, .expired, sent: false)
            return
        }
        let facts = DeliveryFacts(
            endpoint: target.endpoint, application: target.application, token: target.token, attempt: 1,
            expiresAt: lane.expiresAt, publishedAt: publishedAt, successSampleRate: lane.successSampleRate,
            counters: lane.counters)
        if let decision {
            // Counted in `popCompleted` (`capped`, `quiet_skipped`, or `deferred` with a retry due at the end of the
            // quiet hours); nothing goes to the provider now.
            let sequence = window.append(Entry(key: target.key, application: target.application, facts: facts, skipped: false, timing: decision))
            window.complete(sequence, .expired, sent: false)
            return
        }
        let sequence = window.append(Entry(key: target.key, application: target.application, facts: facts, skipped: false))
        if let unsent = lane.unsent {
            window.complete(sequence, unsent, sent: false)
            return
        }
        let deliveryID = configuration.deliveryIDs?.encode(DeliveryID(messageKey: message, endpointKey: target.endpoint))
        pending[target.application, default: []].append(
            PushDelivery(token: target.token, deliveryID: deliveryID, tokenUpdatedAt: target.tokenUpdatedAt, tag: sequence))
        pendingCount += 1
        if pending[target.application]!.count >= configuration.submitSize(preferred: lane.preferredSubmitSize) {
            submit(target.application)
        }
    }

    /// A stored policy that does not compile (saved before policies were checked) lets every message through;
    /// said once per policy and worker, with the subscription's topic message, never per delivery.
    private func logUnusableFilterPolicies() {
        guard let unusable = filters?.takeUnusable(), !unusable.isEmpty else { return }
        for item in unusable {
            configuration.log.warning("filter policy unusable, subscribers with it get every message", [
                "message_key": String(claim.message), "reason": item.reason, "policy_bytes": String(item.policy.utf8.count),
            ])
        }
    }

    /// Asks the shared budget for what is pending (at most four submit batches), not more often than every 50 to
    /// 250 ms (a submit batch's worth at the message's rate); sleeps in the inbox wait until the next ask.
    private func refillPace() async throws(StoreError) {
        let want = pendingCount - paceTokens
        guard want > 0 else { return }
        let now = clock.now
        guard now >= nextPaceAsk else {
            rateWait = min(rateWait ?? .infinity, DispatcherTimings.seconds(now.duration(to: nextPaceAsk)))
            return
        }
        let grant = try await context.jobs.takePaceBudget(message: claim.message, want: min(want, 4 * configuration.submitBatchSize))
        guard grant.perSecond > 0 else {
            paced = false  // not paced after all
            return
        }
        paceTokens += grant.granted
        let interval = min(0.25, max(0.05, Double(configuration.submitBatchSize) / grant.perSecond))
        nextPaceAsk = clock.now + .seconds(interval)
        if paceTokens < pendingCount { rateWait = min(rateWait ?? .infinity, interval) }
    }

    private func submitAll() {
        for application in pending.keys where !(pending[application]?.isEmpty ?? true) { submit(application) }
    }

    private func submit(_ application: Int64) {
        guard let deliveries = pending[application], !deliveries.isEmpty else { return }
        guard let lane = lanes[application], lane.unsent == nil, let transport = lane.transport, let push = lane.push else {
            failPending(application, with: lanes[application]?.unsent ?? ApplicationLane.applicationDisabled)
            return
        }
        var offered = deliveries
        if paced {
            // The message's pace: only what the shared budget granted.
            guard paceTokens > 0 else { return }
            if paceTokens < offered.count { offered = Array(offered[..<paceTokens]) }
        }
        if let rate = lane.sendRate {
            // The application's send rate: send what the bucket grants, keep the rest pending, and sleep (in the
            // inbox wait) until the next token is due.
            let grant = context.sendRates.take(application, rate: rate, want: offered.count)
            if grant.granted < offered.count {
                timings.rateLimitedSubmits += 1
                rateWait = min(rateWait ?? grant.retryIn, grant.retryIn)
            }
            guard grant.granted > 0 else { return }
            if grant.granted < offered.count { offered = Array(offered[..<grant.granted]) }
        }
        let admitted = min(offered.count, max(0, transport.submit(push, deliveries: offered, sink: inbox)))
        if lane.sendRate != nil { context.sendRates.refund(application, offered.count - admitted) }
        awaiting += admitted
        pendingCount -= admitted
        if paced { paceTokens -= admitted }
        pending[application] = admitted == deliveries.count ? [] : Array(deliveries[admitted...])
    }

    private func failPending(_ application: Int64, with outcome: DeliveryOutcome) {
        guard let deliveries = pending[application] else { return }
        for delivery in deliveries { window.complete(delivery.tag, outcome, sent: false) }
        pendingCount -= deliveries.count
        pending[application] = []
    }

    /// Shutdown: what was not handed to a transport stays past the checkpoint for the next owner.
    private func dropPending() {
        pending.removeAll()
        pendingCount = 0
    }

    /// The outcome of a delivery a cancel left unsent (or unanswered within `cancelGrace`): popped without being
    /// counted, so the checkpoint can pass it and the counts are those of deliveries that happened.
    static let uncounted = DeliveryOutcome.rejected(reason: "ClarionCancelledUncounted")

    /// Cancel: what was not handed to a transport is never sent.
    private func dropPendingUncounted() {
        for deliveries in pending.values {
            for delivery in deliveries { window.complete(delivery.tag, Self.uncounted, sent: false) }
        }
        dropPending()
    }

    private func absorb(_ results: [PushResult]) -> Int {
        for result in results {
            guard let entry = window.entry(result.tag) else { continue }
            guard window.complete(result.tag, result.outcome, sent: true, providerStatus: result.providerStatus) else { continue }
            awaiting -= 1
            if result.outcome.disablesApplication, let application = entry.facts?.application {
                // Stop this application's sends now, here and in every worker of this process.
                // (The warning is written once the checkpoint has disabled it in the store: `writeCheckpoint`.)
                if context.markApplicationDisabled(application) { disabledHere.append(application) }
                lanes[application]?.unsent = ApplicationLane.applicationDisabled
                failPending(application, with: ApplicationLane.applicationDisabled)
            }
        }
        return results.count
    }

    private func popCompleted() {
        let now = configuration.now()
        var popped = 0
        var lastKey = checkpointKey
        var accounting = self.accounting
        let random = configuration.unitRandom
        window.popCompleted { entry, outcome, sent, status in
            if case .rejected(let reason) = outcome, reason == "ClarionCancelledUncounted" {
                // `uncounted`: a cancelled delivery, not a target any more.
            } else if entry.otherVariant {
                // Another variant's message counts this endpoint.
            } else if entry.heldOut {
                accounting.recordHeldOut(application: entry.application)
            } else if let decision = entry.timing, let facts = entry.facts {
                switch decision {
                case .capped: accounting.recordCapped(facts)
                case .quietSkipped: accounting.recordQuietSkipped(facts)
                case .deferred(let until, let reason): accounting.recordDeferred(facts, until: until, reason: reason)
                case .otherZone: break
                }
            } else if entry.filtered {
                accounting.recordFiltered(application: entry.application)
            } else if entry.skipped {
                accounting.recordSkipped(targeted: true, application: entry.application)
            } else if let facts = entry.facts {
                accounting.record(outcome, facts: facts, sent: sent, targeted: true, now: now, providerStatus: status,
                                  unitRandom: random())
            }
            lastKey = entry.key
            popped += 1
        }
        self.accounting = accounting
        checkpointKey = lastKey
        poppedSinceCheckpoint += popped
    }

    // MARK: Checkpoints

    private func checkpointDue() -> Bool {
        let elapsed = lastCheckpoint.duration(to: clock.now)
        if poppedSinceCheckpoint >= configuration.checkpointEvery { return true }
        if poppedSinceCheckpoint > 0, elapsed >= .seconds(configuration.checkpointInterval) { return true }
        return elapsed >= .seconds(configuration.leaseDuration / 3)
    }

    private func waitTimeout() -> Double {
        let elapsed = lastCheckpoint.duration(to: clock.now)
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let untilRenewal = configuration.leaseDuration / 3 - seconds
        return max(0.005, min(configuration.checkpointInterval, untilRenewal))
    }

    /// Writes the checkpoint with the popped deliveries' effects; a store error is retried with the same effects
    /// (nothing was committed; `checkpointRetryDelay`: through a short database outage while the lease holds),
    /// then thrown: the lease expires and the shard resumes elsewhere.
    private func writeCheckpoint(_ lease: LeaseDisposition) async throws(StoreError) -> CheckpointResult {
        let effects = accounting.take()
        let key = lease == .finish ? claim.hi : checkpointKey
        var attempt = 0
        let started = clock.now
        defer {
            timings.checkpoints += 1
            timings.checkpointSeconds += DispatcherTimings.seconds(started.duration(to: clock.now))
        }
        while true {
            do {
                let (result, report) = try await context.jobs.checkpoint(
                    claim, message: claim.message, checkpoint: key, effects: effects, lease: lease)
                poppedSinceCheckpoint = 0
                lastCheckpoint = clock.now
                configuration.committed(report)
                return result
            } catch {
                attempt += 1
                let held = DispatcherTimings.seconds(lastCheckpoint.duration(to: clock.now))
                guard !context.isAbandoned, let delay = configuration.checkpointRetryDelay(
                    after: error, attempt: attempt, leaseHeldFor: held, stopping: context.isStopping) else { throw error }
                try? await Task.sleep(for: .seconds(delay))
            }
        }
    }
}
