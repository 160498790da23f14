import ClarionCore
import ClarionStore
import Foundation

/// Sends due retries: claims a batch from `delivery_retries` (oldest due first, `SKIP LOCKED` under a lease),
/// renders per message and application as the shard workers do, sends, and writes the outcomes per message in
/// one transaction: finished retries deleted, the others rescheduled (backoff with jitter, Retry-After as a
/// floor, never past the TTL), counters added to the shard each delivery came from. An application's
/// `ClarionSendRate` holds for retries too (they share the shard workers' token bucket): what the bucket does not
/// grant now is handed back unsent, due again when the bucket will have room, without using up an attempt.
struct RetryWorker {
    let context: DispatchContext

    /// One round: returns how many retries were handled (0 when none was due).
    func runOnce() async throws(StoreError) -> Int {
        let configuration = context.configuration
        let claims = try await context.jobs.claimDueRetries(
            owner: configuration.owner, limit: configuration.retryBatchSize,
            leaseSeconds: max(configuration.leaseDuration, configuration.deliveryTimeout + 5))
        guard !claims.isEmpty else { return 0 }
        var byMessage: [Int64: [RetryClaim]] = [:]
        for claim in claims { byMessage[claim.message, default: []].append(claim) }
        for message in byMessage.keys.sorted() {
            if context.isAbandoned { return claims.count }
            try await send(byMessage[message]!, message: message)
        }
        return claims.count
    }

