internal import CNghttp2
import ClarionTransport

/// A request on its way: the caller's request, where its result goes (a batcher or a continuation), its deadline
/// and refusal count. A class, so queue and stream table move one pointer instead of copying the request.
final class PendingRequest: HTTP2PoolItem {
    let request: HTTP2Request
    let batcher: CompletionBatcher?
    let continuation: CheckedContinuation<HTTP2Result, Never>?
    let deadline: NanoTime
    var refusals = 0

    init(request: HTTP2Request, batcher: CompletionBatcher, deadline: NanoTime) {
        self.request = request
        self.batcher = batcher
        continuation = nil
        self.deadline = deadline
    }

    init(request: HTTP2Request, continuation: CheckedContinuation<HTTP2Result, Never>, deadline: NanoTime) {
        self.request = request
        batcher = nil
        self.continuation = continuation
        self.deadline = deadline
    }
}

/// One client connection: an nghttp2 client session over a `SocketChannel`, driven with `mem_recv`/`mem_send`.
/// It knows nothing of queues: the pool hands it requests (`start`) and hears back about streams, SETTINGS,
/// GOAWAY and closing. Confined to the pool's loop.
final class HTTP2ClientConnection: SocketChannel {
    struct Stream {
        var pending: PendingRequest?
        var streamID: Int32 = 0
        var status = 0
        var headers: [UInt8] = []
        var body: [UInt8] = []
        var bodyOffset = 0
        /// The response's END_STREAM arrived.
        var ended = false
        /// False for `.statusOnly` requests: header fields and body are not kept.
        var keepsFieldsAndBody = true
    }

    let connectionID: UInt64
    /// The driver owns its connections and outlives them; `unowned(unsafe)` keeps refcounting off the hot path.
    private unowned(unsafe) let pool: HTTP2PoolDriver
    // A pure state machine: its mutating methods never call out, so the per-call exclusivity check is skipped.
    @exclusivity(unchecked) private var machine: HTTP2ConnectionStateMachine
    private var session: OpaquePointer?
    /// The session's memory (freed after the session: stored properties outlive `deinit`'s body).
    private let allocator = NGHTTP2Allocator()
    private let streams = Slab(empty: Stream())
    private let headerBlock = HeaderBlockBuilder()
    private var goAwayLastStreamID: Int32?
    private let scheme: String
    private var closeAfterFlush = false
    /// The HTTP/2-level reason this connection closed itself for (the channel carries it as a `TransportError`).
    private var closeReason: HTTP2Error?

    /// Never called. SocketChannel's designated initializer is `package` in an open class, and a subclass in
    /// another module that does not restate it gets a compiler-made trapping stub (which Swift 6.3 reports as
    /// "function call causes an infinite recursion"); restating it as unavailable leaves nothing to make.
    @available(*, unavailable)
    override init(loop: EventLoop, fd: Int32, tls: TLSSession?, connecting: Bool, writeChunks: WriteChunks = .server) {
        fatalError("use the connection's own initializer")
    }

    init(pool: HTTP2PoolDriver, connectionID: UInt64, fd: Int32, tls: TLSSession?, now: NanoTime) {
        self.pool = pool
        self.connectionID = connectionID
        machine = HTTP2ConnectionStateMachine(configuration: pool.connectionConfiguration, now: now)
        scheme = tls == nil ? "http" : "https"
        super.init(loop: pool.loop, fd: fd, tls: tls, connecting: true, writeChunks: .client)
    }

    deinit {
        if let session { nghttp2_session_del(session) }
    }

    var openStreamCount: Int { machine.openStreams }

    // MARK: - SocketChannel hooks

