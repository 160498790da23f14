internal import CMicroHTTPD
import Synchronization

/// Answers one suspended request, from any thread, exactly once.
///
/// The connection stays suspended in libmicrohttpd (no thread held) until `respond` is called; the first call
/// wins and later ones are ignored. A responder dropped without answering answers 500 itself, so a bug in a
/// handler costs one error response, never a connection hung for ever.
public final class HTTPResponder: Sendable {
    public let requestID: String
    let slot: ResponseSlot

    init(requestID: String, slot: ResponseSlot) {
        self.requestID = requestID
        self.slot = slot
    }

    public func respond(_ response: HTTPResponse) {
        slot.complete(response)
    }

    deinit {
        slot.complete(slot.errorFormat.response(for: .internalError, requestID: requestID))
    }
}

/// A libmicrohttpd connection pointer. MHD_resume_connection is documented as callable from any thread;
/// that is the only thing done with it off the connection's own thread, and only once (guarded by the slot).
struct ConnectionHandle: @unchecked Sendable {
    let pointer: OpaquePointer
}

/// The hand-off point between a suspended connection and whoever answers it.
///
/// States: `waiting` -> `answered(response)` (by `complete`, any thread; then the connection is resumed)
///         -> `delivered` (by the connection's MHD thread, which queues the response).
final class ResponseSlot: Sendable {
    enum State {
        case waiting
        case answered(HTTPResponse)
        case delivered
    }

    private let connection: ConnectionHandle
    private let core: ServerCore
    private let state = Mutex<State>(.waiting)
    /// How the route's API family spells errors, for answers the server gives on the handler's behalf.
    let errorFormat: ErrorFormat
    let requestID: String

    init(connection: ConnectionHandle, core: ServerCore, errorFormat: ErrorFormat, requestID: String) {
        self.connection = connection
        self.core = core
        self.errorFormat = errorFormat
        self.requestID = requestID
    }

    /// Stores the response and resumes the connection. No-op after the first call.
    func complete(_ response: HTTPResponse) {
        let first = state.withLock { state -> Bool in
            guard case .waiting = state else { return false }
            state = .answered(response)
            return true
        }
        guard first else { return }
        core.forget(self)
        MHD_resume_connection(connection.pointer)
    }

    /// Called on the connection's thread after the resume.
    func takeResponse() -> HTTPResponse? {
        state.withLock { state in
            guard case .answered(let response) = state else { return nil }
            state = .delivered
            return response
        }
    }
}
