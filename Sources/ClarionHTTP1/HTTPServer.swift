#if canImport(Glibc)
import Glibc
#endif
internal import ClarionTransport
import Foundation
import Synchronization

/// The HTTP/1.1 server: non-blocking sockets on our own epoll loops (one thread per loop), keep-alive, pipelining,
/// per-route body limits, handlers that answer later from any thread, an idle timeout, and a graceful shutdown.
/// (It replaced libmicrohttpd: docs/architecture.md says why.)
///
/// Lifecycle: `idle` -> `start()` -> `starting` -> `running` (or back to `idle` if binding fails)
/// -> `shutdown()` -> `draining` -> `stopped`; `shutdown()` of an idle server goes straight to `stopped`.
/// `run()` is start + wait for cancellation or `shutdown()` + drain, for an owner that runs it as a task.
///
/// `GET /health` and `GET /ready` are added to the router unless it already has them.
public final class HTTPServer: Sendable {
    public let configuration: HTTPServerConfiguration
    private let core: ServerCore
    private let state = Mutex<LifecycleState>(.idle)
    private let stopRequested = OneShotSignal()
    private let stopped = OneShotSignal()

    /// The loops and the listening socket of a started server.
    private struct Running: Sendable {
        let group: EventLoopGroup
        let listener: Listener
    }

    private enum LifecycleState {
        case idle
        case starting
        case running(Running, port: Int)
        case draining(port: Int)
        case stopped
    }

    public init(configuration: HTTPServerConfiguration, router: Router) {
        self.configuration = configuration
        var router = router
        let draining = DrainFlag()
        let readiness = configuration.readiness
        HealthRoutes.addMissing(to: &router) {
            draining.isSet ? .notReady(reason: "shutting down") : await readiness()
        }
        self.core = ServerCore(router: router, accessLog: configuration.accessLog, draining: draining,
                               deadlines: RequestDeadlines(idle: configuration.connectionTimeout,
                                                           head: configuration.requestHeadTimeout,
                                                           body: configuration.requestBodyTimeout,
                                                           bodyMinimumRate: configuration.requestBodyMinimumRate),
                               connectionLimit: max(1, configuration.connectionLimit),
                               loops: max(1, configuration.threadPoolSize), requestMetrics: configuration.requestMetrics)
    }

    /// Connections open now.
    public var openConnections: Int { core.liveConnections.load(ordering: .relaxed) }
    /// Connections closed on accept because the connection limit was reached, since start.
    public var connectionsRefusedAtLimit: Int { core.refusedAtLimit.load(ordering: .relaxed) }

    deinit {
        // Not shut down gracefully: stop hard.
        if case .running(let running, _) = state.withLock({ $0 }) {
            core.refusing.set()
            Self.stop(running, core: core)
        }
    }

    /// The bound port (the ephemeral one when configured with 0); 0 when not running.
    public var port: Int {
        state.withLock { state in
            switch state {
            case .running(_, let port), .draining(let port): port
            case .idle, .starting, .stopped: 0
            }
        }
    }

    /// Requests received and not yet finished (for tests and metrics).
    public var inFlightRequests: Int { core.inFlight.load(ordering: .relaxed) }

    /// Whether `shutdown()` has begun (responses carry `Connection: close` from then on). For tests.
    var isDraining: Bool { core.draining.isSet }

    /// Binds and starts the loop threads. Returns once the port is listening.
    public func start() throws(HTTPServerError) {
        let claimed = state.withLock { state -> Bool in
            guard case .idle = state else { return false }
            state = .starting
            return true
        }
        guard claimed else { throw HTTPServerError(code: .alreadyStarted, message: "the server was already started") }
        do {
            let (running, port) = try listen()
            state.withLock { $0 = .running(running, port: port) }
        } catch {
            state.withLock { $0 = .idle }
            throw error
        }
    }

    /// Starts, then serves until the task is cancelled or `shutdown()` is called, then drains.
    public func run() async throws(HTTPServerError) {
        try start()
        await withTaskCancellationHandler {
            await stopRequested.wait()
        } onCancel: {
            stopRequested.fire()
        }
        await shutdown()
    }

