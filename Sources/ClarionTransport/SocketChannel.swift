#if canImport(Glibc)
import Glibc
#endif

/// The byte pipe under one connection: a non-blocking socket, optional TLS (`TLSSession`, which reads the socket's
/// bytes in place and writes its records into the outbound queue), and an outbound queue written at the end of each
/// loop turn (a server also writes in the middle of a large read: `writeProducedOutput`). Subclasses (the HTTP/2
/// client and server connections) feed their protocol from `didRead` and fill the outbound side in `produceOutput`.
/// Confined to one loop thread.
///
/// `open` only because the subclasses live in other modules of this package (a `package` class cannot be
/// subclassed outside its module); the rest of its surface is `package`.
///
/// States: connecting -> (handshaking) -> active -> closed; handshaking and active may also go straight to closed.
open class SocketChannel: EventLoopSelectable, EventLoopFlushable {
    package enum State {
        case connecting
        case handshaking
        case active
        case closed
    }

    package let loop: EventLoop
    package private(set) var fd: Int32
    package private(set) var state: State
    package let tls: TLSSession?
    /// Bytes for the socket; under TLS, the session's `ciphertextOut` (its records land here directly).
    package let outbound: ByteQueue
    /// TLS only: plaintext gathered during one turn, encrypted in one `SSL_write`.
    private let plaintextOut: ByteQueue?
    private var flushScheduled = false
    private var wantsWritable = false
    /// Output is produced and written in pieces of about this size (see `flushAtEndOfTurn`). Small enough that the
    /// peer can start on the first piece while the next is produced (larger pieces keep client and server in
    /// lockstep at some stream counts), large enough that the extra writes cost little; 8 KiB did well across the
    /// stream counts, plaintext and TLS, and servers compared (docs/benchmarks.md, "Figures behind code choices").
    /// A client uses `WriteChunks.client`.
    package static let writeChunk = 8 * 1024

    /// The size of the first piece a flush produces and writes, and of the pieces after it.
    package struct WriteChunks {
        var first: Int
        var rest: Int

        package static let server = WriteChunks(first: SocketChannel.writeChunk, rest: SocketChannel.writeChunk)
        /// A client's requests: a first piece that fits in 8 KiB, so a server that reads or processes 8 KiB at a
        /// time (nghttpd, our `HTTP2Server`) starts on it at once, then full 16 KiB pieces (one TLS record each, as
        /// h2load writes), which halve the writes and records per request. With 8 KiB pieces of 8 KiB plus one
        /// frame, a server answers after nearly every record, so writes and records per request double; all 16 KiB
        /// pieces would slow a server that waits for a whole record before it answers (nghttpd) at one connection.
        /// Figures: docs/benchmarks.md, "the client writes its requests in 7 KiB, then 16 KiB pieces".
        package static let client = WriteChunks(first: 7 * 1024, rest: 16 * 1024)
    }

    private let writeChunks: WriteChunks
    /// The piece size in force: `writeChunks.first` for the first piece of a flush, then `writeChunks.rest`.
    private var currentWriteChunk: Int

    package init(loop: EventLoop, fd: Int32, tls: TLSSession?, connecting: Bool, writeChunks: WriteChunks = .server) {
        self.writeChunks = writeChunks
        currentWriteChunk = writeChunks.first
        self.loop = loop
        self.fd = fd
        self.tls = tls
        outbound = tls?.ciphertextOut ?? ByteQueue()
        plaintextOut = tls == nil ? nil : ByteQueue()
        state = connecting ? .connecting : (tls == nil ? .active : .handshaking)
    }

    deinit {
        // Only reached open if the loop stopped under a live connection (group shut down first): do not leak the fd.
        if fd >= 0 { Glibc.close(fd) }
    }

    /// Registers with the loop; call once from the loop thread.
    package func register() {
        SocketIO.setNoDelay(fd)
        loop.register(fd: fd, handler: self, readable: state != .connecting, writable: state == .connecting)
        wantsWritable = state == .connecting
        if state == .active {
            didBecomeActive()
        } else if state == .handshaking {
            continueHandshake()
        }
    }

    // MARK: subclass hooks

    /// TCP (and TLS) established.
    open func didBecomeActive() {}
    /// Plaintext arrived. Return false to close the connection.
    open func didRead(_ bytes: UnsafeRawBufferPointer) -> Bool { true }
    /// Append output with `emit` until there is none or `outputIsFull`.
    open func produceOutput() {}
    /// Called exactly once when the channel closes.
    open func didClose(error: TransportError?) {}

    // MARK: output

    /// Appends plaintext to send at the end of this turn.
    package final func emit(_ pointer: UnsafeRawPointer, _ count: Int) {
        if let plaintextOut {
            plaintextOut.append(pointer, count)
        } else {
            outbound.append(pointer, count)
        }
    }

    /// True once a write's worth (`writeChunks`) is waiting: `produceOutput` stops there.
    package final var outputIsFull: Bool {
        outbound.readableBytes + (plaintextOut?.readableBytes ?? 0) >= currentWriteChunk
    }

    /// Asks for a `produceOutput` + write at the end of this turn.
    package final func scheduleFlush() {
        guard !flushScheduled, state != .closed else { return }
        flushScheduled = true
        loop.scheduleFlush(self)
    }

