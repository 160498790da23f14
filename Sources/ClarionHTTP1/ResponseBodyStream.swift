import Foundation

/// A response body written while it is sent (`HTTPResponse.bodyStream`): an export of any size goes out with
/// `Transfer-Encoding: chunked` and is never held whole in memory.
///
/// The producer writes from a thread that may block (a `PGPool` thread reading a `COPY ... TO STDOUT`): `write`
/// blocks while more than `highWater` bytes wait for the socket. The connection takes what is buffered each time its
/// output has gone out, and is woken (on its loop) when bytes arrive while it waits.
///
/// States: `open` -> `finished` (the producer is done: the connection ends the chunked body) or `failed` (the producer
/// could not finish: the connection closes without the last chunk, so the client sees a truncated body, never a
/// short one that looks whole) or `cancelled` (the client went away: `write` answers false from then on, so the
/// producer stops at once).
public final class ResponseBodyStream: @unchecked Sendable {
    /// Bytes buffered before `write` blocks.
    public static let highWater = 1 << 20

    enum Take {
        case bytes([UInt8])
        /// Nothing buffered yet: `wake` is called once something is.
        case empty
        case finished
        case failed
    }

    private let condition = NSCondition()
    // Guarded by `condition`.
    private var buffer: [UInt8] = []
    private var finished = false
    private var failed = false
    private var cancelled = false
    private var wake: (@Sendable () -> Void)?

    public init() {}

    /// Appends bytes; blocks while the buffer is full. False once the client has gone (stop producing).
    @discardableResult
    public func write(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        condition.lock()
        while buffer.count > Self.highWater && !cancelled { condition.wait() }
        guard !cancelled, !finished, !failed else {
            condition.unlock()
            return false
        }
        buffer.append(contentsOf: bytes)
        let waiting = wake
        wake = nil
        condition.unlock()
        waiting?()
        return true
    }

    @discardableResult
    public func write(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBufferPointer { write($0) }
    }

    /// The body is complete.
    public func finish() { end(failed: false) }

    /// The body cannot be completed (the producer's error is its own to log): the connection closes mid-body.
    public func fail() { end(failed: true) }

    private func end(failed: Bool) {
        condition.lock()
        if !finished && !self.failed {
            if failed { self.failed = true } else { finished = true }
        }
        let waiting = wake
        wake = nil
        condition.unlock()
        waiting?()
    }

    /// Whether the client went away.
    public var isCancelled: Bool {
        condition.lock()
        defer { condition.unlock() }
        return cancelled
    }

    /// The client went away, or the response was never sent: the producer's next `write` answers false.
    func cancel() {
        condition.lock()
        cancelled = true
        buffer = []
        wake = nil
        condition.broadcast()
        condition.unlock()
    }

    /// What the connection sends next.
    func take(wake: @escaping @Sendable () -> Void) -> Take {
        condition.lock()
        defer { condition.unlock() }
        if !buffer.isEmpty {
            let bytes = buffer
            buffer = []
            condition.broadcast()
            return .bytes(bytes)
        }
        if finished { return .finished }
        if failed { return .failed }
        self.wake = wake
        return .empty
    }
}
