#if canImport(Glibc)
import Glibc
#endif
internal import CNghttp2
import ClarionTransport

/// One accepted HTTP/2 connection: an nghttp2 server session driven with `mem_recv`/`mem_send` on its loop.
///
/// Per-stream state lives in a reusable slab (`streams`), indexed by the stream user data, so a request allocates
/// only what its header strings and body need. Confined to `loop`.
final class HTTP2ServerConnection: SocketChannel {
    struct Stream {
        var streamID: Int32 = 0
        var generation: UInt32 = 0
        var method = ""
        var path = ""
        var authority = ""
        var scheme = ""
        /// Regular header fields in `EncodedHeaderFields` form, gathered with plain copies in a buffer the slot
        /// keeps across its streams, then handed to the request in `requestHeaders` with one copy.
        var headers: ByteQueue?
        /// The array the request gets; after the handler it is normally unique again and reused (no allocation).
        var requestHeaders: [UInt8] = []
        var headerNames = EncodedHeaderFields.NameFilter()
        var body: [UInt8] = []
        var responseBody: [UInt8] = []
        var responseOffset = 0
        var timer: UInt64 = 0
    }

    let connectionID: UInt64
    private let core: HTTP2ServerCore
    private var session: OpaquePointer?
    /// The session's memory (freed after the session: stored properties outlive `deinit`'s body).
    private let allocator = NGHTTP2Allocator()
    private let streams = Slab(empty: Stream())
    private var slotGeneration: UInt32 = 0
    private let headerBlock = HeaderBlockBuilder(indexFields: false)
    var userState: AnyObject?
    private(set) var advertisedMaxConcurrentStreams: UInt32
    /// Set once GOAWAY went out: streams above it are refused, the connection closes when the rest are done.
    private var goAwayLastStreamID: Int32?
    private var graceTimer: UInt64 = 0
    private var dropRequested = false

    var openStreamCount: Int { streams.liveCount }

    /// Never called. SocketChannel's designated initializer is `package` in an open class, and a subclass in
    /// another module that does not restate it gets a compiler-made trapping stub (which Swift 6.3 reports as
    /// "function call causes an infinite recursion"); restating it as unavailable leaves nothing to make.
    @available(*, unavailable)
    override init(loop: EventLoop, fd: Int32, tls: TLSSession?, connecting: Bool, writeChunks: WriteChunks = .server) {
        fatalError("use the connection's own initializer")
    }

    init(core: HTTP2ServerCore, loop: EventLoop, fd: Int32, tls: TLSSession?, connectionID: UInt64) {
        self.core = core
        self.connectionID = connectionID
        advertisedMaxConcurrentStreams = core.configuration.maxConcurrentStreams
        super.init(loop: loop, fd: fd, tls: tls, connecting: false)
    }

    deinit {
        if let session { nghttp2_session_del(session) }
    }

