#if canImport(Glibc)
import Glibc
#endif
internal import CLinux
import Synchronization

/// An IPv4 or IPv6 socket address.
package struct SocketAddress: Sendable, CustomStringConvertible {
    private var storage: sockaddr_storage
    let length: socklen_t

    /// Parses a numeric IPv4/IPv6 address (no name resolution).
    package init?(numericHost host: String, port: Int) {
        var storage = sockaddr_storage()
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        var v4 = in_addr()
        if inet_pton(AF_INET, bare, &v4) == 1 {
            var sin = sockaddr_in()
            sin.sin_family = sa_family_t(AF_INET)
            sin.sin_port = in_port_t(UInt16(port).bigEndian)
            sin.sin_addr = v4
            withUnsafeMutableBytes(of: &storage) { dst in withUnsafeBytes(of: sin) { dst.copyMemory(from: $0) } }
            self.storage = storage
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
            return
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, bare, &v6) == 1 {
            var sin6 = sockaddr_in6()
            sin6.sin6_family = sa_family_t(AF_INET6)
            sin6.sin6_port = in_port_t(UInt16(port).bigEndian)
            sin6.sin6_addr = v6
            withUnsafeMutableBytes(of: &storage) { dst in withUnsafeBytes(of: sin6) { dst.copyMemory(from: $0) } }
            self.storage = storage
            length = socklen_t(MemoryLayout<sockaddr_in6>.size)
            return
        }
        return nil
    }

    init(raw: UnsafePointer<sockaddr>, length: socklen_t) {
        var storage = sockaddr_storage()
        withUnsafeMutableBytes(of: &storage) { dst in
            dst.copyMemory(from: UnsafeRawBufferPointer(start: raw, count: Int(length)))
        }
        self.storage = storage
        self.length = length
    }

    package var family: Int32 { Int32(storage.ss_family) }

    package var port: Int {
        withUnsafeBytes(of: storage) { raw in
            if family == AF_INET {
                return Int(UInt16(bigEndian: raw.load(as: sockaddr_in.self).sin_port))
            }
            return Int(UInt16(bigEndian: raw.load(as: sockaddr_in6.self).sin6_port))
        }
    }

    /// The address alone, without port or brackets (`127.0.0.1`, `::1`).
    package var addressText: String {
        let text = description
        if text.hasPrefix("["), let end = text.firstIndex(of: "]") { return String(text[text.index(after: text.startIndex)..<end]) }
        return String(text[..<(text.lastIndex(of: ":") ?? text.endIndex)])
    }

    package var description: String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        withUnsafeBytes(of: storage) { raw in
            if family == AF_INET {
                var addr = raw.load(as: sockaddr_in.self).sin_addr
                inet_ntop(AF_INET, &addr, &buffer, socklen_t(buffer.count))
            } else {
                var addr = raw.load(as: sockaddr_in6.self).sin6_addr
                inet_ntop(AF_INET6, &addr, &buffer, socklen_t(buffer.count))
            }
        }
        let host = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return family == AF_INET6 ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    func withSockAddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        withUnsafeBytes(of: storage) { raw in
            body(raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), length)
        }
    }
}

