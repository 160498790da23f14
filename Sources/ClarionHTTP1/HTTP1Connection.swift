#if canImport(Glibc)
import Glibc
#endif
internal import ClarionTransport

/// One HTTP/1.1 connection on an event loop: reads and parses requests, runs their handlers one at a time (a
/// pipelined request waits in the buffer until the response before it is written), writes responses, keeps the
/// connection alive, and closes it on `Connection: close`, a protocol error, the idle timeout, a request past its
/// deadline (`RequestDeadlines`: answered 408 first) or shutdown.
///
/// Its rules (states, deadlines, when reading pauses, when it closes) are `HTTP1ConnectionStateMachine`'s; this class
/// carries out what the machine decides: the syscalls, the buffers, TLS, and calling the handlers.
///
/// Under TLS (`tls`), the handshake comes first (nothing is parsed before it completes); the bytes read are
/// ciphertext lent to the session, the plaintext it yields is the input, and the output is encrypted into the
/// session's queue, which is what the socket writes. A handshake that fails (a plain-HTTP client, an unknown
/// protocol) closes the connection without an HTTP answer.
///
/// Confinement: everything runs on `loop`'s thread; `ResponseSlot` hands answers over through `loop.execute`. That
/// is why the class is `@unchecked Sendable`.
final class HTTP1Connection: EventLoopSelectable, @unchecked Sendable {
    let loop: EventLoop
    let core: ServerCore
    private var fd: Int32
    private let remoteAddress: String
    private let tls: TLSSession?
    private var machine: HTTP1ConnectionStateMachine
    /// Bytes read and not yet parsed start at `inputStart`.
    private var input: [UInt8] = []
    private var inputStart = 0
    private var output: [UInt8] = []
    private var outputSent = 0
    /// The request whose response is in `output`: logged as completed once the last byte is written.
    private var writing: RequestContext?
    private var wantsWritable = false
    /// The answer slot of the request in `awaiting`, for shutdown's 503.
    private var awaitedSlot: ResponseSlot?
    /// Re-entrancy guard: a handler may answer while `advance` is still calling it.
    private var advancing = false

    /// Unparsed input held while a request is being answered, at most (reading pauses beyond it).
    static let maxBufferedInput = 2 << 20
    init(loop: EventLoop, core: ServerCore, fd: Int32, remoteAddress: String, tls: TLSSession?) {
        self.loop = loop
        self.core = core
        self.fd = fd
        self.remoteAddress = remoteAddress
        self.tls = tls
        machine = HTTP1ConnectionStateMachine(deadlines: core.deadlines, tls: tls != nil, now: monotonicNow())
    }

    deinit {
        // Only reached open when the loop stopped under a live connection: do not leak the descriptor.
        if fd >= 0 { Glibc.close(fd) }
    }

    func register() {
        SocketIO.setNoDelay(fd)
        loop.register(fd: fd, handler: self, readable: true, writable: false)
    }

    // MARK: readiness

    func selectableReady(readable: Bool, writable: Bool, failed: Bool) {
        // EPOLLERR: the connection is broken (reset); nothing more can be read or written.
        if failed {
            close()
            return
        }
        if writable && wantsWritable { flushOutput() }
        guard readable, fd >= 0 else { return }
        // With reads paused only a hang-up is reported, and it stays reported (level-triggered): the peer is gone.
        if machine.readPaused {
            close()
            return
        }
        readAvailable()
    }

    private func readAvailable() {
        var rounds = 0
        reading: while fd >= 0 && rounds < 16 {
            rounds += 1
            switch SocketIO.read(fd, into: loop.readBuffer) {
            case .bytes(let count):
                guard machine.bytesRead(now: monotonicNow()) else { continue }  // lingering: dropped
                if let tls {
                    guard receiveCiphertext(count, tls) else { return }
                } else {
                    input.append(contentsOf: UnsafeRawBufferPointer(rebasing: loop.readBuffer[0..<count]))
                }
                if count < loop.readBuffer.count { break reading }
            case .wouldBlock:
                break reading
            case .eof:
                machine.inputEnded()
                break reading
            case .error:
                close()
                return
            }
        }
        if machine.isLingering {
            if machine.peerClosed { close() }
            return
        }
        advance()
        guard fd >= 0 else { return }
        switch machine.readRoundEnded(outputEmpty: output.isEmpty, bufferedInput: input.count - inputStart,
                                      maxBufferedInput: Self.maxBufferedInput) {
        case .none: break
        case .pauseReading: pauseReading()
        case .close: close()
        }
    }

