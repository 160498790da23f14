@testable import ClarionHTTP2
import Foundation
import Synchronization
import Testing

/// Collects batch-path completions; `wait(for:)` returns once `count` arrived (or the timeout passed).
final class CollectingSink: HTTP2CompletionSink {
    private struct State {
        var completions: [HTTP2Completion] = []
        var batches = 0
        var lastArrival: ContinuousClock.Instant?
        var observed: [Int] = []
        var waiter: (count: Int, continuation: CheckedContinuation<Void, Never>)?
    }

    private let state = Mutex(State())
    private let probe: (@Sendable () -> Int)?

    /// `probe`, if given, is read as each batch arrives, on the pool's loop thread (see `observed`).
    init(probe: (@Sendable () -> Int)? = nil) {
        self.probe = probe
    }

    func receive(_ completions: [HTTP2Completion]) {
        let resume = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.completions.append(contentsOf: completions)
            state.batches += 1
            state.lastArrival = .now
            if let probe { state.observed.append(probe()) }
            if let waiter = state.waiter, state.completions.count >= waiter.count {
                state.waiter = nil
                return waiter.continuation
            }
            return nil
        }
        resume?.resume()
    }

    var completions: [HTTP2Completion] { state.withLock { $0.completions } }
    var batches: Int { state.withLock { $0.batches } }
    /// When the latest batch reached the sink, read on the pool's loop thread as it was delivered. Tests time
    /// results with this, not with the clock after `wait`: on a loaded machine the test task may resume seconds
    /// after the results were in, which says nothing about the pool.
    var lastArrival: ContinuousClock.Instant? { state.withLock { $0.lastArrival } }
    /// What `probe` returned at each batch, in arrival order.
    var observed: [Int] { state.withLock { $0.observed } }

    /// Waits until `count` completions arrived or `timeout` passed; returns what arrived.
    func wait(for count: Int, timeout: Duration = .seconds(30)) async -> [HTTP2Completion] {
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await withCheckedContinuation { continuation in
                    let ready = self.state.withLock { state -> Bool in
                        if state.completions.count >= count { return true }
                        state.waiter = (count, continuation)
                        return false
                    }
                    if ready { continuation.resume() }
                }
            }
            group.addTask { try? await Task.sleep(for: timeout) }
            await group.next()
            group.cancelAll()
            // Release the waiter if the timeout won.
            let stale = self.state.withLock { state -> CheckedContinuation<Void, Never>? in
                defer { state.waiter = nil }
                return state.waiter?.continuation
            }
            stale?.resume()
            await group.waitForAll()
        }
        return completions
    }
}

/// Counts things across loop threads.
final class Counter: Sendable {
    private let value = Atomic<Int>(0)
    @discardableResult
    func increment() -> Int { value.wrappingAdd(1, ordering: .relaxed).newValue }
    func decrement() { value.wrappingSubtract(1, ordering: .relaxed) }
    var current: Int { value.load(ordering: .relaxed) }
}

/// Records the largest value seen.
final class Maximum: Sendable {
    private let value = Atomic<Int>(0)
    func record(_ candidate: Int) {
        var current = value.load(ordering: .relaxed)
        while candidate > current {
            let (exchanged, original) = value.compareExchange(expected: current, desired: candidate, ordering: .relaxed)
            if exchanged { return }
            current = original
        }
    }
    func reset() { value.store(0, ordering: .relaxed) }
    var current: Int { value.load(ordering: .relaxed) }
}

/// The request timeout is far above anything a test waits for on purpose: on a loaded machine a test task may not
/// be resumed for many seconds while its requests are held on purpose, and they must not time out meanwhile.
func poolConfiguration(_ scheme: HTTP2Origin.Scheme, port: Int, trusting pem: String? = nil,
                       connections: Int = 1) -> HTTP2PoolConfiguration {
    HTTP2PoolConfiguration(origin: HTTP2Origin(scheme: scheme, host: "127.0.0.1", port: port), identity: "test",
                           connectionCount: connections, requestTimeout: .seconds(60), trustedCAPEM: pem)
}

let okResponse = HTTP2ServerResponse(status: 200, headers: [("content-type", "application/json")], body: Array("{}".utf8))

extension HTTP2Result {
    var status: Int? {
        if case .success(let response) = self { return response.status }
        return nil
    }

    var error: HTTP2Error? {
        if case .failure(let error) = self { return error }
        return nil
    }

    var response: HTTP2Response? {
        if case .success(let response) = self { return response }
        return nil
    }
}

/// Takes `sample` until `condition` holds for it or `timeout` passes, and returns the last sample (check it with
/// `#expect`). Tests wait for a state the loop threads reach this way, never with a fixed sleep: under load the
/// state may come late, and a test task may be resumed late. The timeout only bounds a failing run. The deadline
/// is checked before sampling, so a sample that comes back late (the task was not resumed for a while) is never
/// the last: the one returned on timeout was taken after the deadline.
func sample<Value>(until condition: (Value) -> Bool, timeout: Duration = .seconds(30),
                   every interval: Duration = .milliseconds(5), _ sample: () async -> Value) async -> Value {
    let deadline = ContinuousClock.now + timeout
    while true {
        let expired = ContinuousClock.now >= deadline
        let value = await sample()
        if expired || condition(value) { return value }
        try? await Task.sleep(for: interval)
    }
}

/// True once `condition` holds, false if it still does not after `timeout` (see `sample(until:)`).
func eventually(timeout: Duration = .seconds(30), _ condition: () async -> Bool) async -> Bool {
    await sample(until: { $0 }, timeout: timeout, condition)
}