package enum SocketIO {
    package enum ReadResult {
        case bytes(Int)
        case wouldBlock
        case eof
        case error(Int32)
    }

    package enum ConnectResult {
        case connected
        case inProgress
        case failed(Int32)
    }

    package static func makeTCPSocket(family: Int32) -> Int32 {
        clarion_socket_nonblocking(family)
    }

    package static func setNoDelay(_ fd: Int32) {
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    package static func connect(_ fd: Int32, to address: SocketAddress) -> ConnectResult {
        let rc = address.withSockAddr { Glibc.connect(fd, $0, $1) }
        if rc == 0 { return .connected }
        if errno == EINPROGRESS || errno == EINTR { return .inProgress }
        return .failed(errno)
    }

    /// The pending error of a non-blocking connect (0 when connected).
    static func pendingError(_ fd: Int32) -> Int32 {
        var error: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
        return error
    }

    package static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> ReadResult {
        while true {
            let n = Glibc.read(fd, buffer.baseAddress, buffer.count)
            if n > 0 { return .bytes(n) }
            if n == 0 { return .eof }
            if errno == EINTR { continue }
            if errno == EAGAIN || errno == EWOULDBLOCK { return .wouldBlock }
            return .error(errno)
        }
    }

    /// Writes as much as the socket takes. Returns bytes written, or nil on a fatal error.
    package static func write(_ fd: Int32, _ pointer: UnsafeRawPointer, _ count: Int) -> Int? {
        var written = 0
        while written < count {
            let n = Glibc.send(fd, pointer + written, count - written, Int32(MSG_NOSIGNAL))
            if n > 0 {
                written += n
                continue
            }
            if n < 0 && errno == EINTR { continue }
            if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { return written }
            return nil
        }
        return written
    }

    package static func errorString(_ code: Int32) -> String {
        String(cString: strerror(code))
    }

    /// A listening socket (non-blocking, SO_REUSEADDR) bound to `address`; the errno text on failure.
    package static func listen(on address: SocketAddress, backlog: Int32) -> Result<(fd: Int32, port: Int), SocketFailure> {
        let fd = makeTCPSocket(family: address.family)
        guard fd >= 0 else { return .failure(SocketFailure(call: "socket", reason: errorString(errno))) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        guard address.withSockAddr({ Glibc.bind(fd, $0, $1) }) == 0 else {
            let reason = errorString(errno)
            Glibc.close(fd)
            return .failure(SocketFailure(call: "bind", reason: reason))
        }
        guard Glibc.listen(fd, backlog) == 0 else {
            let reason = errorString(errno)
            Glibc.close(fd)
            return .failure(SocketFailure(call: "listen", reason: reason))
        }
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let port = withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw -> Int in
                getsockname(fd, raw, &length)
                return SocketAddress(raw: raw, length: length).port
            }
        }
        return .success((fd, port))
    }

    /// The peer's address as text ("127.0.0.1", "::1"); "" when unknown.
    package static func peerAddressText(_ fd: Int32) -> String {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let ok = withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) == 0 }
        }
        guard ok else { return "" }
        switch Int32(storage.ss_family) {
        case AF_INET:
            return withUnsafeBytes(of: storage) { raw in
                ipv4Text(UInt32(bigEndian: raw.load(as: sockaddr_in.self).sin_addr.s_addr))
            }
        case AF_INET6:
            var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
            var address = withUnsafeBytes(of: storage) { $0.load(as: sockaddr_in6.self).sin6_addr }
            guard inet_ntop(AF_INET6, &address, &buffer, socklen_t(buffer.count)) != nil else { return "" }
            return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        default:
            return ""
        }
    }

    package enum AcceptResult: Equatable {
        /// A connection, non-blocking and close-on-exec.
        case accepted(Int32)
        /// Nothing is waiting.
        case none
        /// The next connection failed before it was taken (Linux reports its network error from `accept`), or a
        /// signal interrupted the call: accept again.
        case retry
        /// Out of file descriptors or kernel memory (EMFILE, ENFILE, ENOBUFS, ENOMEM). The connection stays
        /// queued and the listener stays readable, so accepting again at once fails again: a loop that does
        /// spins. Stop watching the listener until a descriptor is freed.
        case exhausted(Int32)
        /// Anything else: the listening socket itself is broken.
        case failed(Int32)
    }

    /// Accepts one connection, non-blocking and close-on-exec.
    package static func accept(_ fd: Int32) -> AcceptResult {
        let client = clarion_accept_nonblocking(fd)
        if client >= 0 { return .accepted(client) }
        let code = errno
        switch code {
        case EAGAIN, EWOULDBLOCK: return .none
        case EMFILE, ENFILE, ENOBUFS, ENOMEM: return .exhausted(code)
        // accept(2): "treat them like EAGAIN by retrying"; ECONNABORTED and EPERM (a firewall) are the peer's.
        case EINTR, ECONNABORTED, EPERM, EPROTO, ENETDOWN, ENOPROTOOPT, EHOSTDOWN, ENONET, EHOSTUNREACH, EOPNOTSUPP,
             ENETUNREACH: return .retry
        default: return .failed(code)
        }
    }
}

package struct SocketFailure: Error, Sendable {
    package let call: String
    package let reason: String
}

/// An IPv4 address (host byte order) as a dotted quad, written straight into a String of at most 15 bytes (a
/// small string: no allocation, and no inet_ntop buffer).
package func ipv4Text(_ address: UInt32) -> String {
    String(unsafeUninitializedCapacity: 15) { out in
        var count = 0
        for shift in stride(from: UInt32(24), through: 0, by: -8) {
            let octet = Int((address >> shift) & 0xff)
            if shift != 24 { out[count] = UInt8(ascii: "."); count += 1 }
            if octet >= 100 { out[count] = UInt8(48 + octet / 100); count += 1 }
            if octet >= 10 { out[count] = UInt8(48 + octet / 10 % 10); count += 1 }
            out[count] = UInt8(48 + octet % 10); count += 1
        }
        return count
    }
}

