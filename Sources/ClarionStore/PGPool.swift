import Foundation
import Synchronization

/// A fixed set of PostgreSQL connections, each owned by a thread of its own.
///
/// libpq blocks, so callers never touch a `PGconn` from the Swift cooperative thread pool: they hand a
/// closure to the pool, a connection thread runs it, and an async caller awaits a continuation.
/// Connections open lazily and reopen after the server restarts: a command that fails with
/// `.connectionLost` drops its connection, and the next job on that thread connects again.
/// A database that is down answers `.unavailable` within the connect timeout, never a hang.
/// Every job's failure or success goes to `health`, when given (one log line per outage, not one per job).
public final class PGPool: Sendable {
    public let conninfo: String
    public let size: Int
    public let health: DatabaseHealth?

    /// A job moves from the enqueuing thread to exactly one worker thread, through the lock; the
    /// blocking form's closure is not `@Sendable`, hence the unchecked conformance.
    private struct Job: @unchecked Sendable {
        let run: (PGConnection?, StoreError?) -> Bool  // returns true when the connection must be dropped
    }

    private struct State {
        var jobs: [Job] = []
        var head = 0
        var shutDown = false
        var threadsRunning = 0
        /// Threads waiting for a job.
        var idle = 0
        /// Jobs that found no idle thread when queued, since start.
        var waits = 0
        /// Jobs running now.
        var busy = 0
    }

    /// What a metrics endpoint shows of the pool: connections (threads) busy and idle, jobs queued, and how many
    /// jobs had to wait for a connection since start.
    public struct Statistics: Sendable {
        public var size: Int
        public var busy: Int
        public var queued: Int
        public var waits: Int
    }

    public var statistics: Statistics {
        state.withLock { Statistics(size: size, busy: $0.busy, queued: $0.jobs.count - $0.head, waits: $0.waits) }
    }

    private let state = Mutex(State())
    private let condition = NSCondition()

    public init(conninfo: String, size: Int = 4, applicationName: String = "clarion", health: DatabaseHealth? = nil) {
        self.conninfo = conninfo
        self.size = max(1, size)
        self.health = health
        for index in 0..<self.size {
            let thread = Thread { [self] in self.workerLoop(applicationName: applicationName) }
            thread.name = "clarion-pg-\(index)"
            thread.start()
        }
        state.withLock { $0.threadsRunning = self.size }
    }

    /// Runs `body` with a connection on a pool thread.
    public func withConnection<T: Sendable>(
        _ body: @escaping @Sendable (PGConnection) throws(StoreError) -> T
    ) async throws(StoreError) -> T {
        let result: Result<T, StoreError> = await withCheckedContinuation { continuation in
            self.enqueue { connection, connectError in
                guard let connection else {
                    continuation.resume(returning: .failure(connectError!))
                    return false
                }
                do throws(StoreError) {
                    let value = try body(connection)
                    self.health?.succeeded()
                    continuation.resume(returning: .success(value))
                    return false
                } catch {
                    self.health?.failed(error)
                    continuation.resume(returning: .failure(error))
                    return error.code == .connectionLost || !connection.isHealthy
                }
            }
        }
        return try result.get()
    }

    /// Runs `body` in a transaction on a pool thread.
    public func transaction<T: Sendable>(
        _ body: @escaping @Sendable (PGConnection) throws(StoreError) -> T
    ) async throws(StoreError) -> T {
        try await withConnection { (connection) throws(StoreError) -> T in try connection.transaction(body) }
    }

    /// The blocking form, for threads that are not part of the cooperative pool (the HTTP server's
    /// event-loop threads, the command line). Never call it from async code.
    public func withConnectionBlocking<T>(
        _ body: @escaping (PGConnection) throws(StoreError) -> T
    ) throws(StoreError) -> T {
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var outcome: Result<T, StoreError>?
        enqueue { connection, connectError in
            defer { done.signal() }
            guard let connection else {
                outcome = .failure(connectError!)
                return false
            }
            do throws(StoreError) {
                outcome = .success(try body(connection))
                self.health?.succeeded()
                return false
            } catch {
                self.health?.failed(error)
                outcome = .failure(error)
                return error.code == .connectionLost || !connection.isHealthy
            }
        }
        done.wait()
        return try outcome!.get()
    }

    /// Stops the threads after the queued jobs ran; later calls fail with `.shutDown`.
    public func shutdown() {
        condition.lock()
        state.withLock { $0.shutDown = true }
        condition.broadcast()
        condition.unlock()
        while state.withLock({ $0.threadsRunning }) > 0 { usleep(1_000) }
    }

    private func enqueue(_ run: @escaping (PGConnection?, StoreError?) -> Bool) {
        condition.lock()
        let accepted = state.withLock { state -> Bool in
            guard !state.shutDown else { return false }
            if state.idle <= state.jobs.count - state.head { state.waits += 1 }
            state.jobs.append(Job(run: run))
            return true
        }
        condition.signal()
        condition.unlock()
        if !accepted { _ = run(nil, StoreError(.shutDown, "the database pool is shut down")) }
    }

    private func nextJob() -> Job? {
        condition.lock()
        defer { condition.unlock() }
        while true {
            let (job, stop) = state.withLock { state -> (Job?, Bool) in
                if state.head < state.jobs.count {
                    let job = state.jobs[state.head]
                    state.head += 1
                    state.busy += 1
                    if state.head > 1024, state.head * 2 > state.jobs.count {
                        state.jobs.removeFirst(state.head)
                        state.head = 0
                    }
                    return (job, false)
                }
                return (nil, state.shutDown)
            }
            if let job { return job }
            if stop { return nil }
            state.withLock { $0.idle += 1 }
            condition.wait()
            state.withLock { $0.idle -= 1 }
        }
    }

    private func workerLoop(applicationName: String) {
        var connection: PGConnection?
        while let job = nextJob() {
            if connection == nil || connection?.isHealthy == false {
                connection = nil
                do throws(StoreError) {
                    connection = try PGConnection(conninfo: conninfo, applicationName: applicationName)
                } catch {
                    health?.failed(error)
                    _ = job.run(nil, error)
                    state.withLock { $0.busy -= 1 }
                    continue
                }
            }
            if job.run(connection, nil) { connection = nil }
            state.withLock { $0.busy -= 1 }
        }
        connection = nil
        state.withLock { $0.threadsRunning -= 1 }
    }
}
