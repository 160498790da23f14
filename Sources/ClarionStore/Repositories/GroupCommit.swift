import Foundation
import Synchronization

/// Group commit: many callers' rows written by a few writer threads, each batch in one round trip and one commit
/// (docs/architecture.md, "The life of a publish", step 2). Publishes and open beacons both go through it.
///
/// Concurrent submissions queue up; a writer takes what queued during a short window (250 us by default) and hands
/// it to `write` on its own session, then answers every caller of that batch. A caller is answered only after the
/// commit that holds its item, so an acknowledged item survives a crash. Waiting callers hold no thread: they are
/// suspended on a continuation or answered from a callback. The queue is bounded: past `maxQueued` waiting items,
/// a submission fails at once with `.busy` instead of buffering without bound.
///
/// Writer threads start with the first submission and stop in `shutdown()`, after the queue is drained.
public final class GroupCommit<Item: Sendable, Output: Sendable>: Sendable {
    /// Writes one batch on the writer's session and commits it: one result per item, in order.
    public typealias Write = @Sendable ([Item], PGConnection) -> [Result<Output, StoreError>]

    public let window: Duration
    public let maxBatch: Int
    public let writers: Int
    public let maxQueued: Int
    private let pool: PGPool
    private let name: String
    private let itemsName: String
    private let write: Write

    private struct Waiter {
        let item: Item
        let completion: @Sendable (Result<Output, StoreError>) -> Void
    }

    private struct State {
        var queue: [Waiter] = []
        var started = false
        var shutDown = false
        var running = 0
        var batches = 0
    }

    private let state = Mutex(State())
    private let wake = NSCondition()

    /// `name` names the writer threads and their sessions (`clarion-<name>`); `items` (plural) the `.busy` refusal.
    public init(pool: PGPool, name: String, items: String, window: Duration = .microseconds(250), maxBatch: Int = 256, writers: Int = 2,
                maxQueued: Int = 50_000, write: @escaping Write) {
        self.pool = pool
        self.name = name
        self.itemsName = items
        self.window = window
        self.maxBatch = max(1, maxBatch)
        self.writers = max(1, writers)
        self.maxQueued = maxQueued
        self.write = write
    }

    /// Stores the item durably; returns once its batch committed.
    public func commit(_ item: Item) async throws(StoreError) -> Output {
        let result: Result<Output, StoreError> = await withCheckedContinuation { continuation in
            submit(item) { continuation.resume(returning: $0) }
        }
        return try result.get()
    }

    /// Stores several items, queued under one lock so that they share a batch when it has room; one continuation
    /// waits for all of them. Results are in the order of `items`.
    public func commit(_ items: [Item]) async -> [Result<Output, StoreError>] {
        guard !items.isEmpty else { return [] }
        return await withCheckedContinuation { continuation in
            submit(items) { continuation.resume(returning: $0) }
        }
    }

    /// `commit(_:)` for callers that answer from a callback: `completion` gets the results in the order of `items`,
    /// exactly once, on the writer thread that committed the last of them (at once for none, or when refused).
    public func submit(_ items: [Item], completion: @escaping @Sendable ([Result<Output, StoreError>]) -> Void) {
        guard !items.isEmpty else { return completion([]) }
        let collector = ResultCollector<Output>(count: items.count, done: completion)
        enqueue(items.enumerated().map { index, item in
            Waiter(item: item) { collector.set(index, $0) }
        })
    }

    /// Queues the item; `completion` is called exactly once, on a writer thread right after the commit that holds
    /// it (or at once when the queue refuses it).
    public func submit(_ item: Item, completion: @escaping @Sendable (Result<Output, StoreError>) -> Void) {
        enqueue([Waiter(item: item, completion: completion)])
    }

    /// Batches committed so far.
    public var batchesWritten: Int { state.withLock { $0.batches } }

    /// Items waiting for a writer.
    public var queued: Int { state.withLock { $0.queue.count } }

