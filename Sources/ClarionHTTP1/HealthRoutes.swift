import ClarionCore

/// `GET /health` (liveness: the process answers) and `GET /ready` (readiness: the configured check passes).
public enum HealthRoutes {
    static let healthBody = Array("{\"status\":\"ok\"}".utf8)

    /// Adds `/health` and `/ready` unless the router has them already (the server calls this too).
    public static func addMissing(to router: inout Router, readiness: @escaping @Sendable () async -> Readiness) {
        if case .notFound = router.resolve(method: .get, rawPath: "/health") {
            router.add(.get, "/health", .synchronous { _ in .json(healthBody) })
        }
        if case .notFound = router.resolve(method: .get, rawPath: "/ready") {
            router.add(.get, "/ready", .asynchronous { _ in
                switch await readiness() {
                case .ready:
                    return .json(Array("{\"status\":\"ready\"}".utf8))
                case .notReady(let reason):
                    return .json(Array("{\"status\":\"not_ready\",\"reason\":\(JSONText.quote(reason))}".utf8),
                                 status: 503)
                }
            })
        }
    }
}