    override func didBecomeActive() {
        var session: OpaquePointer?
        let me = Unmanaged.passUnretained(self).toOpaque()
        var memory = allocator.memoryFunctions
        guard nghttp2_session_server_new3(&session, Self.tables.callbacks, me, Self.tables.option, &memory) == 0 else {
            close(error: .protocolError("nghttp2_session_server_new3 failed"))
            return
        }
        self.session = session
        let config = core.configuration
        var settings = [
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue),
                                   value: config.maxConcurrentStreams),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue),
                                   value: config.initialWindowSize),
        ]
        nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), &settings, settings.count)
        if config.connectionWindowSize > 65_535 {
            nghttp2_session_set_local_window_size(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0,
                                                  Int32(clamping: config.connectionWindowSize))
        }
        scheduleFlush()
    }

    override func didRead(_ bytes: UnsafeRawBufferPointer) -> Bool {
        if lingering { return true }  // the session is over: drop what the client still sends
        guard let session else { return false }
        let base = bytes.baseAddress!.assumingMemoryBound(to: UInt8.self)
        var offset = 0
        while offset < bytes.count {
            if offset > 0 && loop.readyThisTurn == 1 {
                // The answers to the slices before go out now, while the rest is processed: see `inputSlice`.
                writeProducedOutput()
                guard state == .active else { return false }
            }
            let count = min(Self.inputSlice, bytes.count - offset)
            let rc = nghttp2_session_mem_recv(session, base + offset, count)
            if dropRequested {
                close(error: nil)
                return false
            }
            if rc < 0 {
                // nghttp2 has queued a GOAWAY for protocol errors; send it, then close.
                produceOutput()
                flushAtEndOfTurn()
                close(error: .protocolError(String(cString: nghttp2_strerror(Int32(rc)))))
                return false
            }
            offset += count
        }
        scheduleFlush()
        return state != .closed
    }

    /// Input is processed in slices of this size; when this connection was the only one with anything ready in
    /// this loop turn, what the handlers answered is written after each slice, before the next is processed.
    /// Processing a whole read first (a client's full window: 100 requests are 44 KB in the benchmark) and writing
    /// all the answers at the end ran one connection in lockstep: the client idle while we processed the batch, we
    /// idle while it read the answers and sent the next batch. nghttpd reads 8 KiB at a time and answers each.
    /// With several connections ready in one turn the clients have other answers to work on, the server is the
    /// busy side, and a write per slice costs more CPU per request than it saves: there the answers go out once,
    /// at the end of the turn.
    static let inputSlice = 8 * 1024

    override func produceOutput() {
        guard !lingering, let session else { return }
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
            // Everything after GOAWAY is done (or nghttp2 decided to end the session): close once written.
            closeAfterWrite = true
        }
    }

    private var closeAfterWrite = false
    /// The session is over and our side is half-closed; reads are dropped until the client closes.
    private var lingering = false
    private var lingerTimer: UInt64 = 0
    /// How long a lingering connection waits for the client's end of stream before closing anyway.
    static let lingerTimeout: Duration = .seconds(2)

    override func flushAtEndOfTurn() {
        super.flushAtEndOfTurn()
        if closeAfterWrite && !lingering && state == .active && outbound.isEmpty { linger() }
    }

    /// Ends the connection without a reset. Closing a socket with unread input makes the kernel send RST instead
    /// of FIN, and a RST can destroy what we wrote last (the GOAWAY) before the client reads it, so the client
    /// cannot tell which of its streams were processed; a client that is sending while we leave (the very case
    /// GOAWAY exists for) always has input in flight. So: half-close (FIN after the GOAWAY), drop what still
    /// arrives, close once the client closes too, or after `lingerTimeout`.
    private func linger() {
        lingering = true
        shutdownOutput()
        lingerTimer = loop.addTimer(after: Self.lingerTimeout.nanoseconds) { [self] in
            lingerTimer = 0
            close(error: nil)
        }
    }

    override func didClose(error: TransportError?) {
        for i in 0..<streams.count where streams.storage[i].timer != 0 {
            loop.cancelTimer(streams.storage[i].timer)
            streams.storage[i].timer = 0
        }
        if graceTimer != 0 { loop.cancelTimer(graceTimer) }
        if lingerTimer != 0 { loop.cancelTimer(lingerTimer) }
        userState = nil
        core.connectionClosed(self)
    }

    // MARK: - nghttp2 callbacks

    fileprivate func slot(for streamID: Int32) -> Int? {
        // A request's header fields come one callback each, all for the same stream: remember the last lookup.
        if streamID == cachedSlotStreamID { return cachedSlot }
        guard let session, let raw = nghttp2_session_get_stream_user_data(session, streamID) else { return nil }
        let index = Int(bitPattern: raw) - 1
        guard index >= 0 && index < streams.count else { return nil }
        cachedSlotStreamID = streamID
        cachedSlot = index
        return index
    }

    /// The last `slot(for:)` answer; reset whenever a slot is freed.
    private var cachedSlotStreamID: Int32 = -1
    private var cachedSlot = 0

    fileprivate func beginHeaders(streamID: Int32) {
        let index = streams.allocate()
        slotGeneration &+= 1
        streams.storage[index].streamID = streamID
        streams.storage[index].generation = slotGeneration
        streams.storage[index].headerNames = EncodedHeaderFields.NameFilter()
        nghttp2_session_set_stream_user_data(session, streamID, UnsafeMutableRawPointer(bitPattern: index + 1))
    }

    fileprivate func header(streamID: Int32, name: UnsafePointer<UInt8>, nameLength: Int,
                            value: UnsafePointer<UInt8>, valueLength: Int) {
        guard let i = slot(for: streamID) else { return }
        let stream = streams.storage + i
        if nameLength > 1 && name[0] == UInt8(ascii: ":") {
            // The same method, scheme and authority come on nearly every stream: reuse the strings (no UTF-8
            // validation, no allocation) when the bytes match.
            switch (name[1], nameLength) {
            case (UInt8(ascii: "m"), 7): stream.pointee.method = Self.string(value, valueLength, orOneOf: "POST", "GET")
            case (UInt8(ascii: "p"), 5): stream.pointee.path = bytesToString(value, valueLength)
            case (UInt8(ascii: "a"), 10):
                if !Self.spells(lastAuthority, value, valueLength) {
                    lastAuthority = bytesToString(value, valueLength)
                }
                stream.pointee.authority = lastAuthority
            case (UInt8(ascii: "s"), 7):
                stream.pointee.scheme = Self.string(value, valueLength, orOneOf: "https", "http")
            default: break
            }
        } else {
            let queue: ByteQueue
            if let existing = stream.pointee.headers {
                queue = existing
            } else {
                queue = ByteQueue(capacity: 1024)
                stream.pointee.headers = queue
            }
            let nameBytes = UnsafeBufferPointer(start: name, count: nameLength)
            stream.pointee.headerNames.add(nameBytes)
            EncodedHeaderFields.append(name: nameBytes, value: UnsafeBufferPointer(start: value, count: valueLength),
                                       to: queue)
        }
    }

    /// The connection's last `:authority`, reused while it repeats.
    private var lastAuthority = ""

    /// `first` or `second` when the bytes spell it (a literal: nothing to validate or allocate), else a new string.
    private static func string(_ value: UnsafePointer<UInt8>, _ count: Int, orOneOf first: String,
                               _ second: String) -> String {
        if spells(first, value, count) { return first }
        if spells(second, value, count) { return second }
        return bytesToString(value, count)
    }

    /// True when `string`'s UTF-8 is exactly these bytes (one `memcmp`, not a generic sequence walk).
    @inline(__always)
    private static func spells(_ string: String, _ bytes: UnsafePointer<UInt8>, _ count: Int) -> Bool {
        guard string.utf8.count == count else { return false }
        var string = string
        return string.withUTF8 { count == 0 || memcmp($0.baseAddress!, bytes, count) == 0 }
    }

    fileprivate func data(streamID: Int32, _ pointer: UnsafePointer<UInt8>, _ count: Int) {
        guard let i = slot(for: streamID) else { return }
        streams.storage[i].body.append(contentsOf: UnsafeBufferPointer(start: pointer, count: count))
    }

    fileprivate func requestComplete(streamID: Int32) {
        guard state == .active, !dropRequested, let i = slot(for: streamID) else { return }
        if let last = goAwayLastStreamID, streamID > last {
            nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID,
                                      NGHTTP2_REFUSED_STREAM.rawValue)
            return
        }
        let action = callHandler(slot: i, streamID: streamID)
        // The handler's copies of the arrays are gone now; reuse the slot's storage.
        streams.storage[i].body.removeAll(keepingCapacity: true)
        perform(action, slot: i, streamID: streamID)
    }

    private func callHandler(slot i: Int, streamID: Int32) -> HTTP2ServerAction {
        let stream = streams.storage + i
        stream.pointee.requestHeaders.removeAll(keepingCapacity: true)
        if let gathered = stream.pointee.headers, !gathered.isEmpty {
            stream.pointee.requestHeaders.append(
                contentsOf: UnsafeRawBufferPointer(start: gathered.readPointer, count: gathered.readableBytes))
            gathered.removeAll()
        }
        let request = HTTP2ServerRequest(
            method: stream.pointee.method, path: stream.pointee.path, authority: stream.pointee.authority,
            scheme: stream.pointee.scheme, encodedHeaders: stream.pointee.requestHeaders, body: stream.pointee.body,
            namesMayRepeat: stream.pointee.headerNames.mayRepeat)
        return core.handler(request, HTTP2ServerStreamContext(connection: self, streamID: streamID))
    }

    private func perform(_ action: HTTP2ServerAction, slot i: Int, streamID: Int32) {
        switch action {
        case .respond(let response):
            submitResponse(slot: i, streamID: streamID, response)
        case .respondAfter(let delay, let response):
            let generation = streams.storage[i].generation
            // A strong capture (a weak one would slow every retain of this connection); cancelled on close.
            streams.storage[i].timer = loop.addTimer(after: delay.nanoseconds) { [self] in
                guard state == .active, i < streams.count, streams.storage[i].generation == generation,
                      streams.storage[i].streamID == streamID else { return }
                streams.storage[i].timer = 0
                submitResponse(slot: i, streamID: streamID, response)
                scheduleFlush()
            }
        case .stall:
            break
        case .goAway:
            sendGoAway(lastStreamID: max(0, streamID - 2), errorCode: 0, debugData: [])
            nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID,
                                      NGHTTP2_REFUSED_STREAM.rawValue)
        case .goAwayWith(let errorCode, let debugData):
            sendGoAway(lastStreamID: max(0, streamID - 2), errorCode: errorCode, debugData: debugData)
            nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID,
                                      NGHTTP2_REFUSED_STREAM.rawValue)
        case .reset(let errorCode):
            nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, errorCode)
        case .dropConnection:
            dropRequested = true
        }
    }

    /// A handle for answering `streamID` later (the handler returns `.stall`). The slot's generation tells the
    /// stream apart from a later one that reuses the slot.
    func makeResponder(streamID: Int32) -> HTTP2ServerResponder {
        let i = slot(for: streamID) ?? -1
        return HTTP2ServerResponder(connection: self, slot: i,
                                    generation: i >= 0 ? streams.storage[i].generation : 0, streamID: streamID)
    }

    /// A responder's answer, on the loop: sent only if that very stream is still open.
    func respondLater(slot i: Int, generation: UInt32, streamID: Int32, _ response: HTTP2ServerResponse) {
        guard state == .active, i >= 0, i < streams.count, generation != 0,
              streams.storage[i].generation == generation, streams.storage[i].streamID == streamID else { return }
        submitResponse(slot: i, streamID: streamID, response)
        scheduleFlush()
    }

    private func submitResponse(slot i: Int, streamID: Int32, _ response: HTTP2ServerResponse) {
        guard let session else { return }
        headerBlock.reset()
        headerBlock.addStatus(response.status)
        headerBlock.addFields(response.headers)
        if response.body.isEmpty {
            _ = headerBlock.withFields { nghttp2_submit_response(session, streamID, $0, $1, nil) }
        } else {
            streams.storage[i].responseBody = response.body
            streams.storage[i].responseOffset = 0
            var provider = nghttp2_data_provider(source: nghttp2_data_source(ptr: nil), read_callback: serverReadBody)
            _ = headerBlock.withFields { nghttp2_submit_response(session, streamID, $0, $1, &provider) }
        }
    }

    fileprivate func readBody(streamID: Int32, into buffer: UnsafeMutablePointer<UInt8>, length: Int,
                              flags: UnsafeMutablePointer<UInt32>) -> Int {
        guard let i = slot(for: streamID) else {
            return Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue)
        }
        let stream = streams.storage + i
        let offset = stream.pointee.responseOffset
        let total = stream.pointee.responseBody.count
        let count = min(length, total - offset)
        stream.pointee.responseBody.withUnsafeBufferPointer { source in
            buffer.update(from: source.baseAddress! + offset, count: count)
        }
        stream.pointee.responseOffset = offset + count
        if offset + count == total {
            flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
        }
        return count
    }

    fileprivate func streamClosed(streamID: Int32) {
        guard let i = slot(for: streamID) else { return }
        let stream = streams.storage + i
        if stream.pointee.timer != 0 {
            loop.cancelTimer(stream.pointee.timer)
            stream.pointee.timer = 0
        }
        stream.pointee.streamID = 0
        stream.pointee.generation = 0
        stream.pointee.headers?.removeAll()
        stream.pointee.body.removeAll(keepingCapacity: true)
        stream.pointee.responseBody = []
        stream.pointee.responseOffset = 0
        if cachedSlotStreamID == streamID { cachedSlotStreamID = -1 }
        streams.recycle(i)
    }

    // MARK: - Control

    func submitMaxConcurrentStreams(_ value: UInt32) {
        guard let session, value != advertisedMaxConcurrentStreams else { return }
        advertisedMaxConcurrentStreams = value
        var entry = nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue),
                                           value: value)
        nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), &entry, 1)
        scheduleFlush()
    }

    /// GOAWAY for graceful shutdown: streams the server has seen complete, then the connection closes.
    func shutdownGracefully() {
        guard !lingering else { return }  // already leaving
        guard state == .active, let session else {
            if state == .handshaking { close(error: nil) }
            return
        }
        sendGoAway(lastStreamID: nghttp2_session_get_last_proc_stream_id(session), errorCode: 0, debugData: [])
        scheduleFlush()
    }

    private func sendGoAway(lastStreamID: Int32, errorCode: UInt32, debugData: [UInt8]) {
        guard let session, goAwayLastStreamID == nil else { return }
        goAwayLastStreamID = lastStreamID
        _ = debugData.withUnsafeBufferPointer {
            nghttp2_submit_goaway(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), lastStreamID, errorCode,
                                  $0.baseAddress, $0.count)
        }
        // Streams already open above last-stream-id will never be answered: reset them so nghttp2 forgets them.
        for i in 0..<streams.count where streams.storage[i].streamID > lastStreamID {
            nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streams.storage[i].streamID,
                                      NGHTTP2_REFUSED_STREAM.rawValue)
        }
        graceTimer = loop.addTimer(after: core.configuration.gracefulCloseTimeout.nanoseconds) { [self] in
            graceTimer = 0
            close(error: nil)
        }
    }

    /// The nghttp2 server callbacks, shared by every server connection. They run inside `mem_recv`/`mem_send`,
    /// called from the connection's own methods while the loop holds it, so they borrow it
    /// (`_withUnsafeGuaranteedRef`): no retain and release per callback, and there are about ten per request.
    static let tables = NGHTTP2Tables { callbacks, option in
        nghttp2_option_set_no_http_messaging(option, 0)
        nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks) { _, frame, userData in
            guard let frame, let userData else { return 0 }
            if frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue)
                && frame.pointee.headers.cat == NGHTTP2_HCAT_REQUEST {
                Unmanaged<HTTP2ServerConnection>.fromOpaque(userData)._withUnsafeGuaranteedRef {
                    $0.beginHeaders(streamID: frame.pointee.hd.stream_id)
                }
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_header_callback(callbacks) { _, frame, name, nameLength, value, valueLength, _, userData in
            guard let frame, let name, let value, let userData else { return 0 }
            Unmanaged<HTTP2ServerConnection>.fromOpaque(userData)._withUnsafeGuaranteedRef {
                $0.header(streamID: frame.pointee.hd.stream_id, name: name, nameLength: nameLength, value: value,
                          valueLength: valueLength)
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks) { _, _, streamID, data, length, userData in
            guard let data, let userData else { return 0 }
            Unmanaged<HTTP2ServerConnection>.fromOpaque(userData)._withUnsafeGuaranteedRef {
                $0.data(streamID: streamID, data, length)
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks) { _, frame, userData in
            guard let frame, let userData else { return 0 }
            let type = frame.pointee.hd.type
            if (type == UInt8(NGHTTP2_HEADERS.rawValue) || type == UInt8(NGHTTP2_DATA.rawValue))
                && frame.pointee.hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0 {
                Unmanaged<HTTP2ServerConnection>.fromOpaque(userData)._withUnsafeGuaranteedRef {
                    $0.requestComplete(streamID: frame.pointee.hd.stream_id)
                }
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks) { _, streamID, _, userData in
            guard let userData else { return 0 }
            Unmanaged<HTTP2ServerConnection>.fromOpaque(userData)._withUnsafeGuaranteedRef {
                $0.streamClosed(streamID: streamID)
            }
            return 0
        }
    }
}

private let serverReadBody: nghttp2_data_source_read_callback = { _, streamID, buffer, length, flags, _, userData in
    guard let buffer, let flags, let userData else { return Int(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue) }
    return Unmanaged<HTTP2ServerConnection>.fromOpaque(userData)._withUnsafeGuaranteedRef {
        $0.readBody(streamID: streamID, into: buffer, length: length, flags: flags)
    }
}
