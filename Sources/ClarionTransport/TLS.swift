internal import COpenSSL

/// A certificate chain and private key in PEM: a server's identity, or a client's (TLS client-certificate
/// authentication, e.g. APNs certificate-based auth).
public struct TLSIdentity: Sendable {
    /// The leaf certificate first, then any intermediates.
    public var certificateChainPEM: String
    public var privateKeyPEM: String

    public init(certificateChainPEM: String, privateKeyPEM: String) {
        self.certificateChainPEM = certificateChainPEM
        self.privateKeyPEM = privateKeyPEM
    }

    /// Loads the identity into a scratch `SSL_CTX` exactly as a pool or server would (certificate, chain, key,
    /// `SSL_CTX_check_private_key`) and throws what that would throw: a configuration-time check, in memory.
    public func validate() throws(TLSConfigurationError) {
        guard let ctx = SSL_CTX_new(TLS_client_method()) else {
            throw TLSConfigurationError(reason: "SSL_CTX_new: \(openSSLErrorText())")
        }
        defer { SSL_CTX_free(ctx) }
        try loadTLSIdentity(self, into: ctx)
    }

    /// The leaf (first) certificate of the chain.
    public func leafCertificate() throws(TLSConfigurationError) -> TLSCertificate {
        try TLSCertificate(pem: certificateChainPEM)
    }
}

/// Errors while building a TLS context from configuration (bad PEM, unusable key, key not matching).
public struct TLSConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable {
        /// A certificate (the identity's chain) is not readable PEM.
        case certificate
        /// The private key is not a readable, unencrypted PEM key.
        case privateKey
        /// The private key is readable but is not the key of the leaf certificate.
        case keyMismatch
        /// Extra trusted CA certificates (a pool's `trustedCAPEM`, a server's client-certificate CAs) do not load.
        case trustedCA
        /// OpenSSL failed for another reason (allocation, key generation, signing).
        case openSSL
    }

    public var code: Code
    public var reason: String

    public init(code: Code = .openSSL, reason: String) {
        self.code = code
        self.reason = reason
    }

    public var description: String { "TLS configuration: \(reason)" }
}

/// The most recent OpenSSL error queue entries as text; clears the queue.
func openSSLErrorText() -> String {
    var parts: [String] = []
    var buffer = [CChar](repeating: 0, count: 256)
    while true {
        let code = ERR_get_error()
        if code == 0 { break }
        ERR_error_string_n(code, &buffer, buffer.count)
        parts.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }
    return parts.isEmpty ? "unknown OpenSSL error" : parts.joined(separator: "; ")
}

func freeCertificate(_ certificate: OpaquePointer) {
    X509_free(certificate)
}

/// Runs `body` with a read-only memory BIO over the UTF-8 bytes of `text`, and frees the BIO before returning.
///
/// `BIO_new_mem_buf` does not copy: the BIO reads the bytes in place for as long as it lives, and a pointer from
/// `withUTF8`/`withUnsafeBytes` is valid only inside its closure (docs/testing.md, "C interop defects fixed"). So the BIO is created, read and freed inside the closure. (Creating it inside and reading it after
/// worked in debug builds; release builds freed the bytes first and PEM parsing found no certificate.)
func withMemoryBIO<R>(
    _ text: String, _ body: (OpaquePointer) throws(TLSConfigurationError) -> R
) throws(TLSConfigurationError) -> R {
    var text = text
    let result = text.withUTF8 { bytes -> Result<R, TLSConfigurationError> in
        guard let base = bytes.baseAddress, let count = Int32(exactly: bytes.count) else {
            return .failure(TLSConfigurationError(reason: "PEM text is empty or too large"))
        }
        guard let bio = BIO_new_mem_buf(base, count) else {
            return .failure(TLSConfigurationError(reason: "BIO_new_mem_buf: \(openSSLErrorText())"))
        }
        defer { BIO_free(bio) }
        do throws(TLSConfigurationError) {
            return .success(try body(bio))
        } catch {
            return .failure(error)
        }
    }
    return try result.get()
}