    private func send(_ claims: [RetryClaim], message: Int64) async throws(StoreError) {
        let configuration = context.configuration
        let job = try await context.jobs.message(message)
        if job.state == .cancelled {
            // Cancelled after these were claimed (the cancel deleted the others): dropped unsent, counted nowhere.
            _ = try await context.jobs.completeRetries(
                message: message, owner: configuration.owner, finished: claims.map(\.id), shardCounters: [:], shardFailures: [:],
                effects: OutcomeEffects())
            return
        }
        let content = MessageContent(job)
        var lanes: [Int64: ApplicationLane] = [:]
        try await context.lanes(for: claims.filter { $0.vanished == nil }.map(\.target.application), content: content,
                                into: &lanes)

        var outcomes: [DeliveryOutcome?] = Array(repeating: nil, count: claims.count)
        var statuses: [Int?] = Array(repeating: nil, count: claims.count)
        var sent = Array(repeating: false, count: claims.count)
        var skipped = Array(repeating: false, count: claims.count)
        var batches: [Int64: [PushDelivery]] = [:]
        var deferred: [FanOutJobs.DeferredRetry] = []
        var isDeferred = Array(repeating: false, count: claims.count)
        for (i, claim) in claims.enumerated() {
            if let vanished = claim.vanished {
                // Its endpoint (or the endpoint's application) was deleted: a final failure with that reason, so the
                // message still finishes.
                outcomes[i] = .rejected(reason: vanished)
                continue
            }
            guard claim.target.enabled, let lane = lanes[claim.target.application] else {
                skipped[i] = true
                continue
            }
            if let unsent = lane.unsent ?? (context.isApplicationDisabled(lane.application.key) ? ApplicationLane.applicationDisabled : nil) {
                outcomes[i] = unsent
                continue
            }
            let deliveryID = configuration.deliveryIDs?.encode(DeliveryID(messageKey: message, endpointKey: claim.target.endpoint))
            batches[claim.target.application, default: []].append(PushDelivery(
                token: claim.target.token, deliveryID: deliveryID, tokenUpdatedAt: claim.target.tokenUpdatedAt, tag: UInt64(i)))
        }
        let inbox = CompletionInbox()
        context.register(inbox)
        defer { context.unregister(inbox) }
        var awaiting = 0
        for (application, deliveries) in batches {
            guard let lane = lanes[application], let transport = lane.transport, let push = lane.push else { continue }
            var rest = deliveries[...]
            if let rate = lane.sendRate {
                let grant = context.sendRates.take(application, rate: rate, want: rest.count)
                if grant.granted < rest.count {
                    // Spread over the time the bucket needs for them, so they do not all come due at once.
                    let start = configuration.now()
                    for (k, delivery) in rest.dropFirst(grant.granted).enumerated() {
                        let i = Int(delivery.tag)
                        isDeferred[i] = true
                        deferred.append(.init(id: claims[i].id, notBefore: start.addingTimeInterval(grant.retryIn + Double(k) / rate)))
                    }
                    rest = rest.prefix(grant.granted)
                }
            }
            var stalled = 0
            while !rest.isEmpty {
                let admitted = min(rest.count, max(0, transport.submit(push, deliveries: Array(rest), sink: inbox)))
                awaiting += admitted
                rest = rest.dropFirst(admitted)
                if rest.isEmpty { break }
                stalled = admitted == 0 ? stalled + 1 : 0
                // The pool's queue is full: let outcomes come back before submitting the rest.
                awaiting -= collect(inbox.take(), into: &outcomes, statuses: &statuses, sent: &sent)
                await inbox.wait(timeout: 0.05)
                if stalled > 200 || context.isAbandoned { break }
            }
            for delivery in rest { outcomes[Int(delivery.tag)] = .retryable(reason: "ProviderQueueFull", retryAfter: nil) }
            if lane.sendRate != nil { context.sendRates.refund(application, rest.count) }
        }
        let deadline = ContinuousClock.now + .seconds(configuration.deliveryTimeout)
        while awaiting > 0, ContinuousClock.now < deadline, !context.isAbandoned {
            awaiting -= collect(inbox.take(), into: &outcomes, statuses: &statuses, sent: &sent)
            if awaiting > 0 { await inbox.wait(timeout: 0.05) }
        }
        inbox.close()
        if context.isAbandoned { return }

        // Account per shard; retries without a shard (rows from before schema v4) count against no shard.
        let now = configuration.now()
        var perShard: [Int64: DeliveryAccounting] = [:]
        var unsharded = DeliveryAccounting(configuration)
        var finished: [Int64] = []
        var disabled: Set<Int64> = []
        for (i, claim) in claims.enumerated() where !isDeferred[i] {
            var accounting = claim.shard.flatMap { perShard[$0] } ?? DeliveryAccounting(configuration)
            if claim.shard == nil { accounting = unsharded }
            let disposition: DeliveryAccounting.Disposition
            if skipped[i] {
                accounting.recordSkipped(targeted: false, application: claim.target.application)
                disposition = .final
            } else if claim.vanished != nil {
                let facts = DeliveryFacts(
                    endpoint: claim.target.endpoint, application: 0, token: "", attempt: claim.attempt,
                    expiresAt: job.expiresAt, publishedAt: job.publishedAt, successSampleRate: 0)
                disposition = accounting.record(outcomes[i]!, facts: facts, sent: false, targeted: false, now: now,
                                                unitRandom: configuration.unitRandom())
            } else {
                let lane = lanes[claim.target.application]!
                let facts = DeliveryFacts(
                    endpoint: claim.target.endpoint, application: claim.target.application, token: claim.target.token,
                    attempt: claim.attempt + 1, expiresAt: lane.expiresAt, publishedAt: job.publishedAt,
                    successSampleRate: lane.successSampleRate, counters: lane.counters)
                let outcome = outcomes[i] ?? .retryable(reason: "NoProviderAnswer", retryAfter: nil)
                if outcome.disablesApplication, !disabled.contains(claim.target.application) {
                    disabled.insert(claim.target.application)
                    if context.markApplicationDisabled(claim.target.application) {
                        await context.directory.applicationDisabled(claim.target.application)
                    }
                }
                disposition = accounting.record(outcome, facts: facts, sent: sent[i], targeted: false, now: now,
                                                providerStatus: statuses[i], unitRandom: configuration.unitRandom())
            }
            if disposition == .final { finished.append(claim.id) }
            if let shard = claim.shard { perShard[shard] = accounting } else { unsharded = accounting }
        }
        var effects = OutcomeEffects()
        var shardCounters: [Int64: DeliveryCounters] = [:]
        var shardFailures: [Int64: [String: Int64]] = [:]
        for (shard, var accounting) in perShard {
            let part = accounting.take()
            shardCounters[shard] = part.counters
            shardFailures[shard] = part.failures
            merge(part, into: &effects)
        }
        merge(unsharded.take(), into: &effects)
        let (finishedState, report) = try await context.jobs.completeRetries(
            message: message, owner: configuration.owner, finished: finished, deferred: deferred, shardCounters: shardCounters,
            shardFailures: shardFailures, effects: effects)
        configuration.committed(report)
        if finishedState != nil {
            configuration.metrics?.messageFinished(job.targetKind, publishedAt: job.publishedAt, now: configuration.now())
        }
    }

    private func collect(_ results: [PushResult], into outcomes: inout [DeliveryOutcome?], statuses: inout [Int?],
                         sent: inout [Bool]) -> Int {
        var count = 0
        for result in results where Int(result.tag) < outcomes.count && outcomes[Int(result.tag)] == nil {
            outcomes[Int(result.tag)] = result.outcome
            statuses[Int(result.tag)] = result.providerStatus
            sent[Int(result.tag)] = true
            count += 1
        }
        return count
    }

    private func merge(_ part: OutcomeEffects, into effects: inout OutcomeEffects) {
        for (application, counts) in part.applications { effects.applications[application, default: .init()] += counts }
        effects.log += part.log
        effects.disable += part.disable
        effects.replace += part.replace
        effects.retries += part.retries
        for app in part.disableApplications where !effects.disableApplications.contains(where: { $0.application == app.application }) {
            effects.disableApplications.append(app)
        }
    }
}
