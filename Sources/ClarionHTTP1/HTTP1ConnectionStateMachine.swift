internal import ClarionTransport

/// The rules of one HTTP/1.1 server connection, without sockets or a clock: which state the connection is in, when a
/// request's deadline runs, when reading pauses, and when the connection closes. `HTTP1Connection` feeds it events
/// (bytes read, the peer's end of input, a head parsed, a body complete, an answer, the output written, a sweep) with
/// the time they happened, and carries out what it answers (read, pause, write, linger, close).
///
/// States: `idle` (between requests, or a head arriving) -> `body` (reading it) -> `awaiting` (the handler has the
/// request) -> back to `idle` once the response is written; a response that ends the connection goes to `lingering`
/// (output shut down, input read and dropped until the client closes or `lingerNanoseconds` pass), then `closed`.
/// A streaming route skips `body`: `idle` -> `streaming` (the handler runs while the body arrives into its
/// `RequestBodyStream`) -> `awaiting` once the body is complete (or failed: the connection then closes after the
/// answer); an answer given in `streaming` is sent at once and closes the connection. A response with a body stream
/// goes from `awaiting` to `sendingStream` (chunks written as the producer gives them) -> `idle` once it ends, or
/// `closed` when it fails.
struct HTTP1ConnectionStateMachine {
    enum State {
        case idle
        case body(RequestContext)
        case awaiting(RequestContext)
        case streaming(RequestContext, RequestBodyStream)
        case sendingStream(RequestContext, ResponseBodyStream, chunked: Bool)
        case lingering(until: NanoTime)
        case closed
    }

    /// What to do once a round of reads has been parsed.
    enum AfterRead: Equatable {
        case none
        case pauseReading
        case close
    }

    /// What to do once a full body stream was drained and what was buffered went into it.
    enum AfterDrain: Equatable {
        case none
        case resumeReading
        case close
    }

    /// What to do with an answer the handler gave.
    enum Answer {
        /// Send it. `failing` is a streaming body that will not be read to its end (the handler answered first).
        case respond(failing: RequestBodyStream?)
        /// The request is no longer the one waiting (the connection closed or moved on): drop it.
        case stale
    }

    /// What to do once all output is written.
    enum AfterOutput: Equatable {
        /// A streamed response: pull its next chunk (on a later turn of the loop).
        case pullChunk
        /// The connection ends: linger.
        case linger
        /// Parse what is buffered, and read again.
        case proceed
    }

    enum Linger: Equatable {
        case close
        /// Shut the output down and read (dropping it) until the client closes or the time passes; `resumeReading`
        /// when reads were paused.
        case linger(resumeReading: Bool)
    }

    enum Sweep {
        case none
        case close
        /// The head or body did not arrive in time (`timeOut` says how to answer).
        case timeOut
        /// A streaming body did not arrive in time: its reader is told, and the connection closes after the answer.
        case failStream(RequestContext, RequestBodyStream)
    }

    enum TimeOut {
        case close
        /// Answer 408 to the request whose body did not arrive, then close.
        case answerBody(RequestContext)
        /// Answer 408 to a head that did not arrive, then close.
        case refuseHead
    }

    /// How long a closing connection reads and drops what the client still sends.
    static let lingerNanoseconds: UInt64 = 2_000_000_000

    let deadlines: RequestDeadlines
    private(set) var state = State.idle
    /// Under TLS, until the handshake completes.
    private(set) var handshaking: Bool
    /// In `idle` with part of a head (or a handshake) buffered: when the head must be complete. In `body` and
    /// `streaming`: when the body must be. Nil otherwise. Unlike `lastActive`, arriving bytes do not move it.
    private(set) var requestDeadline: NanoTime?
    /// When bytes last moved either way: the idle timeout counts from it.
    private(set) var lastActive: NanoTime
    /// The response being written ends the connection.
    private(set) var closeWhenWritten = false
    /// The client ended its input (or the TLS session ended).
    private(set) var peerClosed = false
    private(set) var readPaused = false
    /// In `streaming`: the body stream is full; the socket is not read until its reader drains it.
    private(set) var streamPaused = false

    init(deadlines: RequestDeadlines, tls: Bool, now: NanoTime) {
        self.deadlines = deadlines
        handshaking = tls
        lastActive = now
    }

