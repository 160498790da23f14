import ClarionAPI
import ClarionDispatch
import ClarionHTTP1
import ClarionMetrics
import ClarionProviders
import ClarionStore
import Foundation
import Synchronization

/// The node's metrics: one registry, the families updated where the work happens (deliveries, provider answers,
/// API requests), and collectors that read the rest at scrape time (process, database pools, work waiting in the
/// database, HTTP/2 pools, API connections, token reassignments). Labels are bounded: platform, application
/// name, outcome class, route pattern, status class, queue, provider. Never a token, an endpoint or a message id.
final class NodeMetrics: Sendable {
    let registry = MetricsRegistry()
    let deliveries: DeliveryMetrics
    let providers: ProviderMetrics
    let api: APIRequestMetrics
    private let publishBatchSize: Histogram
    private let publishCommit: Histogram
    private let startTime = Date()
    private let workCache = Mutex<(at: ContinuousClock.Instant, figures: WorkWaiting)?>(nil)
    /// Work waiting is read from the database at most this often, whatever the number of scrapers.
    static let workCacheSeconds = 5

    init() {
        deliveries = DeliveryMetrics(registry: registry)
        providers = ProviderMetrics(registry: registry)
        api = APIRequestMetrics(registry: registry)
        publishBatchSize = registry.histogram(
            "clarion_publish_batch_messages", help: "Messages per group-commit batch of the publish path.",
            buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256]).labels()
        publishCommit = registry.histogram(
            "clarion_publish_commit_seconds", help: "Seconds to write and commit one group-commit batch of publishes.",
            buckets: MetricBuckets.latencySeconds).labels()
    }

    /// For `PublishBatcher(onBatch:)`: one observation of each histogram per batch.
    var publishBatchObserver: @Sendable (Int, Duration) -> Void {
        { [publishBatchSize, publishCommit] messages, write in
            publishBatchSize.observe(Double(messages))
            publishCommit.observe(write)
        }
    }

    /// The scrape-time families. `node` is held weakly: the registry outlives nothing, but a collector must not
    /// keep a stopped node alive.
    func installCollectors(node: ClarionNode) {
        let startTime = self.startTime
        registry.collector {
            Self.processFamilies(startTime: startTime)
        }
        registry.collector { [weak node] in
            guard let node else { return [] }
            return await self.nodeFamilies(node)
        }
    }

    /// `GET /metrics`: the whole exposition.
    func route() -> RouteHandler {
        .asynchronous { [registry] _ in
            HTTPResponse(status: 200, headers: ["Content-Type": ExpositionWriter.contentType],
                         body: Array(await registry.exposition().utf8))
        }
    }

    private func nodeFamilies(_ node: ClarionNode) async -> [MetricSnapshot] {
        var families: [MetricSnapshot] = []
        // The database pools: the API's and the dispatcher's.
        var busy: [([String], Double)] = [], idle: [([String], Double)] = [], queued: [([String], Double)] = []
        var waits: [([String], Double)] = []
        for (name, pool) in [("api", node.pool), ("dispatcher", node.dispatcherPoolForMetrics)] {
            guard let pool else { continue }
            let figures = pool.statistics
            busy.append(([name], Double(figures.busy)))
            idle.append(([name], Double(figures.size - figures.busy)))
            queued.append(([name], Double(figures.queued)))
            waits.append(([name], Double(figures.waits)))
        }
        families.append(.gauge("clarion_db_pool_connections_busy", help: "Database pool connections running a statement.",
                               labels: ["pool"], busy))
        families.append(.gauge("clarion_db_pool_connections_idle", help: "Database pool connections free.", labels: ["pool"], idle))
        families.append(.gauge("clarion_db_pool_queued", help: "Database jobs waiting for a pool connection now.",
                               labels: ["pool"], queued))
        families.append(.counter("clarion_db_pool_waits_total", help: "Database jobs that found no free connection, since start.",
                                 labels: ["pool"], waits))

        families.append(.counter("clarion_db_errors_total", help: "Failed database calls of the node's pools, by error code (unavailable, connection_lost, serialization_failure, ...).",
                                 labels: ["code"], node.databaseHealth.errorsByCode.sorted { $0.key < $1.key }.map { ([$0.key], Double($0.value)) }))
        // Work waiting in the database (cached for a few seconds).
        if let pool = node.pool, let work = await workWaiting(pool) {
            families.append(.gauge("clarion_work_waiting", help: "Rows of work waiting in the database, per queue.",
                                   labels: ["queue"], work.queues.map { ([$0.name], Double($0.count)) }))
            families.append(.gauge("clarion_work_oldest_seconds", help: "Age of the oldest row waiting, per queue (0 when empty).",
                                   labels: ["queue"], work.queues.map { ([$0.name], $0.oldestSeconds) }))
        }

        // HTTP/2 provider pools, summed per provider.
        if let registry = node.providersForMetrics {
            let pools = await registry.poolStatistics()
            let providers = Set(pools.map(\.provider)).sorted()
            // One figure (named, so no column can be misread) summed over a provider's pools, per provider.
            func sum<Figures>(_ pools: [(provider: String, statistics: Figures)], _ figure: KeyPath<Figures, Int>) -> [([String], Double)] {
                providers.map { provider in
                    ([provider], Double(pools.reduce(0) { $0 + ($1.provider == provider ? $1.statistics[keyPath: figure] : 0) }))
                }
            }
            families.append(.gauge("clarion_http2_connections_open", help: "Provider HTTP/2 connections taking streams.",
                                   labels: ["provider"], sum(pools, \.activeConnections)))
            families.append(.gauge("clarion_http2_connections_draining", help: "Provider HTTP/2 connections finishing after GOAWAY or a recycle.",
                                   labels: ["provider"], sum(pools, \.drainingConnections)))
            families.append(.gauge("clarion_http2_connections_connecting", help: "Provider HTTP/2 connections being opened.",
                                   labels: ["provider"], sum(pools, \.connectingConnections)))
            families.append(.gauge("clarion_http2_connections_backing_off", help: "Provider HTTP/2 connection slots waiting out a backoff after a failed attempt.",
                                   labels: ["provider"], sum(pools, \.backingOffSlots)))
            families.append(.gauge("clarion_http2_streams_in_flight", help: "Requests on provider HTTP/2 streams now.",
                                   labels: ["provider"], sum(pools, \.inFlightRequests)))
            families.append(.gauge("clarion_http2_queued_requests", help: "Requests waiting for a provider HTTP/2 stream.",
                                   labels: ["provider"], sum(pools, \.queuedRequests)))
            families.append(.counter("clarion_http2_connections_opened_total", help: "Provider HTTP/2 connections established (first ones and reconnects) by the pools in use.",
                                     labels: ["provider"], sum(pools, \.connectionsOpened)))
            families.append(.counter("clarion_http2_connect_failures_total", help: "Provider connection attempts that failed (resolution, TCP, TLS, timeout) in the pools in use.",
                                     labels: ["provider"], sum(pools, \.connectAttemptsFailed)))
            families.append(.counter("clarion_http2_goaways_received_total", help: "GOAWAY frames received from providers by the pools in use.",
                                     labels: ["provider"], sum(pools, \.goAwaysReceived)))
        }

        // The API listener.
        if let server = node.serverForMetrics {
            families.append(.gauge("clarion_api_connections_open", help: "API connections open.", [([], Double(server.openConnections))]))
            families.append(.counter("clarion_api_connections_refused_total", help: "API connections closed at accept because the connection limit was reached.",
                                     [([], Double(server.connectionsRefusedAtLimit))]))
        }

        // Token reassignments by the mobile event collector: a token that moved to another installation.
        if let events = node.registrationForMetrics?.eventCounters {
            families.append(.counter("clarion_mobile_token_reassignments_total",
                                     help: "Device tokens the mobile event collector moved from one user_id to another (allowed) or refused to move (refused).",
                                     labels: ["outcome"], [(["allowed"], Double(events.tokenReassignmentsAllowed)),
                                                          (["refused"], Double(events.tokenReassignmentsRefused))]))
        }
        return families
    }

    private func workWaiting(_ pool: PGPool) async -> WorkWaiting? {
        let now = ContinuousClock.now
        if let cached = workCache.withLock({ $0 }), cached.at.duration(to: now) < .seconds(Self.workCacheSeconds) {
            return cached.figures
        }
        guard let figures = try? await pool.withConnection({ (c) throws(StoreError) in try WorkWaiting.read(c) }) else {
            return workCache.withLock { $0?.figures }
        }
        workCache.withLock { $0 = (now, figures) }
        return figures
    }

    // MARK: - The process

    static func processFamilies(startTime: Date) -> [MetricSnapshot] {
        var families: [MetricSnapshot] = []
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let cpu = Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
            + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
        families.append(.counter("process_cpu_seconds_total", help: "User and system CPU time spent in seconds.", [([], cpu)]))
        if let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8),
           let pages = statm.split(separator: " ").dropFirst().first.flatMap({ Double($0) }) {
            families.append(.gauge("process_resident_memory_bytes", help: "Resident memory size in bytes.",
                                   [([], pages * Double(sysconf(Int32(_SC_PAGESIZE))))]))
        }
        if let descriptors = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") {
            families.append(.gauge("process_open_fds", help: "Number of open file descriptors.", [([], Double(descriptors.count))]))
        }
        var limit = rlimit()
        if getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 {
            families.append(.gauge("process_max_fds", help: "Maximum number of open file descriptors.", [([], Double(limit.rlim_cur))]))
        }
        families.append(.gauge("process_start_time_seconds", help: "Start time of the process since unix epoch in seconds.",
                               [([], startTime.timeIntervalSince1970.rounded())]))
        families.append(.gauge("clarion_build_info", help: "The running build: always 1, the version in a label.",
                               labels: ["version"], [([CLI.version], 1)]))
        return families
    }
}