    /// Lends `count` bytes of ciphertext to the TLS session: the handshake while it lasts, then the plaintext into
    /// `input`. False when the connection was closed (a failed handshake or a broken record).
    private func receiveCiphertext(_ count: Int, _ tls: TLSSession) -> Bool {
        let ok = tls.withCiphertext(loop.readBuffer.baseAddress!, count) { () -> Bool in
            if machine.handshaking {
                machine.handshakeProgressed(now: monotonicNow())
                switch tls.handshake() {
                case .inProgress: return true
                case .failed: return false
                case .done: machine.handshakeCompleted()
                }
            }
            while true {
                switch tls.read(into: loop.plaintextBuffer) {
                case .bytes(let n): input.append(contentsOf: UnsafeRawBufferPointer(rebasing: loop.plaintextBuffer[0..<n]))
                case .needMoreInput: return true
                case .closed:
                    machine.inputEnded()
                    return true
                case .failed: return false
                }
            }
        }
        guard ok else {
            writeCiphertext(tls)  // the alert, if OpenSSL wrote one
            close()
            return false
        }
        if !tls.ciphertextOut.isEmpty { flushOutput() }  // handshake records, or a session ticket
        return fd >= 0
    }

    /// Writes what the socket takes of the TLS session's records; false when the socket failed.
    @discardableResult
    private func writeCiphertext(_ tls: TLSSession) -> Bool {
        let queue = tls.ciphertextOut
        guard !queue.isEmpty, fd >= 0 else { return true }
        guard let written = SocketIO.write(fd, queue.readPointer, queue.readableBytes) else { return false }
        queue.consume(written)
        if written > 0 { machine.bytesWritten(now: monotonicNow()) }
        return true
    }

    private func pauseReading() {
        guard fd >= 0, machine.pauseReading() else { return }
        loop.setInterest(fd: fd, readable: false, writable: wantsWritable)
    }

    private func resumeReading() {
        guard fd >= 0, machine.resumeReading() else { return }
        loop.setInterest(fd: fd, readable: true, writable: wantsWritable)
    }

    // MARK: requests

    /// Parses and answers buffered requests, one at a time, until one waits for its handler or its body, the
    /// output backs up, or the input runs out.
    private func advance() {
        guard !advancing else { return }
        advancing = true
        defer { advancing = false }
        while fd >= 0 && output.isEmpty {
            switch machine.state {
            case .idle:
                guard inputStart < input.count else {
                    input.removeAll(keepingCapacity: input.capacity <= 64 * 1024)
                    inputStart = 0
                    return
                }
                let parsed = input.withUnsafeBytes { HTTP1Parser.parseHead(UnsafeRawBufferPointer(rebasing: $0[inputStart...])) }
                switch parsed {
                case .incomplete:
                    machine.headIncomplete(now: monotonicNow())
                    compactInput()
                    return
                case .invalid(let status, let message):
                    refuseMalformed(status: status, message: message)
                    return
                case .complete(let head, let consumed):
                    inputStart += consumed
                    machine.headComplete()
                    begin(head)
                }
            case .body(let context):
                guard readBody(context) else {
                    compactInput()
                    return
                }
            case .streaming(let context, let stream):
                guard !machine.streamPaused, feedStream(context, stream) else {
                    compactInput()
                    return
                }
            case .sendingStream:
                return
            case .awaiting(let context):
                // Answered while the handler was being called on this thread (or its responder was dropped then).
                guard let response = context.earlyResponse else { return }
                context.earlyResponse = nil
                respond(response, to: context)
            case .lingering, .closed:
                return
            }
        }
    }

