internal import COpenSSL

/// A certificate chain and private key in PEM, for a server.
public struct TLSIdentity: Sendable {
    /// The leaf certificate first, then any intermediates.
    public var certificateChainPEM: String
    public var privateKeyPEM: String

    public init(certificateChainPEM: String, privateKeyPEM: String) {
        self.certificateChainPEM = certificateChainPEM
        self.privateKeyPEM = privateKeyPEM
    }
}

/// Errors while building a TLS context from configuration (bad PEM, unusable key).
public struct TLSConfigurationError: Error, Sendable, CustomStringConvertible {
    public var reason: String
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

/// Reads every certificate in a PEM string.
func readCertificates(pem: String) throws(TLSConfigurationError) -> [OpaquePointer] {
    let bytes = Array(pem.utf8)
    let bio: OpaquePointer? = bytes.withUnsafeBytes { BIO_new_mem_buf($0.baseAddress, Int32($0.count)) }
    guard let bio else { throw TLSConfigurationError(reason: "BIO_new_mem_buf failed") }
    defer { BIO_free(bio) }
    var certificates: [OpaquePointer] = []
    while let cert = PEM_read_bio_X509(bio, nil, nil, nil) {
        certificates.append(cert)
    }
    ERR_clear_error()  // the loop ends with a "no start line" error
    if certificates.isEmpty { throw TLSConfigurationError(reason: "no certificate in PEM") }
    return certificates
}

/// An `SSL_CTX` shared by the connections of one pool or one server. `SSL_CTX` is safe to share across threads
/// once configured, which is why this is `@unchecked Sendable`; it is never mutated after init.
final class TLSContext: @unchecked Sendable {
    let context: OpaquePointer
    let isServer: Bool

    /// A client context: TLS 1.2+, ALPN "h2", peer verification against the system CA store plus `extraTrustedCAPEM`.
    init(clientTrusting extraTrustedCAPEM: String?) throws(TLSConfigurationError) {
        guard let ctx = SSL_CTX_new(TLS_client_method()) else {
            throw TLSConfigurationError(reason: "SSL_CTX_new: \(openSSLErrorText())")
        }
        context = ctx
        isServer = false
        _ = clarion_SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION)
        if SSL_CTX_set_default_verify_paths(ctx) != 1 { ERR_clear_error() }
        if let pem = extraTrustedCAPEM {
            let store = SSL_CTX_get_cert_store(ctx)
            for cert in try readCertificates(pem: pem) {
                X509_STORE_add_cert(store, cert)
                X509_free(cert)
            }
        }
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nil)
        let alpn: [UInt8] = [2, UInt8(ascii: "h"), UInt8(ascii: "2")]
        _ = alpn.withUnsafeBufferPointer { SSL_CTX_set_alpn_protos(ctx, $0.baseAddress, UInt32($0.count)) }
    }

    /// A server context that selects ALPN "h2".
    init(server identity: TLSIdentity) throws(TLSConfigurationError) {
        guard let ctx = SSL_CTX_new(TLS_server_method()) else {
            throw TLSConfigurationError(reason: "SSL_CTX_new: \(openSSLErrorText())")
        }
        context = ctx
        isServer = true
        _ = clarion_SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION)
        let chain = try readCertificates(pem: identity.certificateChainPEM)
        defer { chain.forEach { X509_free($0) } }
        guard SSL_CTX_use_certificate(ctx, chain[0]) == 1 else {
            throw TLSConfigurationError(reason: "certificate: \(openSSLErrorText())")
        }
        for intermediate in chain.dropFirst() { _ = clarion_SSL_CTX_add1_chain_cert(ctx, intermediate) }
        let keyBytes = Array(identity.privateKeyPEM.utf8)
        let bio: OpaquePointer? = keyBytes.withUnsafeBytes { BIO_new_mem_buf($0.baseAddress, Int32($0.count)) }
        guard let bio, let key = PEM_read_bio_PrivateKey(bio, nil, nil, nil) else {
            throw TLSConfigurationError(reason: "private key: \(openSSLErrorText())")
        }
        BIO_free(bio)
        defer { EVP_PKEY_free(key) }
        guard SSL_CTX_use_PrivateKey(ctx, key) == 1, SSL_CTX_check_private_key(ctx) == 1 else {
            throw TLSConfigurationError(reason: "private key does not match certificate: \(openSSLErrorText())")
        }
        SSL_CTX_set_alpn_select_cb(ctx, { _, out, outLength, input, inputLength, _ in
            // Walk the client's length-prefixed protocol list and pick "h2".
            guard let input, let out, let outLength else { return SSL_TLSEXT_ERR_NOACK }
            var i = 0
            let count = Int(inputLength)
            while i < count {
                let length = Int(input[i])
                if length == 2 && i + 2 < count && input[i + 1] == UInt8(ascii: "h") && input[i + 2] == UInt8(ascii: "2") {
                    out.pointee = input + i + 1
                    outLength.pointee = 2
                    return SSL_TLSEXT_ERR_OK
                }
                i += 1 + length
            }
            return SSL_TLSEXT_ERR_NOACK
        }, nil)
    }

    deinit {
        SSL_CTX_free(context)
    }
}

