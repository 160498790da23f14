import ClarionHTTP2
/// One request as the emulator's logic sees it: the HTTP/2 server's own request value, so the server hands it
/// over without a copy and every provider rule is still tested as a pure function of it.
public typealias EmulatorRequest = HTTP2ServerRequest

/// An HTTP response: status, lowercase header fields, body (the server's response value).
public typealias EmulatorResponse = HTTP2ServerResponse

extension HTTP2ServerResponse {
    public var bodyText: String { String(decoding: body, as: UTF8.self) }
}

/// What the transport does with the request's stream.
public enum EmulatorAction: Sendable {
    /// Answer now.
    case respond(EmulatorResponse)
    /// Answer after a delay (fault: added latency), without blocking the event loop.
    case respondAfter(Duration, EmulatorResponse)
    /// Never answer (fault: stalled stream).
    case stall
    /// Refuse this stream and every later one with GOAWAY; earlier streams complete. APNs puts a JSON
    /// `{"reason": ...}` in the debug data (docs/providers.md A.7).
    case goAway(errorCode: UInt32, debugData: [UInt8])
    /// RST_STREAM with this HTTP/2 error code (7 = REFUSED_STREAM).
    case resetStream(errorCode: UInt32)
    /// Close the socket without GOAWAY (fault: connection drop).
    case dropConnection
}

/// The emulator's answer to one request.
public struct EmulatorDecision: Sendable {
    public var action: EmulatorAction
    /// When set, the connection advertises this SETTINGS_MAX_CONCURRENT_STREAMS from now on (APNs lifts
    /// its limit of 1 once the connection has presented a valid provider token, docs/providers.md A.7).
    public var maxConcurrentStreams: UInt32?

    public init(action: EmulatorAction, maxConcurrentStreams: UInt32? = nil) {
        self.action = action
        self.maxConcurrentStreams = maxConcurrentStreams
    }

    /// The response, when the action carries one (`respond`, `respondAfter`).
    public var response: EmulatorResponse? {
        switch action {
        case .respond(let response), .respondAfter(_, let response): return response
        default: return nil
        }
    }
}

/// The providers the emulator stands in for.
public enum EmulatorProvider: String, Sendable, Codable, CaseIterable, Hashable {
    case apns
    case fcm
    case adm
    case hms
}