    private func compactInput() {
        if inputStart == input.count {
            input.removeAll(keepingCapacity: input.capacity <= 64 * 1024)
            inputStart = 0
        } else if inputStart >= 16 * 1024 {
            input.removeSubrange(0..<inputStart)
            inputStart = 0
        }
    }

    private func begin(_ head: RequestHead) {
        core.inFlight.add(1, ordering: .relaxed)
        let context = RequestContext(head: head, remoteAddress: remoteAddress)
        let match = core.router.resolve(method: HTTPMethod(rawValue: context.method), rawPath: context.rawPath)
        context.match = match
        if core.refusing.isSet {
            respond(match.errorFormat.response(for: .shuttingDown, requestID: context.requestID), to: context, close: true)
            return
        }
        context.limit = match.maxBodyBytes(default: core.router.defaultMaxBodyBytes)
        if let length = head.contentLength, length > context.limit {
            // Refused before the body is read (and before `100 Continue`): the connection closes afterwards.
            respond(match.errorFormat.response(for: .payloadTooLarge(limit: context.limit), requestID: context.requestID),
                    to: context, close: true)
            return
        }
        guard head.chunked || (head.contentLength ?? 0) > 0 else {
            dispatch(context)
            return
        }
        if case .matched(let route, _) = match, case .streaming = route.handler {
            let stream = RequestBodyStream()
            let loop = self.loop
            stream.onDrained = { loop.execute { self.streamDrained() } }
            context.stream = stream
            machine.bodyExpected(for: context, expectedBytes: head.contentLength ?? context.limit, buffered: false,
                                 now: monotonicNow())
            if head.expectsContinue && inputStart == input.count {
                output.append(contentsOf: "HTTP/1.1 100 Continue\r\n\r\n".utf8)
                flushOutput()
            }
            dispatch(context)  // -> streaming
            return
        }
        if let length = head.contentLength { context.body.reserveCapacity(length) }
        machine.bodyExpected(for: context, expectedBytes: head.contentLength ?? context.limit, buffered: true,
                             now: monotonicNow())
        if head.expectsContinue && inputStart == input.count {
            output.append(contentsOf: "HTTP/1.1 100 Continue\r\n\r\n".utf8)
            flushOutput()
        }
    }

    /// Moves buffered body bytes into a streaming route's body stream; true once the body is complete (or failed)
    /// and the state moved on to `awaiting`. Stops early when the stream is full (`streamPaused`).
    private func feedStream(_ context: RequestContext, _ stream: RequestBodyStream) -> Bool {
        var chunk: [UInt8] = []
        var complete = false
        if var decoder = context.chunked {
            let outcome = input.withUnsafeBytes { bytes in
                decoder.decode(UnsafeRawBufferPointer(rebasing: bytes[inputStart...]), into: &chunk,
                               limit: context.limit - context.streamed)
            }
            context.chunked = decoder
            switch outcome {
            case .needMore(let consumed):
                inputStart += consumed
            case .done(let consumed):
                inputStart += consumed
                complete = true
            case .tooLarge:
                failStream(context, stream, .init(.tooLarge, "The request body is larger than \(context.limit) bytes.",
                                                  limit: context.limit))
                return true
            case .invalid(let message):
                failStream(context, stream, .init(.invalid, message))
                return true
            }
        } else {
            let length = context.contentLength ?? 0
            let take = min(length - context.streamed, input.count - inputStart)
            if take > 0 {
                chunk = Array(input[inputStart..<(inputStart + take)])
                inputStart += take
            }
            complete = context.streamed + take == length
        }
        context.streamed += chunk.count
        if !stream.append(chunk) {
            machine.streamFull()
            pauseReading()
        }
        guard complete else { return false }
        stream.finish()
        machine.streamComplete(context)
        return true
    }