/// Resolves host names on a thread of its own: `getaddrinfo` blocks, and blocking calls never run on an event
/// loop or the cooperative pool. Numeric addresses never reach it. No cache: a new connection resolves again
/// (Apple asks for an uncached lookup per connection).
package final class HostResolver: Sendable {
    private struct Job {
        var host: String
        var port: Int
        var completion: @Sendable (Result<[SocketAddress], TransportError>) -> Void
    }

    private struct State {
        var jobs: [Job] = []
        var started = false
        var stopped = false
    }

    private let state = Mutex(State())
    private let semaphore = Semaphore()
    private let startThread: ThreadStarter

    /// Starts `body` on a new detached thread; returns 0, or the error number when no thread was started
    /// (`pthread_create`'s result: EAGAIN when the process is out of threads).
    typealias ThreadStarter = @Sendable (_ body: @escaping @Sendable () -> Void) -> Int32

    /// `startThread` is for tests (a thread that cannot start).
    init(startThread: @escaping ThreadStarter = HostResolver.startDetachedThread) {
        self.startThread = startThread
    }

    /// Calls `completion` on the resolver thread, or at once on this thread when the lookup cannot run (the
    /// resolver is stopped, or its thread could not be started).
    package func resolve(host: String, port: Int, completion: @escaping @Sendable (Result<[SocketAddress], TransportError>) -> Void) {
        if let address = SocketAddress(numericHost: host, port: port) {
            completion(.success([address]))
            return
        }
        let startThread = state.withLock { state -> Bool? in
            if state.stopped { return nil }
            state.jobs.append(Job(host: host, port: port, completion: completion))
            defer { state.started = true }
            return !state.started
        }
        guard let startThread else {
            completion(.failure(.connectFailed("resolver stopped")))
            return
        }
        if startThread {
            // The thread keeps the resolver alive until it stops.
            let rc = self.startThread { [self] in run() }
            if rc != 0 {
                // No thread runs the queue: fail what is queued now (this call's job and any that came meanwhile)
                // instead of leaving the callers waiting forever, and let the next call try to start one again.
                let stranded = state.withLock { state -> [Job] in
                    state.started = false
                    defer { state.jobs.removeAll() }
                    return state.jobs
                }
                let why = "no resolver thread (pthread_create: \(String(cString: strerror(rc))))"
                for job in stranded { job.completion(.failure(.connectFailed("cannot resolve \(job.host): \(why)"))) }
                return
            }
        }
        semaphore.signal()
    }

    static func startDetachedThread(_ body: @escaping @Sendable () -> Void) -> Int32 {
        final class Box {
            let body: @Sendable () -> Void
            init(_ body: @escaping @Sendable () -> Void) { self.body = body }
        }
        let box = Unmanaged.passRetained(Box(body)).toOpaque()
        var thread = pthread_t()
        let rc = pthread_create(&thread, nil, { raw in
            Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue().body()
            return nil
        }, box)
        guard rc == 0 else {
            Unmanaged<Box>.fromOpaque(box).release()  // the thread that would have taken it never ran
            return rc
        }
        pthread_detach(thread)
        return 0
    }

    func stop() {
        state.withLock { $0.stopped = true }
        semaphore.signal()
    }

    private func run() {
        while true {
            semaphore.wait()
            let (jobs, stopped) = state.withLock { state in
                let jobs = state.jobs
                state.jobs.removeAll()
                return (jobs, state.stopped)
            }
            for job in jobs { job.completion(Self.lookup(host: job.host, port: job.port)) }
            if stopped { return }
        }
    }

    private static func lookup(host: String, port: Int) -> Result<[SocketAddress], TransportError> {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_family = AF_UNSPEC
        var result: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &result)
        guard rc == 0, let first = result else {
            return .failure(.connectFailed("cannot resolve \(host): \(String(cString: gai_strerror(rc)))"))
        }
        defer { freeaddrinfo(first) }
        var addresses: [SocketAddress] = []
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let info = cursor {
            if let addr = info.pointee.ai_addr, info.pointee.ai_family == AF_INET || info.pointee.ai_family == AF_INET6 {
                addresses.append(SocketAddress(raw: addr, length: info.pointee.ai_addrlen))
            }
            cursor = info.pointee.ai_next
        }
        return addresses.isEmpty ? .failure(.connectFailed("no address for \(host)")) : .success(addresses)
    }
}

/// A counting semaphore for threads that are not on the cooperative pool.
final class Semaphore: @unchecked Sendable {
    // sem_t must not move: it lives in its own allocation.
    private let sem: UnsafeMutablePointer<sem_t>

    init(value: UInt32 = 0) {
        sem = .allocate(capacity: 1)
        sem_init(sem, 0, value)
    }

    deinit {
        sem_destroy(sem)
        sem.deallocate()
    }

    func signal() { sem_post(sem) }

    func wait() {
        while sem_wait(sem) != 0 && errno == EINTR {}
    }
}
