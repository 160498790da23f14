public import ClarionTransport

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
    /// A connection idle, or not taking its response, this long is closed.
    public var connectionTimeout: Duration
    /// A request head (request line and header fields) must be complete this long after its first byte arrived;
    /// past it the answer is 408 and the connection closes. Every byte resets `connectionTimeout`, so without this
    /// a client sending a byte now and then would hold its connection for ever.
    public var requestHeadTimeout: Duration
    /// A request body must be complete this long after its head, plus the time its size takes at
    /// `requestBodyMinimumRate` (the declared `Content-Length`, or the route's limit when chunked); past it the
    /// answer is 408 and the connection closes.
    public var requestBodyTimeout: Duration
    /// Bytes per second a large body is granted beyond `requestBodyTimeout`; 0 grants none.
    public var requestBodyMinimumRate: Int
    /// Simultaneous connections; over it a new connection is closed as soon as it is accepted. Keep it below the
    /// process's file descriptor limit (the node does): past that limit `accept` fails, and the server stops
    /// accepting until a connection closes.
    public var connectionLimit: Int
    /// How long `shutdown()` waits for in-flight requests before answering the stragglers 503.
    public var shutdownGracePeriod: Duration
    public var accessLog: (any AccessLogSink)?
    /// Told of every finished request with its route pattern (for `/metrics`); nil counts nothing.
    public var requestMetrics: (any HTTPRequestMetrics)? = nil
    /// Serve HTTPS with this certificate chain and key (TLS 1.2+, ALPN http/1.1); nil serves plain HTTP.
    public var tls: TLSIdentity?
    /// Asked by `GET /ready`; a database ping belongs here.
    public var readiness: @Sendable () async -> Readiness

    public init(host: String = "127.0.0.1", port: Int = 0, threadPoolSize: Int = 2,
                connectionTimeout: Duration = .seconds(30), requestHeadTimeout: Duration = .seconds(20),
                requestBodyTimeout: Duration = .seconds(30), requestBodyMinimumRate: Int = 16 * 1024,
                connectionLimit: Int = 4096,
                shutdownGracePeriod: Duration = .seconds(10), accessLog: (any AccessLogSink)? = nil,
                tls: TLSIdentity? = nil, readiness: @escaping @Sendable () async -> Readiness = { .ready }) {
        self.host = host
        self.port = port
        self.threadPoolSize = threadPoolSize
        self.connectionTimeout = connectionTimeout
        self.requestHeadTimeout = requestHeadTimeout
        self.requestBodyTimeout = requestBodyTimeout
        self.requestBodyMinimumRate = requestBodyMinimumRate
        self.connectionLimit = connectionLimit
        self.shutdownGracePeriod = shutdownGracePeriod
        self.accessLog = accessLog
        self.tls = tls
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
