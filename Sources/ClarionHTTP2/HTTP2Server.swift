#if canImport(Glibc)
import Glibc
#endif
internal import CNghttp2
import Synchronization
import ClarionTransport

/// An HTTP/2 server (TLS with ALPN "h2", or h2c prior knowledge) on an `EventLoopGroup`. The handler runs on the
/// loop thread of the request's connection and must not block; use `.respondAfter` for latency.
///
/// Lifecycle: `init` -> `start()` (binds; `port` is then known) -> `shutdown()` (stops accepting, GOAWAY to every
/// connection, waits until they closed or `gracefulCloseTimeout` passed).
public final class HTTP2Server: Sendable {
    public let configuration: HTTP2ServerConfiguration
    private let core: HTTP2ServerCore
    private let listener = Mutex<ListenerState>(.idle)

    private enum ListenerState {
        case idle
        case listening(fd: Int32, port: Int, loop: EventLoop)
        case stopped
    }

    public init(configuration: HTTP2ServerConfiguration, group: EventLoopGroup,
                handler: @escaping HTTP2ServerHandler) throws {
        self.configuration = configuration
        let tlsContext = try configuration.tls.map { identity throws(TLSConfigurationError) in
            try TLSContext(server: identity, clientCertificates: configuration.clientCertificates, alpn: "h2")
        }
        core = HTTP2ServerCore(configuration: configuration, group: group, tlsContext: tlsContext, handler: handler)
    }

    /// Binds and starts accepting. Returns the bound port (useful with port 0).
    @discardableResult
    public func start() throws -> Int {
        guard let address = SocketAddress(numericHost: configuration.host, port: configuration.port) else {
            throw HTTP2ServerError(reason: "host must be a numeric address: \(configuration.host)")
        }
        let fd: Int32, port: Int
        switch SocketIO.listen(on: address, backlog: configuration.backlog) {
        case .success(let bound): (fd, port) = bound
        case .failure(let failure): throw HTTP2ServerError(reason: "\(failure.call) \(address): \(failure.reason)")
        }
        let loop = core.group.loops[0]
        let started = listener.withLock { state -> Bool in
            guard case .idle = state else { return false }
            state = .listening(fd: fd, port: port, loop: loop)
            return true
        }
        guard started else {
            close(fd)
            throw HTTP2ServerError(reason: "already started")
        }
        let core = self.core
        loop.execute {
            loop.register(fd: fd, handler: Listener(fd: fd, core: core), readable: true, writable: false)
        }
        return port
    }

    /// The bound port (0 before `start()`).
    public var port: Int {
        listener.withLock { state in
            if case .listening(_, let port, _) = state { return port }
            return 0
        }
    }

    /// Connections currently open.
    public var connectionCount: Int { core.liveConnections.load(ordering: .relaxed) }

    /// Stops accepting, sends GOAWAY on every connection and returns once all are closed.
    public func shutdown() async {
        let previous = listener.withLock { state -> ListenerState in
            defer { state = .stopped }
            return state
        }
        if case .listening(let fd, _, let loop) = previous {
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                loop.execute {
                    loop.deregister(fd: fd)
                    close(fd)
                    done.resume()
                }
            }
        }
        await core.closeAll()
    }
}

/// State shared by the listener and every connection of one server.
final class HTTP2ServerCore: Sendable {
    let configuration: HTTP2ServerConfiguration
    let group: EventLoopGroup
    let tlsContext: TLSContext?
    let handler: HTTP2ServerHandler
    let liveConnections = Atomic<Int>(0)
    private let nextConnectionID = Atomic<UInt64>(1)
    /// One registry per loop, touched only on that loop.
    private let registries: [LoopRegistry]
    private let closeWaiters = Mutex<(shuttingDown: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    final class LoopRegistry: @unchecked Sendable {
        // Loop-confined: only its loop reads or writes `connections`.
        var connections: [UInt64: HTTP2ServerConnection] = [:]
    }

    init(configuration: HTTP2ServerConfiguration, group: EventLoopGroup, tlsContext: TLSContext?,
         handler: @escaping HTTP2ServerHandler) {
        self.configuration = configuration
        self.group = group
        self.tlsContext = tlsContext
        self.handler = handler
        registries = group.loops.map { _ in LoopRegistry() }
    }

    /// Called on the target loop for each accepted socket.
    func adopt(fd: Int32, on loop: EventLoop) {
        if closeWaiters.withLock({ $0.shuttingDown }) {
            close(fd)
            return
        }
        var tls: TLSSession?
        if let tlsContext {
            do {
                tls = try TLSSession(context: tlsContext, serverName: nil)
            } catch {
                close(fd)
                return
            }
        }
        let id = nextConnectionID.wrappingAdd(1, ordering: .relaxed).oldValue
        let connection = HTTP2ServerConnection(core: self, loop: loop, fd: fd, tls: tls, connectionID: id)
        liveConnections.wrappingAdd(1, ordering: .relaxed)
        registries[loop.index].connections[id] = connection
        connection.register()
    }

    func connectionClosed(_ connection: HTTP2ServerConnection) {
        registries[connection.loop.index].connections[connection.connectionID] = nil
        let remaining = liveConnections.wrappingSubtract(1, ordering: .acquiringAndReleasing).newValue
        if remaining == 0 {
            let waiters = closeWaiters.withLock { state -> [CheckedContinuation<Void, Never>] in
                guard state.shuttingDown else { return [] }
                defer { state.waiters.removeAll() }
                return state.waiters
            }
            for waiter in waiters { waiter.resume() }
        }
    }

    func closeAll() async {
        closeWaiters.withLock { $0.shuttingDown = true }
        for loop in group.loops {
            let registry = registries[loop.index]
            loop.execute {
                for connection in Array(registry.connections.values) { connection.shutdownGracefully() }
            }
        }
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let resumeNow = closeWaiters.withLock { state -> Bool in
                if liveConnections.load(ordering: .acquiring) == 0 { return true }
                state.waiters.append(done)
                return false
            }
            if resumeNow { done.resume() }
        }
    }
}

/// Accepts on the listening socket and spreads connections over the group's loops, round robin.
private final class Listener: EventLoopSelectable {
    let fd: Int32
    let core: HTTP2ServerCore

    init(fd: Int32, core: HTTP2ServerCore) {
        self.fd = fd
        self.core = core
    }

    func selectableReady(readable: Bool, writable: Bool, failed: Bool) {
        for _ in 0..<64 {
            guard case .accepted(let client) = SocketIO.accept(fd) else { return }
            let loop = core.group.next()
            if loop.inEventLoop {
                core.adopt(fd: client, on: loop)
            } else {
                let core = self.core
                loop.execute { core.adopt(fd: client, on: loop) }
            }
        }
    }
}
