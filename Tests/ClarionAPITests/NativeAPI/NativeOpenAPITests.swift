import ClarionCrypto
@testable import ClarionHTTP1
import ClarionStore
import Foundation
import Testing
@testable import ClarionAPI

@Suite("Native API OpenAPI document")
struct NativeOpenAPITests {
    static let documentPath = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("docs/openapi.json")

    /// The registered routes, from registering on a router with a context whose pool never connects.
    static func registeredRoutes() -> Set<String> {
        let pool = PGPool(conninfo: "postgresql://127.0.0.1:1/none", size: 1)
        defer { pool.shutdown() }
        let batcher = PublishBatcher(pool: pool)
        let context = NativeAPIContext(pool: pool, masterKey: AESGCMKey.generate(), batcher: batcher, region: "us-east-1")
        var routes = NativeRoutes(router: Router.api())
        NativeRoutes.registerAll(on: &routes, context: context)
        return Set(routes.registered.map { "\($0.method.rawValue) \($0.path)" })
    }

    static func document() throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(NativeOpenAPIDocument.bytes)) as? [String: Any])
    }

    @Test("the embedded document is docs/openapi.json byte for byte")
    func embeddedMatchesFile() throws {
        let file = try Data(contentsOf: Self.documentPath)
        #expect([UInt8](file) == NativeOpenAPIDocument.bytes ? true : false,
                "regenerate NativeOpenAPIDocument.swift from docs/openapi.json (command in the file's header)")
    }

    @Test("every registered /v1 route is in the document, and every documented operation is registered")
    func routesMatchDocument() throws {
        let document = try Self.document()
        #expect(document["openapi"] as? String == "3.0.3")
        let paths = try #require(document["paths"] as? [String: [String: Any]])
        var documented = Set<String>()
        let methods: Set<String> = ["get", "post", "put", "patch", "delete", "head", "options"]
        for (path, item) in paths {
            for key in item.keys where methods.contains(key) { documented.insert("\(key.uppercased()) \(path)") }
        }
        let registered = Self.registeredRoutes()
        #expect(registered.count > 15)
        #expect(registered.subtracting(documented).isEmpty, "registered but not documented: \(registered.subtracting(documented).sorted())")
        #expect(documented.subtracting(registered).isEmpty, "documented but not registered: \(documented.subtracting(registered).sorted())")
    }

    @Test("every operation declares its responses, and authenticated ones declare 401")
    func operationsAreComplete() throws {
        let document = try Self.document()
        let paths = try #require(document["paths"] as? [String: [String: Any]])
        for (path, item) in paths {
            for (method, value) in item {
                guard let operation = value as? [String: Any], let responses = operation["responses"] as? [String: Any] else {
                    if method != "parameters" { Issue.record("\(method) \(path) has no responses") }
                    continue
                }
                #expect(operation["operationId"] is String, "\(method) \(path)")
                if path != "/v1/openapi.json" {
                    #expect(responses["401"] != nil, "\(method) \(path) does not document 401")
                }
            }
        }
    }

    @Test("the document's attribute names and platforms are the ones the code accepts")
    func vocabularies() throws {
        let schemas = try #require((try Self.document()["components"] as? [String: Any])?["schemas"] as? [String: [String: Any]])
        func properties(_ schema: String, _ field: String) -> Set<String> {
            let object = (schemas[schema]?["properties"] as? [String: Any])?[field] as? [String: Any]
            return Set((object?["properties"] as? [String: Any])?.keys.map { $0 } ?? [])
        }
        #expect(properties("ApplicationCreate", "attributes") == PlatformApplicationActions.storedAttributes)
        #expect(properties("ApplicationPatch", "attributes") == PlatformApplicationActions.storedAttributes)
        #expect(properties("TopicCreate", "attributes") == TopicActions.settable)
        let platform = (schemas["ApplicationCreate"]?["properties"] as? [String: Any])?["platform"] as? [String: Any]
        #expect(Set(platform?["enum"] as? [String] ?? []) == PlatformApplicationActions.platforms)
        let create = Set((schemas["EndpointCreate"]?["properties"] as? [String: Any])?.keys.map { $0 } ?? [])
        #expect(create == Set(["token", "enabled", "custom_user_data", "user_id"] + NativeEndpointRoutes.deviceFields.map(\.field)))
    }
}
