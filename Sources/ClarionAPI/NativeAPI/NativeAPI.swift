import ClarionHTTP1

/// Registers the native JSON API under `/v1` (docs/api.md, docs/openapi.json): platform applications,
/// endpoints, topics, subscriptions, publish, message status, and the OpenAPI document itself at
/// `GET /v1/openapi.json` (the only route without bearer authentication).
public func registerNativeAPI(on router: inout Router, context: NativeAPIContext) {
    router.add(.get, "/v1/openapi.json", errorFormat: .json, .synchronous { _ in
        HTTPResponse(status: 200, headers: ["Content-Type": "application/json"], body: OpenAPIDocument.bytes)
    })
    NativeApplicationRoutes.register(on: &router, context: context)
    NativeTopicRoutes.register(on: &router, context: context)
    NativePublishRoutes.register(on: &router, context: context)
    NativeImportRoutes.register(on: &router, context: context)
}

/// The OpenAPI 3.1 document of every route a node serves (`Resources/openapi.json`, which `docs/openapi.json`
/// links to), compiled into the binary. `RouteTableTests` fails when a registered route is missing from it or
/// it documents a route nobody serves.
public enum OpenAPIDocument {
    public static let bytes: [UInt8] = PackageResources.openapi_json
}