    /// Stops accepting connections, lets in-flight requests finish (up to the grace period; stragglers get
    /// 503), then closes the connections and stops the threads. Safe to call more than once and from several tasks.
    public func shutdown() async {
        stopRequested.fire()
        // A concurrent start() finishes binding first (milliseconds), then is shut down like any other.
        while case .starting = state.withLock({ $0 }) {
            try? await Task.sleep(for: .milliseconds(1))
        }
        let running: Running? = state.withLock { state in
            switch state {
            case .running(let running, let port):
                state = .draining(port: port)
                return running
            case .idle:
                state = .stopped
                return nil
            case .starting, .draining, .stopped:
                return nil  // .starting cannot be seen here: the loop above waited it out
            }
        }
        guard let running else {
            if case .stopped = state.withLock({ $0 }) { stopped.fire() }
            await stopped.wait()
            return
        }

        core.draining.set()
        // Closing the listening socket makes the kernel refuse new connections at once (so a load balancer
        // retries elsewhere). Connections already open are still served; their responses carry `Connection: close`.
        await onLoop(running.group.loops[0]) { _ in running.listener.stop() }
        let deadline = ContinuousClock.now + configuration.shutdownGracePeriod
        while core.inFlight.load(ordering: .relaxed) > 0 && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(5))
        }
        if core.inFlight.load(ordering: .relaxed) > 0 {
            core.refusing.set()
            for loop in running.group.loops {
                let registry = core.registries[loop.index]
                loop.execute {
                    for connection in Array(registry.connections.values) { connection.abandonWaitingRequest() }
                }
            }
            let flushDeadline = ContinuousClock.now + .seconds(1)
            while core.inFlight.load(ordering: .relaxed) > 0, ContinuousClock.now < flushDeadline {
                try? await Task.sleep(for: .milliseconds(5))
            }
        }
        // Joining the loop threads blocks: do it off the cooperative pool.
        let core = self.core
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let thread = Thread {
                Self.stop(running, core: core, listenerClosed: true)
                continuation.resume()
            }
            thread.start()
        }
        configuration.accessLog?.flush()
        state.withLock { $0 = .stopped }
        stopped.fire()
    }

    /// Closes every connection on its loop, then stops and joins the loop threads.
    private static func stop(_ running: Running, core: ServerCore, listenerClosed: Bool = false) {
        let group = running.group
        let done = DispatchSemaphore(value: 0)
        for loop in group.loops {
            let registry = core.registries[loop.index]
            loop.execute {
                registry.sweeping = false
                if !listenerClosed && loop.index == 0 { running.listener.stop() }
                for connection in Array(registry.connections.values) { connection.close() }
                done.signal()
            }
        }
        for _ in group.loops { _ = done.wait(timeout: .now() + .seconds(5)) }
        group.shutdown()
    }

    private func onLoop(_ loop: EventLoop, _ body: @escaping @Sendable (EventLoop) -> Void) async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            loop.execute {
                body(loop)
                done.resume()
            }
        }
    }

    // MARK: - Listening

    private func listen() throws(HTTPServerError) -> (Running, Int) {
        let config = configuration
        // ALPN http/1.1: a client that offers h2 as well (curl, browsers) must not be told this port speaks it.
        var tlsContext: TLSContext?
        if let identity = config.tls {
            do { tlsContext = try TLSContext(server: identity, alpn: "http/1.1") } catch {
                throw HTTPServerError(code: .startFailed, message: "TLS certificate or key: \(error.reason)")
            }
        }
        guard (0...65535).contains(config.port) else {
            throw HTTPServerError(code: .invalidAddress, message: "port \(config.port) is out of range")
        }
        let host = config.host == "localhost" ? "127.0.0.1" : config.host
        guard let address = SocketAddress(numericHost: host, port: config.port) else {
            throw HTTPServerError(code: .invalidAddress, message: "'\(config.host)' is not a numeric IP address")
        }
        let fd: Int32, port: Int
        switch SocketIO.listen(on: address, backlog: 1024) {
        case .success(let bound): (fd, port) = bound
        case .failure(let failure):
            throw HTTPServerError(code: .startFailed,
                                  message: "could not listen on \(config.host):\(config.port): \(failure.call): \(failure.reason)")
        }
        let group: EventLoopGroup
        do {
            group = try EventLoopGroup(threadCount: max(1, config.threadPoolSize), threadName: "clarion-api")
        } catch {
            Glibc.close(fd)
            throw HTTPServerError(code: .startFailed, message: "event loops: \(error)")
        }
        let core = self.core
        let listener = Listener(fd: fd, core: core, group: group, tlsContext: tlsContext)
        // Weakly: the core outlives the listener (which holds it).
        core.acceptPause.install { [weak listener] in
            guard let listener else { return }
            listener.loop.execute { listener.resume() }
        }
        let ready = DispatchSemaphore(value: 0)
        for loop in group.loops {
            loop.execute {
                if loop.index == 0 { listener.resume() }
                Self.scheduleSweep(on: loop, core: core)
                ready.signal()
            }
        }
        for _ in group.loops { ready.wait() }
        return (Running(group: group, listener: listener), port)
    }

    /// Every `RequestDeadlines.sweepInterval` (a second by default) on each loop: times out requests past their
    /// deadline, closes connections idle past the timeout and lingering ones past their time.
    private static func scheduleSweep(on loop: EventLoop, core: ServerCore) {
        let registry = core.registries[loop.index]
        loop.addTimer(after: core.deadlines.sweepInterval) {
            guard registry.sweeping else { return }
            let now = monotonicNow()
            for connection in Array(registry.connections.values) { connection.sweep(now: now) }
            scheduleSweep(on: loop, core: core)
        }
    }
}

