/// Whether the node can take traffic, as `/ready` reports it.
public enum Readiness: Sendable, Equatable {
    case ready
    case notReady(reason: String)
}

public struct HTTPServerConfiguration: Sendable {
    /// A numeric IPv4 or IPv6 address, or "localhost".
    public var host: String
    /// 0 binds an ephemeral port; read `HTTPServer.port` after `start()`.
    public var port: Int
    /// Event-loop threads (each with its own epoll set and its share of the connections). About one per core.
    public var threadPoolSize: Int
    /// A connection idle, trickling a request or not taking its response this long is closed. Whole seconds.
    public var connectionTimeout: Duration
    /// Simultaneous connections; over it a new connection is closed as soon as it is accepted.
    public var connectionLimit: Int
    /// How long `shutdown()` waits for in-flight requests before answering the stragglers 503.
    public var shutdownGracePeriod: Duration
    public var accessLog: (any AccessLogSink)?
    /// Asked by `GET /ready`; a database ping belongs here.
    public var readiness: @Sendable () async -> Readiness

    public init(host: String = "127.0.0.1", port: Int = 0, threadPoolSize: Int = 2,
                connectionTimeout: Duration = .seconds(30), connectionLimit: Int = 4096,
                shutdownGracePeriod: Duration = .seconds(10), accessLog: (any AccessLogSink)? = nil,
                readiness: @escaping @Sendable () async -> Readiness = { .ready }) {
        self.host = host
        self.port = port
        self.threadPoolSize = threadPoolSize
        self.connectionTimeout = connectionTimeout
        self.connectionLimit = connectionLimit
        self.shutdownGracePeriod = shutdownGracePeriod
        self.accessLog = accessLog
        self.readiness = readiness
    }
}

public struct HTTPServerError: Error, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable {
        case invalidAddress
        case startFailed
        case alreadyStarted
    }

    public let code: Code
    public let message: String

    public var description: String { "\(code.rawValue): \(message)" }
}