/// Reads every certificate in a PEM string (errors carry `code`).
func readCertificates(pem: String, code: TLSConfigurationError.Code = .certificate) throws(TLSConfigurationError) -> [OpaquePointer] {
    if pem.isEmpty { throw TLSConfigurationError(code: code, reason: "no certificate in PEM") }
    let certificates = try withMemoryBIO(pem) { bio in
        var certificates: [OpaquePointer] = []
        while let cert = PEM_read_bio_X509(bio, nil, nil, nil) {
            certificates.append(cert)
        }
        ERR_clear_error()  // the loop ends with a "no start line" error
        return certificates
    }
    if certificates.isEmpty { throw TLSConfigurationError(code: code, reason: "no certificate in PEM") }
    return certificates
}

/// Reads `pem` as extra trusted CA certificates exactly as a client context does, and throws what that would throw
/// (`.trustedCA`): a configuration-time check, in memory.
package func validateTrustedCertificates(pem: String) throws(TLSConfigurationError) {
    for certificate in try readCertificates(pem: pem, code: .trustedCA) { X509_free(certificate) }
}

/// Reads the first private key in a PEM string (PKCS#8, SEC 1 or PKCS#1; unencrypted). The caller frees it.
func readPrivateKey(pem: String) throws(TLSConfigurationError) -> OpaquePointer {
    let unreadable = "private key is not a readable unencrypted PEM key"
    if pem.isEmpty { throw TLSConfigurationError(code: .privateKey, reason: "\(unreadable): empty") }
    return try withMemoryBIO(pem) { bio throws(TLSConfigurationError) in
        // A nil password callback would prompt on the terminal for an encrypted key: refuse instead.
        guard let key = PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in 0 }, nil) else {
            throw TLSConfigurationError(code: .privateKey, reason: "\(unreadable): \(openSSLErrorText())")
        }
        return key
    }
}

/// Installs `identity` in `ctx`: the leaf certificate, the rest of the chain as extra chain certificates, the
/// private key, and OpenSSL's own check that the key belongs to the certificate. Shared by servers and clients,
/// so a pool's configuration-time check (`TLSIdentity.validate`) is the very code that runs at connect.
func loadTLSIdentity(_ identity: TLSIdentity, into ctx: OpaquePointer) throws(TLSConfigurationError) {
    let chain = try readCertificates(pem: identity.certificateChainPEM)
    defer { chain.forEach { X509_free($0) } }
    guard SSL_CTX_use_certificate(ctx, chain[0]) == 1 else {
        throw TLSConfigurationError(code: .certificate, reason: "certificate not usable: \(openSSLErrorText())")
    }
    for intermediate in chain.dropFirst() {
        guard clarion_SSL_CTX_add1_chain_cert(ctx, intermediate) == 1 else {
            throw TLSConfigurationError(code: .certificate, reason: "chain certificate not usable: \(openSSLErrorText())")
        }
    }
    let key = try readPrivateKey(pem: identity.privateKeyPEM)
    defer { EVP_PKEY_free(key) }
    // SSL_CTX_use_PrivateKey itself refuses a key whose public half differs from the certificate's.
    guard SSL_CTX_use_PrivateKey(ctx, key) == 1, SSL_CTX_check_private_key(ctx) == 1 else {
        ERR_clear_error()
        throw TLSConfigurationError(code: .keyMismatch, reason: "the private key does not match the certificate")
    }
}

