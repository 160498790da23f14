import ClarionAPI

/// Every route the API serves, in one place. `/health` and `/ready` come with the server.
enum APIRoutes {
    static func register(on router: inout Router, node: ClarionNode) {
        // The Prometheus exposition, unless `CLARION_METRICS_LISTEN` moves it to a listener of its own (or
        // `CLARION_METRICS=off`). No authentication: it carries no secret, token or id (docs/security.md).
        if let metrics = node.metrics, node.configuration.metricsListen == nil {
            router.add(.get, "/metrics", errorFormat: .json, metrics.route())
        }
    }
}
