#if canImport(Glibc)
import Glibc
#endif
import ClarionTransport

// The HTTP/1.1 client: for servers that do not negotiate h2 (a Web Push service may not: RFC 8030 does not require
// HTTP/2). It lives beside the HTTP/2 pools because it takes the same requests (`HTTP2Request`), gives the same
// results (`HTTP2Result`, `HTTP2CompletionSink`) and reads the same configuration, so a provider classifies one kind
// of answer whichever protocol carried it. ClarionHTTP1 is the API server: the providers do not depend on it.

/// Writes one HTTP/1.1 request: request line, `Host`, the caller's fields, `Content-Length`, the body. Pure.
enum HTTP1RequestWriter {
    /// Fields the writer sets itself, dropped from the caller's list (the framing is ours to decide).
    private static let reserved: Set<String> = ["host", "content-length", "transfer-encoding", "connection", "te", "upgrade",
                                                "keep-alive"]

    /// Refuses anything that would let a value change the framing (CR, LF, NUL in the target or a field: request
    /// splitting), a method or field name that is not a token, and a target that does not start with "/".
    static func serialize(_ request: HTTP2Request, defaultAuthority: String) throws(HTTP2Error) -> [UInt8] {
        let path = request.fullPath
        guard !request.method.isEmpty, request.method.utf8.allSatisfy(isTokenByte) else {
            throw .invalidRequest("method is not a token")
        }
        guard path.hasPrefix("/"), path.utf8.allSatisfy({ $0 > 32 && $0 != 127 }) else {
            throw .invalidRequest("request target must start with / and hold no space or control byte")
        }
        let authority = request.authority ?? defaultAuthority
        guard !authority.isEmpty, authority.utf8.allSatisfy({ $0 > 32 && $0 != 127 }) else {
            throw .invalidRequest("bad authority")
        }
        var out: [UInt8] = []
        out.reserveCapacity(256 + request.body.count)
        out += request.method.utf8
        out.append(32)
        out += path.utf8
        out += " HTTP/1.1\r\nHost: ".utf8
        out += authority.utf8
        out += "\r\n".utf8
        for (name, value) in request.headers {
            guard !name.isEmpty, name.utf8.allSatisfy(isTokenByte) else {
                throw .invalidRequest("header name is not a token")
            }
            guard value.utf8.allSatisfy({ $0 >= 32 && $0 != 127 || $0 == 9 }) else {
                throw .invalidRequest("control byte in the value of \(name)")
            }
            if reserved.contains(name.lowercased()) { continue }
            out += name.utf8
            out += ": ".utf8
            out += value.utf8
            out += "\r\n".utf8
        }
        out += "Content-Length: \(request.body.count)\r\n\r\n".utf8
        out += request.body
        return out
    }

    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case 48...57, 65...90, 97...122: true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
             UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
             UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"): true
        default: false
        }
    }
}

/// A pool of HTTP/1.1 keep-alive connections to one origin, on one event loop: one request in flight per
/// connection (no pipelining: a server that fails mid-pipeline leaves every later request in doubt), at most
/// `configuration.connectionCount` connections, requests beyond them waiting in a bounded queue. A connection is
/// reused after a response unless the server said `Connection: close` (or delimited the body by closing), and
/// closed after `idleTimeout` without a request. Every connection's resolved address passes
/// `configuration.addressPolicy`. TLS offers ALPN "http/1.1" and accepts a server that answers nothing.
///
/// It reads the HTTP/2 pool's configuration; the HTTP/2-only settings (streams, PINGs, window, GOAWAY, backoff)
/// do not apply. Same two ways in as `HTTP2ClientPool`: `send` and the batch path `submit`.
public final class HTTP1ClientPool: Sendable {
    public let configuration: HTTP2PoolConfiguration
    public let key: HTTP2Client.PoolKey
    public let eventLoop: EventLoop
    private let driver: HTTP1PoolDriver

    public init(configuration: HTTP2PoolConfiguration, group: EventLoopGroup) throws(TLSConfigurationError) {
        self.configuration = configuration
        key = HTTP2Client.PoolKey(configuration: configuration)
        let loop = group.next()
        eventLoop = loop
        let driver = try HTTP1PoolDriver(configuration: configuration, loop: loop, resolver: group.resolver)
        self.driver = driver
        loop.execute { driver.start() }
    }

