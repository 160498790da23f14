import ClarionCore
import ClarionStore
import Foundation

/// Tuning and injected dependencies of a `Dispatcher`.
public struct DispatcherConfiguration: Sendable {
    /// Names this dispatcher in leases; unique per process (host, pid and a random part by default).
    public var owner: String
    /// Shards worked at once.
    public var shardWorkers: Int
    /// Workers that read their shard to the end and gave their slot back while their last outcomes arrive; at
    /// most this many such (general) workers at once, beyond `shardWorkers`. 0 keeps the slot until finished.
    public var drainingWorkers: Int
    /// Extra workers only for small shards (at most `expressShardTargets` planned targets: direct publishes,
    /// small topics), so a direct publish is not queued behind a million-endpoint fan-out.
    public var expressWorkers: Int
    public var expressShardTargets: Int
    /// Direct messages claimed together into one `DirectBatchWorker` (one claim statement, one checkpoint
    /// transaction for the batch); 0 leaves them to shard workers, one message per worker.
    public var directBatchSize: Int
    /// Direct batches worked at once, beside the shard workers (so direct messages never wait behind a fan-out,
    /// and fan-outs never behind a direct backlog).
    public var directWorkers: Int
    /// A lease not renewed for this long may be taken over by another dispatcher.
    public var leaseDuration: Double
    /// Checkpoint after this many deliveries reached a final outcome...
    public var checkpointEvery: Int
    /// ...or this many seconds after the last checkpoint when something changed (the lease is renewed at
    /// least every `leaseDuration / 3` regardless).
    public var checkpointInterval: Double
    /// Deliveries of one shard between its checkpoint and the stream position (in flight or waiting).
    public var maxInFlightPerShard: Int
    /// Deliveries handed to a transport per submit.
    public var submitBatchSize: Int
    /// The most a transport that asks for larger submits (`PushTransport.preferredSubmitSize`: Push Kit, 1000
    /// tokens a request) is handed at once; also bounded by `maxInFlightPerShard`. The HTTP/2 platforms ask for
    /// nothing and keep `submitBatchSize`.
    public var maxPreferredSubmitSize: Int = 1_000
    /// Targets read per keyset page.
    public var pageSize: Int
    /// Targets per shard when a topic message is planned.
    public var shardSize: Int
    /// Longest sleep between polls when no notification arrives.
    public var maxPollInterval: Double
    public var retryPolicy: RetryPolicy
    /// Retries claimed per round.
    public var retryBatchSize: Int
    /// Endpoints whose token was not refreshed for this long are skipped; nil never skips for staleness.
    public var staleAfter: TimeInterval?
    /// On shutdown, how long in-flight deliveries may take before the shards are handed back anyway.
    public var shutdownGrace: Double
    /// When a message is cancelled, how long a shard worker waits for the outcomes of what it already handed to
    /// a provider before writing its last checkpoint (outcomes that arrive later are not counted).
    public var cancelGrace: Double = 5
    /// Scheduled messages moved to `Enqueued` per promotion round of the claim loop.
    public var promotionBatchSize: Int = 500
    /// A delivery whose outcome never arrives counts as retryable after this long.
    public var deliveryTimeout: Double
    /// Delivery-log rows older than this many days are dropped (by whole day partitions); nil keeps them and
    /// makes no partitions (the default partition takes every row).
    public var deliveryLogRetentionDays: Int?
    /// Delivery ids in payloads (`RenderSettings.deliveryIDKey`); nil sends none.
    public var deliveryIDs: DeliveryIDCodec?
    /// Structured log for what is not per push: store errors, shards lost or failed, applications disabled.
    public var log: Log
    /// The clock (tests may shift it); leases use the database's clock.
    public var now: @Sendable () -> Date
    /// Uniform in 0..<1: retry jitter and success sampling.
    public var unitRandom: @Sendable () -> Double
    /// Delivery counters for `/metrics`; nil counts nothing (`CLARION_METRICS=off`).
    public var metrics: DeliveryMetrics? = nil
    /// Count outcomes per application and minute in the checkpoints (`application_delivery_counts`, schema v23:
    /// the console's exact figures). Off only to measure what counting costs (`loadtest/fanout`, `COUNTS=off`).
    public var applicationCounts = true

