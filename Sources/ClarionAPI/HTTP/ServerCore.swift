internal import CMicroHTTPD
import Foundation
import Synchronization

/// What the libmicrohttpd callbacks share: the router, counters and the registry of suspended requests.
/// Passed to C as an unretained pointer; `HTTPServer` keeps it alive until the daemon is stopped.
final class ServerCore: Sendable {
    let router: Router
    let accessLog: (any AccessLogSink)?
    /// Requests between the URI callback and the completion callback.
    let inFlight = Atomic<Int>(0)
    /// Set when shutdown begins: responses then carry `Connection: close` so keep-alive connections drain,
    /// and `/ready` answers 503.
    let draining: DrainFlag
    /// Set when the grace period is over: requests still arriving on open connections get 503 at once,
    /// so nothing new is suspended while the daemon stops.
    let refusing = DrainFlag()
    /// Suspended requests, so shutdown can answer stragglers before MHD_stop_daemon (which must never see a
    /// suspended connection).
    private let suspended = Mutex<[ObjectIdentifier: ResponseSlot]>([:])

    init(router: Router, accessLog: (any AccessLogSink)?, draining: DrainFlag) {
        self.router = router
        self.draining = draining
        self.accessLog = accessLog
    }

    func remember(_ slot: ResponseSlot) {
        suspended.withLock { $0[ObjectIdentifier(slot)] = slot }
    }

    func forget(_ slot: ResponseSlot) {
        _ = suspended.withLock { $0.removeValue(forKey: ObjectIdentifier(slot)) }
    }

    /// Answers every request still suspended with 503 in its API's error format (shutdown past its grace
    /// period).
    func abandonSuspended() {
        let slots = suspended.withLock { slots in
            defer { slots.removeAll() }
            return Array(slots.values)
        }
        for slot in slots {
            slot.complete(slot.errorFormat.response(for: .shuttingDown, requestID: slot.requestID))
        }
    }

    var suspendedCount: Int { suspended.withLock { $0.count } }
}

final class DrainFlag: Sendable {
    private let value = Atomic<Bool>(false)
    var isSet: Bool { value.load(ordering: .relaxed) }
    func set() { value.store(true, ordering: .relaxed) }
}

/// Per-request state, created by the URI callback and released by the completion callback. Touched only on
/// the thread that owns the connection (libmicrohttpd keeps a connection on one worker thread).
final class RequestContext {
    enum Phase {
        /// Headers parsed, handler not yet called.
        case new
        /// Collecting the body.
        case receiving
        /// Body over the limit (chunked, so not known up front): reading and dropping it, then 413.
        case discarding(received: Int)
        /// Handler running; the connection is suspended until the slot is answered.
        case waiting(ResponseSlot)
        /// A response is queued.
        case done
    }

    let rawURI: String
    let requestID: String
    let started: ContinuousClock.Instant
    var phase: Phase = .new
    var method = ""
    var rawPath = "/"
    var rawQuery = ""
    var headers = HTTPHeaders()
    var remoteAddress = ""
    var body: [UInt8] = []
    var match: RouteMatch?
    var limit = 0
    var status = 0

    init(rawURI: String) {
        self.rawURI = rawURI
        self.requestID = RequestID.make()
        self.started = .now
        if let q = rawURI.utf8.firstIndex(of: UInt8(ascii: "?")) {
            rawPath = String(rawURI[..<q])
            rawQuery = String(rawURI[rawURI.index(after: q)...])
        } else {
            rawPath = rawURI
        }
        // absolute-form (`GET http://host/path`): keep the path only.
        if !rawPath.hasPrefix("/"), let scheme = rawPath.range(of: "://") {
            let afterHost = rawPath[scheme.upperBound...].firstIndex(of: "/")
            rawPath = afterHost.map { String(rawPath[$0...]) } ?? "/"
        }
    }
}
