import ClarionDispatch
import Foundation

/// The node's share of open files: the soft `RLIMIT_NOFILE` raised to the hard limit at start (Debian's default
/// soft limit, 1024, would cap a gateway far below the 4096 connections it allows), and a connection limit for
/// the API that leaves room for everything else the process opens.
///
/// Past the descriptor limit `accept` fails; the server then stops accepting until a connection closes (it no
/// longer spins), but a database connection or a provider connection opened at that moment would fail too. So the
/// API's limit is kept under the descriptor limit by a reserve:
///
///     reserve = PostgreSQL sessions (API pool + publish writers [+ dispatcher pool + LISTEN])
///             + 64 for provider connections (dispatching nodes: pools of 2 to 8 per application)
///             + 64 for the process (standard streams, epoll and eventfd per loop, logs, files, DNS, webhooks,
///               the embedded PostgreSQL's pipes)
///     connections = min(CLARION_MAX_CONNECTIONS, max(16, soft limit - reserve))
struct FileDescriptorBudget: Equatable, Sendable {
    /// The soft limit in force after raising.
    var descriptorLimit: Int
    var reserved: Int
    var configured: Int
    /// The API's connection limit.
    var connections: Int

    /// Connections allowed however low the descriptor limit (fewer would not serve anything useful; past the
    /// real limit the server stops accepting for a while rather than fail).
    static let minimumConnections = 16
    static let providerAllowance = 64
    static let processAllowance = 64

    init(configuration: Configuration, descriptorLimit: Int) {
        self.descriptorLimit = descriptorLimit
        configured = configuration.maxConnections
        reserved = Self.reserved(for: configuration)
        connections = min(configured, max(Self.minimumConnections, descriptorLimit - reserved))
    }

    static func reserved(for configuration: Configuration) -> Int {
        var postgres = configuration.databasePoolSize + configuration.publishWriters
        var providers = 0
        if configuration.role.dispatches {
            postgres += ClarionNode.dispatcherPoolSize(DispatcherConfiguration()) + 1
            providers = providerAllowance
        }
        return postgres + providers + processAllowance
    }

    /// Raises the soft limit on open files to the hard limit. Returns the soft limit in force afterwards and what it
    /// was before (equal when there was nothing to raise or raising failed).
    static func raiseSoftLimit() -> (before: Int, after: Int) {
        var limit = rlimit()
        guard getrlimit(resourceNOFILE, &limit) == 0 else { return (1024, 1024) }
        let before = Self.clamp(limit.rlim_cur)
        guard limit.rlim_cur < limit.rlim_max else { return (before, before) }
        var raised = limit
        raised.rlim_cur = limit.rlim_max
        guard setrlimit(resourceNOFILE, &raised) == 0 else { return (before, before) }
        return (before, Self.clamp(raised.rlim_cur))
    }

    private static var resourceNOFILE: __rlimit_resource_t { __rlimit_resource_t(RLIMIT_NOFILE.rawValue) }

    /// RLIM_INFINITY (all ones; its C macro does not import) and anything past Int.max read as Int.max.
    private static func clamp(_ value: rlim_t) -> Int {
        value > rlim_t(Int.max) ? Int.max : Int(value)
    }
}