    var isLingering: Bool {
        if case .lingering = state { return true }
        return false
    }

    /// A request is with its handler (for shutdown's 503).
    var isWaitingForHandler: Bool {
        switch state {
        case .awaiting, .streaming: true
        default: false
        }
    }

    // MARK: input

    /// Bytes arrived; false when they are to be dropped (lingering).
    mutating func bytesRead(now: NanoTime) -> Bool {
        lastActive = now
        return !isLingering
    }

    /// Bytes left for the client.
    mutating func bytesWritten(now: NanoTime) {
        lastActive = now
    }

    mutating func inputEnded() {
        peerClosed = true
    }

    /// A TLS handshake is under way: it gets the head's deadline from its first byte (every byte resets the idle
    /// timeout, so a client trickling its handshake would otherwise hold the connection for ever).
    mutating func handshakeProgressed(now: NanoTime) {
        if requestDeadline == nil { requestDeadline = deadlines.headDeadline(firstByteAt: now) }
    }

    mutating func handshakeCompleted() {
        handshaking = false
        requestDeadline = nil
    }

    /// After a round of reads was parsed as far as it goes: at the client's end of input, close when nothing is left
    /// to answer, else answer what was asked and close; otherwise pause reading when too much is buffered.
    mutating func readRoundEnded(outputEmpty: Bool, bufferedInput: Int, maxBufferedInput: Int) -> AfterRead {
        if peerClosed {
            switch state {
            case .idle where outputEmpty, .body:
                return .close  // nothing left to answer, or a request cut off
            case .streaming where !streamPaused:
                return .close  // the body was cut off: its stream fails, the handler applies nothing
            case .streaming:
                return .pauseReading  // input still buffered for the stream; `streamDrained` decides
            case .lingering, .closed:
                return .close
            default:
                // Answer what was asked, then close: no more reads (the socket stays readable at EOF for ever).
                closeWhenWritten = true
                return .pauseReading
            }
        }
        return bufferedInput > maxBufferedInput ? .pauseReading : .none
    }

    /// True when reads were on (the connection then stops asking for them).
    mutating func pauseReading() -> Bool {
        guard !readPaused else { return false }
        readPaused = true
        return true
    }

    /// True when reads were paused and may resume (never after the client's end of input).
    mutating func resumeReading() -> Bool {
        guard readPaused, !peerClosed else { return false }
        readPaused = false
        return true
    }

    // MARK: requests

    /// Part of a head is buffered: its deadline runs from the first byte.
    mutating func headIncomplete(now: NanoTime) {
        if requestDeadline == nil { requestDeadline = deadlines.headDeadline(firstByteAt: now) }
    }

    mutating func headComplete() {
        requestDeadline = nil
    }

    /// A body of `expectedBytes` (the route's limit when chunked) follows the head; `buffered`: it is read into the
    /// request before the handler runs (else it streams to the handler).
    mutating func bodyExpected(for context: RequestContext, expectedBytes: Int, buffered: Bool, now: NanoTime) {
        requestDeadline = deadlines.bodyDeadline(headEndedAt: now, expectedBytes: expectedBytes)
        if buffered { state = .body(context) }
    }

    /// The handler has the request (its body, if any, is complete).
    mutating func handlerStarted(_ context: RequestContext) {
        state = .awaiting(context)
    }

    /// The handler has the request while its body still arrives into `stream`.
    mutating func handlerStartedStreaming(_ context: RequestContext, _ stream: RequestBodyStream) {
        state = .streaming(context, stream)
    }

    /// The body stream is full: stop reading until it drains.
    mutating func streamFull() {
        streamPaused = true
    }

    /// The streamed body is complete: the request waits for its answer.
    mutating func streamComplete(_ context: RequestContext) {
        requestDeadline = nil
        state = .awaiting(context)
    }

    /// The streamed body will not arrive whole: the connection closes once the handler has answered.
    mutating func streamFailed(_ context: RequestContext) {
        requestDeadline = nil
        state = .awaiting(context)
        closeWhenWritten = true
    }