    /// The body of a streaming request will not arrive whole: its reader is told, the rest of the input is dropped,
    /// and the connection closes once the handler has answered.
    private func failStream(_ context: RequestContext, _ stream: RequestBodyStream, _ failure: RequestBodyStream.Failure) {
        stream.fail(failure)
        machine.streamFailed(context)
        input = []
        inputStart = 0
        pauseReading()
    }

    /// The reader of a streaming body drained it: read again (on the loop).
    func streamDrained() {
        guard fd >= 0, machine.streamDrained() else { return }
        advance()
        guard fd >= 0 else { return }
        switch machine.afterStreamDrained() {
        case .none: break
        case .resumeReading: resumeReading()
        case .close: close()  // all that was sent is in, and the body is still not complete
        }
    }

    /// Moves buffered body bytes into the request; true once the body is complete and the request dispatched (or
    /// refused).
    private func readBody(_ context: RequestContext) -> Bool {
        if var decoder = context.chunked {
            let outcome = input.withUnsafeBytes { bytes in
                decoder.decode(UnsafeRawBufferPointer(rebasing: bytes[inputStart...]), into: &context.body,
                               limit: context.limit)
            }
            context.chunked = decoder
            switch outcome {
            case .needMore(let consumed):
                inputStart += consumed
                return false
            case .done(let consumed):
                inputStart += consumed
                dispatch(context)
                return true
            case .tooLarge:
                context.body = []
                respond(errorFormat(context).response(for: .payloadTooLarge(limit: context.limit), requestID: context.requestID),
                        to: context, close: true)
                return true
            case .invalid(let message):
                context.body = []
                respond(errorFormat(context).response(for: .badRequest(message), requestID: context.requestID),
                        to: context, close: true)
                return true
            }
        }
        let length = context.contentLength ?? 0
        let take = min(length - context.body.count, input.count - inputStart)
        if take > 0 {
            context.body.append(contentsOf: input[inputStart..<(inputStart + take)])
            inputStart += take
        }
        guard context.body.count == length else { return false }
        dispatch(context)
        return true
    }

    private func errorFormat(_ context: RequestContext) -> ErrorFormat {
        context.match?.errorFormat ?? core.router.errorFormat(forPath: "")
    }

    /// Runs the route's handler once the whole body is in.
    private func dispatch(_ context: RequestContext) {
        guard let match = context.match else {
            var response = errorFormat(context).response(for: .internalError, requestID: context.requestID)
            response.cause = "no route was matched before dispatch"
            respond(response, to: context)
            return
        }
        switch match {
        case .notFound(let format):
            respond(format.response(for: .notFound(path: context.rawPath), requestID: context.requestID), to: context)
        case .methodNotAllowed(let allowed, let format):
            respond(format.response(for: .methodNotAllowed(allowed: allowed), requestID: context.requestID), to: context)
        case .matched(let route, let parameters):
            let request = HTTPRequest(method: HTTPMethod(rawValue: context.method), rawPath: context.rawPath,
                                      rawQuery: context.rawQuery, headers: context.headers, body: context.body,
                                      remoteAddress: context.remoteAddress, requestID: context.requestID,
                                      pathParameters: parameters)
            context.body = []
            switch route.handler {
            case .synchronous(let handler):
                respond(handler(request), to: context)
            case .suspending(let handler):
                let responder = wait(for: context, errorFormat: route.errorFormat)
                handler(request, responder)
            case .streaming(let handler):
                let responder = wait(for: context, errorFormat: route.errorFormat)
                let stream = context.stream ?? RequestBodyStream(complete: [])
                if context.stream != nil && (context.chunked != nil || (context.contentLength ?? 0) > 0) {
                    machine.handlerStartedStreaming(context, stream)
                } else {
                    stream.finish()
                }
                Task { responder.respond(await handler(request, stream)) }
            case .asynchronous(let handler):
                let responder = wait(for: context, errorFormat: route.errorFormat)
                // The handler starts on this loop thread and runs until it first really suspends (a store call,
                // the publish batcher's commit): parsing and authentication do not wait for a hop to the
                // cooperative pool. Handlers never block a thread.
                Task.immediate { responder.respond(await handler(request)) }
            }
        }
    }