/// An `SSL_CTX` shared by the connections of one pool or one server. `SSL_CTX` is safe to share across threads
/// once configured, which is why this is `@unchecked Sendable`; it is never mutated after init.
package final class TLSContext: @unchecked Sendable {
    let context: OpaquePointer
    let isServer: Bool
    /// Client: we present a certificate, so a peer's certificate alert is about ours.
    let presentsCertificate: Bool
    /// Server: client certificates are requested (their details reach the handler).
    let requestsClientCertificates: Bool
    /// The ALPN protocol a client requires and a server selects ("h2", "http/1.1"). Empty for a client that offers
    /// several and accepts whichever the server selects (`TLSSession.selectedALPN` says which).
    let alpn: [UInt8]

    /// A client context: TLS 1.2+, ALPN `alpn` (the handshake fails unless the server selects it), peer verification
    /// against the system CA store plus `extraTrustedCAPEM`, and `identity` presented when the server asks for a
    /// client certificate.
    package convenience init(clientTrusting extraTrustedCAPEM: String?, identity: TLSIdentity? = nil,
                             alpn: String) throws(TLSConfigurationError) {
        try self.init(clientTrusting: extraTrustedCAPEM, identity: identity, offering: [alpn], requireFirst: true)
    }

    /// A client context that offers every protocol of `offering` in order of preference ("h2", "http/1.1") and
    /// completes the handshake whatever the server selects, or if it selects none (RFC 7301 section 3.1: a server
    /// that does not support ALPN does not answer; an HTTPS server that does not answer speaks HTTP/1.1, RFC 9113
    /// section 3.2/3.3 reserve "h2" for a negotiated HTTP/2). The caller reads `TLSSession.selectedALPN`.
    package convenience init(clientTrusting extraTrustedCAPEM: String?, identity: TLSIdentity? = nil,
                             offering: [String]) throws(TLSConfigurationError) {
        try self.init(clientTrusting: extraTrustedCAPEM, identity: identity, offering: offering, requireFirst: false)
    }

    private init(clientTrusting extraTrustedCAPEM: String?, identity: TLSIdentity?, offering: [String],
                 requireFirst: Bool) throws(TLSConfigurationError) {
        guard let ctx = SSL_CTX_new(TLS_client_method()) else {
            throw TLSConfigurationError(reason: "SSL_CTX_new: \(openSSLErrorText())")
        }
        context = ctx
        isServer = false
        self.alpn = requireFirst ? Array((offering.first ?? "").utf8) : []
        presentsCertificate = identity != nil
        requestsClientCertificates = false
        _ = clarion_SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION)
        if SSL_CTX_set_default_verify_paths(ctx) != 1 { ERR_clear_error() }
        if let pem = extraTrustedCAPEM {
            let store = SSL_CTX_get_cert_store(ctx)
            for cert in try readCertificates(pem: pem, code: .trustedCA) {
                X509_STORE_add_cert(store, cert)
                X509_free(cert)
            }
        }
        if let identity { try loadTLSIdentity(identity, into: ctx) }
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nil)
        // The wire form (RFC 7301 section 3.1): each name prefixed by its one-byte length.
        var protocols: [UInt8] = []
        for name in offering where !name.isEmpty && name.utf8.count < 256 {
            protocols.append(UInt8(name.utf8.count))
            protocols.append(contentsOf: name.utf8)
        }
        _ = protocols.withUnsafeBufferPointer { SSL_CTX_set_alpn_protos(ctx, $0.baseAddress, UInt32($0.count)) }
    }

    /// A server context that selects ALPN `alpn` when the client offers it (and no protocol otherwise), and with
    /// `clientCertificates` asks clients for a certificate.
    package init(server identity: TLSIdentity, clientCertificates: TLSClientCertificateRequest? = nil,
                 alpn: String) throws(TLSConfigurationError) {
        guard let ctx = SSL_CTX_new(TLS_server_method()) else {
            throw TLSConfigurationError(reason: "SSL_CTX_new: \(openSSLErrorText())")
        }
        context = ctx
        isServer = true
        self.alpn = Array(alpn.utf8)
        presentsCertificate = false
        requestsClientCertificates = clientCertificates != nil
        _ = clarion_SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION)
        try loadTLSIdentity(identity, into: ctx)
        if let request = clientCertificates {
            if let pem = request.trustedCAPEM {
                let store = SSL_CTX_get_cert_store(ctx)
                for cert in try readCertificates(pem: pem, code: .trustedCA) {
                    X509_STORE_add_cert(store, cert)
                    _ = SSL_CTX_add_client_CA(ctx, cert)  // named in the CertificateRequest
                    X509_free(cert)
                }
            }
            // Resumed sessions need a context id when peers are verified (OpenSSL refuses them otherwise).
            let sessionContext = Array("clarion-\(alpn)".utf8)
            _ = SSL_CTX_set_session_id_context(ctx, sessionContext, UInt32(sessionContext.count))
            if request.requireVerified {
                SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nil)
            } else {
                // Ask, never refuse: the handshake completes and the handler judges what was presented
                // (`TLSPeerCertificate.verificationError` keeps OpenSSL's verdict).
                SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, { _, _ in 1 })
            }
        }
        // The callback gets this context back unretained: the SSL_CTX it is installed on lives exactly as long.
        SSL_CTX_set_alpn_select_cb(ctx, { _, out, outLength, input, inputLength, context in
            // Walk the client's length-prefixed protocol list and pick ours.
            guard let input, let out, let outLength, let context else { return SSL_TLSEXT_ERR_NOACK }
            let wanted = Unmanaged<TLSContext>.fromOpaque(context).takeUnretainedValue().alpn
            var i = 0
            let count = Int(inputLength)
            while i < count {
                let length = Int(input[i])
                if length == wanted.count && i + length < count
                    && UnsafeBufferPointer(start: input + i + 1, count: length).elementsEqual(wanted) {
                    out.pointee = input + i + 1
                    outLength.pointee = UInt8(length)
                    return SSL_TLSEXT_ERR_OK
                }
                i += 1 + length
            }
            return SSL_TLSEXT_ERR_NOACK
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    deinit {
        SSL_CTX_free(context)
    }
}

/// One TLS connection over a BIO of our own (`TLSSessionBIO`) instead of OpenSSL's memory BIOs: ciphertext read
/// from the socket is lent to OpenSSL for the duration of `withCiphertext` (no copy into a BIO buffer), and the
/// records OpenSSL writes go straight into `ciphertextOut`, the socket's outbound queue. The memory BIOs would
/// cost a malloc, a zeroing grow and two copies for every chunk in each direction. Confined to one loop thread.
package final class TLSSession {
    package enum HandshakeState {
        case done
        case inProgress
        case failed(TransportError)
    }

    package enum ReadResult {
        case bytes(Int)
        case needMoreInput
        case closed
        case failed(TransportError)
    }

    /// Server with client certificates requested: what the client presented (nil: nothing), set at handshake.
    package private(set) var peerCertificate: TLSPeerCertificate?

    private let ssl: OpaquePointer
    private let context: TLSContext  // keeps the SSL_CTX alive
    /// Where OpenSSL's records go: the channel sends this queue as its outbound bytes.
    package let ciphertextOut = ByteQueue()
    // What the BIO reads from: first `unread` (ciphertext lent earlier and not consumed then, e.g. half a record),
    // then the span lent by `withCiphertext`. Touched only by this session's own calls into OpenSSL.
    @exclusivity(unchecked) fileprivate var input: UnsafeRawPointer?
    @exclusivity(unchecked) fileprivate var inputCount = 0
    fileprivate let unread = ByteQueue(capacity: 4096)

    /// `serverName` sets SNI and the name (or IP address) the certificate must match; clients only.
    package init(context: TLSContext, serverName: String?) throws(TransportError) {
        guard let ssl = SSL_new(context.context) else {
            throw .tlsHandshakeFailed("SSL_new: \(openSSLErrorText())")
        }
        guard let bio = BIO_new(TLSSessionBIO.shared.method) else {
            SSL_free(ssl)
            throw .tlsHandshakeFailed("BIO_new: \(openSSLErrorText())")
        }
        self.ssl = ssl
        self.context = context
        // The SSL owns the BIO (one reference for both directions); the BIO points back here unretained: it lives
        // exactly as long as the SSL, which this session frees in deinit.
        BIO_set_data(bio, Unmanaged.passUnretained(self).toOpaque())
        BIO_set_init(bio, 1)
        SSL_set_bio(ssl, bio, bio)
        if context.isServer {
            SSL_set_accept_state(ssl)
        } else {
            SSL_set_connect_state(ssl)
            if let name = serverName {
                // Each of these can fail (SNI refuses a name over 255 bytes): a failure is this session's, thrown
                // with the error queue drained, never left on the loop thread's queue for another connection's
                // `SSL_get_error` to find. (Fully initialised: a throw runs deinit, which frees the SSL.)
                let bare = name.hasPrefix("[") && name.hasSuffix("]") ? String(name.dropFirst().dropLast()) : name
                if SocketAddress(numericHost: bare, port: 0) != nil {
                    // IP address: no SNI (RFC 6066), match the certificate's IP SAN.
                    guard X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), bare) == 1 else {
                        throw .tlsHandshakeFailed("cannot verify against IP address \(bare): \(openSSLErrorText())")
                    }
                } else {
                    guard clarion_SSL_set_tlsext_host_name(ssl, bare) == 1 else {
                        throw .tlsHandshakeFailed("cannot send server name \(bare.prefix(64)): \(openSSLErrorText())")
                    }
                    guard SSL_set1_host(ssl, bare) == 1 else {
                        throw .tlsHandshakeFailed("cannot verify against host name \(bare.prefix(64)): \(openSSLErrorText())")
                    }
                }
            }
        }
    }

    deinit {
        SSL_free(ssl)
    }

    /// Lends `count` bytes of ciphertext to OpenSSL while `body` runs (`handshake`, `read`); whatever OpenSSL has
    /// not consumed by then (the start of a record whose rest is still in flight) is copied and read first next
    /// time, so the caller may reuse the buffer afterwards.
    package func withCiphertext<R>(_ pointer: UnsafeRawPointer, _ count: Int, _ body: () -> R) -> R {
        input = pointer
        inputCount = count
        let result = body()
        if inputCount > 0, let input { unread.append(input, inputCount) }
        input = nil
        inputCount = 0
        return result
    }

    /// The BIO's read: bytes kept from an earlier span first, then the lent span; 0 when there is nothing.
    fileprivate func takeCiphertext(into buffer: UnsafeMutableRawPointer, _ capacity: Int) -> Int {
        if !unread.isEmpty {
            let n = min(capacity, unread.readableBytes)
            buffer.copyMemory(from: unread.readPointer, byteCount: n)
            unread.consume(n)
            return n
        }
        guard let input, inputCount > 0 else { return 0 }
        let n = min(capacity, inputCount)
        buffer.copyMemory(from: input, byteCount: n)
        self.input = input + n
        inputCount -= n
        return n
    }

    fileprivate var availableCiphertext: Int { unread.readableBytes + inputCount }

    // `SSL_get_error` reports SSL_ERROR_SSL whenever the thread's error queue holds anything, including entries
    // another OpenSSL call on this loop thread left behind (another connection's, a PEM parse): so every call
    // whose result goes through `SSL_get_error` (SSL_do_handshake, SSL_read, SSL_write) starts with an empty queue.

    package func handshake() -> HandshakeState {
        ERR_clear_error()
        let rc = SSL_do_handshake(ssl)
        if rc == 1 {
            guard context.isServer || context.alpn.isEmpty || negotiatedALPN else {
                return .failed(.tlsHandshakeFailed("server did not select ALPN \(String(decoding: context.alpn, as: UTF8.self))"))
            }
            if context.requestsClientCertificates { peerCertificate = capturePeerCertificate() }
            return .done
        }
        let error = SSL_get_error(ssl, rc)
        if error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE { return .inProgress }
        if !context.isServer {
            let verify = SSL_get_verify_result(ssl)
            if verify != X509_V_OK {
                let text = String(cString: X509_verify_cert_error_string(verify))
                ERR_clear_error()
                return .failed(.tlsVerificationFailed("\(text) (X509 error \(verify))"))
            }
            if let refusal = clientCertificateRefusal() { return .failed(refusal) }
        }
        return .failed(.tlsHandshakeFailed(openSSLErrorText()))
    }

    /// Alerts a server sends about the client's certificate (RFC 8446 6.2). With TLS 1.3 the client finishes its
    /// handshake before the server has judged the certificate, so the alert may arrive at the first read instead.
    private static let certificateAlertReasons: Set<Int32> = [
        SSL_R_SSLV3_ALERT_BAD_CERTIFICATE, SSL_R_SSLV3_ALERT_UNSUPPORTED_CERTIFICATE,
        SSL_R_SSLV3_ALERT_CERTIFICATE_REVOKED, SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED,
        SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN, SSL_R_TLSV1_ALERT_UNKNOWN_CA, SSL_R_TLSV1_ALERT_ACCESS_DENIED,
        SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED,
    ]

    /// `.tlsClientCertificateRejected` when the error queue holds the server's alert about our certificate (or
    /// that it requires one); nil otherwise (the queue is left for the caller).
    private func clientCertificateRefusal() -> TransportError? {
        guard !context.isServer else { return nil }
        let code = ERR_peek_last_error()  // the alert this call just read, not an older entry
        guard code != 0 else { return nil }
        let reason = ERR_GET_REASON(code)
        guard Self.certificateAlertReasons.contains(reason),
              context.presentsCertificate || reason == SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED else { return nil }
        return .tlsClientCertificateRejected(openSSLErrorText())
    }

    private func capturePeerCertificate() -> TLSPeerCertificate? {
        guard let x509 = SSL_get0_peer_certificate(ssl) else { return nil }
        let certificate = TLSCertificate(x509: x509)
        let verify = SSL_get_verify_result(ssl)
        let problem = verify == X509_V_OK ? nil : "\(String(cString: X509_verify_cert_error_string(verify))) (X509 error \(verify))"
        return TLSPeerCertificate(certificate: certificate, verificationError: problem)
    }

    /// The ALPN protocol the server selected ("h2", "http/1.1"); nil when it selected none (a server without ALPN),
    /// or before the handshake.
    package var selectedALPN: String? {
        var data: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &data, &length)
        guard let data, length > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
    }

    /// Whether the handshake selected the context's ALPN protocol.
    var negotiatedALPN: Bool {
        var data: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &data, &length)
        guard let data else { return false }
        return UnsafeBufferPointer(start: data, count: Int(length)).elementsEqual(context.alpn)
    }

    package func read(into buffer: UnsafeMutableRawBufferPointer) -> ReadResult {
        ERR_clear_error()  // see `handshake`: a stale entry would turn "want read" into a fatal error
        let rc = SSL_read(ssl, buffer.baseAddress, Int32(clamping: buffer.count))
        if rc > 0 { return .bytes(Int(rc)) }
        let error = SSL_get_error(ssl, rc)
        switch error {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE: return .needMoreInput
        case SSL_ERROR_ZERO_RETURN: return .closed
        default: return .failed(clientCertificateRefusal() ?? .connectionLost("TLS: \(openSSLErrorText())"))
        }
    }

    /// Encrypts all of `count` bytes into `ciphertextOut` (our BIO never pushes back). On failure the error queue
    /// holds this write's errors only (the caller reports them).
    package func write(_ pointer: UnsafeRawPointer, _ count: Int) -> Bool {
        guard let length = Int32(exactly: count) else { return false }
        ERR_clear_error()  // see `handshake`
        return SSL_write(ssl, pointer, length) == length
    }
}

