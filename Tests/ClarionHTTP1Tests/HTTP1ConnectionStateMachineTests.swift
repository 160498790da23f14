import Testing
@testable import ClarionHTTP1

/// The connection's rules without sockets or a clock: times are nanoseconds the test chooses.
/// Runs one event inside `#expect` (the macro cannot call a mutating method on its own).
func step<T>(_ event: () -> T) -> T { event() }

@Suite struct HTTP1ConnectionStateMachineTests {
    static let second: UInt64 = 1_000_000_000
    /// Idle 60 s, head 20 s, body 30 s + 1 s per 16 KiB.
    static let deadlines = RequestDeadlines(idle: .seconds(60), head: .seconds(20), body: .seconds(30),
                                            bodyMinimumRate: 16 * 1024)

    static func machine(tls: Bool = false, at now: UInt64 = 1_000 * second) -> HTTP1ConnectionStateMachine {
        HTTP1ConnectionStateMachine(deadlines: deadlines, tls: tls, now: now)
    }

    static func request(keepAlive: Bool = true, minorVersion: Int = 1, contentLength: Int? = nil) -> RequestContext {
        let head = RequestHead(method: "POST", target: "/v1/x", minorVersion: minorVersion, headers: HTTPHeaders(),
                               contentLength: contentLength, chunked: false, keepAlive: keepAlive,
                               expectsContinue: false)
        return RequestContext(head: head, remoteAddress: "192.0.2.1")
    }

    static func isIdle(_ m: HTTP1ConnectionStateMachine) -> Bool {
        if case .idle = m.state { return true }
        return false
    }

    @Test("a keep-alive request answered goes back to idle and keeps the connection; reads go on")
    func keepAlive() {
        var m = Self.machine()
        let context = Self.request()
        m.handlerStarted(context)
        guard case .respond(let failing) = m.answered(context) else { Issue.record("answer refused"); return }
        #expect(failing == nil)
        let closing = m.responseStarted(to: context, close: false, draining: false, streamed: nil, now: 1_001 * Self.second)
        #expect(!closing)
        #expect(Self.isIdle(m))
        #expect(m.outputWritten() == .proceed)
        #expect(m.lastActive == 1_001 * Self.second)
    }

    @Test("the connection closes after a response when the client, the caller, draining or a chunkless stream says so")
    func closingRules() {
        func closes(keepAlive: Bool = true, minorVersion: Int = 1, close: Bool = false, draining: Bool = false,
                    streamed: Bool = false) -> Bool {
            var m = Self.machine()
            let context = Self.request(keepAlive: keepAlive, minorVersion: minorVersion)
            m.handlerStarted(context)
            let stream = streamed ? (ResponseBodyStream(), chunked: minorVersion > 0) : nil
            let closing = m.responseStarted(to: context, close: close, draining: draining, streamed: stream, now: 0)
            #expect(m.closeWhenWritten == closing)
            return closing
        }
        #expect(!closes())
        #expect(closes(keepAlive: false))  // Connection: close
        #expect(closes(close: true))  // a refusal that ends the connection
        #expect(closes(draining: true))  // shutdown
        #expect(!closes(streamed: true))  // chunked framing keeps the connection
        #expect(closes(minorVersion: 0, streamed: true))  // HTTP/1.0: the body ends where the connection does
    }

    @Test("a streamed response pulls chunks until its end, then the connection is between requests")
    func streamedResponse() {
        var m = Self.machine()
        let context = Self.request()
        m.handlerStarted(context)
        _ = m.responseStarted(to: context, close: false, draining: false, streamed: (ResponseBodyStream(), chunked: true),
                              now: 0)
        #expect(m.outputWritten() == .pullChunk)
        m.streamedResponseEnded()
        #expect(m.outputWritten() == .proceed)
    }

    @Test("the head's deadline runs from its first byte and is not moved by later bytes; a complete head clears it")
    func headDeadline() {
        var m = Self.machine()
        m.headIncomplete(now: 1_000 * Self.second)
        #expect(m.requestDeadline == 1_020 * Self.second)
        #expect(step { m.bytesRead(now: 1_010 * Self.second) })
        m.headIncomplete(now: 1_010 * Self.second)
        #expect(m.requestDeadline == 1_020 * Self.second)
        if case .none = m.sweep(now: 1_019 * Self.second) {} else { Issue.record("timed out early") }
        if case .timeOut = m.sweep(now: 1_020 * Self.second + 1) {} else { Issue.record("not timed out") }
        m.headComplete()
        #expect(m.requestDeadline == nil)
    }