/// Accepts on the listening socket (on loop 0) and spreads connections over the loops, round robin. Over the
/// connection limit a new connection is closed at once.
///
/// Out of file descriptors (or kernel memory), `accept` fails and leaves the connection queued: the listener stays
/// readable, and a loop that kept asking would spin at full CPU without serving anyone. So the listener rests: it
/// leaves epoll until a connection of this server closes (`AcceptPause`) or `restNanoseconds` pass (the
/// descriptors may be held by something else), then accepts the queued connections.
///
/// States (loop 0 only): watching -> resting (accept exhausted) -> watching (a connection closed, or the rest is
/// over); watching or resting -> stopped (shutdown: the socket is closed).
private final class Listener: EventLoopSelectable, @unchecked Sendable {
    let fd: Int32
    let core: ServerCore
    let group: EventLoopGroup
    let loop: EventLoop
    let tlsContext: TLSContext?
    private var watching = false
    private var stopped = false
    private var restTimer: UInt64?

    static let restNanoseconds: UInt64 = 250_000_000

    init(fd: Int32, core: ServerCore, group: EventLoopGroup, tlsContext: TLSContext?) {
        self.fd = fd
        self.core = core
        self.group = group
        self.tlsContext = tlsContext
        loop = group.loops[0]
    }

    /// Starts (or goes back to) watching the socket. Loop 0 only.
    func resume() {
        guard !stopped, !watching else { return }
        if let restTimer { loop.cancelTimer(restTimer) }
        restTimer = nil
        core.acceptPause.clear()
        watching = true
        loop.register(fd: fd, handler: self, readable: true, writable: false)
    }

    private func rest() {
        guard watching else { return }
        watching = false
        core.acceptPause.set()  // first: a connection closing from now on wakes the listener
        loop.deregister(fd: fd)
        restTimer = loop.addTimer(after: Self.restNanoseconds) { [self] in
            restTimer = nil
            resume()
        }
    }

    /// Stops listening for good and closes the socket. Loop 0 only.
    func stop() {
        guard !stopped else { return }
        stopped = true
        if watching { loop.deregister(fd: fd) }
        watching = false
        if let restTimer { loop.cancelTimer(restTimer) }
        restTimer = nil
        Glibc.close(fd)
    }

    func selectableReady(readable: Bool, writable: Bool, failed: Bool) {
        for _ in 0..<64 {
            let client: Int32
            switch SocketIO.accept(fd) {
            case .accepted(let accepted): client = accepted
            case .none: return
            case .retry: continue
            case .exhausted, .failed:
                rest()
                return
            }
            if core.liveConnections.load(ordering: .relaxed) >= core.connectionLimit || core.refusing.isSet {
                if !core.refusing.isSet { core.refusedAtLimit.add(1, ordering: .relaxed) }
                Glibc.close(client)
                continue
            }
            var tls: TLSSession?
            if let tlsContext {
                do { tls = try TLSSession(context: tlsContext, serverName: nil) } catch {
                    Glibc.close(client)  // out of memory in OpenSSL: refused like a connection over the limit
                    continue
                }
            }
            core.liveConnections.add(1, ordering: .relaxed)
            let remote = SocketIO.peerAddressText(client)
            let loop = group.next()
            let core = self.core
            if loop.inEventLoop {
                Self.adopt(client, remote: remote, tls: tls, on: loop, core: core)
            } else {
                let session = UncheckedSession(tls)
                loop.execute { Self.adopt(client, remote: remote, tls: session.value, on: loop, core: core) }
            }
        }
    }

    private static func adopt(_ fd: Int32, remote: String, tls: TLSSession?, on loop: EventLoop, core: ServerCore) {
        let connection = HTTP1Connection(loop: loop, core: core, fd: fd, remoteAddress: remote, tls: tls)
        core.registries[loop.index].connections[ObjectIdentifier(connection)] = connection
        connection.register()
    }

}

/// A TLS session handed from the accepting loop to the connection's loop before anything used it: only the
/// receiving loop touches it from then on.
private struct UncheckedSession: @unchecked Sendable {
    let value: TLSSession?
    init(_ value: TLSSession?) { self.value = value }
}

/// Fires once; `wait` returns immediately after that. Continuations are resumed outside the lock.
final class OneShotSignal: Sendable {
    private let state = Mutex<(fired: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func fire() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            guard !state.fired else { return [] }
            state.fired = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = state.withLock { state -> Bool in
                if state.fired { return true }
                state.waiters.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }
}
