import Foundation

/// A failure below HTTP: the request may or may not have reached the provider.
public enum TransportFailure: Sendable, Hashable {
    /// Could not connect (DNS, TCP, TLS handshake).
    case connectFailed(String)
    /// The provider refused our TLS client certificate with a TLS alert (bad, unknown, expired or revoked
    /// certificate; APNs certificate-based auth). Nothing was processed, and resending with it will not help.
    case clientCertificateRejected(String)
    /// The connection dropped with the request in flight.
    case connectionLost(String)
    /// The stream was reset (RST_STREAM) with this HTTP/2 error code; REFUSED_STREAM (7) means not processed.
    case streamReset(errorCode: UInt32)
    /// GOAWAY covering this stream; APNs puts `{"reason": ...}` in the debug data (A.7).
    case goAway(errorCode: UInt32, debugData: [UInt8])
    /// No answer in time.
    case timeout
}

/// Failures below HTTP -> `DeliveryOutcome`.
public enum TransportFailureClassifier {
    /// Everything is retryable (at-least-once: a push that may have arrived is sent again), except a GOAWAY whose
    /// APNs reason condemns the credentials (A.7: on a revoked certificate or key APNs closes all connections) and
    /// a refused client certificate: both are the credentials' fault (A.6 `BadCertificate`, F), not the network's.
    public static func classify(_ failure: TransportFailure) -> DeliveryOutcome {
        switch failure {
        case .connectFailed(let detail): return .retryable(reason: "connect failed: \(detail)", retryAfter: nil)
        case .clientCertificateRejected(let detail):
            return .credentialsInvalid(reason: "BadCertificate (TLS client certificate refused: \(detail))")
        case .connectionLost(let detail): return .retryable(reason: "connection lost: \(detail)", retryAfter: nil)
        case .streamReset(let code): return .retryable(reason: "stream reset (HTTP/2 error \(code))", retryAfter: nil)
        case .timeout: return .retryable(reason: "timeout", retryAfter: nil)
        case .goAway(let code, let debugData):
            if let reason = (try? JSONValue.parse(bytes: debugData))?["reason"]?.stringValue {
                if APNsResponseClassifier.credentialReasons.contains(reason) { return .credentialsInvalid(reason: reason) }
                if reason == "ExpiredProviderToken" { return .authTokenExpired(reason: reason) }
                return .retryable(reason: "GOAWAY: \(reason)", retryAfter: nil)
            }
            return .retryable(reason: "GOAWAY (HTTP/2 error \(code))", retryAfter: nil)
        }
    }
}
