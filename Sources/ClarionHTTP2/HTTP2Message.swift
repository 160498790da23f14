#if canImport(Glibc)
import Glibc
#endif
import ClarionTransport

/// A request sent by an `HTTP2ClientPool`.
///
/// `authority` defaults to the pool's origin (`host[:port]`). `tag` is opaque to the transport and comes back with
/// the result on the batch path, so a caller can match results without a per-request closure.
public struct HTTP2Request: Sendable {
    public var method: String
    public var path: String
    /// Appended to `path` on the wire (`:path` is `path + pathSuffix`): a batch of requests can share one path
    /// prefix and carry only the per-request part, with no concatenated string per request.
    public var pathSuffix: String
    public var authority: String?
    /// Extra header fields, lowercase names (HTTP/2 requires it), e.g. `("authorization", "bearer …")`.
    public var headers: [(String, String)]
    public var body: [UInt8]
    /// Per-request deadline measured from submission; `nil` uses the pool's `requestTimeout`.
    public var timeout: Duration?
    public var tag: UInt64
    /// What of the response the caller reads; see `ResponseParts`.
    public var responseParts: ResponseParts

    /// What the transport keeps of a response.
    public enum ResponseParts: Sendable, Hashable {
        /// `:status`, the header fields and the body (the default).
        case all
        /// Only `:status`: header fields and body are dropped as they arrive, so the response costs no buffer.
        /// For callers that judge by status alone (load generators, probes); everything that is not a response
        /// (RST_STREAM, GOAWAY above the stream, timeouts, a lost connection) is reported exactly as with `.all`.
        case statusOnly
    }

    public init(
        method: String = "POST", path: String, pathSuffix: String = "", authority: String? = nil,
        headers: [(String, String)] = [], body: [UInt8] = [], timeout: Duration? = nil, tag: UInt64 = 0,
        responseParts: ResponseParts = .all
    ) {
        self.method = method
        self.path = path
        self.pathSuffix = pathSuffix
        self.authority = authority
        self.headers = headers
        self.body = body
        self.timeout = timeout
        self.tag = tag
        self.responseParts = responseParts
    }

    /// The whole `:path` of the request.
    public var fullPath: String { pathSuffix.isEmpty ? path : path + pathSuffix }
}

/// A complete response: the `:status`, the other header fields in arrival order, and the body.
///
/// The header fields are kept as one compact byte buffer (one allocation per response however many fields come)
/// and turned into strings only when read: `header(_:)` finds one field without building the list.
public struct HTTP2Response: Sendable {
    public var status: Int
    public var body: [UInt8]
    /// Fields in `EncodedHeaderFields` form.
    private(set) var encodedHeaders: [UInt8]

    public init(status: Int, headers: [(String, String)] = [], body: [UInt8] = []) {
        self.status = status
        self.body = body
        encodedHeaders = EncodedHeaderFields.encode(headers)
    }

    init(status: Int, encodedHeaders: [UInt8], body: [UInt8]) {
        self.status = status
        self.encodedHeaders = encodedHeaders
        self.body = body
    }

    /// Header fields (not pseudo-headers) in arrival order, lowercase names as HTTP/2 sends them.
    public var headers: [(String, String)] {
        get { EncodedHeaderFields.decode(encodedHeaders) }
        set { encodedHeaders = EncodedHeaderFields.encode(newValue) }
    }

    /// The first value of a header field (names compare ASCII case-insensitively).
    public func header(_ name: String) -> String? {
        EncodedHeaderFields.firstValue(in: encodedHeaders, named: name, caseInsensitive: true)
    }
}

/// Header fields in one byte buffer: per field `[UInt16 name length][name][UInt32 value length][value]`, little
/// endian, in arrival order. One allocation however many fields a message has, and no string until one is asked for.
enum EncodedHeaderFields {
    static func append(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>, to bytes: inout [UInt8]) {
        let nameLength = min(name.count, 0xFFFF)
        bytes.append(UInt8(truncatingIfNeeded: nameLength))
        bytes.append(UInt8(truncatingIfNeeded: nameLength >> 8))
        bytes.append(contentsOf: UnsafeBufferPointer(rebasing: name[0..<nameLength]))
        let valueLength = value.count
        for k in 0..<4 { bytes.append(UInt8(truncatingIfNeeded: valueLength >> (8 * k))) }
        bytes.append(contentsOf: value)
    }

    /// Tells, as names arrive one by one, whether two of them may be equal: one bit per name of a 64-bit mask
    /// picked by a cheap hash (length and two bytes). No bit set twice means no two names are equal; a bit set
    /// twice means they may be, and the caller compares for real. A handful of names rarely collide.
    struct NameFilter {
        private var seen: UInt64 = 0
        private(set) var mayRepeat = false

