import ClarionCore
import ClarionTransport
/// Scheme, host and port of a server. `https` means TLS with ALPN "h2"; `http` means h2c with prior knowledge
/// (tests and benchmarks only).
public struct HTTP2Origin: Sendable, Hashable, CustomStringConvertible {
    public enum Scheme: String, Sendable {
        case https
        case http
    }

    public var scheme: Scheme
    public var host: String
    public var port: Int

    public init(scheme: Scheme, host: String, port: Int? = nil) {
        self.scheme = scheme
        self.host = host
        self.port = port ?? (scheme == .https ? 443 : 80)
    }

    /// Parses `https://host[:port]` or `http://host[:port]` (a trailing `/` is allowed; no path).
    public init(_ url: String) throws(HTTP2Error) {
        let scheme: Scheme
        var rest: Substring
        if url.hasPrefix("https://") {
            scheme = .https
            rest = url.dropFirst(8)
        } else if url.hasPrefix("http://") {
            scheme = .http
            rest = url.dropFirst(7)
        } else {
            throw .invalidRequest("origin must start with https:// or http://: \(url)")
        }
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        guard !rest.isEmpty, !rest.contains("/") else { throw .invalidRequest("origin has no host or has a path: \(url)") }
        var host = String(rest)
        var port: Int?
        if let close = rest.lastIndex(of: "]") {  // [v6]:port
            let after = rest[rest.index(after: close)...]
            host = String(rest[...close])
            if after.hasPrefix(":") { port = Int(after.dropFirst()) }
        } else if let colon = rest.lastIndex(of: ":") {
            host = String(rest[..<colon])
            port = Int(rest[rest.index(after: colon)...])
            if port == nil { throw .invalidRequest("bad port in \(url)") }
        }
        self.init(scheme: scheme, host: host, port: port)
    }

    /// `host` or `host:port` when the port is not the scheme's default (the `:authority` sent by default).
    public var authority: String {
        let defaultPort = scheme == .https ? 443 : 80
        return port == defaultPort ? host : "\(host):\(port)"
    }

    public var description: String { "\(scheme.rawValue)://\(authority)" }
}

/// How one pool (one origin + one credential identity) behaves.
public struct HTTP2PoolConfiguration: Sendable {
    public var origin: HTTP2Origin
    /// Opaque credential identity (e.g. APNs team + key id + environment). Pools are keyed by origin + identity,
    /// never by host alone.
    public var identity: String
    /// Connections the pool may open (they open on demand).
    public var connectionCount: Int
    /// Our own ceiling on streams per connection, on top of the server's SETTINGS_MAX_CONCURRENT_STREAMS.
    public var maxConcurrentStreamsPerConnection: Int
    /// Streams a new connection may use before the server's first SETTINGS (APNs: 1, the probe).
    public var initialConcurrentStreams: Int
    /// Requests waiting for a stream. When full, callers get `.overloaded` at once.
    public var maxQueuedRequests: Int
    public var requestTimeout: Duration
    /// TCP + TLS within this, or the attempt fails.
    public var connectTimeout: Duration
    /// Extra trusted CA certificates (PEM), on top of the system store (private providers, the emulator).
    public var trustedCAPEM: String?
    /// Which resolved addresses a connection may go to; nil connects anywhere. A tenant sets the provider's
    /// base URL, so the node's pools refuse loopback and private addresses unless the operator allows them.
    public var addressPolicy: OutboundAddressPolicy?
    /// A TLS client certificate and key presented when the server asks (APNs certificate-based auth). Checked when
    /// the pool is created (`TLSConfigurationError` with code `.certificate`, `.privateKey` or `.keyMismatch`); the
    /// pool is keyed by the certificate's SHA-256 as well as `identity`, so no two certificates share a pool.
    public var clientIdentity: TLSIdentity?
    /// Send a PING after this long without reading anything; nil disables keepalive.
    public var pingInterval: Duration?
    /// With a PING outstanding, declare the peer dead after this long without reading anything.
    public var pingTimeout: Duration
    /// Close a connection that had no stream for this long; nil keeps connections open.
    public var idleTimeout: Duration?
    public var backoff: HTTP2Backoff
    /// Times a request may be refused (GOAWAY / REFUSED_STREAM) and retried on another connection.
    public var maxRefusedRetries: Int
    /// Our per-stream receive window (SETTINGS_INITIAL_WINDOW_SIZE), for response bodies.
    public var initialWindowSize: UInt32
    /// How often deadlines, PINGs and idle connections are checked.
    public var tickInterval: Duration
    /// Offer "http/1.1" after "h2" in ALPN. A server that selects it, or selects nothing, gets no HTTP/2 session:
    /// the connection closes and the requests waiting for it fail with `.http2NotNegotiated`, for the caller to
    /// send over HTTP/1.1 (Web Push: RFC 8030 does not require HTTP/2 of a push service). Without it a server that
    /// does not select h2 fails the handshake (`.tlsHandshakeFailed`).
    public var offersHTTP1: Bool = false
    /// Called on the pool's loop thread when a server sends GOAWAY (APNs puts a JSON `reason` in the debug data).
    /// Keep it short; the pool already retries and reconnects on its own.
    public var onGoAway: (@Sendable (HTTP2GoAway) -> Void)?
    /// A budget of connections shared with other pools (`CLARION_PROVIDER_MAX_CONNECTIONS`): each connection of
    /// this pool holds one unit of it while it is open; nil opens up to `connectionCount` without asking.
    public var connectionBudget: HTTP2ConnectionBudget?