    open func flushAtEndOfTurn() {
        flushScheduled = false
        guard state == .active else {
            if state == .handshaking { writeOutbound() }
            return
        }
        writeProducedOutput()
    }

    /// Produces and writes what is ready now, in the middle of a turn: a server answers part of a large read
    /// before it processes the rest (see `HTTP2ServerConnection.didRead`). The end-of-turn flush stays scheduled.
    package final func writeProducedOutput() {
        guard state == .active else { return }
        currentWriteChunk = writeChunks.first
        defer { currentWriteChunk = writeChunks.first }
        // Produce and write in pieces of `writeChunks`, not all at once: the peer starts on the first piece while
        // the rest is being produced. With one write per turn, one connection with many streams runs in lockstep
        // (the peer idle while we serialize the whole batch, we idle while it answers it); pieces split the batch,
        // and the halves then keep both sides busy. Stops when there is no more output or the socket is full.
        while true {
            produceOutput()
            guard state == .active else { return }
            let more = outputIsFull
            if let plaintextOut, let tls, !plaintextOut.isEmpty {
                guard tls.write(plaintextOut.readPointer, plaintextOut.readableBytes) else {
                    close(error: .connectionLost("TLS write failed: \(openSSLErrorText())"))
                    return
                }
                plaintextOut.removeAll()
            }
            writeOutbound()
            currentWriteChunk = writeChunks.rest
            guard more, state == .active, outbound.isEmpty else { return }
        }
    }

    private func writeOutbound() {
        guard state != .closed else { return }
        if !outbound.isEmpty {
            guard let written = SocketIO.write(fd, outbound.readPointer, outbound.readableBytes) else {
                close(error: .connectionLost("write: \(SocketIO.errorString(errno))"))
                return
            }
            outbound.consume(written)
        }
        let needWritable = !outbound.isEmpty
        if needWritable != wantsWritable {
            wantsWritable = needWritable
            loop.setInterest(fd: fd, readable: true, writable: needWritable)
        }
    }

    // MARK: readiness

    package func selectableReady(readable: Bool, writable: Bool, failed: Bool) {
        switch state {
        case .closed:
            return
        case .connecting:
            let error = SocketIO.pendingError(fd)
            if error != 0 || failed {
                close(error: .connectFailed(SocketIO.errorString(error == 0 ? ECONNREFUSED : error)))
                return
            }
            guard writable else { return }
            wantsWritable = false
            loop.setInterest(fd: fd, readable: true, writable: false)
            if tls != nil {
                state = .handshaking
                continueHandshake()
            } else {
                state = .active
                didBecomeActive()
                scheduleFlush()
            }
            return
        case .handshaking, .active:
            if writable {
                writeOutbound()
                if state == .active && outbound.isEmpty { scheduleFlush() }
            }
            if readable { readAvailable() }
        }
    }

    private func readAvailable() {
        // Read until the socket is empty, bounded per turn so one busy connection cannot starve the others.
        var rounds = 0
        while state != .closed && rounds < 16 {
            rounds += 1
            switch SocketIO.read(fd, into: loop.readBuffer) {
            case .bytes(let count):
                if let tls {
                    tls.withCiphertext(loop.readBuffer.baseAddress!, count) {
                        if state == .handshaking { continueHandshake() }
                        if state == .active { decryptAvailable(tls) }
                    }
                    if state == .handshaking { continue }
                } else if !didRead(UnsafeRawBufferPointer(rebasing: loop.readBuffer[0..<count])) {
                    return
                }
                if count < loop.readBuffer.count { scheduleFlush(); return }
            case .wouldBlock:
                scheduleFlush()
                return
            case .eof:
                close(error: .connectionLost("peer closed the connection"))
                return
            case .error(let code):
                close(error: .connectionLost("read: \(SocketIO.errorString(code))"))
                return
            }
        }
        scheduleFlush()
    }

    private func decryptAvailable(_ tls: TLSSession) {
        while state == .active {
            switch tls.read(into: loop.plaintextBuffer) {
            case .bytes(let count):
                if !didRead(UnsafeRawBufferPointer(rebasing: loop.plaintextBuffer[0..<count])) { return }
            case .needMoreInput:
                return
            case .closed:
                close(error: .connectionLost("peer closed TLS"))
                return
            case .failed(let error):
                close(error: error)
                return
            }
        }
    }

    private func continueHandshake() {
        guard let tls else { return }
        switch tls.handshake() {
        case .inProgress:
            writeOutbound()
        case .done:
            state = .active
            didBecomeActive()
            scheduleFlush()
        case .failed(let error):
            writeOutbound()  // the alert, if OpenSSL wrote one
            close(error: error)
        }
    }

    // MARK: close

    /// Half-closes: the peer gets what was written, then end of stream, while reading goes on. The start of a
    /// lingering close (see `HTTP2ServerConnection`).
    package final func shutdownOutput() {
        guard state != .closed, fd >= 0 else { return }
        _ = Glibc.shutdown(fd, Int32(SHUT_WR))
    }

    /// Closes the socket now (idempotent) and reports `didClose` once.
    package final func close(error: TransportError?) {
        guard state != .closed else { return }
        state = .closed
        loop.deregister(fd: fd)
        Glibc.close(fd)
        fd = -1
        didClose(error: error)
    }
}