        mutating func add(_ name: UnsafeBufferPointer<UInt8>) {
            guard let first = name.first, let last = name.last else {
                mayRepeat = mayRepeat || seen & 1 != 0
                seen |= 1
                return
            }
            let hash = (UInt64(name.count) &* 31 &+ UInt64(first) &* 7 &+ UInt64(last)) & 63
            let bit: UInt64 = 1 << hash
            if seen & bit != 0 { mayRepeat = true }
            seen |= bit
        }
    }

    /// The same encoding into a byte queue: plain copies, no per-byte array appends (the server's header callback).
    static func append(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>, to queue: ByteQueue) {
        let nameLength = min(name.count, 0xFFFF)
        let valueLength = value.count
        let out = queue.reserve(6 + nameLength + valueLength)
        out.storeBytes(of: UInt8(truncatingIfNeeded: nameLength), toByteOffset: 0, as: UInt8.self)
        out.storeBytes(of: UInt8(truncatingIfNeeded: nameLength >> 8), toByteOffset: 1, as: UInt8.self)
        if nameLength > 0 { (out + 2).copyMemory(from: name.baseAddress!, byteCount: nameLength) }
        for k in 0..<4 {
            out.storeBytes(of: UInt8(truncatingIfNeeded: valueLength >> (8 * k)), toByteOffset: 2 + nameLength + k,
                           as: UInt8.self)
        }
        if valueLength > 0 { (out + 6 + nameLength).copyMemory(from: value.baseAddress!, byteCount: valueLength) }
        queue.commit(6 + nameLength + valueLength)
    }

    static func encode(_ fields: [(String, String)]) -> [UInt8] {
        var bytes: [UInt8] = []
        for (name, value) in fields {
            var name = name
            var value = value
            name.withUTF8 { n in value.withUTF8 { v in append(name: n, value: v, to: &bytes) } }
        }
        return bytes
    }

    static func decode(_ bytes: [UInt8]) -> [(String, String)] {
        var fields: [(String, String)] = []
        forEach(in: bytes) { name, value in
            fields.append((String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self)))
            return true
        }
        return fields
    }

    /// The field at `offset`: its name's and value's byte ranges and where the next field starts; nil at the end.
    @inline(__always)
    static func field(in bytes: UnsafeBufferPointer<UInt8>, at offset: Int) -> (Range<Int>, Range<Int>, Int)? {
        guard offset + 2 <= bytes.count else { return nil }
        let nameLength = Int(bytes[offset]) | Int(bytes[offset + 1]) << 8
        let nameStart = offset + 2
        let valueLengthAt = nameStart + nameLength
        guard valueLengthAt + 4 <= bytes.count else { return nil }
        var valueLength = 0
        for k in 0..<4 { valueLength |= Int(bytes[valueLengthAt + k]) << (8 * k) }
        let valueStart = valueLengthAt + 4
        guard valueStart + valueLength <= bytes.count else { return nil }
        return (nameStart..<valueLengthAt, valueStart..<valueStart + valueLength, valueStart + valueLength)
    }

    /// Calls `body` with each field's name and value until it returns false.
    static func forEach(in bytes: [UInt8], _ body: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) -> Bool) {
        bytes.withUnsafeBufferPointer { bytes in
            guard let base = bytes.baseAddress else { return }
            var offset = 0
            while let (name, value, end) = field(in: bytes, at: offset) {
                let keepGoing = body(UnsafeBufferPointer(start: base + name.lowerBound, count: name.count),
                                     UnsafeBufferPointer(start: base + value.lowerBound, count: value.count))
                if !keepGoing { return }
                offset = end
            }
        }
    }

    static func firstValue(in bytes: [UInt8], named name: String, caseInsensitive: Bool) -> String? {
        var wanted = name
        return wanted.withUTF8 { wanted -> String? in
            var found: String?
            forEach(in: bytes) { fieldName, value in
                guard fieldName.count == wanted.count else { return true }
                if caseInsensitive {
                    for i in 0..<wanted.count where asciiLower(fieldName[i]) != asciiLower(wanted[i]) { return true }
                } else if wanted.count > 0 && memcmp(fieldName.baseAddress!, wanted.baseAddress!, wanted.count) != 0 {
                    return true
                }
                found = String(decoding: value, as: UTF8.self)
                return false
            }
            return found
        }
    }
}

@inline(__always)
private func asciiLower(_ byte: UInt8) -> UInt8 {
    byte >= 65 && byte <= 90 ? byte + 32 : byte
}

public typealias HTTP2Result = Result<HTTP2Response, HTTP2Error>

