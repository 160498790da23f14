import Foundation

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

    public init(method: String, path: String, status: Int, duration: Duration, requestID: String,
                remoteAddress: String, completed: Bool) {
        self.method = method
        self.path = path
        self.status = status
        self.duration = duration
        self.requestID = requestID
        self.remoteAddress = remoteAddress
        self.completed = completed
    }

    /// The entry as one JSON object (no trailing newline): a constant message, data in fields.
    public var jsonLine: String {
        let micros = duration.components.seconds * 1_000_000 + duration.components.attoseconds / 1_000_000_000_000
        return "{\"msg\":\"http.request\",\"method\":\(JSONText.quote(method)),\"path\":\(JSONText.quote(path))"
            + ",\"status\":\(status),\"duration_us\":\(micros),\"request_id\":\(JSONText.quote(requestID))"
            + ",\"remote\":\(JSONText.quote(remoteAddress)),\"completed\":\(completed)}"
    }
}

/// Where access log entries go. Called on the server's threads once per request: keep it cheap and
/// never block for long (hand off to a buffered writer if the destination is slow).
public protocol AccessLogSink: Sendable {
    func record(_ entry: AccessLogEntry)
}

/// Writes each entry as a JSON line to a file descriptor (standard error by default).
public struct JSONLinesAccessLog: AccessLogSink {
    private let descriptor: Int32

    public init(descriptor: Int32 = STDERR_FILENO) { self.descriptor = descriptor }

    public func record(_ entry: AccessLogEntry) {
        var line = entry.jsonLine
        line.append("\n")
        line.withUTF8 { buffer in
            var offset = 0
            while offset < buffer.count {
                let n = write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if n <= 0 { return }
                offset += n
            }
        }
    }
}

/// Forwards entries to a closure (tests, adapters to other loggers).
public struct ClosureAccessLog: AccessLogSink {
    private let body: @Sendable (AccessLogEntry) -> Void
    public init(_ body: @escaping @Sendable (AccessLogEntry) -> Void) { self.body = body }
    public func record(_ entry: AccessLogEntry) { body(entry) }
}