/// API requests by route pattern and status class, and their latency by route.
final class APIRequestMetrics: HTTPRequestMetrics {
    private let requests: CounterFamily
    private let latency: HistogramFamily

    private struct Key: Hashable {
        let method: String
        let route: String
    }

    /// One route's children: a counter per status class (none, 1xx ... 5xx) and its latency histogram.
    private final class RouteChildren: Sendable {
        let byClass: [Counter]
        let latency: Histogram
        init(_ byClass: [Counter], _ latency: Histogram) {
            self.byClass = byClass
            self.latency = latency
        }
    }

    static let statusClasses = ["none", "1xx", "2xx", "3xx", "4xx", "5xx"]
    /// Routes are resolved once each; afterwards a request costs one dictionary lookup under this lock (the
    /// strings are the request's and the route's own: nothing is allocated) and three atomic adds.
    private let routes = Mutex<[Key: RouteChildren]>([:])

    init(registry: MetricsRegistry) {
        requests = registry.counter("clarion_api_requests_total", help: "API requests by method, route pattern and status class (none: the connection ended first).",
                                    labels: ["method", "route", "status_class"])
        latency = registry.histogram("clarion_api_request_duration_seconds", help: "Seconds from a request's parsed head to its logged end, by method and route pattern.",
                                     labels: ["method", "route"], buckets: MetricBuckets.latencySeconds)
    }

    func requestFinished(method: String, route: String?, status: Int, duration: Duration) {
        // An unmatched request's method and path come from the client: neither becomes a label value.
        let key = route.map { Key(method: method, route: $0) } ?? Key(method: "-", route: "unmatched")
        let children = routes.withLock { $0[key] } ?? resolve(key)
        let statusClass = status <= 0 ? 0 : min(max(status / 100, 1), 5)
        children.byClass[statusClass].increment()
        children.latency.observe(duration)
    }

    private func resolve(_ key: Key) -> RouteChildren {
        let made = RouteChildren(Self.statusClasses.map { requests.labels(key.method, key.route, $0) },
                                 latency.labels(key.method, key.route))
        return routes.withLock { routes in
            if let known = routes[key] { return known }
            routes[key] = made
            return made
        }
    }
}
