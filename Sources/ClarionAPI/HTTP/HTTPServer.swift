internal import CMicroHTTPD
import Foundation
import Synchronization

/// The HTTP/1.1 server: libmicrohttpd with a pool of epoll threads, keep-alive, per-route body limits,
/// suspended connections for asynchronous handlers, and a graceful shutdown.
///
/// Lifecycle: `idle` -> `start()` -> `starting` -> `running` (or back to `idle` if binding fails)
/// -> `shutdown()` -> `draining` -> `stopped`; `shutdown()` of an idle server goes straight to `stopped`.
/// `run()` is start + wait for cancellation or `shutdown()` + drain, for an owner that runs it as a task.
///
/// `GET /health` and `GET /ready` are added to the router unless it already has them.
public final class HTTPServer: Sendable {
    /// libmicrohttpd's memory per connection (MHD_OPTION_CONNECTION_MEMORY_LIMIT).
    static let connectionMemory = 16 * 1024

    public let configuration: HTTPServerConfiguration
    private let core: ServerCore
    private let state = Mutex<LifecycleState>(.idle)
    private let stopRequested = OneShotSignal()
    private let stopped = OneShotSignal()

    /// The MHD daemon pointer. MHD's quiesce/stop/info calls are safe from any thread; stop happens once,
    /// guarded by the lifecycle state.
    private struct Daemon: @unchecked Sendable {
        let pointer: OpaquePointer
        let retainedCore: Unmanaged<ServerCore>
    }

    private enum LifecycleState {
        case idle
        case starting
        case running(Daemon, port: Int)
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
        self.core = ServerCore(router: router, accessLog: configuration.accessLog, draining: draining)
    }

