import ClarionCore
import Foundation
import Synchronization

/// One finished request, as the access log sees it. Deliberately has no place for the body, the query string
/// or any header: nothing secret (Authorization, signatures in presigned URLs, tokens) can reach a log this way.
public struct AccessLogEntry: Sendable {
    public let method: String
    /// The path as sent, without the query string.
    public let path: String
    /// The status sent; 0 when the connection ended before a response was queued.
    public let status: Int
    public let duration: Duration
    public let requestID: String
    public let remoteAddress: String
    /// False when the connection ended abnormally (client gone, timeout, server stopping).
    public let completed: Bool
    /// Why a 5xx answer was given (set by the handler; never part of the response).
    public let cause: String?

    public init(method: String, path: String, status: Int, duration: Duration, requestID: String,
                remoteAddress: String, completed: Bool, cause: String? = nil) {
        self.cause = cause
        self.method = method
        self.path = path
        self.status = status
        self.duration = duration
        self.requestID = requestID
        self.remoteAddress = remoteAddress
        self.completed = completed
    }

    /// The logger name and constant message of every access-log line.
    public static let logger = "clarion.access"
    public static let message = "http.request"

    /// The entry as one JSON line of the node's log (no trailing newline), stamped now.
    public var jsonLine: String { line(at: Log.now(), format: .json) }

    /// The entry as one line of the node's log (no trailing newline).
    public func line(at time: (seconds: Int, milliseconds: Int), format: Log.Format) -> String {
        var bytes: [UInt8] = []
        appendLine(to: &bytes, at: time, format: format)
        bytes.removeLast()
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends the entry as one line of the node's log (`Log`'s shape: ts, level, logger, msg, then the fields) and
    /// a newline, written straight into `out` (the buffered log formats in place: building a String per request
    /// took about seven allocations).
    public func appendLine(to out: inout [UInt8], at time: (seconds: Int, milliseconds: Int), format: Log.Format) {
        let micros = duration.components.seconds * 1_000_000 + duration.components.attoseconds / 1_000_000_000_000
        switch format {
        case .json:
            Log.appendJSONHead(.info, logger: Self.logger, message: Self.message, at: time, to: &out)
            out.append(contentsOf: #","method":"#.utf8)
            JSONText.appendQuoted(method, to: &out)
            out.append(contentsOf: #","path":"#.utf8)
            JSONText.appendQuoted(path, to: &out)
            out.append(contentsOf: #","status":"#.utf8)
            JSONText.appendDecimal(Int64(status), to: &out)
            out.append(contentsOf: #","duration_us":"#.utf8)
            JSONText.appendDecimal(micros, to: &out)
            out.append(contentsOf: #","request_id":"#.utf8)
            JSONText.appendQuoted(requestID, to: &out)
            out.append(contentsOf: #","remote":"#.utf8)
            JSONText.appendQuoted(remoteAddress, to: &out)
            if let cause {
                out.append(contentsOf: #","cause":"#.utf8)
                JSONText.appendQuoted(cause, to: &out)
            }
            out.append(contentsOf: (completed ? #","completed":true}"# : #","completed":false}"#).utf8)
        case .text:
            Log.appendTextHead(.info, logger: Self.logger, message: Self.message, at: time, to: &out)
            Log.appendTextField("method", method, to: &out)
            Log.appendTextField("path", path, to: &out)
            Log.appendTextField("status", String(status), to: &out)
            Log.appendTextField("duration_us", String(micros), to: &out)
            Log.appendTextField("request_id", requestID, to: &out)
            Log.appendTextField("remote", remoteAddress, to: &out)
            if let cause { Log.appendTextField("cause", cause, to: &out) }
            if !completed { Log.appendTextField("completed", "false", to: &out) }
        }
        out.append(UInt8(ascii: "\n"))
    }
}

/// Where access log entries go. Called on the server's threads once per request: keep it cheap and
/// never block for long (hand off to a buffered writer if the destination is slow).
public protocol AccessLogSink: Sendable {
    func record(_ entry: AccessLogEntry)
    /// Writes out whatever is buffered (the server calls it when it has stopped).
    func flush()
}

extension AccessLogSink {
    public func flush() {}
}

/// Writes each entry as a line of the node's log (`Log`: its format, and nothing below its level, where access lines
/// are `info`) to a file descriptor (standard error by default), buffered: lines are
/// appended to a buffer under a lock and a writer thread writes it out every `interval` (100 ms) or as soon as
/// it holds `flushBytes`. A write system call per request was a visible share of a Publish's CPU; now the
/// request threads only format and copy. A crash can lose the last interval's lines (never a request: the
/// log is not the record of what was accepted). `flush()` writes everything out at once.
public final class BufferedAccessLog: AccessLogSink {
    private let descriptor: Int32
    private let interval: Duration
    private let flushBytes: Int
    private let buffer = Mutex<[UInt8]>([])
    private let wake = NSCondition()
    private let started = Atomic<Bool>(false)
    /// Held while a chunk is taken and written, so chunks reach the descriptor in order.
    private let writing = NSLock()

    public init(descriptor: Int32 = STDERR_FILENO, interval: Duration = .milliseconds(100), flushBytes: Int = 64 << 10) {
        self.descriptor = descriptor
        self.interval = interval
        self.flushBytes = flushBytes
    }

    public func record(_ entry: AccessLogEntry) {
        guard Log.enabled(.info) else { return }
        let time = Log.now()
        let format = Log.format
        let size = buffer.withLock { buffer in
            entry.appendLine(to: &buffer, at: time, format: format)
            return buffer.count
        }
        if !started.load(ordering: .relaxed), started.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged {
            let thread = Thread { [self] in self.writerLoop() }
            thread.name = "clarion-access-log"
            thread.start()
        }
        if size >= flushBytes {
            wake.lock()
            wake.signal()
            wake.unlock()
        }
    }

    public func flush() {
        writing.lock()
        defer { writing.unlock() }
        let pending = buffer.withLock { buffer -> [UInt8] in
            defer { buffer.removeAll(keepingCapacity: true) }
            return buffer
        }
        pending.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let n = write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                if n <= 0 { return }
                offset += n
            }
        }
    }

    /// Runs for the life of the process (a log has no end of its own; `flush()` covers shutdown).
    private func writerLoop() {
        let seconds = Double(interval.components.seconds) + Double(interval.components.attoseconds) / 1e18
        while true {
            wake.lock()
            _ = wake.wait(until: Date(timeIntervalSinceNow: seconds))
            wake.unlock()
            flush()
        }
    }
}
