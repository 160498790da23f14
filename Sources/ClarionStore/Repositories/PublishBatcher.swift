import Foundation
import Synchronization

/// Group commit for publishes (docs/architecture.md, "The life of a publish", step 2).
///
/// Concurrent `publish` calls queue up; a writer thread takes what queued during a short window (250 us by
/// default) and writes it with one pipelined round trip and one commit on its own session, then answers every
/// caller of that batch. A caller is answered only after the commit that holds its message, so an
/// acknowledged publish survives a crash. Waiting callers hold no thread: they are suspended on a
/// continuation. The queue is bounded: past `maxQueued` waiting messages, `publish` fails fast with
/// `.busy` instead of buffering without bound.
///
/// Writer threads start with the first publish and stop in `shutdown()`, after the queue is drained.
public final class PublishBatcher: Sendable {
    public let window: Duration
    public let maxBatch: Int
    public let writers: Int
    public let maxQueued: Int
    private let pool: PGPool

    private struct Waiter {
        let message: NewMessage
        let completion: @Sendable (Result<MessageID, StoreError>) -> Void
    }

    private struct State {
        var queue: [Waiter] = []
        var started = false
        var shutDown = false
        var running = 0
        /// Batches written so far (tests and metrics read it).
        var batches = 0
    }

    private let state = Mutex(State())
    private let wake = NSCondition()

    /// Told of each batch written: its size and how long writing and committing it took (for `/metrics`).
    private let onBatch: (@Sendable (_ messages: Int, _ write: Duration) -> Void)?

    public init(pool: PGPool, window: Duration = .microseconds(250), maxBatch: Int = 256, writers: Int = 2,
                maxQueued: Int = 50_000, onBatch: (@Sendable (_ messages: Int, _ write: Duration) -> Void)? = nil) {
        self.pool = pool
        self.onBatch = onBatch
        self.window = window
        self.maxBatch = max(1, maxBatch)
        self.writers = max(1, writers)
        self.maxQueued = maxQueued
    }

    /// Stores the message durably; returns once its batch committed.
    public func publish(_ message: NewMessage) async throws(StoreError) -> MessageID {
        let result: Result<MessageID, StoreError> = await withCheckedContinuation { continuation in
            submit(message) { continuation.resume(returning: $0) }
        }
        return try result.get()
    }

    /// Stores several messages durably (one request's targets, a PublishBatch); they are queued under one lock,
    /// so they go into the same batch when it has room, and one continuation waits for all of them. Results are
    /// in the order of `messages`.
    public func publish(_ messages: [NewMessage]) async -> [Result<MessageID, StoreError>] {
        guard !messages.isEmpty else { return [] }
        return await withCheckedContinuation { continuation in
            submit(messages) { continuation.resume(returning: $0) }
        }
    }

    /// `publish(_:)` for callers that answer from a callback: `completion` gets the results in the order of
    /// `messages`, exactly once, on the writer thread that committed the last of them (at once for none, or
    /// when the batcher refuses them).
    public func submit(_ messages: [NewMessage], completion: @escaping @Sendable ([Result<MessageID, StoreError>]) -> Void) {
        guard !messages.isEmpty else { return completion([]) }
        let collector = ResultCollector(count: messages.count, done: completion)
        enqueue(messages.enumerated().map { index, message in
            Waiter(message: message) { collector.set(index, $0) }
        })
    }

    /// Queues the message; `completion` is called exactly once, on a writer thread right after the commit
    /// that holds it (or at once when the batcher refuses it). For callers that answer from a callback: the
    /// API's Publish replies from here without waking a task per message.
    public func submit(_ message: NewMessage, completion: @escaping @Sendable (Result<MessageID, StoreError>) -> Void) {
        enqueue([Waiter(message: message, completion: completion)])
    }

    private func enqueue(_ waiters: [Waiter]) {
        var refusal: StoreError?
        var startWriters = false
        wake.lock()
        state.withLock { state in
            if state.shutDown {
                refusal = StoreError(.shutDown, "the publish batcher is shut down")
            } else if state.queue.count + waiters.count > maxQueued {
                refusal = StoreError(.busy, "too many publishes waiting for a commit")
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
                thread.name = "clarion-publish-\(index)"
                thread.start()
            }
        }
    }

    /// Batches committed so far.
    public var batchesWritten: Int { state.withLock { $0.batches } }

    /// Refuses new publishes, lets the writers finish what is queued, and waits for them to stop.
    public func shutdown() {
        wake.lock()
        state.withLock { $0.shutDown = true }
        wake.broadcast()
        wake.unlock()
        while state.withLock({ $0.running }) > 0 { usleep(1_000) }
    }

    /// Each writer owns its session (opened on first use, reopened after a loss): a batch is written from this
    /// thread, with no hand-off to a pool thread and back per batch.
    private func writerLoop() {
        var connection: PGConnection?
        let windowMicros = UInt32(max(0, window.components.seconds * 1_000_000 + window.components.attoseconds / 1_000_000_000_000))
        while true {
            // Wait for work.
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
            // The batch window: let concurrent publishes join unless the batch is already full.
            if windowMicros > 0, state.withLock({ $0.queue.count }) < maxBatch { usleep(windowMicros) }
            let batch = state.withLock { state -> [Waiter] in
                let count = min(maxBatch, state.queue.count)
                let taken = Array(state.queue.prefix(count))
                state.queue.removeFirst(count)
                return taken
            }
            guard !batch.isEmpty else { continue }
            let messages = batch.map(\.message)
            let writeStart = ContinuousClock.now
            let results: [Result<MessageID, StoreError>]
            do throws(StoreError) {
                if connection == nil || connection?.isHealthy == false {
                    connection = nil
                    connection = try PGConnection(conninfo: pool.conninfo, applicationName: "clarion-publish")
                }
                results = MessageRepository.write(messages, on: connection!)
                if connection?.isHealthy == false { connection = nil }
            } catch {
                results = messages.map { _ in .failure(error) }
            }
            if let health = pool.health {
                // A batch whose messages all failed for an outage (a full disk fails them alike) reports it once.
                if let failure = results.lazy.compactMap({ if case .failure(let e) = $0, e.isOutage { e } else { nil } }).first {
                    health.failed(failure)
                } else if results.contains(where: { if case .success = $0 { true } else { false } }) {
                    health.succeeded()
                }
            }
            state.withLock { $0.batches += 1 }
            onBatch?(batch.count, writeStart.duration(to: .now))
            for (waiter, result) in zip(batch, results) { waiter.completion(result) }
        }
        state.withLock { $0.running -= 1 }
    }
}

/// Collects one result per index from the writer threads and hands the array over once the last one arrives.
private final class ResultCollector: Sendable {
    private struct State {
        var results: [Result<MessageID, StoreError>?]
        var remaining: Int
    }

    private let state: Mutex<State>
    private let done: @Sendable ([Result<MessageID, StoreError>]) -> Void

    init(count: Int, done: @escaping @Sendable ([Result<MessageID, StoreError>]) -> Void) {
        state = Mutex(State(results: Array(repeating: nil, count: count), remaining: count))
        self.done = done
    }

    func set(_ index: Int, _ result: Result<MessageID, StoreError>) {
        let finished = state.withLock { state -> [Result<MessageID, StoreError>]? in
            state.results[index] = result
            state.remaining -= 1
            return state.remaining == 0 ? state.results.map { $0! } : nil
        }
        if let finished { done(finished) }
    }
}
