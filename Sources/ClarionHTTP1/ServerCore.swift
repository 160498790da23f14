import Foundation
import Synchronization

/// What the server's connections share: the router, counters, the registry of requests waiting for their handler,
/// and each loop's connections.
final class ServerCore: Sendable {
    let router: Router
    let accessLog: (any AccessLogSink)?
    let deadlines: RequestDeadlines
    let connectionLimit: Int
    /// Requests between their parsed head and their logged end.
    let inFlight = Atomic<Int>(0)
    /// Open connections.
    let liveConnections = Atomic<Int>(0)
    /// Connections closed at once because `connectionLimit` connections were open.
    let refusedAtLimit = Atomic<Int>(0)
    let requestMetrics: (any HTTPRequestMetrics)?
    /// Set when shutdown begins: responses then carry `Connection: close` so keep-alive connections drain,
    /// and `/ready` answers 503.
    let draining: DrainFlag
    /// Set when the grace period is over: requests still arriving on open connections get 503 at once.
    let refusing = DrainFlag()
    /// One registry per loop, touched only on that loop.
    let registries: [LoopRegistry]
    /// Whether the listener rests after running out of descriptors; a closing connection wakes it.
    let acceptPause = AcceptPause()

    init(router: Router, accessLog: (any AccessLogSink)?, draining: DrainFlag, deadlines: RequestDeadlines,
         connectionLimit: Int, loops: Int, requestMetrics: (any HTTPRequestMetrics)? = nil) {
        self.router = router
        self.requestMetrics = requestMetrics
        self.draining = draining
        self.accessLog = accessLog
        self.deadlines = deadlines
        self.connectionLimit = connectionLimit
        registries = (0..<loops).map { _ in LoopRegistry() }
    }

    /// Logs a request's end and takes it out of the in-flight count. Called once per request.
    func finished(_ context: RequestContext, completed: Bool) {
        if let log = accessLog {
            log.record(AccessLogEntry(method: context.method, path: context.rawPath, status: context.status,
                                      duration: .now - context.started, requestID: context.requestID,
                                      remoteAddress: context.remoteAddress, completed: completed, cause: context.cause))
        }
        if let metrics = requestMetrics {
            let route: String? = if case .matched(let route, _) = context.match { route.pattern.description } else { nil }
            metrics.requestFinished(method: context.method, route: route, status: context.status, duration: .now - context.started)
        }
        inFlight.subtract(1, ordering: .relaxed)
    }
}

/// Counts finished requests by route for a metrics endpoint. Called on the server's loop threads once per
/// request: keep it to a lookup and a few atomic adds.
public protocol HTTPRequestMetrics: Sendable {
    /// `route` is the matched route's pattern (`/v1/topics/{id}`), never the path; nil when no route matched.
    /// `status` is 0 when the connection ended before a response was queued.
    func requestFinished(method: String, route: String?, status: Int, duration: Duration)
}

/// Set while the listener rests because `accept` ran out of file descriptors. The first connection to close
/// afterwards (on any loop) frees one, and asks the listener's loop to watch it again; a closing connection
/// otherwise pays one relaxed load.
final class AcceptPause: Sendable {
    private let resting = Atomic<Bool>(false)
    private let wake = Mutex<(@Sendable () -> Void)?>(nil)

    /// What wakes the listener (hops to its loop).
    func install(_ wake: @escaping @Sendable () -> Void) {
        self.wake.withLock { $0 = wake }
    }

    func set() { resting.store(true, ordering: .relaxed) }
    func clear() { resting.store(false, ordering: .relaxed) }

    /// A descriptor was closed.
    func descriptorFreed() {
        guard resting.load(ordering: .relaxed), resting.exchange(false, ordering: .relaxed) else { return }
        let wake = self.wake.withLock { $0 }
        wake?()
    }
}

/// A loop's connections (for the idle sweep and shutdown) and its `Date` header text.
final class LoopRegistry: @unchecked Sendable {
    // Loop-confined: only its loop touches these.
    var connections: [ObjectIdentifier: HTTP1Connection] = [:]
    var sweeping = true
    private var dateSecond = -1
    private(set) var dateText: [UInt8] = []

    /// `Date` as RFC 9110's IMF-fixdate, formatted once a second.
    func currentDate() -> [UInt8] {
        var now = time(nil)
        if now != dateSecond {
            dateSecond = now
            var parts = tm()
            gmtime_r(&now, &parts)
            dateText = HTTPDate.format(parts)
        }
        return dateText
    }
}

enum HTTPDate {
    private static let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// "Sun, 06 Nov 1994 08:49:37 GMT"
    static func format(_ t: tm) -> [UInt8] {
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let text = "\(days[Int(t.tm_wday) % 7]), \(two(t.tm_mday)) \(months[Int(t.tm_mon) % 12]) \(t.tm_year + 1900) "
            + "\(two(t.tm_hour)):\(two(t.tm_min)):\(two(t.tm_sec)) GMT"
        return Array(text.utf8)
    }
}

final class DrainFlag: Sendable {
    private let value = Atomic<Bool>(false)
    var isSet: Bool { value.load(ordering: .relaxed) }
    func set() { value.store(true, ordering: .relaxed) }
}

/// One request from its parsed head to its logged end. Touched only on its connection's loop thread.
final class RequestContext {
    let requestID: String
    let started: ContinuousClock.Instant
    let method: String
    let rawPath: String
    let rawQuery: String
    let headers: HTTPHeaders
    let remoteAddress: String
    let keepAlive: Bool
    let minorVersion: Int
    let contentLength: Int?
    var chunked: ChunkedDecoder?
    var body: [UInt8] = []
    /// For a streaming route: where the body goes as it arrives, and how many bytes went there.
    var stream: RequestBodyStream?
    var streamed = 0
    var match: RouteMatch?
    var limit = 0
    var status = 0
    /// The response's `cause` (5xx answers), for the access log.
    var cause: String?
    /// A response given while the handler was still being called on the loop thread; sent once it returns.
    var earlyResponse: HTTPResponse?

    init(head: RequestHead, remoteAddress: String) {
        requestID = RequestID.make()
        started = .now
        method = head.method
        headers = head.headers
        self.remoteAddress = remoteAddress
        keepAlive = head.keepAlive
        minorVersion = head.minorVersion
        contentLength = head.contentLength
        chunked = head.chunked ? ChunkedDecoder() : nil
        (rawPath, rawQuery) = head.pathAndQuery
    }

    var isHead: Bool { method == "HEAD" }
}
