import ClarionCore

/// What runs for a route.
///
/// - `synchronous`: runs on the event-loop thread that read the request. For fast paths that never block
///   (`/health`, static documents).
/// - `suspending`: called on the event-loop thread with a responder, must return at once; the connection
///   is suspended (no thread held) until `respond` is called from any thread. Batchers (group commit) use this
///   to answer many requests from one completion without a Task per request.
/// - `asynchronous`: a Swift `async` function run in a Task; the connection is suspended the same way until
///   it returns. The convenient form for handlers that await the store.
///
/// - `streaming`: an `async` function run in a Task as soon as the request head arrived, with the body to read as
///   it comes (`RequestBodyStream`); `request.body` is empty. For bulk uploads that must not be held whole in memory
///   (the route's `maxBodyBytes` still bounds the total). The handler may answer before the body ends (an error):
///   the connection then closes after the answer.
///
/// Handlers that parse a body use `task(_:)` (or `startTask(for:_:)` inside `suspending`): small bodies run as
/// `asynchronous` runs, large ones on the cooperative pool.
public enum RouteHandler: Sendable {
    case synchronous(@Sendable (HTTPRequest) -> HTTPResponse)
    case suspending(@Sendable (HTTPRequest, HTTPResponder) -> Void)
    case asynchronous(@Sendable (HTTPRequest) async -> HTTPResponse)
    case streaming(@Sendable (HTTPRequest, RequestBodyStream) async -> HTTPResponse)
}

extension RouteHandler {
    /// The largest body a handler starts with on the loop thread. Work before a handler's first suspension runs
    /// on that thread and holds up every other connection of the loop. The JSON parser's worst case for 16 KiB (a
    /// flat array of `0`, the most values per byte) is about 3.5 million instructions, under a millisecond even on a
    /// busy machine, against 14 million for 64 KiB and up to 120 million for the 1 MiB the registration API takes
    /// (docs/benchmarks.md, "JSON under hostile input"). Publish bodies are a few KiB: they still start at once.
    public static let loopThreadBodyLimit = 16 * 1024

    /// An `asynchronous` handler for a request with a body: up to `loopThreadBodyLimit` it runs as `asynchronous`
    /// does, from the loop thread until it first suspends (no hop before parsing and authentication on the publish
    /// path); a larger body is handed to a new task on the cooperative pool at once, so parsing it never stalls the
    /// loop's other connections. (A new `Task` is the one sure hop: `Task.yield()` may resume on the same thread.)
    public static func task(_ handler: @escaping @Sendable (HTTPRequest) async -> HTTPResponse) -> RouteHandler {
        .asynchronous { request in
            guard request.body.count > loopThreadBodyLimit else { return await handler(request) }
            return await Task { await handler(request) }.value
        }
    }

    /// Starts the work of a `suspending` handler the way `task(_:)` does: immediately on this thread for a small
    /// body, on the cooperative pool for one over `loopThreadBodyLimit`.
    public static func startTask(for request: HTTPRequest, _ operation: @escaping @Sendable () async -> Void) {
        if request.body.count > loopThreadBodyLimit {
            Task { await operation() }
        } else {
            Task.immediate { await operation() }
        }
    }
}

/// A path template: literal segments and `{name}` captures, e.g. `/v1/topics/{id}`.
public struct PathPattern: Sendable, Hashable, CustomStringConvertible {
    enum Segment: Sendable, Hashable {
        case literal(String)
        case parameter(String)
    }

    let segments: [Segment]
    public let description: String

    public init(_ template: String) {
        precondition(template.hasPrefix("/"), "a path pattern starts with '/': \(template)")
        description = template
        segments = PathPattern.split(template).map { segment in
            if segment.hasPrefix("{") && segment.hasSuffix("}") && segment.count > 2 {
                return .parameter(String(segment.dropFirst().dropLast()))
            }
            return .literal(String(segment))
        }
    }

    var isLiteral: Bool { segments.allSatisfy { if case .literal = $0 { true } else { false } } }

    /// "/" has no segments; "/a/b" has ["a", "b"]; a trailing slash gives a trailing empty segment.
    static func split(_ path: String) -> [Substring] {
        guard path != "/" else { return [] }
        return path.dropFirst().split(separator: "/", omittingEmptySubsequences: false)
    }

    /// Captures for decoded segments, or nil when the pattern does not match.
    func match(_ decoded: [String]) -> [String: String]? {
        guard decoded.count == segments.count else { return nil }
        var captures: [String: String] = [:]
        for (segment, value) in zip(segments, decoded) {
            switch segment {
            case .literal(let literal): if literal != value { return nil }
            case .parameter(let name):
                if value.isEmpty { return nil }
                captures[name] = value
            }
        }
        return captures
    }

    /// Literal segments win over captures, position by position: `/v1/topics/search` beats `/v1/topics/{id}`.
    func isMoreSpecific(than other: PathPattern) -> Bool {
        for (a, b) in zip(segments, other.segments) {
            switch (a, b) {
            case (.literal, .parameter): return true
            case (.parameter, .literal): return false
            default: continue
            }
        }
        return false
    }
}

/// One registered endpoint.
public struct Route: Sendable {
    public let method: HTTPMethod
    public let pattern: PathPattern
    public let handler: RouteHandler
    /// The largest body accepted, in bytes; larger requests get 413 in `errorFormat` without reaching the handler.
    public let maxBodyBytes: Int
    public let errorFormat: ErrorFormat
}

