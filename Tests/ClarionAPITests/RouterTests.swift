import Foundation
import Testing
@testable import ClarionAPI
@testable import ClarionHTTP1

@Suite("Router")
struct RouterTests {
    static let router: Router = {
        var router = Router.api()
        router.add(.get, "/v1/topics", .synchronous { _ in .text("list") })
        router.add(.post, "/v1/topics", .synchronous { _ in .text("create") })
        router.add(.get, "/v1/topics/{id}", .synchronous { _ in .text("one") })
        router.add(.delete, "/v1/topics/{id}", .synchronous { _ in .text("delete") })
        router.add(.get, "/v1/topics/search", maxBodyBytes: 10, .synchronous { _ in .text("search") })
        router.add(.get, "/v1/apps/{app}/endpoints/{endpoint}", .synchronous { _ in .text("endpoint") })
        router.add(.post, "/", .synchronous { _ in .text("sns") })
        return router
    }()

    func matched(_ method: HTTPMethod, _ path: String) -> (PathPattern, [String: String])? {
        if case .matched(let route, let parameters) = Self.router.resolve(method: method, rawPath: path) {
            return (route.pattern, parameters)
        }
        return nil
    }

    @Test("literal routes beat parameterised ones; captures are decoded per segment")
    func matching() throws {
        #expect(matched(.get, "/v1/topics")?.0.description == "/v1/topics")
        #expect(matched(.post, "/v1/topics")?.0.description == "/v1/topics")
        #expect(matched(.get, "/v1/topics/search")?.0.description == "/v1/topics/search")
        let one = try #require(matched(.get, "/v1/topics/t%C3%B3pico%2F1"))
        #expect(one.0.description == "/v1/topics/{id}")
        #expect(one.1 == ["id": "tópico/1"])
        // DELETE on the literal path falls through to the parameterised route that allows it.
        #expect(matched(.delete, "/v1/topics/search")?.1 == ["id": "search"])
        #expect(matched(.get, "/v1/apps/a1/endpoints/e1")?.1 == ["app": "a1", "endpoint": "e1"])
        #expect(matched(.head, "/v1/topics")?.0.description == "/v1/topics")
    }

    @Test("no match is 404, wrong method 405 with the allowed ones, in the family's format")
    func failures() {
        guard case .notFound(let format) = Self.router.resolve(method: .get, rawPath: "/v1/topics/a/b") else {
            Issue.record("expected 404"); return
        }
        #expect(format == .json)
        guard case .methodNotAllowed(let allowed, let jsonFormat) = Self.router.resolve(method: .put, rawPath: "/v1/topics") else {
            Issue.record("expected 405"); return
        }
        #expect(allowed == [.get, .post])
        #expect(jsonFormat == .json)
        guard case .methodNotAllowed(_, let snsFormat) = Self.router.resolve(method: .delete, rawPath: "/") else {
            Issue.record("expected 405"); return
        }
        #expect(snsFormat == .snsXML)
        guard case .notFound = Self.router.resolve(method: .get, rawPath: "/v1/topics/") else {
            Issue.record("a trailing slash is a different path"); return
        }
        guard case .notFound = Self.router.resolve(method: .get, rawPath: "/v1/topics/%zz") else {
            Issue.record("a malformed escape matches nothing"); return
        }
    }

    @Test("per-route body limits, the default elsewhere")
    func limits() {
        #expect(Self.router.resolve(method: .get, rawPath: "/v1/topics/search").maxBodyBytes(default: 99) == 10)
        #expect(Self.router.resolve(method: .get, rawPath: "/v1/topics").maxBodyBytes(default: 99) == 1 << 20)
        #expect(Self.router.resolve(method: .get, rawPath: "/nowhere").maxBodyBytes(default: 99) == 99)
    }
}

@Suite("Request ids")
struct RequestIDTests {
    @Test("version-4 UUIDs in lower case, all different")
    func format() throws {
        var seen = Set<String>()
        for _ in 0..<1000 {
            let id = RequestID.make()
            let uuid = try #require(UUID(uuidString: id))
            #expect(uuid.uuidString.lowercased() == id)
            #expect(Array(id)[14] == "4")
            #expect("89ab".contains(Array(id)[19]))
            seen.insert(id)
        }
        #expect(seen.count == 1000)
    }
}
