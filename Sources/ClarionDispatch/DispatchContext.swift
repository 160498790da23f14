import ClarionCore
import ClarionStore
import Foundation
import Synchronization

/// What a dispatcher's workers share: the store, the transports, the configuration, the stop flags, and the
/// applications this process has seen disabled (so every worker stops sending to them at once).
final class DispatchContext: Sendable {
    let jobs: FanOutJobs
    let directory: any PushTransportDirectory
    let configuration: DispatcherConfiguration
    let observer: (any DispatcherObserver)?
    /// `ClarionSendRate` buckets, shared by this process's workers.
    let sendRates = SendRateLimiter()

    private struct State {
        var stopping = false
        var abandoned = false
        var disabledApplications: Set<Int64> = []
        /// Messages this process heard were cancelled (`clarion_cancel`, or a checkpoint that found it): their
        /// shard workers stop sending at their next loop turn.
        var cancelledMessages: Set<Int64> = []
        var inboxes: [ObjectIdentifier: CompletionInbox] = [:]
    }

    private let state = Mutex(State())
    private let timings = Mutex(DispatcherTimings())

    /// A worker's wall-time breakdown, added when it ends.
    func record(_ worker: DispatcherTimings) {
        timings.withLock { $0.add(worker) }
    }

    var totalTimings: DispatcherTimings { timings.withLock { $0 } }

    init(jobs: FanOutJobs, directory: any PushTransportDirectory, configuration: DispatcherConfiguration,
         observer: (any DispatcherObserver)?) {
        self.jobs = jobs
        self.directory = directory
        self.configuration = configuration
        self.observer = observer
    }

    var isStopping: Bool { state.withLock { $0.stopping || $0.abandoned } }
    var isAbandoned: Bool { state.withLock { $0.abandoned } }

    func stop(abandon: Bool) {
        let inboxes = state.withLock { state -> [CompletionInbox] in
            state.stopping = true
            if abandon { state.abandoned = true }
            return Array(state.inboxes.values)
        }
        for inbox in inboxes { abandon ? inbox.close() : inbox.poke() }
    }

    func register(_ inbox: CompletionInbox) {
        let stopping = state.withLock { state -> Bool in
            state.inboxes[ObjectIdentifier(inbox)] = inbox
            return state.stopping
        }
        if stopping { inbox.poke() }
    }

    func unregister(_ inbox: CompletionInbox) {
        _ = state.withLock { $0.inboxes.removeValue(forKey: ObjectIdentifier(inbox)) }
    }

    /// Records that a message was cancelled and wakes every worker so those of its shards stop now. The set is
    /// bounded: past `cancelledLimit` keys it starts again (a worker that missed its key still stops at its next
    /// checkpoint, which finds the shard done).
    func markCancelled(_ message: Int64) {
        let inboxes = state.withLock { state -> [CompletionInbox] in
            if state.cancelledMessages.count >= Self.cancelledLimit { state.cancelledMessages.removeAll() }
            guard state.cancelledMessages.insert(message).inserted else { return [] }
            return Array(state.inboxes.values)
        }
        for inbox in inboxes { inbox.poke() }
    }

    func isCancelled(_ message: Int64) -> Bool {
        state.withLock { $0.cancelledMessages.contains(message) }
    }

    private static let cancelledLimit = 10_000

    /// True the first time this process sees the application disabled.
    @discardableResult
    func markApplicationDisabled(_ key: Int64) -> Bool {
        state.withLock { $0.disabledApplications.insert(key).inserted }
    }

    func isApplicationDisabled(_ key: Int64) -> Bool {
        state.withLock { $0.disabledApplications.contains(key) }
    }

    private struct LaneKey: Hashable {
        let message: Int64
        let application: Int64
    }

    /// Lanes rendered recently, shared by the workers of one message's shards: a message is rendered once per
    /// application every few seconds, not once per shard. Entries are young (the remaining TTL a render computes
    /// stays true) and the cache is bounded.
    private let laneCache = Mutex<[LaneKey: (lane: ApplicationLane, at: ContinuousClock.Instant)]>([:])
    private static let laneCacheLimit = 512
    private static let laneMaxAge = Duration.seconds(5)

    /// The lanes of one message for one worker, resolved on first sight of each application.
    func lanes(for keys: [Int64], content: MessageContent, into lanes: inout [Int64: ApplicationLane]) async throws(StoreError) {
        var missing = Set(keys.filter { lanes[$0] == nil })
        guard !missing.isEmpty else { return }
        let now = ContinuousClock.now
        let message = content.job.key
        let cached = laneCache.withLock { cache in
            missing.compactMap { key -> ApplicationLane? in
                guard let entry = cache[LaneKey(message: message, application: key)],
                      entry.at.duration(to: now) < Self.laneMaxAge else { return nil }
                return entry.lane
            }
        }
        for lane in cached where !isApplicationDisabled(lane.application.key) {
            lanes[lane.application.key] = lane
            missing.remove(lane.application.key)
        }
        guard !missing.isEmpty else { return }
        let applications = try await jobs.applications(Array(missing))
        let wall = configuration.now()
        var made: [ApplicationLane] = []
        for application in applications {
            let lane = await ApplicationLane.make(
                application, content: content, directory: directory,
                disabledInProcess: isApplicationDisabled(application.key), now: wall, metrics: configuration.metrics)
            lanes[application.key] = lane
            made.append(lane)
        }
        laneCache.withLock { cache in
            if cache.count + made.count > Self.laneCacheLimit { cache.removeAll(keepingCapacity: true) }
            for lane in made { cache[LaneKey(message: message, application: lane.application.key)] = (lane, now) }
        }
    }
}
