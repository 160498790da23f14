import Foundation

/// Where shard workers spent their wall time, summed over every worker that ended in this process: for the load
/// test and diagnosis (a worker that mostly waits says on what). Measured per loop turn and per store call,
/// never per push.
public struct DispatcherTimings: Sendable, Hashable {
    /// Workers that ended (any exit).
    public var workers = 0
    /// Sum of the workers' lifetimes.
    public var workerSeconds = 0.0
    /// Waiting for a keyset page (the prefetched one not ready yet, or the first).
    public var pageWaitSeconds = 0.0
    public var pagesRead = 0
    /// Resolving and rendering applications' lanes (store + credentials, on first sight).
    public var laneSeconds = 0.0
    /// Checkpoint transactions, waited for inline.
    public var checkpointSeconds = 0.0
    public var checkpoints = 0
    /// Suspended in the completion inbox, waiting for provider outcomes.
    public var outcomeWaitSeconds = 0.0
    public var outcomeWaits = 0
    /// Of those waits: how many began with the window full (in-flight bound reached), and how many with
    /// deliveries the pools did not admit (pool queue full).
    public var outcomeWaitsWindowFull = 0
    public var outcomeWaitsPoolFull = 0
    /// Sum over waits of the deliveries awaiting an outcome when the wait began (mean = / outcomeWaits).
    public var awaitingAtWaitSum = 0
    /// Sum over waits of the entries in the window when the wait began.
    public var windowAtWaitSum = 0

    /// Of `workerSeconds`: time after a worker gave its slot back (stream read to the end, outcomes and the final
    /// checkpoint awaited while another shard used the slot).
    public var drainingSeconds = 0.0

    /// Submits cut short by an application's `ClarionSendRate`.
    public var rateLimitedSubmits = 0

    public init() {}

    mutating func add(_ other: DispatcherTimings) {
        workers += other.workers
        workerSeconds += other.workerSeconds
        drainingSeconds += other.drainingSeconds
        rateLimitedSubmits += other.rateLimitedSubmits
        pageWaitSeconds += other.pageWaitSeconds
        pagesRead += other.pagesRead
        laneSeconds += other.laneSeconds
        checkpointSeconds += other.checkpointSeconds
        checkpoints += other.checkpoints
        outcomeWaitSeconds += other.outcomeWaitSeconds
        outcomeWaits += other.outcomeWaits
        outcomeWaitsWindowFull += other.outcomeWaitsWindowFull
        outcomeWaitsPoolFull += other.outcomeWaitsPoolFull
        awaitingAtWaitSum += other.awaitingAtWaitSum
        windowAtWaitSum += other.windowAtWaitSum
    }

    /// Seconds of a duration.
    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
