import ClarionAPI
import ClarionCrypto
import ClarionHTTP1
import ClarionProviders
import ClarionStore
import Foundation
import Testing
@testable import ClarionApp

/// The route table a node serves against the OpenAPI document it ships (docs/openapi.json): a route added without
/// documentation, or documentation left behind when a route goes, fails here.
@Suite struct RouteTableTests {
    /// The registered routes as "METHOD /path/{param}", from the node's own table on a pool that never connects.
    /// - Parameter dev: as `serve --dev` serves it (with `POST /_clarion/reset`).
    static func registeredRoutes(dev: Bool = false) -> Set<String> {
        let pool = PGPool(conninfo: "postgresql://127.0.0.1:1/none", size: 1)
        defer { pool.shutdown() }
        // As a node with the default settings serves it: /metrics on the API port.
        var configuration = Configuration()
        configuration.devMode = dev
        let masterKey = AESGCMKey.generate()
        let resources = APIResources(pool: pool, masterKey: masterKey, batcher: PublishBatcher(pool: pool), region: configuration.region,
                                     settingsCheck: ProviderSettingsCheck())
        let router = APIRoutes.router(pool: pool, masterKey: masterKey, resources: resources, configuration: configuration,
                                      registration: RegistrationContext(pool: pool, masterKey: AESGCMKey.generate()),
                                      signingCertificatePEM: "",
                                      metrics: .synchronous { _ in HTTPResponse(status: 200) }, readiness: { .ready })
        return Set(router.routes.map { "\($0.method.rawValue) \($0.pattern.description)" })
    }

    /// Routes whose operation says `x-clarion-dev-only: true`.
    static func documentedRoutes(devOnly: Bool) throws -> Set<String> {
        let document = try #require(try JSONSerialization.jsonObject(with: Data(OpenAPIDocument.bytes)) as? [String: Any])
        let paths = try #require(document["paths"] as? [String: [String: Any]])
        var documented = Set<String>()
        for (path, item) in paths {
            for (key, operation) in item {
                guard let operation = operation as? [String: Any] else { continue }
                if (operation["x-clarion-dev-only"] as? Bool ?? false) == devOnly { documented.insert("\(key.uppercased()) \(path)") }
            }
        }
        return documented
    }

    @Test("serve --dev adds exactly the routes documented as dev-only (POST /_clarion/reset); without it they are not served")
    func devOnlyRoutes() throws {
        let production = Self.registeredRoutes()
        let dev = Self.registeredRoutes(dev: true)
        #expect(production.isSubset(of: dev))
        #expect(dev.subtracting(production) == (try Self.documentedRoutes(devOnly: true)))
        #expect(dev.subtracting(production) == ["POST /_clarion/reset"])
    }

    static func documentedRoutes() throws -> Set<String> {
        let document = try #require(try JSONSerialization.jsonObject(with: Data(OpenAPIDocument.bytes)) as? [String: Any])
        let paths = try #require(document["paths"] as? [String: [String: Any]])
        let methods: Set<String> = ["get", "post", "put", "patch", "delete", "head", "options"]
        var documented = Set<String>()
        for (path, item) in paths {
            for key in item.keys where methods.contains(key) { documented.insert("\(key.uppercased()) \(path)") }
        }
        return documented
    }

    @Test func everyRouteIsDocumentedAndEveryDocumentedRouteIsServed() throws {
        let registered = Self.registeredRoutes(dev: true)
        let documented = try Self.documentedRoutes()
        // The table has every family: the Query API, /v1, beacons, registration, events, health.
        for route in ["POST /", "GET /v1/topics", "POST /v1/beacons/open", "POST /meiro_mobile", "GET /health",
                      "POST /api/v1.0/orgs/{org}/pushdeviceregistration/devices"] {
            #expect(registered.contains(route), "\(route) missing from the route table")
        }
        #expect(registered.subtracting(documented).isEmpty, "served but not documented: \(registered.subtracting(documented).sorted())")
        #expect(documented.subtracting(registered).isEmpty, "documented but not served: \(documented.subtracting(registered).sorted())")
    }
}