/// The outcome of routing one request.
public enum RouteMatch: Sendable {
    case matched(Route, pathParameters: [String: String])
    case methodNotAllowed(allowed: [HTTPMethod], format: ErrorFormat)
    case notFound(format: ErrorFormat)

    /// The error format for failures detected before or outside the handler.
    public var errorFormat: ErrorFormat {
        switch self {
        case .matched(let route, _): route.errorFormat
        case .methodNotAllowed(_, let format), .notFound(let format): format
        }
    }

    /// The body limit that applies to this request (the default one when there is no route).
    func maxBodyBytes(default defaultLimit: Int) -> Int {
        if case .matched(let route, _) = self { return route.maxBodyBytes }
        return defaultLimit
    }
}

/// Maps method + path to a route. Built once, then immutable and shared by all server threads.
///
/// Literal-only patterns sit in a dictionary (the common case, one lookup); parameterised patterns are
/// scanned, which is fine for the few dozen routes an API has.
public struct Router: Sendable {
    public var defaultMaxBodyBytes: Int
    private let formatForPath: @Sendable (String) -> ErrorFormat
    private var literalRoutes: [String: [Route]] = [:]
    private var patternRoutes: [Route] = []
    /// Every route, in the order added: the route table the OpenAPI document is checked against.
    public private(set) var routes: [Route] = []

    /// `errorFormat` picks the format of a path's family: for a route added without one, for a path with no route,
    /// and (called with "") for a request whose head did not parse. The HTTP layer knows no family, so without it
    /// errors are plain text.
    public init(defaultMaxBodyBytes: Int = 1 << 20,
                errorFormat: @escaping @Sendable (String) -> ErrorFormat = { _ in .plainText }) {
        self.defaultMaxBodyBytes = defaultMaxBodyBytes
        self.formatForPath = errorFormat
    }

    public mutating func add(_ method: HTTPMethod, _ path: String, maxBodyBytes: Int? = nil,
                             errorFormat: ErrorFormat? = nil, _ handler: RouteHandler) {
        let pattern = PathPattern(path)
        let route = Route(method: method, pattern: pattern, handler: handler,
                          maxBodyBytes: maxBodyBytes ?? defaultMaxBodyBytes,
                          errorFormat: errorFormat ?? formatForPath(path))
        routes.append(route)
        if pattern.isLiteral {
            literalRoutes[path, default: []].append(route)
        } else {
            patternRoutes.append(route)
        }
    }

    public mutating func get(_ path: String, _ handler: @escaping @Sendable (HTTPRequest) async -> HTTPResponse) {
        add(.get, path, .asynchronous(handler))
    }

    public mutating func post(_ path: String, maxBodyBytes: Int? = nil,
                              _ handler: @escaping @Sendable (HTTPRequest) async -> HTTPResponse) {
        add(.post, path, maxBodyBytes: maxBodyBytes, .task(handler))
    }

    /// The error format for `path` ("" for a request without one).
    func errorFormat(forPath path: String) -> ErrorFormat { formatForPath(path) }

    public func resolve(method: HTTPMethod, rawPath: String) -> RouteMatch {
        // Fast path: the raw path is already a literal route key.
        // Fast path: a literal route for the raw path with this method is the most specific match possible.
        if !rawPath.utf8Contains(where: { $0 == UInt8(ascii: "%") }), let routes = literalRoutes[rawPath],
           let route = routes.first(where: { $0.method == method }) {
            return .matched(route, pathParameters: [:])
        }
        guard let decoded = Self.decodeSegments(rawPath) else {
            return .notFound(format: formatForPath(rawPath))
        }
        var candidates: [(Route, [String: String])] = []
        let decodedPath = "/" + decoded.joined(separator: "/")
        if let routes = literalRoutes[decodedPath], !decoded.contains(where: { $0.contains("/") }) {
            candidates += routes.map { ($0, [:]) }
        }
        for route in patternRoutes {
            if let captures = route.pattern.match(decoded) { candidates.append((route, captures)) }
        }
        return select(method: method, candidates: candidates, path: decodedPath)
    }

    private func select(method: HTTPMethod, candidates: [(Route, [String: String])], path: String) -> RouteMatch {
        guard !candidates.isEmpty else { return .notFound(format: formatForPath(path)) }
        func best(_ list: [(Route, [String: String])]) -> (Route, [String: String])? {
            list.min { $0.0.pattern.isMoreSpecific(than: $1.0.pattern) }
        }
        let exact = candidates.filter { $0.0.method == method }
        if let (route, captures) = best(exact) { return .matched(route, pathParameters: captures) }
        if method == .head, let (route, captures) = best(candidates.filter { $0.0.method == .get }) {
            return .matched(route, pathParameters: captures)
        }
        var allowed: [HTTPMethod] = []
        for (route, _) in candidates where !allowed.contains(route.method) { allowed.append(route.method) }
        let format = best(candidates)?.0.errorFormat ?? formatForPath(path)
        return .methodNotAllowed(allowed: allowed, format: format)
    }

    /// Percent-decodes each segment separately, so an encoded `/` stays inside its segment.
    static func decodeSegments(_ rawPath: String) -> [String]? {
        guard rawPath.hasPrefix("/") else { return nil }
        var out: [String] = []
        for raw in PathPattern.split(rawPath) {
            guard let segment = try? FormParameters.decodeComponent(raw.utf8, label: "", plusIsSpace: false) else {
                return nil
            }
            out.append(segment)
        }
        return out
    }
}