    private func wait(for context: RequestContext, errorFormat: ErrorFormat) -> HTTPResponder {
        machine.handlerStarted(context)
        let slot = ResponseSlot(connection: self, context: context, errorFormat: errorFormat)
        awaitedSlot = slot
        return HTTPResponder(requestID: context.requestID, slot: slot)
    }

    /// Shutdown past its grace period: a request still waiting for its handler is answered 503 now (the handler's
    /// own answer, if it ever comes, is ignored).
    func abandonWaitingRequest() {
        guard machine.isWaitingForHandler, let slot = awaitedSlot else { return }
        slot.complete(slot.errorFormat.response(for: .shuttingDown, requestID: slot.requestID))
    }

    /// A handler's answer, on the loop thread.
    func deliver(_ response: HTTPResponse, for context: RequestContext) {
        switch machine.answered(context) {
        case .stale:
            response.bodyStream?.cancel()  // connection gone: the producer stops
            return
        case .respond(let failing):
            // Answered before the body ended (a refusal): the rest of the body is not read, so the connection closes.
            failing?.fail(.init(.abandoned, "The handler answered before the end of the body."))
        }
        if advancing {
            context.earlyResponse = response  // still inside `advance`: it sends this when the handler call returns
            return
        }
        respond(response, to: context)
    }

    // MARK: responses

    private func refuseMalformed(status: Int, message: String) {
        // No request to speak of (its head did not parse): logged as one with what is known.
        let head = RequestHead(method: "-", target: "/", minorVersion: 1, headers: HTTPHeaders(), contentLength: nil,
                               chunked: false, keepAlive: false, expectsContinue: false)
        let context = RequestContext(head: head, remoteAddress: remoteAddress)
        core.inFlight.add(1, ordering: .relaxed)
        let error = switch status {
        case 408: HTTPError.requestTimeout(message)
        case 417: HTTPError(status: status, code: "expectation_failed", message: message)
        case 431: HTTPError(status: status, code: "request_header_fields_too_large", message: message)
        case 501: HTTPError(status: status, code: "not_implemented", message: message)
        case 505: HTTPError(status: status, code: "http_version_not_supported", message: message)
        default: HTTPError.badRequest(message)
        }
        respond(core.router.errorFormat(forPath: "").response(for: error, requestID: context.requestID), to: context,
                close: true)
    }

    /// Writes the response (with framing, `Date` and the request-id headers) and moves on: back to `idle`, or to
    /// closing when either side asked for it.
    private func respond(_ response: HTTPResponse, to context: RequestContext, close: Bool = false) {
        awaitedSlot = nil
        context.status = response.status
        context.cause = response.cause
        let hasBody = !(response.status == 204 || response.status == 304 || (100..<200).contains(response.status))
        if let stream = response.bodyStream, hasBody && !context.isHead {
            // HTTP/1.0 has no chunked coding: the body ends where the connection does.
            let chunked = context.minorVersion > 0
            let closing = machine.responseStarted(to: context, close: close, draining: core.draining.isSet,
                                                  streamed: (stream, chunked), now: monotonicNow())
            serialize(response, for: context, closing: closing, streamed: chunked ? .chunked : .untilClose)
            flushOutput()
            return
        }
        response.bodyStream?.cancel()
        let closing = machine.responseStarted(to: context, close: close, draining: core.draining.isSet, streamed: nil,
                                              now: monotonicNow())
        serialize(response, for: context, closing: closing)
        writing = context
        flushOutput()
    }

    /// In `sendingStream`, with the output written: the next chunk, the body's end, or a wait for the producer.
    private func pullStream() {
        guard fd >= 0, output.isEmpty, case .sendingStream(let context, let stream, let chunked) = machine.state else { return }
        let loop = self.loop
        switch stream.take(wake: { loop.execute { self.pullStream() } }) {
        case .empty:
            return
        case .bytes(let bytes):
            if chunked {
                append(String(bytes.count, radix: 16))
                append("\r\n")
                output.append(contentsOf: bytes)
                append("\r\n")
            } else {
                output.append(contentsOf: bytes)
            }
            flushOutput()
        case .finished:
            if chunked { append("0\r\n\r\n") }
            machine.streamedResponseEnded()
            writing = context
            flushOutput()
        case .failed:
            context.status = 0
            context.cause = "the response body's producer failed"
            close()  // no last chunk: the client sees the body truncated
        }
    }

