#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import ClarionTransport

/// A request as the server saw it once its last frame arrived.
///
/// The regular header fields stay in one byte buffer as they arrived (no string per field): `header(_:)` makes a
/// string of one value, `headerFields` walks them as bytes, and `headers` builds the whole list (for tests and
/// rare paths).
public struct HTTP2ServerRequest: Sendable {
    public var method: String
    public var path: String
    public var authority: String
    public var scheme: String
    public var body: [UInt8]
    /// Regular fields (no pseudo-headers) in `EncodedHeaderFields` form.
    var encodedHeaders: [UInt8] {
        didSet { namesMayRepeat = true }
    }
    /// False when the server saw, as the fields arrived, that no two names can be equal (see
    /// `EncodedHeaderFields.NameFilter`); then `hasRepeatedName` needs no comparison.
    var namesMayRepeat = true

    public init(method: String, path: String, authority: String = "localhost", scheme: String = "https",
                headers: [(String, String)] = [], body: [UInt8] = []) {
        self.method = method
        self.path = path
        self.authority = authority
        self.scheme = scheme
        encodedHeaders = EncodedHeaderFields.encode(headers)
        self.body = body
    }

    init(method: String, path: String, authority: String, scheme: String, encodedHeaders: [UInt8], body: [UInt8],
         namesMayRepeat: Bool) {
        self.method = method
        self.path = path
        self.authority = authority
        self.scheme = scheme
        self.encodedHeaders = encodedHeaders
        self.body = body
        self.namesMayRepeat = namesMayRepeat
    }

    /// Regular header fields (no pseudo-headers), lowercase names, in arrival order. Builds two strings per field.
    public var headers: [(String, String)] {
        get { EncodedHeaderFields.decode(encodedHeaders) }
        set { encodedHeaders = EncodedHeaderFields.encode(newValue) }
    }

    /// The first value of a header field (`name` must be lowercase, as HTTP/2 sends them).
    public func header(_ name: String) -> String? {
        EncodedHeaderFields.firstValue(in: encodedHeaders, named: name, caseInsensitive: false)
    }

    /// The header fields as bytes, in arrival order, without building strings (for hot paths).
    public var headerFields: HTTP2HeaderFields {
        HTTP2HeaderFields(bytes: encodedHeaders, namesMayRepeat: namesMayRepeat)
    }
}

/// Header fields in one byte buffer. Hot paths scan it with `forEachField` (names as bytes, values as ranges) and
/// take slices (`fields[range]`, no copy) or strings only of the values they need.
public struct HTTP2HeaderFields: Sendable {
    @usableFromInline let bytes: [UInt8]
    let namesMayRepeat: Bool

    /// Calls `body` with each field's name bytes (valid during the call only) and the range of its value.
    public func forEachField(_ body: (_ name: UnsafeBufferPointer<UInt8>, _ value: Range<Int>) -> Void) {
        bytes.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            var offset = 0
            while let (name, value, end) = EncodedHeaderFields.field(in: buffer, at: offset) {
                body(UnsafeBufferPointer(start: base + name.lowerBound, count: name.count), value)
                offset = end
            }
        }
    }

    /// The bytes of a value found by `forEachField` (a slice: no copy).
    @inlinable
    public subscript(value: Range<Int>) -> ArraySlice<UInt8> { bytes[value] }

    /// True when `name` is exactly `expected` (lowercase ASCII, as HTTP/2 sends names).
    @inlinable
    public static func name(_ name: UnsafeBufferPointer<UInt8>, is expected: StaticString) -> Bool {
        name.count == expected.utf8CodeUnitCount
            && (name.isEmpty || memcmp(name.baseAddress!, expected.utf8Start, name.count) == 0)
    }

    /// True when some field name appears more than once. Pairwise over the names' ranges, kept on the stack for
    /// up to 32 fields (a request has a handful): no allocation.
    public var hasRepeatedName: Bool {
        guard namesMayRepeat else { return false }
        return bytes.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return false }
            return withUnsafeTemporaryAllocation(of: Range<Int>.self, capacity: 32) { seen in
                var count = 0
                var offset = 0
                while let (name, _, end) = EncodedHeaderFields.field(in: buffer, at: offset) {
                    for k in 0..<count where seen[k].count == name.count
                        && (name.isEmpty || memcmp(base + seen[k].lowerBound, base + name.lowerBound, name.count) == 0) {
                        return true
                    }
                    if count == seen.count { return Self.hasRepeatedNameSlowly(buffer) }
                    seen[count] = name
                    count += 1
                    offset = end
                }
                return false
            }
        }
    }

    private static func hasRepeatedNameSlowly(_ buffer: UnsafeBufferPointer<UInt8>) -> Bool {
        let base = buffer.baseAddress!
        var offset = 0
        while let (name, _, end) = EncodedHeaderFields.field(in: buffer, at: offset) {
            var earlier = 0
            while earlier < offset, let (other, _, next) = EncodedHeaderFields.field(in: buffer, at: earlier) {
                if other.count == name.count
                    && (name.isEmpty || memcmp(base + other.lowerBound, base + name.lowerBound, name.count) == 0) {
                    return true
                }
                earlier = next
            }
            offset = end
        }
        return false
    }
}

