import ClarionProviders
import ClarionCrypto
@testable import ClarionHTTP1
import ClarionStore
import ClarionTestSupport
import Foundation
import Testing
@testable import ClarionAPI

/// A real HTTPServer on an ephemeral port with the native API (and the console's routes) over a freshly migrated database, and an API key
/// for each of two accounts (the second one checks that accounts do not see each other's resources).
struct NativeAPIFixture {
    static let accountID = "123456789012"
    static let otherAccountID = "210987654321"
    static let region = "us-east-1"

    let base: String
    let key: String
    let otherKey: String
    let pool: PGPool
    let context: NativeAPIContext

    /// Runs `body` against a running server and always stops the server, batcher and pool.
    static func with<R>(_ body: (NativeAPIFixture) async throws -> R) async throws -> R {
        let url = try TestPostgres.migratedDatabase(prefix: "v1")
        let pool = PGPool(conninfo: url, size: 2)
        let masterKey = AESGCMKey.generate()
        let batcher = PublishBatcher(pool: pool)
        let context = NativeAPIContext(pool: pool, masterKey: masterKey, batcher: batcher, region: region,
                                       settingsCheck: ProviderSettingsCheck())
        let key = try await context.accounts.createAPIKey(accountID: accountID, name: "tests").key
        let otherKey = try await context.accounts.createAPIKey(accountID: otherAccountID).key
        var router = Router.api()
        registerNativeAPI(on: &router, context: context)
        ConsoleRoutes.register(on: &router, context: context, staleAfterDays: 270)
        defer {
            batcher.shutdown()
            pool.shutdown()
        }
        return try await withServer(router) { server in
            let fixture = NativeAPIFixture(base: "http://127.0.0.1:\(server.port)", key: key, otherKey: otherKey, pool: pool,
                                           context: context)
            return try await body(fixture)
        }
    }

    /// A JSON request with this fixture's key (or `key`, or none when `key` is "").
    func call(_ method: String, _ path: String, _ body: String? = nil, key: String? = nil,
              headers: [String: String] = [:]) async throws -> ClientResult {
        var all = headers
        let bearer = key ?? self.key
        if !bearer.isEmpty { all["Authorization"] = "Bearer \(bearer)" }
        if body != nil && all["Content-Type"] == nil { all["Content-Type"] = "application/json" }
        return try await curl(base + path, method: method, headers: all, body: body.map { Array($0.utf8) })
    }

    /// Calls and decodes a JSON object body, checking the status.
    func json(_ method: String, _ path: String, _ body: String? = nil, expect status: Int, key: String? = nil,
              sourceLocation: SourceLocation = #_sourceLocation) async throws -> [String: Any] {
        let result = try await call(method, path, body, key: key)
        #expect(result.status == status, "\(method) \(path): \(result.text)", sourceLocation: sourceLocation)
        if result.body.isEmpty { return [:] }
        return try #require(try JSONSerialization.jsonObject(with: Data(result.body)) as? [String: Any],
                            sourceLocation: sourceLocation)
    }

    /// The error envelope's code and field, checking the status and the envelope's shape.
    func error(_ method: String, _ path: String, _ body: String? = nil, key: String? = nil,
               sourceLocation: SourceLocation = #_sourceLocation) async throws -> (status: Int, code: String, field: String?) {
        let result = try await call(method, path, body, key: key)
        #expect(result.headers["content-type"] == "application/json", sourceLocation: sourceLocation)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.body)) as? [String: Any],
                                  "not JSON: \(result.text)", sourceLocation: sourceLocation)
        let error = try #require(object["error"] as? [String: Any], sourceLocation: sourceLocation)
        #expect(error["message"] is String, sourceLocation: sourceLocation)
        return (result.status, error["code"] as? String ?? "", error["field"] as? String)
    }

    static func encoded(_ component: String) -> String {
        component.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? component
    }
}

/// JSON text of a string, for building bodies.
func quoted(_ text: String) -> String {
    String(decoding: try! JSONSerialization.data(withJSONObject: [text], options: [.withoutEscapingSlashes]), as: UTF8.self)
        .dropFirst().dropLast().description
}