    override func didBecomeActive() {
        if let tls, pool.configuration.offersHTTP1 {
            // Offered h2 and http/1.1: any answer but h2 (including none) means this server speaks HTTP/1.1.
            let selected = tls.selectedALPN
            if selected != "h2" {
                let reason = HTTP2Error.http2NotNegotiated(selected ?? "none")
                closeReason = reason
                close(error: TransportError(reason))
                return
            }
        }
        var session: OpaquePointer?
        let me = Unmanaged.passUnretained(self).toOpaque()
        var memory = allocator.memoryFunctions
        guard nghttp2_session_client_new3(&session, Self.tables.callbacks, me, Self.tables.option, &memory) == 0 else {
            close(error: .protocolError("nghttp2_session_client_new3 failed"))
            return
        }
        self.session = session
        var settings = [
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_ENABLE_PUSH.rawValue), value: 0),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue),
                                   value: pool.configuration.initialWindowSize),
        ]
        nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), &settings, settings.count)
        nghttp2_session_set_local_window_size(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, 16 * 1024 * 1024)
        let now = monotonicNow()
        machine.established(now: now)
        pool.connectionEstablished(self)
    }

    override func didRead(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let session else { return false }
        machine.bytesRead(now: monotonicNow())
        let rc = nghttp2_session_mem_recv(session, bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), bytes.count)
        if rc < 0 {
            close(error: .protocolError(String(cString: nghttp2_strerror(Int32(rc)))))
            return false
        }
        return state != .closed
    }

    override func produceOutput() {
        guard let session else { return }
        while !outputIsFull {
            var data: UnsafePointer<UInt8>?
            let n = nghttp2_session_mem_send(session, &data)
            if n < 0 {
                close(error: .protocolError(String(cString: nghttp2_strerror(Int32(n)))))
                return
            }
            if n == 0 { break }
            emit(data!, n)
        }
        if nghttp2_session_want_read(session) == 0 && nghttp2_session_want_write(session) == 0 {
            closeAfterFlush = true
        }
    }

    override func flushAtEndOfTurn() {
        super.flushAtEndOfTurn()
        if closeAfterFlush && state == .active && outbound.isEmpty { close(error: nil) }
    }

    override func didClose(error: TransportError?) {
        machine.closed()
        // Streams the server never processed (above GOAWAY's last-stream-id) are retried; the rest are lost.
        let error = closeReason ?? error.map(HTTP2Error.init)
        let lost = error.map { error -> HTTP2Error in
            if case .connectionLost = error { return error }
            if case .protocolError = error { return error }
            if case .tlsClientCertificateRejected = error { return error }  // the caller must see it was the certificate
            return .connectionLost("\(error)")
        } ?? .connectionLost("connection closed")
        for i in 0..<streams.count {
            let stream = streams.storage + i
            guard let pending = stream.pointee.pending else { continue }
            stream.pointee.pending = nil
            if let last = goAwayLastStreamID, stream.pointee.streamID > last {
                pool.retry(pending)
            } else {
                pool.complete(pending, .failure(lost))
            }
        }
        streams.removeAll()
        pool.connectionClosed(self, error: error)
    }

    // MARK: - Requests

    /// Opens a stream for `pending`. Returns it back if the session cannot take it (the pool requeues it).
    func start(_ pending: PendingRequest) -> PendingRequest? {
        guard let session, state == .active, machine.acceptsStreams else { return pending }
        let request = pending.request
        headerBlock.reset()
        headerBlock.add(":method", request.method)
        headerBlock.add(":scheme", scheme)
        headerBlock.add(":authority", request.authority ?? pool.defaultAuthority)
        if request.pathSuffix.isEmpty {
            headerBlock.add(":path", request.path)
        } else {
            headerBlock.add(":path", request.path, suffix: request.pathSuffix)
        }
        headerBlock.addFields(request.headers)
        if !request.body.isEmpty { headerBlock.add("content-length", decimal: request.body.count) }

        let index = streams.allocate()
        streams.storage[index].pending = pending
        streams.storage[index].keepsFieldsAndBody = request.responseParts == .all
        let userData = UnsafeMutableRawPointer(bitPattern: index + 1)
        let streamID: Int32
        if request.body.isEmpty {
            streamID = headerBlock.withFields { nghttp2_submit_request(session, nil, $0, $1, nil, userData) }
        } else {
            var provider = nghttp2_data_provider(source: nghttp2_data_source(ptr: nil), read_callback: clientReadBody)
            streamID = headerBlock.withFields { nghttp2_submit_request(session, nil, $0, $1, &provider, userData) }
        }
        guard streamID > 0 else {
            // Stream ids exhausted or the session is going away: this connection takes nothing more.
            streams.release(index)
            perform(machine.drainRequested())
            return pending
        }
        streams.storage[index].streamID = streamID
        machine.streamOpened()
        scheduleFlush()
        return nil
    }

    /// Pool tick: liveness, idle close, and the deadlines of requests in flight.
    func tick(now: NanoTime) {
        perform(machine.tick(now: now))
        guard state == .active, let session else { return }
        for i in 0..<streams.count {
            let stream = streams.storage + i
            guard let pending = stream.pointee.pending, pending.deadline <= now else { continue }
            stream.pointee.pending = nil
            nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), stream.pointee.streamID,
                                      NGHTTP2_CANCEL.rawValue)
            pool.complete(pending, .failure(.timeout))
            scheduleFlush()
        }
    }

    /// The pool wants this connection gone once its streams are done.
    func drain() {
        perform(machine.drainRequested())
    }

    private func perform(_ action: HTTP2ConnectionStateMachine.Action) {
        switch action {
        case .none:
            break
        case .sendPing:
            if let session {
                nghttp2_submit_ping(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nil)
                scheduleFlush()
            }
        case .sendGoAway:
            if let session {
                nghttp2_submit_goaway(session, UInt8(NGHTTP2_FLAG_NONE.rawValue),
                                      nghttp2_session_get_last_proc_stream_id(session), 0, nil, 0)
                scheduleFlush()
            }
        case .close(let error):
            if state == .active && error == nil && session != nil {
                // Graceful: let what is queued go out first.
                closeAfterFlush = true
                scheduleFlush()
            } else {
                closeReason = error
                close(error: error.map(TransportError.init))
            }
        }
    }

    // MARK: - nghttp2 callbacks

    private func slot(for streamID: Int32) -> Int? {
        guard let session, let raw = nghttp2_session_get_stream_user_data(session, streamID) else { return nil }
        let index = Int(bitPattern: raw) - 1
        return index >= 0 && index < streams.count ? index : nil
    }

    fileprivate func header(streamID: Int32, name: UnsafePointer<UInt8>, nameLength: Int,
                            value: UnsafePointer<UInt8>, valueLength: Int) {
        guard let i = slot(for: streamID) else { return }
        if nameLength == 7 && name[0] == UInt8(ascii: ":") && name[1] == UInt8(ascii: "s") {
            var status = 0
            for k in 0..<valueLength { status = status * 10 + Int(value[k] &- 48) }
            // Interim (1xx) responses are skipped; the final status wins.
            streams.storage[i].status = status
        } else if nameLength > 0 && name[0] != UInt8(ascii: ":") && streams.storage[i].keepsFieldsAndBody {
            if headerScratchStreamID != streamID {
                headerScratch.removeAll()
                headerScratchStreamID = streamID
            }
            EncodedHeaderFields.append(name: UnsafeBufferPointer(start: name, count: nameLength),
                                       value: UnsafeBufferPointer(start: value, count: valueLength), to: headerScratch)
        }
    }

    /// A header block's fields are gathered here with plain copies and moved into the stream's array in one piece
    /// when the block ends (its callbacks are contiguous: HEADERS and CONTINUATION frames cannot interleave).
    private let headerScratch = ByteQueue(capacity: 4096)
    /// The stream whose fields `headerScratch` holds; 0 (never a stream) when none.
    private var headerScratchStreamID: Int32 = 0

    fileprivate func headerBlockEnded(streamID: Int32) {
        guard headerScratchStreamID == streamID, let i = slot(for: streamID) else { return }
        moveGatheredHeaders(slot: i)
    }

    private func moveGatheredHeaders(slot i: Int) {
        headerScratchStreamID = 0
        guard !headerScratch.isEmpty else { return }
        streams.storage[i].headers.append(
            contentsOf: UnsafeRawBufferPointer(start: headerScratch.readPointer, count: headerScratch.readableBytes))
        headerScratch.removeAll()
    }

    fileprivate func data(streamID: Int32, _ pointer: UnsafePointer<UInt8>, _ count: Int) {
        guard let i = slot(for: streamID), streams.storage[i].keepsFieldsAndBody else { return }
        streams.storage[i].body.append(contentsOf: UnsafeBufferPointer(start: pointer, count: count))
    }

    fileprivate func readBody(streamID: Int32, into buffer: UnsafeMutablePointer<UInt8>, length: Int,
                              flags: UnsafeMutablePointer<UInt32>) -> Int {
        guard let i = slot(for: streamID), let pending = streams.storage[i].pending else {
            // Timed out while its body was still going out: end the stream (it was reset anyway).
            flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
            return 0
        }
        // nghttp2 asks for at most what the flow-control windows allow, so a body may go out over several calls: keep
        // our own offset into it.
        let offset = streams.storage[i].bodyOffset
        let total = pending.request.body.count
        let count = min(length, total - offset)
        pending.request.body.withUnsafeBufferPointer { source in
            buffer.update(from: source.baseAddress! + offset, count: count)
        }
        streams.storage[i].bodyOffset = offset + count
        if offset + count == total { flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue }
        return count
    }

    fileprivate func frameReceived(_ frame: UnsafePointer<nghttp2_frame>) {
        let type = frame.pointee.hd.type
        if type == UInt8(NGHTTP2_SETTINGS.rawValue) {
            guard frame.pointee.hd.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) == 0, let session else { return }
            let value = nghttp2_session_get_remote_settings(session, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS)
            pool.maxConcurrentStreamsChanged(self, to: Int(value))
        } else if type == UInt8(NGHTTP2_GOAWAY.rawValue) {
            let goaway = frame.pointee.goaway
            let last = goaway.last_stream_id
            goAwayLastStreamID = min(goAwayLastStreamID ?? last, last)
            if let observer = pool.configuration.onGoAway {
                let debug = goaway.opaque_data.map { Array(UnsafeBufferPointer(start: $0, count: goaway.opaque_data_len)) }
                observer(HTTP2GoAway(errorCode: goaway.error_code, lastStreamID: last, debugData: debug ?? []))
            }
            pool.goAwayReceived(self)
            perform(machine.goAwayReceived())
        }
    }

    fileprivate func streamClosed(streamID: Int32, errorCode: UInt32) {
        guard let i = slot(for: streamID) else { return }
        if headerScratchStreamID == streamID { moveGatheredHeaders(slot: i) }
        let stream = streams.storage + i
        if let pending = stream.pointee.pending {
            let status = stream.pointee.status
            if errorCode == NGHTTP2_REFUSED_STREAM.rawValue
                || (status == 0 && goAwayLastStreamID.map { streamID > $0 } == true) {
                pool.retry(pending)
            } else if status != 0 && (errorCode == 0 || stream.pointee.ended) {
                var headers: [UInt8] = []
                var body: [UInt8] = []
                swap(&headers, &stream.pointee.headers)
                swap(&body, &stream.pointee.body)
                pool.complete(pending, .success(HTTP2Response(status: status, encodedHeaders: headers, body: body)))
            } else if errorCode != 0 {
                pool.complete(pending, .failure(.streamReset(errorCode)))
            } else {
                pool.complete(pending, .failure(.protocolError("stream closed without a response")))
            }
        }
        streams.release(i)
        perform(machine.streamClosed(now: monotonicNow()))
        pool.streamClosed(self)
    }

    fileprivate func responseEnded(streamID: Int32) {
        guard let i = slot(for: streamID) else { return }
        streams.storage[i].ended = true
    }

    /// The callbacks run inside `mem_recv`/`mem_send`, called from this connection's own methods while the loop
    /// holds it, so they borrow it (`_withUnsafeGuaranteedRef`): no retain and release per callback.
    static let tables = NGHTTP2Tables { callbacks, option in
        nghttp2_option_set_peer_max_concurrent_streams(option, 1)
        nghttp2_session_callbacks_set_on_header_callback(callbacks) { _, frame, name, nameLength, value, valueLength, _, userData in
            guard let frame, let name, let value, let userData else { return 0 }
            Unmanaged<HTTP2ClientConnection>.fromOpaque(userData)._withUnsafeGuaranteedRef {
                $0.header(streamID: frame.pointee.hd.stream_id, name: name, nameLength: nameLength,
                          value: value, valueLength: valueLength)
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks) { _, _, streamID, data, length, userData in
            guard let data, let userData else { return 0 }
            Unmanaged<HTTP2ClientConnection>.fromOpaque(userData)._withUnsafeGuaranteedRef {
                $0.data(streamID: streamID, data, length)
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks) { _, frame, userData in
            guard let frame, let userData else { return 0 }
            Unmanaged<HTTP2ClientConnection>.fromOpaque(userData)._withUnsafeGuaranteedRef { connection in
                let type = frame.pointee.hd.type
                if type == UInt8(NGHTTP2_HEADERS.rawValue) {
                    connection.headerBlockEnded(streamID: frame.pointee.hd.stream_id)
                }
                if (type == UInt8(NGHTTP2_HEADERS.rawValue) || type == UInt8(NGHTTP2_DATA.rawValue))
                    && frame.pointee.hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0 {
                    connection.responseEnded(streamID: frame.pointee.hd.stream_id)
                } else {
                    connection.frameReceived(frame)
                }
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks) { _, streamID, errorCode, userData in
            guard let userData else { return 0 }
            Unmanaged<HTTP2ClientConnection>.fromOpaque(userData)._withUnsafeGuaranteedRef {
                $0.streamClosed(streamID: streamID, errorCode: errorCode)
            }
            return 0
        }
    }
}

private let clientReadBody: nghttp2_data_source_read_callback = { _, streamID, buffer, length, flags, _, userData in
    guard let buffer, let flags, let userData else { return Int(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue) }
    return Unmanaged<HTTP2ClientConnection>.fromOpaque(userData)._withUnsafeGuaranteedRef {
        $0.readBody(streamID: streamID, into: buffer, length: length, flags: flags)
    }
}
