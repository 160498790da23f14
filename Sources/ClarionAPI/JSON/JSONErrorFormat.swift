import ClarionHTTP1

extension ErrorFormat {
    /// The native, registration and event APIs' JSON error envelope (`JSONAPIError`), with the server's code.
    public static let json = ErrorFormat(name: "json") { error, _ in
        JSONAPIError(status: error.status, code: error.code, message: error.message).response()
    }
}

extension Router {
    /// A router for Clarion's API families: SNS's XML at `/` (where the Query API lives), the JSON envelope for every
    /// other path and for requests that did not parse.
    public static func api(defaultMaxBodyBytes: Int = 1 << 20) -> Router {
        Router(defaultMaxBodyBytes: defaultMaxBodyBytes) { path in path == "/" ? .snsXML : .json }
    }
}