/// One TLS connection over two memory BIOs: ciphertext from the socket goes in with `feed`, plaintext comes out of
/// `read`; plaintext goes in with `write`, ciphertext comes out with `drainCiphertext`. Confined to one loop thread.
final class TLSSession {
    enum HandshakeState {
        case done
        case inProgress
        case failed(HTTP2Error)
    }

    enum ReadResult {
        case bytes(Int)
        case needMoreInput
        case closed
        case failed(String)
    }

    private let ssl: OpaquePointer
    private let readBIO: OpaquePointer
    private let writeBIO: OpaquePointer
    private let context: TLSContext  // keeps the SSL_CTX alive

    /// `serverName` sets SNI and the name (or IP address) the certificate must match; clients only.
    init(context: TLSContext, serverName: String?) throws(HTTP2Error) {
        guard let ssl = SSL_new(context.context),
              let rbio = BIO_new(BIO_s_mem()), let wbio = BIO_new(BIO_s_mem()) else {
            throw .tlsHandshakeFailed("SSL_new: \(openSSLErrorText())")
        }
        self.ssl = ssl
        readBIO = rbio
        writeBIO = wbio
        self.context = context
        SSL_set_bio(ssl, rbio, wbio)  // the SSL owns both BIOs now
        if context.isServer {
            SSL_set_accept_state(ssl)
        } else {
            SSL_set_connect_state(ssl)
            if let name = serverName {
                let bare = name.hasPrefix("[") && name.hasSuffix("]") ? String(name.dropFirst().dropLast()) : name
                if SocketAddress(numericHost: bare, port: 0) != nil {
                    // IP address: no SNI (RFC 6066), match the certificate's IP SAN.
                    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), bare)
                } else {
                    _ = clarion_SSL_set_tlsext_host_name(ssl, bare)
                    _ = SSL_set1_host(ssl, bare)
                }
            }
        }
    }

    deinit {
        SSL_free(ssl)
    }

    func feed(_ pointer: UnsafeRawPointer, _ count: Int) {
        _ = BIO_write(readBIO, pointer, Int32(count))
    }

    func handshake() -> HandshakeState {
        ERR_clear_error()
        let rc = SSL_do_handshake(ssl)
        if rc == 1 {
            guard context.isServer || negotiatedH2 else {
                return .failed(.tlsHandshakeFailed("server did not select ALPN h2"))
            }
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
        }
        return .failed(.tlsHandshakeFailed(openSSLErrorText()))
    }

    var negotiatedH2: Bool {
        var data: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &data, &length)
        guard let data, length == 2 else { return false }
        return data[0] == UInt8(ascii: "h") && data[1] == UInt8(ascii: "2")
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> ReadResult {
        let rc = SSL_read(ssl, buffer.baseAddress, Int32(buffer.count))
        if rc > 0 { return .bytes(Int(rc)) }
        let error = SSL_get_error(ssl, rc)
        switch error {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE: return .needMoreInput
        case SSL_ERROR_ZERO_RETURN: return .closed
        default: return .failed(openSSLErrorText())
        }
    }

    /// Encrypts all of `count` bytes (a memory BIO never pushes back).
    func write(_ pointer: UnsafeRawPointer, _ count: Int) -> Bool {
        SSL_write(ssl, pointer, Int32(count)) == Int32(count)
    }

    var pendingCiphertext: Int { Int(BIO_ctrl_pending(writeBIO)) }

    func drainCiphertext(into queue: ByteQueue) {
        while true {
            let pending = pendingCiphertext
            if pending == 0 { return }
            let region = queue.reserve(pending)
            let n = BIO_read(writeBIO, region, Int32(pending))
            if n <= 0 { return }
            queue.commit(Int(n))
        }
    }
}

/// A growable byte queue (read from the front, append at the back). Confined to one thread.
/// Byte queue: its stored properties skip dynamic exclusivity checks (`@exclusivity(unchecked)`): they are touched by one
/// thread, and no method here calls out while mutating them, so the checks (tens per request) buy nothing.
final class ByteQueue {
    @exclusivity(unchecked) private var storage: UnsafeMutableRawPointer
    @exclusivity(unchecked) private var capacity: Int
    @exclusivity(unchecked) private var readIndex = 0
    @exclusivity(unchecked) private var writeIndex = 0

    init(capacity: Int = 16 * 1024) {
        self.capacity = capacity
        storage = .allocate(byteCount: capacity, alignment: 16)
    }

    deinit {
        storage.deallocate()
    }

    var readableBytes: Int { writeIndex - readIndex }
    var isEmpty: Bool { writeIndex == readIndex }
    var readPointer: UnsafeRawPointer { UnsafeRawPointer(storage + readIndex) }

    /// A writable region of at least `count` bytes at the back; call `commit` with what was written.
    func reserve(_ count: Int) -> UnsafeMutableRawPointer {
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

    func commit(_ count: Int) {
        writeIndex += count
    }

    func append(_ pointer: UnsafeRawPointer, _ count: Int) {
        reserve(count).copyMemory(from: pointer, byteCount: count)
        writeIndex += count
    }

    func consume(_ count: Int) {
        readIndex += count
        if readIndex == writeIndex {
            readIndex = 0
            writeIndex = 0
        }
    }

    func removeAll() {
        readIndex = 0
        writeIndex = 0
    }
}
