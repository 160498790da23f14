/// One request as the emulator's logic sees it: independent of the HTTP/2 transport, so every provider
/// rule is tested as a pure function and the server wiring stays a few lines.
public struct EmulatorRequest: Sendable {
    public var method: String
    /// The `:path`, including any query string.
    public var path: String
    /// The `:authority` (host and port); FCM's token endpoint accepts an assertion whose `aud` names it.
    public var authority: String
    /// `http` or `https` (the `:scheme`).
    public var scheme: String
    /// Regular header fields (no pseudo-headers), lowercase names as HTTP/2 sends them, in arrival order.
    public var headers: [(String, String)]
    public var body: [UInt8]

    public init(method: String, path: String, authority: String = "localhost", scheme: String = "https",
                headers: [(String, String)] = [], body: [UInt8] = []) {
        self.method = method
        self.path = path
        self.authority = authority
        self.scheme = scheme
        self.headers = headers
        self.body = body
    }

    /// The first value of `name` (lowercase).
    public func header(_ name: String) -> String? {
        for (key, value) in headers where key == name { return value }
        return nil
    }
}

/// An HTTP response: status, lowercase header fields, body.
public struct EmulatorResponse: Sendable {
    public var status: Int
    public var headers: [(String, String)]
    public var body: [UInt8]

    public init(status: Int, headers: [(String, String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public func header(_ name: String) -> String? {
        for (key, value) in headers where key == name { return value }
        return nil
    }

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
    /// `{"reason": ...}` in the debug data (providers.md A.7).
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
    /// its limit of 1 once the connection has presented a valid provider token, providers.md A.7).
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
}
