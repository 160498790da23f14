import ClarionHTTP1

/// Registers the native JSON API under `/v1` (docs/api.md, docs/openapi.json): platform applications,
/// endpoints, topics, subscriptions, publish, message status, and the OpenAPI document itself at
/// `GET /v1/openapi.json` (the only route without bearer authentication).
public func registerNativeAPI(on router: inout Router, context: NativeAPIContext) {
    var routes = NativeRoutes(router: router)
    NativeRoutes.registerAll(on: &routes, context: context)
    router = routes.router
}

/// The router being built, and the list of what was registered on it, which the OpenAPI test compares
/// with the document in both directions.
struct NativeRoutes {
    var router: Router
    private(set) var registered: [(method: HTTPMethod, path: String)] = []

    init(router: Router) { self.router = router }

    mutating func add(_ method: HTTPMethod, _ path: String, maxBodyBytes: Int? = nil, errorFormat: ErrorFormat,
                      _ handler: RouteHandler) {
        router.add(method, path, maxBodyBytes: maxBodyBytes, errorFormat: errorFormat, handler)
        registered.append((method, path))
    }

    static func registerAll(on routes: inout NativeRoutes, context: NativeAPIContext) {
        routes.add(.get, "/v1/openapi.json", errorFormat: .json, .synchronous { _ in
            HTTPResponse(status: 200, headers: ["Content-Type": "application/json"], body: NativeOpenAPIDocument.bytes)
        })
        NativeApplicationRoutes.register(on: &routes, context: context)
        NativeTopicRoutes.register(on: &routes, context: context)
        NativePublishRoutes.register(on: &routes, context: context)
    }
}