    /// Sends one request and waits for its response or failure.
    public func send(_ request: HTTP2Request) async -> HTTP2Result {
        guard driver.gate.reserve(1) == 1 else { return .failure(.overloaded) }
        let deadline = monotonicNow() &+ (request.timeout ?? configuration.requestTimeout).nanoseconds
        let driver = self.driver
        return await withCheckedContinuation { continuation in
            eventLoop.execute {
                driver.enqueue(PendingRequest(request: request, continuation: continuation, deadline: deadline))
            }
        }
    }

    /// The batch path, as `HTTP2ClientPool.submit`: admits a prefix, each admitted result reaches `sink` once, on
    /// this pool's loop thread, with the request's `tag`.
    @discardableResult
    public func submit(_ requests: [HTTP2Request], sink: any HTTP2CompletionSink) -> Int {
        guard !requests.isEmpty else { return 0 }
        let admitted = driver.gate.reserve(requests.count)
        guard admitted > 0 else { return 0 }
        let now = monotonicNow()
        let driver = self.driver
        if eventLoop.inEventLoop {
            driver.enqueueBatch(requests, count: admitted, sink: sink, now: now)
        } else {
            eventLoop.execute { driver.enqueueBatch(requests, count: admitted, sink: sink, now: now) }
        }
        return admitted
    }

    public func statistics() async -> HTTP1PoolStatistics {
        let driver = self.driver
        return await withCheckedContinuation { continuation in
            eventLoop.execute { continuation.resume(returning: driver.statistics()) }
        }
    }

    /// Fails queued requests with `.shutdown`, lets in-flight ones finish (or time out), closes every connection.
    public func shutdown() async {
        let driver = self.driver
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            eventLoop.execute { driver.shutdown(continuation) }
        }
    }
}

/// A snapshot of an HTTP/1.1 pool, for tests, logs and metrics.
public struct HTTP1PoolStatistics: Sendable, Hashable {
    /// Connections open now (TCP and TLS done), idle or carrying a request.
    public var openConnections: Int
    public var idleConnections: Int
    public var queuedRequests: Int
    /// Connections that completed TCP (and TLS) since the pool started.
    public var connectionsOpened: Int
    /// Attempts that failed before that (resolution, address policy, TCP, TLS, timeout).
    public var connectAttemptsFailed: Int
    /// Complete responses read.
    public var responsesReceived: Int
}

/// Runs one HTTP/1.1 pool on its loop: the queue, the connections, the deadlines. Everything here runs on `loop`.
final class HTTP1PoolDriver: EventLoopFlushable, @unchecked Sendable {
    let loop: EventLoop
    let configuration: HTTP2PoolConfiguration
    let gate: PoolGate
    let defaultAuthority: String
    private let resolver: HostResolver
    private var tlsContext: TLSContext?
    /// Waiting requests, oldest first from `queueHead`.
    private var queue: [PendingRequest] = []
    private var queueHead = 0
    /// Established connections without a request, most recently used last (reused first: the warmest).
    private var idle: [HTTP1ClientConnection] = []
    /// Every connection with a socket (connecting, idle or busy).
    private var connections: [ObjectIdentifier: HTTP1ClientConnection] = [:]
    /// Connection attempts still resolving the host (no socket yet).
    private var resolving = 0
    private var batchers: [ObjectIdentifier: CompletionBatcher] = [:]
    private var dispatchScheduled = false
    private var tickTimer: UInt64 = 0
    private var shuttingDown = false
    private var shutdownWaiters: [CheckedContinuation<Void, Never>] = []
    private var connectionsOpened = 0
    private var connectAttemptsFailed = 0
    private(set) var responsesReceived = 0

    init(configuration: HTTP2PoolConfiguration, loop: EventLoop, resolver: HostResolver) throws(TLSConfigurationError) {
        self.loop = loop
        self.configuration = configuration
        self.resolver = resolver
        defaultAuthority = configuration.origin.authority
        gate = PoolGate(limit: max(1, configuration.maxQueuedRequests))
        try configuration.validateTLS()
    }

    func start() {
        tickTimer = loop.addTimer(after: configuration.tickInterval.nanoseconds) { [self] in tick() }
    }

    private var queuedCount: Int { queue.count - queueHead }

    // MARK: - Requests in and out

    func enqueue(_ pending: PendingRequest) {
        admit(pending)
        scheduleDispatch()
    }

