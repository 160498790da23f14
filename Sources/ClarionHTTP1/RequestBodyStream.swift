import Foundation

/// The body of a request to a streaming route (`RouteHandler.streaming`), handed to the handler as it arrives, so a
/// bulk upload of any size is never held whole in memory.
///
/// The connection (on its loop thread) appends what it decodes; the handler reads with `read()`, which blocks, so it
/// runs where blocking is allowed: on a `PGPool` thread inside `withConnection`, feeding a COPY. Backpressure: past
/// `highWater` buffered bytes `append` answers false and the connection stops reading the socket; once the reader has
/// brought the buffer under half of it, `onDrained` (installed by the connection) hands reading back to the loop.
///
/// States: `open` -> `finished` (the whole body arrived: `read` returns what is left, then nil) or `failed` (the
/// client went away or broke the body's framing, the body passed the route's limit or its deadline, or the handler
/// answered before reading it all: `read` throws at once, dropping what was buffered, so a handler never applies
/// part of an interrupted upload). Both end states are final.
public final class RequestBodyStream: @unchecked Sendable {
    /// Why a body did not arrive whole.
    public struct Failure: Error, Sendable, Equatable {
        public enum Code: String, Sendable {
            /// The connection closed (or reset) before the body's end.
            case interrupted
            /// The body passed its deadline, or the client went silent past the idle timeout.
            case timedOut
            /// The body passed the route's limit (`limit` bytes).
            case tooLarge
            /// The chunked framing was malformed.
            case invalid
            /// The handler answered before reading the whole body.
            case abandoned
        }

        public let code: Code
        public let message: String
        /// The route's body limit, for `tooLarge`.
        public let limit: Int

        public init(_ code: Code, _ message: String, limit: Int = 0) {
            self.code = code
            self.message = message
            self.limit = limit
        }

        /// The HTTP error a handler answers with (413 for `tooLarge`, 408 for `timedOut`, else 400).
        public var httpError: HTTPError {
            switch code {
            case .tooLarge: .payloadTooLarge(limit: limit)
            case .timedOut: .requestTimeout(message)
            case .interrupted, .invalid, .abandoned: .badRequest(message)
            }
        }
    }

    /// Bytes buffered before the connection stops reading.
    public static let highWater = 4 << 20

    private let condition = NSCondition()
    // Guarded by `condition`.
    private var chunks: [[UInt8]] = []
    private var head = 0
    private var buffered = 0
    private var finished = false
    private var failure: Failure?
    private var drainWanted = false
    private var received = 0
    /// Hands reading back to the connection's loop; called outside the lock.
    var onDrained: (@Sendable () -> Void)?

    init() {}

    /// A stream already complete with `body` (a test, or a route called with a body in hand).
    public convenience init(complete body: [UInt8]) {
        self.init()
        _ = append(body)
        finish()
    }

    /// Bytes received so far.
    public var receivedBytes: Int {
        condition.lock()
        defer { condition.unlock() }
        return received
    }

    /// Adds decoded body bytes; false when the buffer is past `highWater` (stop reading until `onDrained`).
    func append(_ bytes: [UInt8]) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard failure == nil, !finished else { return true }
        if !bytes.isEmpty {
            chunks.append(bytes)
            buffered += bytes.count
            received += bytes.count
            condition.signal()
        }
        if buffered > Self.highWater {
            drainWanted = true
            return false
        }
        return true
    }

    /// The whole body arrived.
    func finish() {
        condition.lock()
        if failure == nil { finished = true }
        condition.signal()
        condition.unlock()
    }

    /// The body will not arrive whole. The first failure stays; a finished stream is not failed by a later one
    /// except `abandoned` (the handler stopped reading: nothing is lost, the reader is gone).
    func fail(_ failure: Failure) {
        condition.lock()
        if self.failure == nil && (!finished || failure.code == .abandoned) {
            self.failure = failure
            chunks = []
            head = 0
            buffered = 0
        }
        condition.signal()
        condition.unlock()
    }

    /// The next bytes of the body (at least one), nil at its end; throws when it will not arrive whole. Blocks until
    /// bytes arrive: call it only from a thread that may block (a `PGPool` thread), never from the cooperative pool.
    public func read() throws(Failure) -> [UInt8]? {
        condition.lock()
        while head == chunks.count && !finished && failure == nil { condition.wait() }
        if let failure {
            condition.unlock()
            throw failure
        }
        guard head < chunks.count else {
            condition.unlock()
            return nil
        }
        let chunk = chunks[head]
        chunks[head] = []
        head += 1
        if head == chunks.count || head > 1024 {
            chunks.removeSubrange(0..<head)
            head = 0
        }
        buffered -= chunk.count
        var wake: (@Sendable () -> Void)?
        if drainWanted && buffered <= Self.highWater / 2 {
            drainWanted = false
            wake = onDrained
        }
        condition.unlock()
        wake?()
        return chunk
    }
}