    /// The reader drained a full body stream; true when reading may go on (the connection then parses what is
    /// buffered and calls `afterStreamDrained`).
    mutating func streamDrained() -> Bool {
        guard case .streaming = state, streamPaused else { return false }
        streamPaused = false
        return true
    }

    /// After a drained stream took what was buffered: close when the client has ended and the body is still not
    /// complete, read again when the stream has room.
    func afterStreamDrained() -> AfterDrain {
        guard case .streaming = state, !streamPaused else { return .none }
        return peerClosed ? .close : .resumeReading
    }

    /// The handler answered `context`.
    mutating func answered(_ context: RequestContext) -> Answer {
        var failing: RequestBodyStream?
        if case .streaming(let current, let stream) = state, current === context {
            // Answered before the body ended (a refusal): the rest of the body is not read, so the connection closes.
            failing = stream
            state = .awaiting(context)
            closeWhenWritten = true
        }
        guard case .awaiting(let current) = state, current === context else { return .stale }
        return .respond(failing: failing)
    }

    // MARK: responses

    /// A response to `context` is being written: true when the connection closes after it (asked by the caller,
    /// the client, shutdown's draining, the client's end of input, an earlier rule, or a streamed body that only the
    /// connection's end can delimit). `streamed` is the response's body stream, with its framing.
    mutating func responseStarted(to context: RequestContext, close: Bool, draining: Bool,
                                  streamed: (ResponseBodyStream, chunked: Bool)?, now: NanoTime) -> Bool {
        var closing = close || !context.keepAlive || draining || peerClosed || closeWhenWritten
        if let (stream, chunked) = streamed {
            closing = closing || !chunked
            state = .sendingStream(context, stream, chunked: chunked)
        } else {
            state = .idle
        }
        requestDeadline = nil
        closeWhenWritten = closing
        lastActive = now
        return closing
    }

    /// A streamed response's body ended: the connection is between requests again.
    mutating func streamedResponseEnded() {
        state = .idle
    }

    /// All output is written.
    func outputWritten() -> AfterOutput {
        if case .sendingStream = state { return .pullChunk }
        return closeWhenWritten ? .linger : .proceed
    }

    // MARK: closing

    mutating func startLingering(now: NanoTime) -> Linger {
        if peerClosed { return .close }
        state = .lingering(until: now &+ Self.lingerNanoseconds)
        let resume = readPaused
        readPaused = false
        return .linger(resumeReading: resume)
    }

    /// The connection closed: the state it was in (a request still open there is not completed).
    mutating func closed() -> State {
        defer { state = .closed }
        return state
    }

    /// The periodic sweep: a request whose head or body is past its deadline (or that went silent midway past the
    /// idle timeout) is timed out, a connection idle or not taking its response past the idle timeout closes, and so
    /// does one lingering past its time. A request waiting for its handler is never timed out.
    func sweep(now: NanoTime) -> Sweep {
        switch state {
        case .idle, .body:
            if let deadline = requestDeadline, now > deadline { return .timeOut }
            if now &- lastActive > deadlines.idle { return requestDeadline == nil ? .close : .timeOut }
            return .none
        case .streaming(let context, let stream):
            // A body held back by its reader (`streamPaused`) is not the client's silence.
            let silent = !streamPaused && now &- lastActive > deadlines.idle
            if let deadline = requestDeadline, now > deadline || silent { return .failStream(context, stream) }
            return .none
        case .sendingStream:
            return now &- lastActive > deadlines.idle ? .close : .none  // the client stopped reading
        case .lingering(let until):
            return now > until ? .close : .none
        case .awaiting, .closed:
            return .none
        }
    }

    /// How to end a request that did not arrive in time: 408 where a response can still be written (then close,
    /// lingering, so the client reads the 408 rather than a reset). `onlyBlankLines`: the buffered input is only
    /// CR/LF (some clients send one after a POST body): nothing was asked, so the connection just closes.
    func timeOut(outputEmpty: Bool, onlyBlankLines: Bool) -> TimeOut {
        guard outputEmpty else { return .close }
        switch state {
        case .body(let context): return .answerBody(context)
        case .idle: return onlyBlankLines ? .close : .refuseHead
        case .awaiting, .streaming, .sendingStream, .lingering, .closed: return .close
        }
    }
}