    func enqueueBatch(_ requests: [HTTP2Request], count: Int, sink: any HTTP2CompletionSink, now: NanoTime) {
        let key = ObjectIdentifier(sink)
        let batcher = batchers[key] ?? CompletionBatcher(sink: sink, loop: loop)
        batchers[key] = batcher
        batcher.outstanding += count
        let defaultTimeout = configuration.requestTimeout.nanoseconds
        for i in 0..<count {
            let request = requests[i]
            admit(PendingRequest(request: request, batcher: batcher, deadline: now &+ (request.timeout?.nanoseconds ?? defaultTimeout)))
        }
        scheduleDispatch()
    }

    private func admit(_ pending: PendingRequest) {
        if shuttingDown {
            gate.release()
            complete(pending, .failure(.shutdown))
            return
        }
        queue.append(pending)
    }

    func complete(_ pending: PendingRequest, _ result: HTTP2Result) {
        if case .success = result { responsesReceived += 1 }
        if let batcher = pending.batcher {
            batcher.add(HTTP2Completion(tag: pending.request.tag, result: result))
            batcher.outstanding -= 1
            if batcher.outstanding == 0 { batchers[ObjectIdentifier(batcher.sink)] = nil }
        } else {
            pending.continuation?.resume(returning: result)
        }
    }

    private func popQueued() -> PendingRequest? {
        guard queueHead < queue.count else { return nil }
        let pending = queue[queueHead]
        queueHead += 1
        if queueHead == queue.count {
            queue.removeAll(keepingCapacity: true)
            queueHead = 0
        } else if queueHead >= 1024 && queueHead * 2 >= queue.count {
            queue.removeFirst(queueHead)
            queueHead = 0
        }
        return pending
    }

    /// Fails every queued request with `error`.
    private func failQueued(_ error: HTTP2Error) {
        while let pending = popQueued() {
            gate.release()
            complete(pending, .failure(error))
        }
    }

    // MARK: - Dispatch

    private func scheduleDispatch() {
        guard !dispatchScheduled else { return }
        dispatchScheduled = true
        loop.scheduleFlush(self, phase: .dispatch)
    }

    func flushAtEndOfTurn() {
        dispatchScheduled = false
        while queuedCount > 0, let connection = idle.popLast() {
            let pending = popQueued()!
            gate.release()
            connection.start(pending)
        }
        guard !shuttingDown else { return }
        // Open connections for what still waits, up to the limit; attempts under way count as capacity to come.
        let opening = resolving + connections.values.reduce(0) { $0 + ($1.isEstablished ? 0 : 1) }
        let room = max(1, configuration.connectionCount) - connections.count - resolving
        let wanted = min(room, queuedCount - opening)
        if wanted > 0 { for _ in 0..<wanted { connect() } }
    }

    /// A connection is established, or finished its response and stays open: it takes the next request.
    func connectionReady(_ connection: HTTP1ClientConnection, established: Bool) {
        if established { connectionsOpened += 1 }
        if shuttingDown {
            connection.close(error: nil)
            return
        }
        idle.append(connection)
        scheduleDispatch()
    }

    func connectionClosed(_ connection: HTTP1ClientConnection, error: HTTP2Error?) {
        connections[ObjectIdentifier(connection)] = nil
        idle.removeAll { $0 === connection }
        if !connection.isEstablished {
            attemptFailed(error ?? .connectFailed("connection closed during the handshake"))
        } else {
            scheduleDispatch()
        }
        finishShutdownIfDone()
    }

    /// A connection attempt failed. With no other connection up or coming, nothing would ever take the waiting
    /// requests: they fail with the reason (the caller retries later; nothing is retried here in a loop).
    private func attemptFailed(_ error: HTTP2Error) {
        connectAttemptsFailed += 1
        if connections.isEmpty && resolving == 0 { failQueued(error) }
        scheduleDispatch()
    }

    // MARK: - Connecting

    private func connect() {
        resolving += 1
        let origin = configuration.origin
        resolver.resolve(host: origin.host, port: origin.port) { [self] resolved in
            let result = resolved.mapError(HTTP2Error.init)
            if loop.inEventLoop {
                finishConnect(result)
            } else {
                loop.execute { self.finishConnect(result) }
            }
        }
    }