/// The BIO method under every `TLSSession`: a source/sink that reads the session's lent ciphertext and appends
/// what OpenSSL writes to the session's `ciphertextOut`. Created once and never freed (BIOs refer to it).
final class TLSSessionBIO: @unchecked Sendable {
    static let shared = TLSSessionBIO()

    let method: OpaquePointer

    private init() {
        let method = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "clarion-tls-session")!
        _ = BIO_meth_set_write(method) { bio, data, length in
            guard let bio, let data, length > 0, let session = BIO_get_data(bio) else { return length == 0 ? 0 : -1 }
            Unmanaged<TLSSession>.fromOpaque(session)._withUnsafeGuaranteedRef {
                $0.ciphertextOut.append(UnsafeRawPointer(data), Int(length))
            }
            return length
        }
        _ = BIO_meth_set_read(method) { bio, buffer, capacity in
            guard let bio, let buffer, capacity > 0, let session = BIO_get_data(bio) else { return 0 }
            BIO_clear_flags(bio, BIO_FLAGS_READ | BIO_FLAGS_WRITE | BIO_FLAGS_IO_SPECIAL | BIO_FLAGS_SHOULD_RETRY)
            let n = Unmanaged<TLSSession>.fromOpaque(session)._withUnsafeGuaranteedRef {
                $0.takeCiphertext(into: UnsafeMutableRawPointer(buffer), Int(capacity))
            }
            if n == 0 {
                // Like a non-blocking socket with nothing to read: OpenSSL keeps its partial record and says
                // SSL_ERROR_WANT_READ.
                BIO_set_flags(bio, BIO_FLAGS_READ | BIO_FLAGS_SHOULD_RETRY)
                return -1
            }
            return Int32(n)
        }
        _ = BIO_meth_set_ctrl(method) { bio, command, _, _ in
            switch command {
            case BIO_CTRL_FLUSH:
                return 1  // every write already landed in the queue; OpenSSL treats 0 here as "try again"
            case BIO_CTRL_PENDING:
                guard let bio, let session = BIO_get_data(bio) else { return 0 }
                return Unmanaged<TLSSession>.fromOpaque(session)._withUnsafeGuaranteedRef { $0.availableCiphertext }
            default:
                return 0
            }
        }
        self.method = method
    }
}

