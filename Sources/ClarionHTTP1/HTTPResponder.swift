import Synchronization

/// Answers one suspended request, from any thread, exactly once.
///
/// The connection waits (no thread held, nothing read past the request) until `respond` is called; the first call
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
        // Almost always answered already: only build the 500 when it is needed (building it for every request is
        // work on the hot path for an answer that is almost never sent).
        guard !slot.isAnswered else { return }
        var response = slot.errorFormat.response(for: .internalError, requestID: requestID)
        response.cause = "the handler returned without answering"
        slot.complete(response)
    }
}

/// The hand-off point between a request waiting for its handler and whoever answers it.
///
/// States: `waiting` -> `answered` (by `complete`, any thread, once; the response then goes to the connection's loop
/// thread, which writes it). Answers after the first are ignored.
final class ResponseSlot: Sendable {
    private let connection: HTTP1Connection
    private let context: ContextHandle
    private let answered = Atomic<Bool>(false)
    /// How the route's API family spells errors, for answers the server gives on the handler's behalf.
    let errorFormat: ErrorFormat
    let requestID: String

    init(connection: HTTP1Connection, context: RequestContext, errorFormat: ErrorFormat) {
        self.connection = connection
        self.context = ContextHandle(context: context)
        self.errorFormat = errorFormat
        self.requestID = context.requestID
    }

    var isAnswered: Bool { answered.load(ordering: .acquiring) }

    /// Hands the response to the connection's loop. No-op after the first call.
    func complete(_ response: HTTPResponse) {
        guard !answered.exchange(true, ordering: .acquiringAndReleasing) else {
            response.bodyStream?.cancel()  // never sent: its producer stops
            return
        }
        let connection = self.connection
        let context = self.context
        if connection.loop.inEventLoop {
            connection.deliver(response, for: context.context)
        } else {
            connection.loop.execute { connection.deliver(response, for: context.context) }
        }
    }
}

/// A request context crossing to another thread and back: it is only read on its connection's loop thread.
struct ContextHandle: @unchecked Sendable {
    let context: RequestContext
}