/// A response the server sends: status, header fields (lowercase names), body. Build one once and reuse it for
/// static answers: its arrays are shared, not copied, per request.
public struct HTTP2ServerResponse: Sendable {
    public var status: Int
    public var headers: [(String, String)]
    public var body: [UInt8]

    public init(status: Int, headers: [(String, String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The first value of a header field (`name` lowercase).
    public func header(_ name: String) -> String? {
        for (key, value) in headers where key == name { return value }
        return nil
    }
}

/// What the server does with a request.
public enum HTTP2ServerAction: Sendable {
    /// Answer now.
    case respond(HTTP2ServerResponse)
    /// Answer after `delay`, without blocking the loop (a timer).
    case respondAfter(Duration, HTTP2ServerResponse)
    /// Never answer (the stream stays open until the client resets it or the connection closes), unless a
    /// `responder()` taken in the handler answers it later.
    case stall
    /// Refuse this request and every later one with GOAWAY (NO_ERROR, last-stream-id = the stream before this
    /// one); answer the earlier ones as their handlers decided, then close the connection.
    case goAway
    /// Like `goAway` with an explicit error code and debug data (APNs puts a JSON `reason` there).
    case goAwayWith(errorCode: UInt32, debugData: [UInt8])
    /// Reset this stream with the given HTTP/2 error code (e.g. 7 = REFUSED_STREAM, 2 = INTERNAL_ERROR).
    case reset(errorCode: UInt32)
    /// Close the socket now, without GOAWAY.
    case dropConnection

    public static func respond(status: Int, headers: [(String, String)] = [], body: [UInt8] = []) -> HTTP2ServerAction {
        .respond(HTTP2ServerResponse(status: status, headers: headers, body: body))
    }

    public static func respondAfter(_ delay: Duration, status: Int, headers: [(String, String)] = [],
                                    body: [UInt8] = []) -> HTTP2ServerAction {
        .respondAfter(delay, HTTP2ServerResponse(status: status, headers: headers, body: body))
    }
}

/// The handler's view of the connection a request came on. Valid only during the handler call, on the loop thread.
public struct HTTP2ServerStreamContext {
    unowned let connection: HTTP2ServerConnection
    /// The request's HTTP/2 stream id.
    public let streamID: Int32

    /// Unique per server, in accept order.
    public var connectionID: UInt64 { connection.connectionID }

    /// The TLS client certificate of this connection, when the server asks for one (`clientCertificates`) and the
    /// client presented one; nil otherwise (and always for h2c).
    public var peerCertificate: TLSPeerCertificate? { connection.tls?.peerCertificate }

    /// A per-connection slot for the handler's own state (e.g. "this connection presented a valid JWT").
    /// Lives as long as the connection; only touched on the connection's loop thread. An object (state that
    /// changes per connection is one anyway): casting it back to a class is a pointer compare, where a cast from
    /// `Any` goes through the runtime's dynamic cast on every request.
    public var connectionState: AnyObject? {
        get { connection.userState }
        nonmutating set { connection.userState = newValue }
    }

    /// Advertises a new SETTINGS_MAX_CONCURRENT_STREAMS to this connection's client (sent with the next write).
    public func setMaxConcurrentStreams(_ value: UInt32) {
        connection.submitMaxConcurrentStreams(value)
    }

    /// The value this connection last advertised.
    public var maxConcurrentStreams: UInt32 { connection.advertisedMaxConcurrentStreams }

    /// Streams open on this connection right now, this one included (what the client has in flight).
    public var openStreamCount: Int { connection.openStreamCount }

    /// A handle to answer this stream later, from any thread: return `.stall` from the handler, then call
    /// `respond(_:)` once the answer is known. Unlike `.respondAfter`, the moment is the caller's decision, not a
    /// timer's: a test holds streams open for exactly as long as it needs to look at them, however slowly it runs.
    public func responder() -> HTTP2ServerResponder {
        connection.makeResponder(streamID: streamID)
    }
}

/// Answers one stalled stream later (see `HTTP2ServerStreamContext.responder()`). Any thread may call `respond`;
/// the answer is submitted on the connection's loop. Only the first call counts, and it does nothing if the stream
/// is gone by then (reset by the client, refused after GOAWAY, connection closed).
public final class HTTP2ServerResponder: Sendable {
    private let loop: EventLoop
    private let target: Target
    private let slot: Int
    private let generation: UInt32
    private let streamID: Int32
    private let used = Atomic<Bool>(false)

    /// The connection, touched only on its loop (inside `loop.execute`), hence `@unchecked Sendable`. Weak: a
    /// forgotten responder must not keep a closed connection and its nghttp2 session alive.
    private final class Target: @unchecked Sendable {
        weak var connection: HTTP2ServerConnection?

        init(_ connection: HTTP2ServerConnection) {
            self.connection = connection
        }
    }

    init(connection: HTTP2ServerConnection, slot: Int, generation: UInt32, streamID: Int32) {
        loop = connection.loop
        target = Target(connection)
        self.slot = slot
        self.generation = generation
        self.streamID = streamID
    }

    /// Sends `response` on the stream, if it is still open.
    public func respond(_ response: HTTP2ServerResponse) {
        guard !used.exchange(true, ordering: .relaxed) else { return }
        let target = self.target
        let slot = self.slot
        let generation = self.generation
        let streamID = self.streamID
        loop.execute {
            target.connection?.respondLater(slot: slot, generation: generation, streamID: streamID, response)
        }
    }
}

public typealias HTTP2ServerHandler = @Sendable (HTTP2ServerRequest, HTTP2ServerStreamContext) -> HTTP2ServerAction

public struct HTTP2ServerConfiguration: Sendable {
    /// Numeric address to bind (e.g. "127.0.0.1", "::1", "0.0.0.0").
    public var host: String
    /// 0 picks an ephemeral port; read `HTTP2Server.port` after `start()`.
    public var port: Int
    /// nil serves h2c (prior knowledge); otherwise TLS with ALPN "h2".
    public var tls: TLSIdentity?
    /// With TLS: ask clients for a certificate (mutual TLS); handlers see it as `peerCertificate`. Ignored for h2c.
    public var clientCertificates: TLSClientCertificateRequest?
    /// SETTINGS_MAX_CONCURRENT_STREAMS advertised when a connection starts.
    public var maxConcurrentStreams: UInt32
    /// SETTINGS_INITIAL_WINDOW_SIZE (per-stream receive window) advertised when a connection starts.
    public var initialWindowSize: UInt32
    /// The connection-level receive window.
    public var connectionWindowSize: UInt32
    /// After GOAWAY (or shutdown), close anyway once this has passed, even if streams are still open.
    public var gracefulCloseTimeout: Duration
    public var backlog: Int32

    public init(host: String = "127.0.0.1", port: Int = 0, tls: TLSIdentity? = nil,
                clientCertificates: TLSClientCertificateRequest? = nil, maxConcurrentStreams: UInt32 = 100,
                initialWindowSize: UInt32 = 65_535, connectionWindowSize: UInt32 = 16 * 1024 * 1024,
                gracefulCloseTimeout: Duration = .seconds(5), backlog: Int32 = 1024) {
        self.host = host
        self.port = port
        self.tls = tls
        self.clientCertificates = clientCertificates
        self.maxConcurrentStreams = maxConcurrentStreams
        self.initialWindowSize = initialWindowSize
        self.connectionWindowSize = connectionWindowSize
        self.gracefulCloseTimeout = gracefulCloseTimeout
        self.backlog = backlog
    }
}

/// Errors from starting a server.
public struct HTTP2ServerError: Error, Sendable, CustomStringConvertible {
    public var reason: String
    public var description: String { "HTTP/2 server: \(reason)" }
}
