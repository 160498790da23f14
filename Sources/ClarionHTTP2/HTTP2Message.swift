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

    public init(
        method: String = "POST", path: String, pathSuffix: String = "", authority: String? = nil,
        headers: [(String, String)] = [], body: [UInt8] = [], timeout: Duration? = nil, tag: UInt64 = 0
    ) {
        self.method = method
        self.path = path
        self.pathSuffix = pathSuffix
        self.authority = authority
        self.headers = headers
        self.body = body
        self.timeout = timeout
        self.tag = tag
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
    /// Fields as [UInt16 name length][name][UInt32 value length][value], little endian.
    private(set) var encodedHeaders: [UInt8]

    public init(status: Int, headers: [(String, String)] = [], body: [UInt8] = []) {
        self.status = status
        self.body = body
        encodedHeaders = []
        for (name, value) in headers { HTTP2Response.append(name: Array(name.utf8), value: Array(value.utf8), to: &encodedHeaders) }
    }

    init(status: Int, encodedHeaders: [UInt8], body: [UInt8]) {
        self.status = status
        self.encodedHeaders = encodedHeaders
        self.body = body
    }

    /// Header fields (not pseudo-headers) in arrival order, lowercase names as HTTP/2 sends them.
    public var headers: [(String, String)] {
        get {
            var fields: [(String, String)] = []
            forEachField { name, value in
                fields.append((String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self)))
                return true
            }
            return fields
        }
        set {
            encodedHeaders.removeAll()
            for (name, value) in newValue {
                HTTP2Response.append(name: Array(name.utf8), value: Array(value.utf8), to: &encodedHeaders)
            }
        }
    }

    /// The first value of a header field (names compare ASCII case-insensitively).
    public func header(_ name: String) -> String? {
        var name = name
        // `withUTF8` reads a native string in place (no array of the name per lookup).
        return name.withUTF8 { wanted -> String? in
            var found: String?
            forEachField { fieldName, value in
                guard fieldName.count == wanted.count else { return true }
                for i in 0..<wanted.count where asciiLower(fieldName[i]) != asciiLower(wanted[i]) { return true }
                found = String(decoding: value, as: UTF8.self)
                return false
            }
            return found
        }
    }

    private func forEachField(_ body: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) -> Bool) {
        encodedHeaders.withUnsafeBufferPointer { bytes in
            guard let base = bytes.baseAddress else { return }
            var i = 0
            while i + 2 <= bytes.count {
                let nameLength = Int(bytes[i]) | Int(bytes[i + 1]) << 8
                let nameStart = i + 2
                let valueLengthAt = nameStart + nameLength
                guard valueLengthAt + 4 <= bytes.count else { return }
                var valueLength = 0
                for k in 0..<4 { valueLength |= Int(bytes[valueLengthAt + k]) << (8 * k) }
                let valueStart = valueLengthAt + 4
                guard valueStart + valueLength <= bytes.count else { return }
                let keepGoing = body(UnsafeBufferPointer(start: base + nameStart, count: nameLength),
                                     UnsafeBufferPointer(start: base + valueStart, count: valueLength))
                if !keepGoing { return }
                i = valueStart + valueLength
            }
        }
    }

    static func append(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>, to bytes: inout [UInt8]) {
        let nameLength = min(name.count, 0xFFFF)
        bytes.append(UInt8(truncatingIfNeeded: nameLength))
        bytes.append(UInt8(truncatingIfNeeded: nameLength >> 8))
        bytes.append(contentsOf: UnsafeBufferPointer(rebasing: name[0..<nameLength]))
        let valueLength = value.count
        for k in 0..<4 { bytes.append(UInt8(truncatingIfNeeded: valueLength >> (8 * k))) }
        bytes.append(contentsOf: value)
    }

    static func append(name: [UInt8], value: [UInt8], to bytes: inout [UInt8]) {
        name.withUnsafeBufferPointer { n in value.withUnsafeBufferPointer { v in append(name: n, value: v, to: &bytes) } }
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