    public init(
        owner: String = DispatcherConfiguration.defaultOwner(), shardWorkers: Int = 4, drainingWorkers: Int? = nil,
        expressWorkers: Int = 2,
        expressShardTargets: Int = 100, directBatchSize: Int = 128, directWorkers: Int = 2, leaseDuration: Double = 30,
        checkpointEvery: Int = 2_000, checkpointInterval: Double = 0.25, maxInFlightPerShard: Int = 1_000,
        submitBatchSize: Int = 128, pageSize: Int = 2_000, shardSize: Int = 10_000, maxPollInterval: Double = 1,
        retryPolicy: RetryPolicy = .standard, retryBatchSize: Int = 500, staleAfter: TimeInterval? = 270 * 86_400,
        shutdownGrace: Double = 10, deliveryTimeout: Double = 120, deliveryLogRetentionDays: Int? = 30,
        deliveryIDs: DeliveryIDCodec? = nil, log: Log = .silent,
        now: @escaping @Sendable () -> Date = { Date() },
        unitRandom: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }
    ) {
        self.owner = owner
        self.shardWorkers = max(1, shardWorkers)
        self.drainingWorkers = max(0, drainingWorkers ?? self.shardWorkers)
        self.expressWorkers = max(0, expressWorkers)
        self.expressShardTargets = max(1, expressShardTargets)
        self.directBatchSize = max(0, directBatchSize)
        self.directWorkers = max(1, directWorkers)
        self.leaseDuration = max(0.5, leaseDuration)
        self.checkpointEvery = max(1, checkpointEvery)
        self.checkpointInterval = checkpointInterval
        self.maxInFlightPerShard = max(1, maxInFlightPerShard)
        self.submitBatchSize = max(1, submitBatchSize)
        self.pageSize = max(1, pageSize)
        self.shardSize = max(1, shardSize)
        self.maxPollInterval = maxPollInterval
        self.retryPolicy = retryPolicy
        self.retryBatchSize = max(1, retryBatchSize)
        self.staleAfter = staleAfter
        self.shutdownGrace = shutdownGrace
        self.deliveryTimeout = deliveryTimeout
        self.deliveryLogRetentionDays = deliveryLogRetentionDays
        self.deliveryIDs = deliveryIDs
        self.log = log
        self.now = now
        self.unitRandom = unitRandom
    }

    public static func defaultOwner() -> String {
        var name = [CChar](repeating: 0, count: 256)
        gethostname(&name, 255)
        let host = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return "\(host)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    }

    /// Pending deliveries at which a shard worker submits, for a transport that prefers `preferred` at once.
    func submitSize(preferred: Int?) -> Int {
        guard let preferred, preferred > submitBatchSize else { return submitBatchSize }
        return max(submitBatchSize, min(preferred, maxPreferredSubmitSize, maxInFlightPerShard))
    }

    /// The largest submit a shard worker makes (a Push Kit lane's, when larger than `submitBatchSize`).
    public var largestSubmitSize: Int { submitSize(preferred: maxPreferredSubmitSize) }

    /// The most deliveries a worker killed without warning can have sent past its last checkpoint: what popped
    /// since the checkpoint plus what was in flight, plus one submit batch of slack (the largest one: outcomes
    /// come back a submit at a time, so popping can pass the checkpoint size by that much).
    public var duplicateBound: Int { checkpointEvery + maxInFlightPerShard + largestSubmitSize }
}

/// Lifecycle events of a dispatcher, for metrics and tests. Called on worker tasks: keep it short.
public protocol DispatcherObserver: Sendable {
    func shardClaimed(shard: Int64, message: Int64, owner: String, checkpoint: Int64)
    func shardEnded(shard: Int64, owner: String, how: ShardWorkerExit)
}

/// How a shard worker stopped.
public enum ShardWorkerExit: Sendable, Hashable {
    /// Every target has a final outcome or a scheduled retry.
    case finished
    /// Handed back at shutdown (state ready at its checkpoint).
    case released
    /// The lease was taken over by another dispatcher.
    case leaseLost
    /// Stopped without writing anything (a simulated crash).
    case abandoned
    /// Its message was cancelled: no new sends, the in-flight outcomes written, the shard done.
    case cancelled
    /// A store error; the lease will expire and the shard be resumed from its checkpoint.
    case failed(String)
}

extension DispatcherConfiguration {
    /// Seconds to wait before writing a failed checkpoint again, or nil to give up (the worker then fails and its
    /// leases expire).
    ///
    /// A checkpoint records deliveries that were already sent. Given up, the shard is claimed again when its lease
    /// expires and those deliveries go out a second time; that is what a restart of PostgreSQL did to a batch in
    /// flight. So while the database is only out for a while (`StoreError.isTransient`: down, restarting, disk
    /// full) the worker keeps trying, 0.2 s, 0.4 s ... at most 1 s apart, for as long as its lease (renewed
    /// `leaseHeldFor` seconds ago) keeps more than a sixth of `leaseDuration`: nobody else may take the shard before
    /// that, and the checkpoint's fencing token refuses the write if someone did. Other errors, and any error
    /// while stopping, get three attempts.
    ///
    ///     attempt:        1    2    3    4    5    6 ...
    ///     delay (s):      0.2  0.4  0.6  0.8  1.0  1.0 ...   (transient, until 25 s of a 30 s lease)
    ///     other errors:   0.2  0.4  give up
    func checkpointRetryDelay(after error: StoreError, attempt: Int, leaseHeldFor: Double, stopping: Bool) -> Double? {
        let delay = Double(min(attempt, 5)) / 5
        if error.isTransient && !stopping {
            return leaseHeldFor + delay < leaseDuration * 5 / 6 ? delay : nil
        }
        return attempt < 3 ? delay : nil
    }
}

extension DispatcherConfiguration {
    /// What a committed checkpoint reports: its warnings to the log, its first deliveries to the histogram.
    func committed(_ report: FailureReport) {
        log.report(report)
        metrics?.observe(report.firstDeliveries)
    }
}