/// Server-side requests held open until the test releases them. A handler returns `hold(context)`; the streams stay
/// in flight, whatever the load, until `release()` answers them all with `response` (later ones are answered at
/// once). This replaces "answer after two seconds", which a slow test task may not look at in time.
final class HeldResponses: Sendable {
    private let response: HTTP2ServerResponse
    private let state = Mutex<(released: Bool, held: [HTTP2ServerResponder])>((false, []))

    init(answering response: HTTP2ServerResponse) {
        self.response = response
    }

    /// For a handler: hold this request until `release()` (or answer it at once after that).
    func hold(_ context: HTTP2ServerStreamContext) -> HTTP2ServerAction {
        let responder = context.responder()
        let held = state.withLock { state -> Bool in
            if state.released { return false }
            state.held.append(responder)
            return true
        }
        return held ? .stall : .respond(response)
    }

    /// Answers every held request, and from now on every new one at once.
    func release() {
        let held = state.withLock { state -> [HTTP2ServerResponder] in
            state.released = true
            defer { state.held.removeAll() }
            return state.held
        }
        for responder in held { responder.respond(response) }
    }
}

/// A bare HTTP/2 client on a blocking socket, for what our own client would never do: it keeps sending frames
/// (connection WINDOW_UPDATEs of 1, which ask for no answer and trip no flood limit) until the server's GOAWAY
/// arrives, then half-closes and reads to the end. Runs on a thread of its own (blocking calls stay off the
/// cooperative pool, and the client starts even while that pool is starved).
final class SendingClient: Sendable {
    struct Outcome: Sendable {
        var sawGoAway = false
        /// The connection ended with EOF (0 from read), not an error such as ECONNRESET.
        var endedCleanly = false
        var error: String?
    }

    private let sending = Atomic<Bool>(false)
    private let result = Mutex<(outcome: Outcome?, waiter: CheckedContinuation<Outcome, Never>?)>((nil, nil))

    /// Connects to `port` and starts sending, on a new thread.
    static func start(port: Int) -> SendingClient {
        let client = SendingClient()
        Thread.detachNewThread {
            let outcome = blockingRun(port: port) { client.sending.store(true, ordering: .releasing) }
            let waiter = client.result.withLock { result in
                result.outcome = outcome
                defer { result.waiter = nil }
                return result.waiter
            }
            waiter?.resume(returning: outcome)
        }
        return client
    }

    /// Connected, preface sent, frames going out.
    var isSending: Bool { sending.load(ordering: .acquiring) }

    /// How the connection ended (waits for it).
    func outcome() async -> Outcome {
        await withCheckedContinuation { continuation in
            let done = result.withLock { result -> Outcome? in
                if result.outcome == nil { result.waiter = continuation }
                return result.outcome
            }
            if let done { continuation.resume(returning: done) }
        }
    }

    private static func blockingRun(port: Int, started: () -> Void) -> Outcome {
        var outcome = Outcome()
        guard let fd = connectLoopback(port: port, receiveTimeout: 10) else {
            outcome.error = "connect: \(String(cString: strerror(errno)))"
            return outcome
        }
        defer { _ = Glibc.close(fd) }
        let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8) + [0, 0, 0, 4, 0, 0, 0, 0, 0]  // + empty SETTINGS
        let windowUpdate: [UInt8] = [0, 0, 4, 8, 0, 0, 0, 0, 0, 0, 0, 0, 1]
        var input: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        // Signals (other tests start processes: SIGCHLD) interrupt blocking calls: EINTR means "again".
        func sendAll(_ bytes: [UInt8]) -> Bool {
            var sent = 0
            while sent < bytes.count {
                let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL)) }
                if n > 0 {
                    sent += n
                } else if n < 0 && errno == EINTR {
                    continue
                } else {
                    outcome.error = "send: \(String(cString: strerror(errno)))"
                    return false
                }
            }
            return true
        }
        // Returns false once the connection ended (EOF or error).
        func readSome(waiting: Bool) -> Bool {
            let n = recv(fd, &buffer, buffer.count, waiting ? 0 : Int32(MSG_DONTWAIT))
            if n > 0 {
                input += buffer[0..<n]
                return true
            }
            if n == 0 {
                outcome.endedCleanly = true
                return false
            }
            if errno == EINTR { return true }
            if !waiting && (errno == EAGAIN || errno == EWOULDBLOCK) { return true }
            outcome.error = "read: \(String(cString: strerror(errno)))"
            return false
        }
        func scanForGoAway() {
            var offset = 0
            while input.count - offset >= 9 {
                let length = Int(input[offset]) << 16 | Int(input[offset + 1]) << 8 | Int(input[offset + 2])
                guard input.count - offset >= 9 + length else { break }
                if input[offset + 3] == 7 { outcome.sawGoAway = true }
                offset += 9 + length
            }
            input.removeFirst(offset)
        }
        guard sendAll(preface) else { return outcome }
        started()
        let deadline = ContinuousClock.now + .seconds(60)
        while !outcome.sawGoAway && ContinuousClock.now < deadline {
            guard sendAll(windowUpdate), readSome(waiting: false) else { break }
            scanForGoAway()
        }
        if outcome.error == nil && !outcome.endedCleanly {
            _ = shutdown(fd, Int32(SHUT_WR))
            while readSome(waiting: true) { scanForGoAway() }
        }
        scanForGoAway()
        return outcome
    }
}

/// A blocking TCP connection to 127.0.0.1:`port` with a receive timeout; nil (errno set) when connect fails.
/// The caller closes the descriptor.
func connectLoopback(port: Int, receiveTimeout seconds: Int) -> Int32? {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = UInt16(port).bigEndian
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard connected == 0 else {
        let saved = errno
        _ = Glibc.close(fd)
        errno = saved
        return nil
    }
    var timeout = timeval(tv_sec: seconds, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    return fd
}
