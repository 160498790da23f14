import Foundation
import Testing
@testable import ClarionAPI
@testable import ClarionHTTP1

@Suite("Native JSON API helpers")
struct JSONAPITests {
    struct Keys: APIKeyResolver {
        func principal(forAPIKey key: String) async throws -> APIPrincipal? {
            if key == "down" { throw CancellationError() }
            return key == "ck_live_good" ? APIPrincipal(accountID: "acct-1", keyID: "key-1") : nil
        }
    }

    struct PublishBody: Decodable, Equatable {
        struct Target: Decodable, Equatable {
            let endpoint: String
            let priority: Int?
        }
        let message: String
        let targets: [Target]
        let ttl: Int?
    }

    func request(_ body: String, contentType: String? = "application/json", authorization: String? = nil) -> HTTPRequest {
        var headers = HTTPHeaders()
        if let contentType { headers.add("Content-Type", contentType) }
        if let authorization { headers.add("Authorization", authorization) }
        return HTTPRequest(method: .post, rawPath: "/v1/publish", headers: headers, body: Array(body.utf8), requestID: "r")
    }

    func decodeError(_ body: String, contentType: String? = "application/json") -> JSONAPIError? {
        do {
            _ = try JSONBody.decode(PublishBody.self, from: request(body, contentType: contentType))
            return nil
        } catch {
            return error
        }
    }

    @Test("bodies decode; errors name the offending field as a path")
    func decoding() throws {
        let ok = try JSONBody.decode(PublishBody.self, from: request(#"{"message":"hi","targets":[{"endpoint":"e1"}]}"#))
        #expect(ok == PublishBody(message: "hi", targets: [.init(endpoint: "e1", priority: nil)], ttl: nil))

        #expect(decodeError(#"{"targets":[]}"#) == .missingField("message"))
        let nested = try #require(decodeError(#"{"message":"m","targets":[{"endpoint":"a"},{"priority":5}]}"#))
        #expect(nested.code == "missing_field")
        #expect(nested.field == "targets[1].endpoint")
        let mismatch = try #require(decodeError(#"{"message":"m","targets":[{"endpoint":"a","priority":"high"}]}"#))
        #expect(mismatch.code == "invalid_field")
        #expect(mismatch.field == "targets[0].priority")
        #expect(mismatch.message == "The field 'targets[0].priority' must be an integer.")
        let null = try #require(decodeError(#"{"message":null,"targets":[]}"#))
        #expect(null.field == "message")
        #expect(decodeError(#"{"message":"m","targets":[}"#)?.code == "invalid_json")
        #expect(decodeError("")?.code == "invalid_json")
        #expect(decodeError(#"{"message":"m","targets":[]}"#, contentType: "text/plain")?.status == 415)
        #expect(decodeError(#"{"message":"m","targets":[]}"#, contentType: "application/json; charset=utf-8") == nil)
        #expect(decodeError(#"{"message":"m","targets":[]}"#, contentType: nil) == nil)
    }

    @Test("the error envelope always has code, message and field")
    func envelope() throws {
        let response = JSONAPIError.invalidField("ttl", "The field 'ttl' must be \"positive\".").response()
        #expect(response.status == 400)
        #expect(response.headers["Content-Type"] == "application/json")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
        let error = try #require(object["error"] as? [String: Any])
        #expect(error["code"] as? String == "invalid_field")
        #expect(error["message"] as? String == "The field 'ttl' must be \"positive\".")
        #expect(error["field"] as? String == "ttl")
        let noField = String(decoding: JSONAPIError.internalError.response().body, as: UTF8.self)
        #expect(noField == #"{"error":{"code":"internal_error","message":"The server could not complete the request.","field":null}}"#)
    }

    @Test("bearer authentication: missing, malformed, unknown, failing lookup, valid")
    func bearer() async throws {
        let authenticator = BearerAuthenticator(resolver: Keys())
        func outcome(_ header: String?) async -> Result<APIPrincipal, JSONAPIError> {
            do {
                return .success(try await authenticator.authenticate(request("{}", authorization: header)))
            } catch {
                return .failure(error)
            }
        }
        #expect(await outcome(nil) == .failure(.unauthorized))
        #expect(await outcome("Basic abc") == .failure(.unauthorized))
        #expect(await outcome("Bearer ") == .failure(.unauthorized))
        #expect(await outcome("Bearer ck_live_bad") == .failure(.invalidAPIKey))
        #expect(await outcome("Bearer down") == .failure(.internalError))
        #expect(await outcome("bearer  ck_live_good ") == .success(APIPrincipal(accountID: "acct-1", keyID: "key-1")))
        #expect(JSONAPIError.unauthorized.response().headers["WWW-Authenticate"] == "Bearer")
        #expect(JSONAPIError.invalidAPIKey.status == 401)
    }

    @Test("a native route end to end: 401 without a key, field errors, success")
    func route() async throws {
        let authenticator = BearerAuthenticator(resolver: Keys())
        var router = Router.api()
        router.add(.post, "/v1/publish", .json { request throws(JSONAPIError) in
            let principal = try await authenticator.authenticate(request)
            let body = try JSONBody.decode(PublishBody.self, from: request)
            struct Accepted: Encodable { let account: String; let count: Int }
            return JSONBody.response(Accepted(account: principal.accountID, count: body.targets.count), status: 202)
        })
        try await withServer(router) { server in
            let url = "http://127.0.0.1:\(server.port)/v1/publish"
            let anonymous = try await curl(url, method: "POST", body: Array("{}".utf8))
            #expect(anonymous.status == 401)
            #expect(anonymous.headers["www-authenticate"] == "Bearer")
            #expect(anonymous.text.contains(#""code":"unauthorized""#))
            let auth = ["Authorization": "Bearer ck_live_good", "Content-Type": "application/json"]
            let invalid = try await curl(url, method: "POST", headers: auth,
                                         body: Array(#"{"message":"m","targets":[{"endpoint":1}]}"#.utf8))
            #expect(invalid.status == 400)
            #expect(invalid.text.contains(#""field":"targets[0].endpoint""#))
            let accepted = try await curl(url, method: "POST", headers: auth,
                                          body: Array(#"{"message":"m","targets":[{"endpoint":"a"},{"endpoint":"b"}]}"#.utf8))
            #expect(accepted.status == 202)
            #expect(accepted.text == #"{"account":"acct-1","count":2}"#)
        }
    }
}