    @Test("a TLS handshake trickled byte by byte gets the head's deadline from its first byte")
    func handshakeDeadline() {
        var m = Self.machine(tls: true)
        #expect(m.handshaking)
        m.handshakeProgressed(now: 1_000 * Self.second)
        m.handshakeProgressed(now: 1_015 * Self.second)
        #expect(m.requestDeadline == 1_020 * Self.second)
        if case .timeOut = m.sweep(now: 1_021 * Self.second) {} else { Issue.record("handshake not timed out") }
        m.handshakeCompleted()
        #expect(!m.handshaking)
        #expect(m.requestDeadline == nil)
    }

    @Test("a body's deadline grows with its size: 30 s + 1 s per 16 KiB; past it the request is answered 408")
    func bodyDeadline() {
        var m = Self.machine()
        let context = Self.request(contentLength: 1 << 20)
        m.bodyExpected(for: context, expectedBytes: 1 << 20, buffered: true, now: 1_000 * Self.second)
        #expect(m.requestDeadline == 1_094 * Self.second)  // 30 + 64
        if case .none = m.sweep(now: 1_050 * Self.second) {} else { Issue.record("timed out early") }
        if case .timeOut = m.sweep(now: 1_095 * Self.second) {} else { Issue.record("not timed out") }
        guard case .answerBody(let timedOut) = m.timeOut(outputEmpty: true, onlyBlankLines: false) else {
            Issue.record("not answered 408")
            return
        }
        #expect(timedOut === context)
        if case .close = m.timeOut(outputEmpty: false, onlyBlankLines: false) {} else {
            Issue.record("a 408 cannot follow unwritten output: close")
        }
    }

    @Test("idle: a connection with nothing asked closes after the idle timeout; blank lines alone are not a request")
    func idleTimeout() {
        let m = Self.machine(at: 0)
        if case .none = m.sweep(now: 60 * Self.second) {} else { Issue.record("closed at the limit") }
        if case .close = m.sweep(now: 60 * Self.second + 1) {} else { Issue.record("idle connection kept") }
        if case .close = m.timeOut(outputEmpty: true, onlyBlankLines: true) {} else { Issue.record("CRLF answered 408") }
        if case .refuseHead = m.timeOut(outputEmpty: true, onlyBlankLines: false) {} else {
            Issue.record("a partial head not answered 408")
        }
    }

    @Test("a request with its handler is never timed out, however long it takes")
    func awaitingNeverTimesOut() {
        var m = Self.machine(at: 0)
        m.bodyExpected(for: Self.request(contentLength: 10), expectedBytes: 10, buffered: true, now: 0)
        m.handlerStarted(Self.request())
        if case .none = m.sweep(now: 3_600 * Self.second) {} else { Issue.record("awaiting request swept") }
    }

    @Test("a streaming body held back by its full reader is not the client's silence; a silent client is")
    func streamingSilence() {
        var m = Self.machine(at: 0)
        // 10 MiB: its deadline (30 s + 640 s) is far; only silence can end it here.
        let context = Self.request(contentLength: 10 << 20)
        let stream = RequestBodyStream()
        m.bodyExpected(for: context, expectedBytes: 10 << 20, buffered: false, now: 0)
        m.handlerStartedStreaming(context, stream)
        m.streamFull()
        if case .none = m.sweep(now: 61 * Self.second) {} else { Issue.record("paused stream taken for silence") }
        #expect(step { m.streamDrained() })
        #expect(m.afterStreamDrained() == .resumeReading)
        if case .failStream(let failed, _) = m.sweep(now: 61 * Self.second) {
            #expect(failed === context)
        } else {
            Issue.record("silent client kept")
        }
        m.streamFailed(context)
        #expect(m.closeWhenWritten)
        #expect(m.requestDeadline == nil)
    }

    @Test("an answer before the end of a streaming body fails the stream and closes the connection after it")
    func answerBeforeBodyEnd() {
        var m = Self.machine()
        let context = Self.request(contentLength: 100)
        let stream = RequestBodyStream()
        m.handlerStartedStreaming(context, stream)
        guard case .respond(let failing) = m.answered(context) else { Issue.record("answer refused"); return }
        #expect(failing === stream)
        #expect(m.closeWhenWritten)
        #expect(step { m.responseStarted(to: context, close: false, draining: false, streamed: nil, now: 0) })
        #expect(m.outputWritten() == .linger)
    }

