import ClarionHTTP1
import Testing

/// The HTTP layer detects failures (no route, wrong method, body too large, ...) but knows no API family: it asks
/// the route's `ErrorFormat` to render them, as Hummingbird's `HTTPResponseError` renders itself.
@Suite("ErrorFormat: the route family renders the server's own errors")
struct ErrorFormatTests {
    /// A family of our own making: proves the server uses the format it was given, not one it knows.
    static let bracketed = ErrorFormat(name: "bracketed") { error, requestID in
        .text("[\(error.code)|\(error.status)|\(requestID)]", status: error.status)
    }

    @Test("a router given no family answers plain text with the status and message")
    func plainTextWithoutFamily() {
        var router = Router()
        router.add(.get, "/a", .synchronous { _ in .text("ok") })
        guard case .notFound(let format) = router.resolve(method: .get, rawPath: "/b") else {
            Issue.record("expected 404"); return
        }
        #expect(format == .plainText)
        let response = format.response(for: .notFound(path: "/b"), requestID: "r-1")
        #expect(response.status == 404)
        #expect(response.headers["Content-Type"] == "text/plain; charset=utf-8")
        #expect(String(decoding: response.body, as: UTF8.self) == "No resource at this path.\n")
    }

    @Test("the path's family format renders 404 and 405; RFC 9110 15.5.6: a 405 carries Allow whatever the format")
    func familyFormatRendersAndAllowStays() {
        var router = Router { path in path.hasPrefix("/x") ? Self.bracketed : .plainText }
        router.add(.get, "/x/item", .synchronous { _ in .text("ok") })
        router.add(.post, "/x/item", .synchronous { _ in .text("ok") })
        guard case .notFound(let missing) = router.resolve(method: .get, rawPath: "/x/other") else {
            Issue.record("expected 404"); return
        }
        let notFound = missing.response(for: .notFound(path: "/x/other"), requestID: "r-2")
        #expect(String(decoding: notFound.body, as: UTF8.self) == "[not_found|404|r-2]")
        guard case .methodNotAllowed(let allowed, let format) = router.resolve(method: .delete, rawPath: "/x/item") else {
            Issue.record("expected 405"); return
        }
        #expect(format == Self.bracketed)
        let refused = format.response(for: .methodNotAllowed(allowed: allowed), requestID: "r-3")
        #expect(refused.status == 405)
        #expect(String(decoding: refused.body, as: UTF8.self) == "[method_not_allowed|405|r-3]")
        #expect(refused.headers["Allow"] == "GET, POST")
    }

    @Test("a route added with its own format keeps it over the path's default")
    func routeFormatWins() {
        var router = Router()
        router.add(.post, "/y", maxBodyBytes: 10, errorFormat: Self.bracketed, .synchronous { _ in .text("ok") })
        guard case .matched(let route, _) = router.resolve(method: .post, rawPath: "/y") else {
            Issue.record("expected a match"); return
        }
        let tooLarge = route.errorFormat.response(for: .payloadTooLarge(limit: 10), requestID: "r-4")
        #expect(String(decoding: tooLarge.body, as: UTF8.self) == "[payload_too_large|413|r-4]")
    }
}