    public init(
        origin: HTTP2Origin, identity: String = "", connectionCount: Int = 1,
        maxConcurrentStreamsPerConnection: Int = 1000, initialConcurrentStreams: Int = 1,
        maxQueuedRequests: Int = 10_000, requestTimeout: Duration = .seconds(30), connectTimeout: Duration = .seconds(10),
        trustedCAPEM: String? = nil, clientIdentity: TLSIdentity? = nil, pingInterval: Duration? = .seconds(30), pingTimeout: Duration = .seconds(10),
        idleTimeout: Duration? = .seconds(600), backoff: HTTP2Backoff = HTTP2Backoff(), maxRefusedRetries: Int = 3,
        initialWindowSize: UInt32 = 1 << 20, tickInterval: Duration = .milliseconds(100),
        onGoAway: (@Sendable (HTTP2GoAway) -> Void)? = nil
    ) {
        self.origin = origin
        self.identity = identity
        self.connectionCount = connectionCount
        self.maxConcurrentStreamsPerConnection = maxConcurrentStreamsPerConnection
        self.initialConcurrentStreams = initialConcurrentStreams
        self.maxQueuedRequests = maxQueuedRequests
        self.requestTimeout = requestTimeout
        self.connectTimeout = connectTimeout
        self.trustedCAPEM = trustedCAPEM
        self.clientIdentity = clientIdentity
        self.pingInterval = pingInterval
        self.pingTimeout = pingTimeout
        self.idleTimeout = idleTimeout
        self.backoff = backoff
        self.maxRefusedRetries = maxRefusedRetries
        self.initialWindowSize = initialWindowSize
        self.tickInterval = tickInterval
        self.onGoAway = onGoAway
    }
}

extension HTTP2PoolConfiguration {
    /// Loads the TLS material a pool is made with, in memory and without a connection, as pool creation does:
    /// the extra trusted CA certificates (`trustedCAPEM`: `.trustedCA` when OpenSSL reads none), then the client
    /// certificate and key (`.certificate`, `.privateKey`, `.keyMismatch`). `HTTP2ClientPool` runs exactly this when
    /// it is created, so a configuration that passes here makes a pool, and one that fails would fail there.
    public func validateTLS() throws(TLSConfigurationError) {
        if let pem = trustedCAPEM {
            try validateTrustedCertificates(pem: pem)
        }
        try clientIdentity?.validate()
    }
}

/// A GOAWAY a server sent.
public struct HTTP2GoAway: Sendable, Hashable {
    /// The HTTP/2 error code (0 = NO_ERROR).
    public var errorCode: UInt32
    /// Streams up to this id were or will be processed; later ones are retried elsewhere.
    public var lastStreamID: Int32
    public var debugData: [UInt8]

    public init(errorCode: UInt32, lastStreamID: Int32, debugData: [UInt8]) {
        self.errorCode = errorCode
        self.lastStreamID = lastStreamID
        self.debugData = debugData
    }
}

/// A snapshot of a pool, for tests, logs and metrics.
public struct HTTP2PoolStatistics: Sendable {
    public var activeConnections: Int
    public var drainingConnections: Int
    public var queuedRequests: Int
    public var inFlightRequests: Int
    /// Per active connection: the stream limit in force (server SETTINGS capped by our ceiling).
    public var maxConcurrentStreams: [Int]
    /// Connections that completed TCP (and TLS) since the pool started.
    public var connectionsOpened: Int
    /// Attempts that failed before that (resolution, TCP, TLS, timeout).
    public var connectAttemptsFailed: Int
    /// GOAWAY frames received from the server since the pool started.
    public var goAwaysReceived: Int = 0
    /// Connection slots opening a connection now (TCP, TLS, the server's SETTINGS).
    public var connectingConnections: Int = 0
    /// Connection slots waiting out a backoff after a failed attempt.
    public var backingOffSlots: Int = 0
}