    enum StreamedFraming { case chunked, untilClose }

    private func serialize(_ response: HTTPResponse, for context: RequestContext, closing: Bool,
                           streamed: StreamedFraming? = nil) {
        let status = response.status
        let hasBody = !(status == 204 || status == 304 || (100..<200).contains(status))
        output.reserveCapacity(256 + response.body.count)
        append("HTTP/1.1 ")
        appendDecimal(status)
        output.append(UInt8(ascii: " "))
        append(HTTPStatusText.reason(status))
        append("\r\n")
        for (name, value) in response.headers {
            // Framing and connection management are the server's.
            if name.caseInsensitiveEquals("Content-Length") || name.caseInsensitiveEquals("Transfer-Encoding")
                || name.caseInsensitiveEquals("Connection") || name.caseInsensitiveEquals("Date") { continue }
            append(name)
            append(": ")
            append(value)
            append("\r\n")
        }
        if streamed == .chunked {
            append("Transfer-Encoding: chunked\r\n")
        } else if hasBody && streamed == nil {
            append("Content-Length: ")
            appendDecimal(response.body.count)
            append("\r\n")
        }
        append("Date: ")
        output.append(contentsOf: core.registries[loop.index].currentDate())
        append("\r\nx-amzn-RequestId: ")
        append(context.requestID)
        append("\r\nx-request-id: ")
        append(context.requestID)
        if closing {
            append("\r\nConnection: close")
        } else if context.minorVersion == 0 {
            append("\r\nConnection: keep-alive")
        }
        append("\r\n\r\n")
        if hasBody && !context.isHead && streamed == nil { output.append(contentsOf: response.body) }
    }

