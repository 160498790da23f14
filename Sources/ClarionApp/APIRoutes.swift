import ClarionAPI
import ClarionHTTP1

/// Every route the API serves, in one place. `/health` and `/ready` come with the server.
enum APIRoutes {
    static func register(on router: inout Router, node: ClarionNode) {
    }
}