    private func finishConnect(_ result: Result<[SocketAddress], HTTP2Error>) {
        resolving -= 1
        func failed(_ error: HTTP2Error) {
            attemptFailed(error)
            finishShutdownIfDone()
        }
        if shuttingDown {
            failed(.shutdown)
            return
        }
        let address: SocketAddress
        switch result {
        case .failure(let error):
            failed(error)
            return
        case .success(let addresses):
            // The same outbound address policy as the HTTP/2 pools: every address is judged, and the one
            // connected to is among them (no second resolution to rebind).
            if let policy = configuration.addressPolicy, !policy.allowsHost(configuration.origin.host),
               let refused = addresses.first(where: { !policy.allows(address: $0.addressText) }) {
                failed(.connectFailed("\(configuration.origin.host) resolves to \(refused.addressText), which the node's "
                    + "outbound address policy refuses (loopback, private and reserved ranges need CLARION_PROVIDER_ALLOW_HOSTS)"))
                return
            }
            guard let first = addresses.first else {
                failed(.connectFailed("\(configuration.origin.host) resolves to no address"))
                return
            }
            address = first
        }
        var tls: TLSSession?
        if configuration.origin.scheme == .https {
            do {
                if tlsContext == nil {
                    tlsContext = try TLSContext(clientTrusting: configuration.trustedCAPEM, identity: configuration.clientIdentity,
                                                offering: ["http/1.1"])
                }
            } catch {
                failed(.tlsHandshakeFailed("\(error)"))
                return
            }
            do {
                tls = try TLSSession(context: tlsContext!, serverName: configuration.origin.host)
            } catch {
                failed(HTTP2Error(error))
                return
            }
        }
        let fd = SocketIO.makeTCPSocket(family: address.family)
        guard fd >= 0 else {
            failed(.connectFailed("socket: \(SocketIO.errorString(errno))"))
            return
        }
        if case .failed(let code) = SocketIO.connect(fd, to: address) {
            _ = Glibc.close(fd)
            failed(.connectFailed("\(address): \(SocketIO.errorString(code))"))
            return
        }
        let connection = HTTP1ClientConnection(pool: self, fd: fd, tls: tls, now: monotonicNow())
        connections[ObjectIdentifier(connection)] = connection
        connection.register()
    }

    // MARK: - Time

    private func tick() {
        let now = monotonicNow()
        if queuedCount > 0 {
            // Queued requests past their deadline fail with `.timeout`; the rest keep their order.
            var kept: [PendingRequest] = []
            while let pending = popQueued() {
                if pending.deadline <= now {
                    gate.release()
                    complete(pending, .failure(.timeout))
                } else {
                    kept.append(pending)
                }
            }
            queue = kept
            queueHead = 0
        }
        for connection in Array(connections.values) {
            connection.tick(now: now, connectTimeout: configuration.connectTimeout.nanoseconds,
                            idleTimeout: configuration.idleTimeout?.nanoseconds)
        }
        if !(shuttingDown && connections.isEmpty) {
            tickTimer = loop.addTimer(after: configuration.tickInterval.nanoseconds) { [self] in tick() }
        }
    }

    // MARK: - Shutdown

    func shutdown(_ done: CheckedContinuation<Void, Never>) {
        shutdownWaiters.append(done)
        shuttingDown = true
        failQueued(.shutdown)
        for connection in idle { connection.close(error: nil) }
        idle.removeAll()
        for connection in Array(connections.values) where !connection.isEstablished { connection.close(error: nil) }
        finishShutdownIfDone()
    }

    private func finishShutdownIfDone() {
        guard shuttingDown, connections.isEmpty, resolving == 0, !shutdownWaiters.isEmpty else { return }
        if tickTimer != 0 { loop.cancelTimer(tickTimer) }
        tickTimer = 0
        let waiters = shutdownWaiters
        shutdownWaiters.removeAll()
        for waiter in waiters { waiter.resume() }
    }

    func statistics() -> HTTP1PoolStatistics {
        HTTP1PoolStatistics(openConnections: connections.values.filter(\.isEstablished).count, idleConnections: idle.count,
                            queuedRequests: queuedCount, connectionsOpened: connectionsOpened,
                            connectAttemptsFailed: connectAttemptsFailed, responsesReceived: responsesReceived)
    }
}