/// A growable byte queue (read from the front, append at the back). Confined to one thread.
/// Byte queue: its stored properties skip dynamic exclusivity checks (`@exclusivity(unchecked)`): they are touched by one
/// thread, and no method here calls out while mutating them, so the checks (tens per request) buy nothing.
package final class ByteQueue {
    @exclusivity(unchecked) private var storage: UnsafeMutableRawPointer
    @exclusivity(unchecked) private var capacity: Int
    @exclusivity(unchecked) private var readIndex = 0
    @exclusivity(unchecked) private var writeIndex = 0

    package init(capacity: Int = 16 * 1024) {
        self.capacity = capacity
        storage = .allocate(byteCount: capacity, alignment: 16)
    }

    deinit {
        storage.deallocate()
    }

    package var readableBytes: Int { writeIndex - readIndex }
    package var isEmpty: Bool { writeIndex == readIndex }
    package var readPointer: UnsafeRawPointer { UnsafeRawPointer(storage + readIndex) }

    /// A writable region of at least `count` bytes at the back; call `commit` with what was written.
    package func reserve(_ count: Int) -> UnsafeMutableRawPointer {
        if capacity - writeIndex < count {
            if readIndex > 0 {
                let live = readableBytes
                if live > 0 { storage.copyMemory(from: storage + readIndex, byteCount: live) }
                readIndex = 0
                writeIndex = live
            }
            if capacity - writeIndex < count {
                var newCapacity = capacity * 2
                while newCapacity - writeIndex < count { newCapacity *= 2 }
                let newStorage = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 16)
                newStorage.copyMemory(from: storage, byteCount: writeIndex)
                storage.deallocate()
                storage = newStorage
                capacity = newCapacity
            }
        }
        return storage + writeIndex
    }

    package func commit(_ count: Int) {
        writeIndex += count
    }

    func append(_ pointer: UnsafeRawPointer, _ count: Int) {
        reserve(count).copyMemory(from: pointer, byteCount: count)
        writeIndex += count
    }

    package func consume(_ count: Int) {
        readIndex += count
        if readIndex == writeIndex {
            readIndex = 0
            writeIndex = 0
        }
    }

    package func removeAll() {
        readIndex = 0
        writeIndex = 0
    }
}