    @Test("an answer for a request that is no longer waiting is dropped")
    func staleAnswer() {
        var m = Self.machine()
        let first = Self.request()
        m.handlerStarted(first)
        _ = m.responseStarted(to: first, close: false, draining: false, streamed: nil, now: 0)
        if case .stale = m.answered(first) {} else { Issue.record("second answer to one request accepted") }
        m.handlerStarted(Self.request())
        if case .stale = m.answered(first) {} else { Issue.record("answer to another request accepted") }
        _ = m.closed()
        if case .stale = m.answered(first) {} else { Issue.record("answer after close accepted") }
    }

    @Test("at the client's end of input: close when nothing is left to answer, else answer and then close")
    func endOfInput() {
        var idle = Self.machine()
        idle.inputEnded()
        #expect(step { idle.readRoundEnded(outputEmpty: true, bufferedInput: 0, maxBufferedInput: 1024) } == .close)

        var writing = Self.machine()
        writing.inputEnded()
        #expect(step { writing.readRoundEnded(outputEmpty: false, bufferedInput: 0, maxBufferedInput: 1024) } == .pauseReading)
        #expect(writing.closeWhenWritten)

        var cutOffBody = Self.machine()
        cutOffBody.bodyExpected(for: Self.request(contentLength: 10), expectedBytes: 10, buffered: true, now: 0)
        cutOffBody.inputEnded()
        #expect(step { cutOffBody.readRoundEnded(outputEmpty: true, bufferedInput: 0, maxBufferedInput: 1024) } == .close)

        var awaiting = Self.machine()
        awaiting.handlerStarted(Self.request())
        awaiting.inputEnded()
        #expect(step { awaiting.readRoundEnded(outputEmpty: true, bufferedInput: 0, maxBufferedInput: 1024) } == .pauseReading)
        #expect(awaiting.closeWhenWritten)
        #expect(step { awaiting.pauseReading() })
        #expect(!step { awaiting.resumeReading() })  // never read again after the end of input
    }

    @Test("reading pauses when too much is buffered, and resumes, but never after the client's end of input")
    func backpressure() {
        var m = Self.machine()
        #expect(step { m.readRoundEnded(outputEmpty: true, bufferedInput: 2048, maxBufferedInput: 1024) } == .pauseReading)
        #expect(step { m.pauseReading() })
        #expect(!step { m.pauseReading() })  // already paused
        #expect(step { m.resumeReading() })
        #expect(step { m.pauseReading() })
        m.inputEnded()
        #expect(!step { m.resumeReading() })
    }

    @Test("lingering: output shut down, reads resumed and dropped, closed once its time passes or the client ends")
    func lingering() {
        var m = Self.machine(at: 0)
        #expect(step { m.pauseReading() })
        #expect(step { m.startLingering(now: 10 * Self.second) } == .linger(resumeReading: true))
        #expect(m.isLingering)
        #expect(!step { m.bytesRead(now: 11 * Self.second) })  // dropped
        if case .none = m.sweep(now: 12 * Self.second) {} else { Issue.record("closed before its time") }
        if case .close = m.sweep(now: 12 * Self.second + 1) {} else { Issue.record("lingered too long") }

        var ended = Self.machine()
        ended.inputEnded()
        #expect(step { ended.startLingering(now: 0) } == .close)
    }

    @Test("a streamed response the client stops reading closes after the idle timeout")
    func stalledStreamedResponse() {
        var m = Self.machine(at: 0)
        let context = Self.request()
        m.handlerStarted(context)
        _ = m.responseStarted(to: context, close: false, draining: false, streamed: (ResponseBodyStream(), chunked: true),
                              now: 0)
        if case .none = m.sweep(now: 59 * Self.second) {} else { Issue.record("closed early") }
        if case .close = m.sweep(now: 61 * Self.second) {} else { Issue.record("stalled response kept") }
    }

    @Test("closing reports the state it ended, so an open request is logged as not completed")
    func closedReportsState() {
        var m = Self.machine()
        let context = Self.request()
        m.handlerStarted(context)
        guard case .awaiting(let open) = m.closed() else { Issue.record("state lost"); return }
        #expect(open === context)
        if case .closed = m.state {} else { Issue.record("not closed") }
    }
}