    /// A literal's bytes, copied from its static storage.
    private func append(_ literal: StaticString) {
        output.append(contentsOf: UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
    }

    /// A String's UTF-8, copied from its contiguous storage (the generic `append(contentsOf: s.utf8)` walked it).
    private func append(_ text: String) {
        var text = text
        text.withUTF8 { output.append(contentsOf: $0) }
    }

    private func appendDecimal(_ value: Int) {
        if value >= 10 { appendDecimal(value / 10) }
        output.append(UInt8(48 + value % 10))
    }

    private func flushOutput() {
        guard fd >= 0 else { return }
        let unsent: Bool
        if let tls {
            // Encrypt all of it into the session's queue at once (the queue grows), then write what the socket takes.
            if outputSent < output.count {
                let encrypted = output.withUnsafeBytes { bytes in
                    tls.write(bytes.baseAddress! + outputSent, bytes.count - outputSent)
                }
                guard encrypted else {
                    close()
                    return
                }
                outputSent = output.count
            }
            guard writeCiphertext(tls) else {
                close()
                return
            }
            unsent = !tls.ciphertextOut.isEmpty
        } else {
            if outputSent < output.count {
                let written = output.withUnsafeBytes { bytes in
                    SocketIO.write(fd, bytes.baseAddress! + outputSent, bytes.count - outputSent)
                }
                guard let written else {
                    close()
                    return
                }
                outputSent += written
                if written > 0 { machine.bytesWritten(now: monotonicNow()) }
            }
            unsent = outputSent < output.count
        }
        if unsent {
            if !wantsWritable {
                wantsWritable = true
                loop.setInterest(fd: fd, readable: !machine.readPaused, writable: true)
            }
            return
        }
        output.removeAll(keepingCapacity: output.capacity <= 64 * 1024)
        outputSent = 0
        if wantsWritable {
            wantsWritable = false
            loop.setInterest(fd: fd, readable: !machine.readPaused, writable: false)
        }
        let next = machine.outputWritten()
        if next == .pullChunk {
            // The next chunk on a later turn of the loop: a producer faster than the socket never recurses here.
            loop.execute { self.pullStream() }
            return
        }
        if let context = writing {
            writing = nil
            core.finished(context, completed: true)
        }
        if next == .linger {
            startLingering()
            return
        }
        if !advancing {
            advance()
            resumeReading()
        }
    }

    // MARK: closing

    /// Ends the output and reads (dropping it) until the client closes, so a client still sending its request
    /// body gets the response rather than a reset.
    private func startLingering() {
        guard fd >= 0 else { return }
        switch machine.startLingering(now: monotonicNow()) {
        case .close:
            close()
        case .linger(let resumeReading):
            _ = Glibc.shutdown(fd, Int32(SHUT_WR))
            input = []
            inputStart = 0
            if resumeReading { loop.setInterest(fd: fd, readable: true, writable: false) }
        }
    }

    /// Closes now; a request still open is logged as not completed.
    func close() {
        guard fd >= 0 else { return }
        loop.deregister(fd: fd)
        Glibc.close(fd)
        fd = -1
        core.acceptPause.descriptorFreed()
        switch machine.closed() {
        case .body(let context), .awaiting(let context):
            core.finished(context, completed: false)
        case .streaming(let context, let stream):
            stream.fail(.init(.interrupted, "The connection closed before the end of the request body."))
            core.finished(context, completed: false)
        case .sendingStream(let context, let stream, _):
            stream.cancel()
            core.finished(context, completed: false)
        default:
            break
        }
        if let context = writing {
            writing = nil
            core.finished(context, completed: false)
        }
        awaitedSlot = nil
        core.registries[loop.index].connections[ObjectIdentifier(self)] = nil
        core.liveConnections.subtract(1, ordering: .relaxed)
    }

    /// The sweep: answers 408 to a request whose head or body is past its deadline (or that went silent midway
    /// past the idle timeout), closes a connection idle or not taking its response past the idle timeout, or
    /// lingering past its time. A request waiting for its handler is never timed out.
    func sweep(now: NanoTime) {
        switch machine.sweep(now: now) {
        case .none: break
        case .close: close()
        case .timeOut: timeOutRequest()
        case .failStream(let context, let stream):
            failStream(context, stream, .init(.timedOut, "The request body did not arrive in time."))
        }
    }

    /// A request that did not arrive in time: 408 where a response can still be written, then close (lingering, so
    /// the client reads the 408 rather than a reset).
    private func timeOutRequest() {
        let onlyBlankLines = input[inputStart...].allSatisfy { $0 == UInt8(ascii: "\r") || $0 == UInt8(ascii: "\n") }
        switch machine.timeOut(outputEmpty: output.isEmpty, onlyBlankLines: onlyBlankLines) {
        case .close:
            close()
        case .answerBody(let context):
            context.body = []
            let error = HTTPError.requestTimeout("The request body did not arrive in time.")
            respond(errorFormat(context).response(for: error, requestID: context.requestID), to: context, close: true)
        case .refuseHead:
            refuseMalformed(status: 408, message: "The request head did not arrive in time.")
        }
    }
}

enum HTTPStatusText {
    static func reason(_ status: Int) -> StaticString {
        switch status {
        case 100: "Continue"
        case 200: "OK"
        case 201: "Created"
        case 202: "Accepted"
        case 204: "No Content"
        case 301: "Moved Permanently"
        case 302: "Found"
        case 304: "Not Modified"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 408: "Request Timeout"
        case 409: "Conflict"
        case 410: "Gone"
        case 412: "Precondition Failed"
        case 413: "Content Too Large"
        case 415: "Unsupported Media Type"
        case 417: "Expectation Failed"
        case 422: "Unprocessable Content"
        case 429: "Too Many Requests"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        case 504: "Gateway Timeout"
        case 505: "HTTP Version Not Supported"
        default: "Status"
        }
    }
}