/// Why a request got no response. A response with any status (including 4xx/5xx) is a success at this layer.
public enum HTTP2Error: Error, Sendable, Hashable, CustomStringConvertible {
    /// Name resolution, TCP connect or connect timeout failed. Safe to retry: nothing was sent.
    case connectFailed(String)
    /// The server's certificate did not verify; the reason names the failure (e.g. "self-signed certificate").
    case tlsVerificationFailed(String)
    /// The TLS handshake failed for another reason, or the server did not select ALPN "h2".
    case tlsHandshakeFailed(String)
    /// The server refused the client certificate we presented (a TLS alert: bad, unknown, expired or revoked
    /// certificate, unknown CA, access denied), or requires one and we have none. During the handshake, or at
    /// the first read under TLS 1.3, where the server judges the certificate after the client finished. Retrying
    /// with the same certificate will not help.
    case tlsClientCertificateRejected(String)
    /// The request's deadline passed (queued or in flight).
    case timeout
    /// The server reset the stream with this HTTP/2 error code (REFUSED_STREAM is retried, not reported).
    case streamReset(UInt32)
    /// The request was refused (GOAWAY above last-stream-id, or REFUSED_STREAM) more times than allowed.
    case goAwayRetryExhausted
    /// The pool's wait queue is full: slow down. Nothing was sent.
    case overloaded
    /// The connection closed or its peer stopped answering PINGs while the request was in flight. The server may
    /// or may not have processed it.
    case connectionLost(String)
    /// The peer violated HTTP/2 or the response could not be read.
    case protocolError(String)
    /// The request cannot be encoded (e.g. an empty path).
    case invalidRequest(String)
    /// The pool was shut down before the request completed.
    case shutdown
    /// The pool offers HTTP/1.1 beside h2 (`HTTP2PoolConfiguration.offersHTTP1`) and the server selected the named
    /// ALPN protocol ("http/1.1", or "none": no ALPN answer) instead of h2. Nothing was sent: the caller sends the
    /// request over HTTP/1.1 (`HTTP1ClientPool`).
    case http2NotNegotiated(String)

    public var description: String {
        switch self {
        case .connectFailed(let reason): "connect failed: \(reason)"
        case .tlsVerificationFailed(let reason): "TLS certificate verification failed: \(reason)"
        case .tlsHandshakeFailed(let reason): "TLS handshake failed: \(reason)"
        case .tlsClientCertificateRejected(let reason): "TLS client certificate refused by the server: \(reason)"
        case .timeout: "request timed out"
        case .streamReset(let code): "stream reset by peer (HTTP/2 error code \(code))"
        case .goAwayRetryExhausted: "request refused by GOAWAY/REFUSED_STREAM too many times"
        case .overloaded: "pool wait queue full: slow down"
        case .connectionLost(let reason): "connection lost: \(reason)"
        case .protocolError(let reason): "HTTP/2 protocol error: \(reason)"
        case .invalidRequest(let reason): "invalid request: \(reason)"
        case .shutdown: "pool shut down"
        case .http2NotNegotiated(let selected): "the server selected ALPN \(selected), not h2"
        }
    }
}

extension HTTP2Error {
    /// The transport's failure as the HTTP/2 layer reports it.
    init(_ error: TransportError) {
        switch error.code {
        case .connectFailed: self = .connectFailed(error.reason)
        case .tlsVerificationFailed: self = .tlsVerificationFailed(error.reason)
        case .tlsHandshakeFailed: self = .tlsHandshakeFailed(error.reason)
        case .tlsClientCertificateRejected: self = .tlsClientCertificateRejected(error.reason)
        case .protocolError: self = .protocolError(error.reason)
        default: self = .connectionLost(error.reason)
        }
    }
}

extension TransportError {
    /// An HTTP/2-level reason to close a channel, in the transport's terms (`HTTP2Error(_:)` maps it back; a
    /// connection that needs the exact reason keeps it beside).
    init(_ error: HTTP2Error) {
        switch error {
        case .connectFailed(let reason): self.init(.connectFailed, reason)
        case .tlsVerificationFailed(let reason): self.init(.tlsVerificationFailed, reason)
        case .tlsHandshakeFailed(let reason): self.init(.tlsHandshakeFailed, reason)
        case .tlsClientCertificateRejected(let reason): self.init(.tlsClientCertificateRejected, reason)
        case .connectionLost(let reason): self.init(.connectionLost, reason)
        case .protocolError(let reason): self.init(.protocolError, reason)
        default: self.init(.connectionLost, "\(error)")
        }
    }
}

/// One result on the batch path, carrying the request's `tag`.
public struct HTTP2Completion: Sendable {
    public var tag: UInt64
    public var result: HTTP2Result

    public init(tag: UInt64, result: HTTP2Result) {
        self.tag = tag
        self.result = result
    }
}

/// Receives batch-path results on the pool's event-loop thread, in batches (at most one call per loop turn).
///
/// Keep the work short: the loop thread also drives the connections. Do not keep a reference to the array after
/// returning if you want the transport to reuse its storage.
public protocol HTTP2CompletionSink: AnyObject, Sendable {
    func receive(_ completions: [HTTP2Completion])
}
