#if canImport(Glibc)
import Glibc
#endif
import ClarionTransport
import Foundation
import Synchronization

/// An HTTP/1.1-only TLS server for the client tests: its TLS context selects ALPN "http/1.1" (or, with
/// `alpn: nil`, answers no ALPN at all, like a server without it), reads requests framed by Content-Length and
/// answers each with the bytes `handler` returns, closing afterwards when it says so. It counts the connections it
/// accepted, so a test sees whether the client reused one.
package final class HTTP1TestServer: @unchecked Sendable {
    package struct Request: Sendable {
        package var method: String
        package var target: String
        package var headers: [(String, String)]
        package var body: [UInt8]
        /// 1 for the first connection accepted, 2 for the next...
        package var connection: Int

        package func header(_ name: String) -> String? { headers.first { $0.0.lowercased() == name }?.1 }
    }

    /// The raw response bytes and whether to close after writing them.
    package typealias Handler = @Sendable (Request) -> (response: String, close: Bool)

    package let group: EventLoopGroup
    package let certificate: SelfSignedCertificate
    private let context: TLSContext
    private let handler: Handler
    private let state = Mutex<(fd: Int32, connections: Int, requests: [Request])>((-1, 0, []))

    package init(alpn: String? = "http/1.1", handler: @escaping Handler) throws {
        group = try EventLoopGroup(threadCount: 1, threadName: "h1-test-server")
        certificate = try SelfSignedCertificate.generate()
        // A name no client offers: the server then selects nothing (SSL_TLSEXT_ERR_NOACK), as one without ALPN.
        context = try TLSContext(server: certificate.identity, alpn: alpn ?? "x-never-offered")
        self.handler = handler
    }

    /// Binds 127.0.0.1 on a free port and starts accepting; returns the port.
    package func start() throws -> Int {
        guard case .success(let (fd, port)) = SocketIO.listen(on: SocketAddress(numericHost: "127.0.0.1", port: 0)!, backlog: 64) else {
            throw TransportError(.connectFailed, "listen on 127.0.0.1 failed")
        }
        state.withLock { $0.fd = fd }
        let loop = group.loops[0]
        loop.execute { loop.register(fd: fd, handler: Acceptor(server: self, fd: fd), readable: true, writable: false) }
        return port
    }

    package var connectionsAccepted: Int { state.withLock { $0.connections } }
    package var requests: [Request] { state.withLock { $0.requests } }

    package func stop() {
        let fd = state.withLock { $0.fd }
        if fd >= 0 {
            let loop = group.loops[0]
            let done = Mutex(false)
            loop.execute {
                loop.deregister(fd: fd)
                Glibc.close(fd)
                done.withLock { $0 = true }
            }
            while !done.withLock({ $0 }) { usleep(1000) }
        }
        group.shutdown()
    }

    fileprivate func accepted(_ client: Int32, loop: EventLoop) {
        let number = state.withLock { state -> Int in
            state.connections += 1
            return state.connections
        }
        guard let session = try? TLSSession(context: context, serverName: nil) else {
            Glibc.close(client)
            return
        }
        let connection = Connection(server: self, number: number, loop: loop, fd: client, tls: session)
        connection.register()
    }

    fileprivate func handle(_ request: Request) -> (response: String, close: Bool) {
        state.withLock { $0.requests.append(request) }
        return handler(request)
    }

    private final class Acceptor: EventLoopSelectable {
        let server: HTTP1TestServer
        let fd: Int32

        init(server: HTTP1TestServer, fd: Int32) {
            self.server = server
            self.fd = fd
        }

        func selectableReady(readable: Bool, writable: Bool, failed: Bool) {
            while case .accepted(let client) = SocketIO.accept(fd) {
                server.accepted(client, loop: server.group.loops[0])
            }
        }
    }

    private final class Connection: SocketChannel {
        let server: HTTP1TestServer
        let number: Int
        var buffer: [UInt8] = []
        var closeAfterFlush = false
        /// Keeps itself alive while registered (the loop holds handlers weakly or not at all).
        var me: Connection?

        @available(*, unavailable)
        override init(loop: EventLoop, fd: Int32, tls: TLSSession?, connecting: Bool, writeChunks: WriteChunks = .server) {
            fatalError()
        }

        init(server: HTTP1TestServer, number: Int, loop: EventLoop, fd: Int32, tls: TLSSession) {
            self.server = server
            self.number = number
            super.init(loop: loop, fd: fd, tls: tls, connecting: false)
            me = self
        }

        override func didRead(_ bytes: UnsafeRawBufferPointer) -> Bool {
            buffer.append(contentsOf: bytes)
            while let request = takeRequest() {
                let (response, close) = server.handle(request)
                let out = Array(response.utf8)
                out.withUnsafeBytes { emit($0.baseAddress!, $0.count) }
                if close {
                    closeAfterFlush = true
                    break
                }
            }
            scheduleFlush()
            return true
        }

        /// One request framed by Content-Length, if a whole one is buffered.
        private func takeRequest() -> Request? {
            guard !closeAfterFlush, let end = buffer.indices.dropLast(3).first(where: {
                buffer[$0] == 13 && buffer[$0 + 1] == 10 && buffer[$0 + 2] == 13 && buffer[$0 + 3] == 10
            }) else { return nil }
            let lines = String(decoding: buffer[..<end], as: UTF8.self).components(separatedBy: "\r\n")
            let parts = lines[0].split(separator: " ")
            var headers: [(String, String)] = []
            for line in lines.dropFirst() {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headers.append((String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
            }
            let length = Int(headers.first { $0.0.lowercased() == "content-length" }?.1 ?? "0") ?? 0
            guard buffer.count >= end + 4 + length else { return nil }
            let body = Array(buffer[(end + 4)..<(end + 4 + length)])
            buffer.removeFirst(end + 4 + length)
            return Request(method: String(parts.first ?? ""), target: parts.count > 1 ? String(parts[1]) : "",
                           headers: headers, body: body, connection: number)
        }

        override func flushAtEndOfTurn() {
            super.flushAtEndOfTurn()
            if closeAfterFlush && state == .active && outbound.isEmpty { close(error: nil) }
        }

        override func didClose(error: TransportError?) {
            me = nil
        }
    }
}