    deinit {
        // Not shut down gracefully: stop hard, but never with a suspended connection.
        if case .running(let daemon, _) = state.withLock({ $0 }) {
            core.refusing.set()
            core.abandonSuspended()
            Self.waitBriefly { self.core.suspendedCount == 0 }
            MHD_stop_daemon(daemon.pointer)
            daemon.retainedCore.release()
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

    /// Binds and starts the worker threads. Returns once the port is listening.
    public func start() throws(HTTPServerError) {
        // Claim the start under the lock, start the daemon (threads, bind) outside it.
        let claimed = state.withLock { state -> Bool in
            guard case .idle = state else { return false }
            state = .starting
            return true
        }
        guard claimed else { throw HTTPServerError(code: .alreadyStarted, message: "the server was already started") }
        do {
            let daemon = try startDaemon()
            let port = Int(clarion_mhd_bound_port(daemon.pointer))
            state.withLock { $0 = .running(daemon, port: port) }
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
    /// 503), then stops the threads. Safe to call more than once and from several tasks.
    public func shutdown() async {
        stopRequested.fire()
        // A concurrent start() finishes binding first (milliseconds), then is shut down like any other.
        while case .starting = state.withLock({ $0 }) {
            try? await Task.sleep(for: .milliseconds(1))
        }
        let daemon: Daemon? = state.withLock { state in
            switch state {
            case .running(let daemon, let port):
                state = .draining(port: port)
                return daemon
            case .idle:
                state = .stopped
                return nil
            case .starting, .draining, .stopped:
                return nil  // .starting cannot be seen here: the loop above waited it out
            }
        }
        guard let daemon else {
            if case .stopped = state.withLock({ $0 }) { stopped.fire() }
            await stopped.wait()
            return
        }

        core.draining.set()
        let listenSocket = MHD_quiesce_daemon(daemon.pointer)
        // Quiesce only stops calling accept(): the kernel would keep completing handshakes into the backlog and
        // those clients would hang until the stop. Shutting the listening socket down makes the kernel refuse
        // new connections at once (so a load balancer retries elsewhere); the descriptor itself stays open
        // until after MHD_stop_daemon, as MHD requires.
        if listenSocket >= 0 { _ = Glibc.shutdown(listenSocket, Int32(SHUT_RDWR)) }
        let deadline = ContinuousClock.now + configuration.shutdownGracePeriod
        while core.inFlight.load(ordering: .relaxed) > 0 && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(5))
        }
        if core.inFlight.load(ordering: .relaxed) > 0 {
            core.refusing.set()
            core.abandonSuspended()
            let flushDeadline = ContinuousClock.now + .seconds(1)
            while core.suspendedCount > 0 || core.inFlight.load(ordering: .relaxed) > 0,
                  ContinuousClock.now < flushDeadline {
                try? await Task.sleep(for: .milliseconds(5))
            }
        }
        // MHD_stop_daemon joins the worker threads: do it off the cooperative pool.
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let thread = Thread {
                MHD_stop_daemon(daemon.pointer)
                if listenSocket >= 0 { close(listenSocket) }
                continuation.resume()
            }
            thread.start()
        }
        daemon.retainedCore.release()
        configuration.accessLog?.flush()
        state.withLock { $0 = .stopped }
        stopped.fire()
    }

    private static func waitBriefly(_ done: () -> Bool) {
        for _ in 0..<200 where !done() { usleep(5_000) }
    }

    // MARK: - libmicrohttpd

    private func startDaemon() throws(HTTPServerError) -> Daemon {
        let config = configuration
        guard (0...65535).contains(config.port) else {
            throw HTTPServerError(code: .invalidAddress, message: "port \(config.port) is out of range")
        }
        guard let address = SocketAddress(host: config.host, port: UInt16(config.port)) else {
            throw HTTPServerError(code: .invalidAddress, message: "'\(config.host)' is not a numeric IP address")
        }
        var flags = MHD_USE_EPOLL_INTERNAL_THREAD.rawValue | MHD_ALLOW_SUSPEND_RESUME.rawValue | MHD_USE_TURBO.rawValue
        if address.isIPv6 { flags |= MHD_USE_IPv6.rawValue }

        let retained = Unmanaged.passRetained(core)
        let cls = retained.toOpaque()
        let completed: MHD_RequestCompletedCallback = mhdRequestCompleted
        let uriLog: @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<CChar>?, OpaquePointer?)
            -> UnsafeMutableRawPointer? = mhdURILog
        let timeoutSeconds = max(1, Int(config.connectionTimeout.components.seconds))

        let daemon: OpaquePointer? = address.withSockaddr { sockaddrPointer in
            let options: [any CVarArg] = [
                MHD_OPTION.SOCK_ADDR.rawValue, OpaquePointer(sockaddrPointer),
                MHD_OPTION.THREAD_POOL_SIZE.rawValue, UInt32(max(1, config.threadPoolSize)),
                MHD_OPTION.CONNECTION_TIMEOUT.rawValue, UInt32(timeoutSeconds),
                MHD_OPTION.CONNECTION_LIMIT.rawValue, UInt32(max(1, config.connectionLimit)),
                MHD_OPTION.LISTENING_ADDRESS_REUSE.rawValue, UInt32(1),
                // Each connection's pool (request line, headers, read buffer; bodies are streamed through it).
                // libmicrohttpd zeroes the used part of it for every request; the default 32 KiB made that memset
                // 4% of a durable Publish's server CPU (perf). 16 KiB still takes a 15 KB header field; more is
                // libmicrohttpd's own 431 (docs/api.md).
                MHD_OPTION.CONNECTION_MEMORY_LIMIT.rawValue, Int(Self.connectionMemory),
                MHD_OPTION.NOTIFY_COMPLETED.rawValue, unsafeBitCast(completed, to: OpaquePointer.self), OpaquePointer(cls),
                MHD_OPTION.URI_LOG_CALLBACK.rawValue, unsafeBitCast(uriLog, to: OpaquePointer.self), OpaquePointer(cls),
                MHD_OPTION.END.rawValue,
            ]
            return withVaList(options) { arguments in
                MHD_start_daemon_va(flags, 0, nil, nil, mhdAccessHandler, cls, arguments)
            }
        }
        guard let daemon else {
            retained.release()
            throw HTTPServerError(code: .startFailed,
                                  message: "libmicrohttpd could not listen on \(config.host):\(config.port)")
        }
        return Daemon(pointer: daemon, retainedCore: retained)
    }
}

/// A numeric IPv4 or IPv6 listen address.
private struct SocketAddress {
    private var storage = sockaddr_storage()
    let isIPv6: Bool

    init?(host: String, port: UInt16) {
        let name = host == "localhost" ? "127.0.0.1" : host
        var v4 = sockaddr_in()
        if inet_pton(AF_INET, name, &v4.sin_addr) == 1 {
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = port.bigEndian
            isIPv6 = false
            withUnsafeMutableBytes(of: &storage) { $0.storeBytes(of: v4, as: sockaddr_in.self) }
            return
        }
        var v6 = sockaddr_in6()
        let bare = name.hasPrefix("[") && name.hasSuffix("]") ? String(name.dropFirst().dropLast()) : name
        if inet_pton(AF_INET6, bare, &v6.sin6_addr) == 1 {
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = port.bigEndian
            isIPv6 = true
            withUnsafeMutableBytes(of: &storage) { $0.storeBytes(of: v6, as: sockaddr_in6.self) }
            return
        }
        return nil
    }

    func withSockaddr<R>(_ body: (UnsafeRawPointer) -> R) -> R {
        withUnsafeBytes(of: storage) { body($0.baseAddress!) }
    }
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
