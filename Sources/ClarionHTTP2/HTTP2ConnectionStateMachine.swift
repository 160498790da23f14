import ClarionTransport
/// One client connection's lifecycle and liveness logic, with no sockets and no clock (times come in events).
///
/// States and transitions:
/// - `connecting` -> `active` (`established`), -> `closed` (`closed`).
/// - `active` -> `draining` (`goAwayReceived`, `drainRequested`), -> `closed`.
/// - `draining`: no new streams; -> `closed` once no stream is open (`.close`), or on `closed`.
/// - `closed`: final.
/// Liveness: after `pingInterval` without reading anything, send a PING; if nothing is read for `pingTimeout`
/// after that, the peer is dead. With no open stream for `idleTimeout`, close.
struct HTTP2ConnectionStateMachine {
    struct Configuration {
        var pingInterval: UInt64?
        var pingTimeout: UInt64
        var idleTimeout: UInt64?
        var connectTimeout: UInt64
    }

    enum State: Equatable {
        case connecting(since: NanoTime)
        case active
        case draining
        case closed
    }

    enum Action: Equatable {
        case none
        case sendPing
        /// Send GOAWAY (we are the ones leaving) and keep finishing streams.
        case sendGoAway
        /// Close the socket; the error (if any) goes to the streams still open.
        case close(HTTP2Error?)
    }

    let configuration: Configuration
    private(set) var state: State
    private(set) var openStreams = 0
    private var lastRead: NanoTime
    private var pingSentAt: NanoTime?
    private var idleSince: NanoTime

    init(configuration: Configuration, now: NanoTime) {
        self.configuration = configuration
        state = .connecting(since: now)
        lastRead = now
        idleSince = now
    }

    var acceptsStreams: Bool { state == .active }

    mutating func established(now: NanoTime) {
        guard case .connecting = state else { return }
        state = .active
        lastRead = now
        idleSince = now
    }

    /// Anything arrived from the peer: it is alive.
    mutating func bytesRead(now: NanoTime) {
        lastRead = now
        pingSentAt = nil
    }

    mutating func streamOpened() {
        openStreams += 1
    }

    mutating func streamClosed(now: NanoTime) -> Action {
        openStreams = max(0, openStreams - 1)
        if openStreams == 0 {
            idleSince = now
            if state == .draining { return .close(nil) }
        }
        return .none
    }

    /// The server is leaving: finish the streams at or below its last-stream-id, then close.
    mutating func goAwayReceived() -> Action {
        guard state == .active || state == .draining else { return .none }
        state = .draining
        return openStreams == 0 ? .close(nil) : .none
    }

    /// We are leaving (pool recycling or shutdown): GOAWAY, finish the open streams, close.
    mutating func drainRequested() -> Action {
        switch state {
        case .connecting:
            state = .closed
            return .close(.shutdown)
        case .active:
            state = .draining
            return openStreams == 0 ? .close(nil) : .sendGoAway
        case .draining, .closed:
            return .none
        }
    }

    mutating func tick(now: NanoTime) -> Action {
        switch state {
        case .closed:
            return .none
        case .connecting(let since):
            if now &- since >= configuration.connectTimeout {
                state = .closed
                return .close(.connectFailed("connect timed out"))
            }
            return .none
        case .active, .draining:
            if let sent = pingSentAt, now &- sent >= configuration.pingTimeout {
                state = .closed
                return .close(.connectionLost("no PING acknowledgement (dead peer)"))
            }
            if state == .active, openStreams == 0, let idle = configuration.idleTimeout, now &- idleSince >= idle {
                state = .closed
                return .close(nil)
            }
            if pingSentAt == nil, let interval = configuration.pingInterval, now &- lastRead >= interval {
                pingSentAt = now
                return .sendPing
            }
            return .none
        }
    }

    mutating func closed() {
        state = .closed
    }
}