    /// Refuses new items, lets the writers finish what is queued, and waits for them to stop.
    public func shutdown() {
        wake.lock()
        state.withLock { $0.shutDown = true }
        wake.broadcast()
        wake.unlock()
        while state.withLock({ $0.running }) > 0 { usleep(1_000) }
    }

    private func enqueue(_ waiters: [Waiter]) {
        var refusal: StoreError?
        var startWriters = false
        wake.lock()
        state.withLock { state in
            if state.shutDown {
                refusal = StoreError(.shutDown, "the \(name) writer is shut down")
            } else if state.queue.count + waiters.count > maxQueued {
                refusal = StoreError(.busy, "too many \(itemsName) waiting for a commit")
            } else {
                state.queue.append(contentsOf: waiters)
                if !state.started {
                    state.started = true
                    state.running = writers
                    startWriters = true
                }
            }
        }
        wake.signal()
        wake.unlock()
        if let refusal {
            for waiter in waiters { waiter.completion(.failure(refusal)) }
            return
        }
        if startWriters {
            for index in 0..<writers {
                let thread = Thread { [self] in self.writerLoop() }
                thread.name = "clarion-\(name)-\(index)"
                thread.start()
            }
        }
    }

    /// Each writer owns its session (opened on first use, reopened after a loss): a batch is written from this
    /// thread, with no hand-off to a pool thread and back per batch.
    private func writerLoop() {
        var connection: PGConnection?
        let windowMicros = UInt32(max(0, window.components.seconds * 1_000_000 + window.components.attoseconds / 1_000_000_000_000))
        while true {
            wake.lock()
            var stop = false
            while true {
                let (hasWork, done) = state.withLock { ($0.queue.isEmpty == false, $0.shutDown) }
                if hasWork { break }
                if done { stop = true; break }
                wake.wait()
            }
            wake.unlock()
            if stop { break }
            // The batch window: let concurrent callers join unless the batch is already full.
            if windowMicros > 0, state.withLock({ $0.queue.count }) < maxBatch { usleep(windowMicros) }
            let batch = state.withLock { state -> [Waiter] in
                let count = min(maxBatch, state.queue.count)
                let taken = Array(state.queue.prefix(count))
                state.queue.removeFirst(count)
                return taken
            }
            guard !batch.isEmpty else { continue }
            let items = batch.map(\.item)
            let results: [Result<Output, StoreError>]
            do throws(StoreError) {
                if connection == nil || connection?.isHealthy == false {
                    connection = nil
                    connection = try PGConnection(conninfo: pool.conninfo, applicationName: "clarion-\(name)")
                }
                results = write(items, connection!)
                if connection?.isHealthy == false { connection = nil }
            } catch {
                results = items.map { _ in .failure(error) }
            }
            if let health = pool.health {
                // A batch whose items all failed for an outage (a full disk fails them alike) reports it once.
                if let failure = results.lazy.compactMap({ if case .failure(let e) = $0, e.isOutage { e } else { nil } }).first {
                    health.failed(failure)
                } else if results.contains(where: { if case .success = $0 { true } else { false } }) {
                    health.succeeded()
                }
            }
            state.withLock { $0.batches += 1 }
            for (waiter, result) in zip(batch, results) { waiter.completion(result) }
        }
        state.withLock { $0.running -= 1 }
    }
}

/// Collects one result per index from the writer threads and hands the array over once the last one arrives.
private final class ResultCollector<Output: Sendable>: Sendable {
    private struct State {
        var results: [Result<Output, StoreError>?]
        var remaining: Int
    }

    private let state: Mutex<State>
    private let done: @Sendable ([Result<Output, StoreError>]) -> Void

    init(count: Int, done: @escaping @Sendable ([Result<Output, StoreError>]) -> Void) {
        state = Mutex(State(results: Array(repeating: nil, count: count), remaining: count))
        self.done = done
    }

    func set(_ index: Int, _ result: Result<Output, StoreError>) {
        let finished = state.withLock { state -> [Result<Output, StoreError>]? in
            state.results[index] = result
            state.remaining -= 1
            return state.remaining == 0 ? state.results.map { $0! } : nil
        }
        if let finished { done(finished) }
    }
}