/// One HTTP/1.1 client connection: writes a request, reads its response with `HTTP1ResponseParser`, and tells the
/// pool whether it can take another. One request at a time. Confined to the pool's loop.
///
/// States: connecting (TCP, TLS) -> idle <-> busy -> closed; connecting, idle and busy may close at any time.
final class HTTP1ClientConnection: SocketChannel {
    private unowned(unsafe) let pool: HTTP1PoolDriver
    private var parser = HTTP1ResponseParser()
    private var current: PendingRequest?
    private(set) var isEstablished = false
    private let createdAt: NanoTime
    private var idleSince: NanoTime
    /// The reason this connection closed itself for (timeout, a response it could not read).
    private var closeReason: HTTP2Error?

    /// Never called; see `HTTP2ClientConnection.init(loop:fd:tls:connecting:writeChunks:)`.
    @available(*, unavailable)
    override init(loop: EventLoop, fd: Int32, tls: TLSSession?, connecting: Bool, writeChunks: WriteChunks = .server) {
        fatalError("use the connection's own initializer")
    }

    init(pool: HTTP1PoolDriver, fd: Int32, tls: TLSSession?, now: NanoTime) {
        self.pool = pool
        createdAt = now
        idleSince = now
        super.init(loop: pool.loop, fd: fd, tls: tls, connecting: true, writeChunks: .client)
    }

    override func didBecomeActive() {
        isEstablished = true
        idleSince = monotonicNow()
        pool.connectionReady(self, established: true)
    }

    /// Writes `pending`'s request; the response comes back through the pool.
    func start(_ pending: PendingRequest) {
        let bytes: [UInt8]
        do {
            bytes = try HTTP1RequestWriter.serialize(pending.request, defaultAuthority: pool.defaultAuthority)
        } catch {
            pool.complete(pending, .failure(error))
            pool.connectionReady(self, established: false)
            return
        }
        current = pending
        bytes.withUnsafeBytes { emit($0.baseAddress!, $0.count) }
        scheduleFlush()
    }

    override func didRead(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard current != nil else {
            // Nothing asked: a server that answers unasked cannot be trusted with the next request.
            fail(.protocolError("\(bytes.count) bytes arrived with no request in flight"))
            return false
        }
        parser.append(bytes)
        let response: HTTP1ParsedResponse
        do {
            guard let parsed = try parser.next() else { return true }
            response = parsed
        } catch {
            fail(.protocolError(error.description))
            return false
        }
        guard parser.bufferedCount == 0 else {
            fail(.protocolError("bytes beyond the response (no request was pipelined)"))
            return false
        }
        finish(response)
        return state != .closed
    }

    private func finish(_ response: HTTP1ParsedResponse) {
        guard let pending = current else { return }
        current = nil
        pool.complete(pending, .success(HTTP2Response(status: response.status, headers: response.headers, body: response.body)))
        if response.keepAlive && state == .active {
            idleSince = monotonicNow()
            pool.connectionReady(self, established: false)
        } else {
            close(error: nil)  // `Connection: close`, or a body the close delimited
        }
    }

    private func fail(_ error: HTTP2Error) {
        closeReason = error
        close(error: TransportError(error))
    }

    /// Deadlines: the request in flight, the connect, the idle time.
    func tick(now: NanoTime, connectTimeout: UInt64, idleTimeout: UInt64?) {
        guard state != .closed else { return }
        if let current, current.deadline <= now {
            fail(.timeout)
        } else if !isEstablished, now &- createdAt >= connectTimeout {
            fail(.connectFailed("TCP or TLS not established within \(connectTimeout / 1_000_000) ms"))
        } else if isEstablished, current == nil, let idleTimeout, now &- idleSince >= idleTimeout {
            close(error: nil)
        }
    }

    override func didClose(error: TransportError?) {
        let reason = closeReason ?? error.map(HTTP2Error.init)
        if let pending = current {
            current = nil
            // The close may be what ends the body (a response without Content-Length or chunking).
            if closeReason == nil, let response = try? parser.finish() {
                pool.complete(pending, .success(HTTP2Response(status: response.status, headers: response.headers, body: response.body)))
            } else {
                let lost: HTTP2Error = switch reason {
                case .timeout?, .protocolError?, .connectionLost?: reason!
                case let other?: .connectionLost("\(other)")
                case nil: .connectionLost("connection closed")
                }
                pool.complete(pending, .failure(lost))
            }
        }
        pool.connectionClosed(self, error: reason)
    }
}
