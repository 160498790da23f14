@testable import ClarionAPI
@testable import ClarionHTTP1
import Testing

/// The SNS Query API's spelling of the failures the HTTP layer detects: SNS's ErrorResponse XML with SNS's codes
/// (Sender for 4xx, Receiver for 5xx), the mapping that used to live in the HTTP layer as `HTTPError.snsCode`.
@Suite("ErrorFormat.snsXML: the server's own errors under SNS's codes")
struct SNSErrorFormatTests {
    @Test("each server-detected failure maps to its SNS code and fault")
    func codes() {
        let cases: [(HTTPError, String, String)] = [
            (.notFound(path: "/x"), "NotFound", "Sender"),
            (.methodNotAllowed(allowed: [.post]), "MethodNotAllowed", "Sender"),
            (.payloadTooLarge(limit: 10), "RequestEntityTooLarge", "Sender"),
            (.badRequest("bad"), "MalformedQueryString", "Sender"),
            (.requestTimeout("slow"), "RequestTimeout", "Sender"),
            (.internalError, "InternalError", "Receiver"),
            (.shuttingDown, "ServiceUnavailable", "Receiver"),
            (HTTPError(status: 501, code: "not_implemented", message: "no"), "NotImplemented", "Receiver"),
            (HTTPError(status: 431, code: "request_header_fields_too_large", message: "big"), "MalformedQueryString", "Sender"),
        ]
        for (error, code, fault) in cases {
            let response = ErrorFormat.snsXML.response(for: error, requestID: "req-1")
            let text = String(decoding: response.body, as: UTF8.self)
            #expect(response.status == error.status, "\(error.code)")
            #expect(text.contains("<Type>\(fault)</Type><Code>\(code)</Code>"), "\(error.code): \(text)")
            #expect(text.contains("req-1"), "\(error.code): the request id is in the body")
        }
        #expect(ErrorFormat.snsXML.response(for: .methodNotAllowed(allowed: [.post]), requestID: "r").headers["Allow"] == "POST")
    }

    @Test("Router.api(): SNS XML at /, JSON elsewhere and for a request that did not parse")
    func apiRouterFormats() {
        let router = Router.api()
        guard case .notFound(let root) = router.resolve(method: .get, rawPath: "/"),
              case .notFound(let other) = router.resolve(method: .get, rawPath: "/v1/x") else {
            Issue.record("expected 404s"); return
        }
        #expect(root == .snsXML)
        #expect(other == .json)
        #expect(router.errorFormat(forPath: "") == .json)
        let json = String(decoding: ErrorFormat.json.response(for: .notFound(path: "/v1/x"), requestID: "r").body, as: UTF8.self)
        #expect(json.contains(#""code":"not_found""#))
    }
}
