/// Why a connection failed below the protocol it carries: name resolution, TCP, TLS, or the socket. The protocol
/// layer above maps it into its own error (`HTTP2Error(_:)`), or closes with `.protocolError` itself.
public struct TransportError: Error, Sendable, Hashable, CustomStringConvertible {
    public struct Code: RawRepresentable, Sendable, Hashable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// Name resolution, TCP connect or connect timeout failed: nothing was sent.
        public static let connectFailed = Code(rawValue: "connect_failed")
        /// The peer's certificate did not verify.
        public static let tlsVerificationFailed = Code(rawValue: "tls_verification_failed")
        /// The TLS handshake failed for another reason, or the peer did not select the expected ALPN protocol.
        public static let tlsHandshakeFailed = Code(rawValue: "tls_handshake_failed")
        /// The server refused the client certificate we presented, or requires one and we have none.
        public static let tlsClientCertificateRejected = Code(rawValue: "tls_client_certificate_rejected")
        /// The connection closed or broke after it was established.
        public static let connectionLost = Code(rawValue: "connection_lost")
        /// The protocol above found the peer's bytes unusable and closed the connection.
        public static let protocolError = Code(rawValue: "protocol_error")
    }

    public let code: Code
    public let reason: String

    public init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    static func connectFailed(_ reason: String) -> TransportError { TransportError(.connectFailed, reason) }
    static func tlsVerificationFailed(_ reason: String) -> TransportError { TransportError(.tlsVerificationFailed, reason) }
    static func tlsHandshakeFailed(_ reason: String) -> TransportError { TransportError(.tlsHandshakeFailed, reason) }
    static func tlsClientCertificateRejected(_ reason: String) -> TransportError {
        TransportError(.tlsClientCertificateRejected, reason)
    }
    package static func connectionLost(_ reason: String) -> TransportError { TransportError(.connectionLost, reason) }
    package static func protocolError(_ reason: String) -> TransportError { TransportError(.protocolError, reason) }

    public var description: String {
        switch code {
        case .connectFailed: "connect failed: \(reason)"
        case .tlsVerificationFailed: "TLS certificate verification failed: \(reason)"
        case .tlsHandshakeFailed: "TLS handshake failed: \(reason)"
        case .tlsClientCertificateRejected: "TLS client certificate refused by the server: \(reason)"
        case .connectionLost: "connection lost: \(reason)"
        case .protocolError: "protocol error: \(reason)"
        default: "\(code.rawValue): \(reason)"
        }
    }
}
