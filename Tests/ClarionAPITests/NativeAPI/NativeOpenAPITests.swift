import Foundation
import Testing
@testable import ClarionAPI

@Suite("Native API OpenAPI document")
struct NativeOpenAPITests {
    static func document() throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(OpenAPIDocument.bytes)) as? [String: Any])
    }

    @Test("every operation declares its responses, and those that need a key declare 401")
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
                // An operation without `security` has the document's default, the bearer API key; public routes
                // say `security: []`, the Query API SigV4 (refused with SNS's 403).
                let schemes = (operation["security"] as? [[String: Any]]).map { $0.flatMap(\.keys) } ?? ["bearerAuth"]
                if schemes.contains("bearerAuth") {
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
        #expect(create == NativeEndpointRoutes.acceptedFields)
        #expect(create.isSuperset(of: ["token", "time_zone"] + NativeEndpointRoutes.deviceFields.map(\.field)))
    }
}
