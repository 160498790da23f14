import Synchronization

/// The pools of one application, keyed by origin + credential identity (APNs: team + key id + environment), never
/// by host alone. Pools are spread over the group's loops as they are created.
public final class HTTP2Client: Sendable {
    public struct PoolKey: Hashable, Sendable {
        public var origin: HTTP2Origin
        public var identity: String

        public init(origin: HTTP2Origin, identity: String) {
            self.origin = origin
            self.identity = identity
        }
    }

    public let group: EventLoopGroup
    private let pools = Mutex<[PoolKey: HTTP2ClientPool]>([:])

    public init(group: EventLoopGroup) {
        self.group = group
    }

    /// The pool for `configuration.origin` + `configuration.identity`, created with `configuration` the first
    /// time; later calls with the same key return that pool (their other settings are ignored).
    public func pool(for configuration: HTTP2PoolConfiguration) throws(TLSConfigurationError) -> HTTP2ClientPool {
        let key = PoolKey(origin: configuration.origin, identity: configuration.identity)
        // Created under the lock so two callers never build two pools for one key. Creation loads the CA store
        // (a few milliseconds, once per pool); no I/O on any connection happens here.
        return try pools.withLock { pools throws(TLSConfigurationError) -> HTTP2ClientPool in
            if let existing = pools[key] { return existing }
            let created = try HTTP2ClientPool(configuration: configuration, group: group)
            pools[key] = created
            return created
        }
    }

    public func existingPool(origin: HTTP2Origin, identity: String) -> HTTP2ClientPool? {
        pools.withLock { $0[PoolKey(origin: origin, identity: identity)] }
    }

    /// Shuts one pool down and forgets it (e.g. the credential was deleted).
    public func removePool(origin: HTTP2Origin, identity: String) async {
        let pool = pools.withLock { $0.removeValue(forKey: PoolKey(origin: origin, identity: identity)) }
        await pool?.shutdown()
    }

    public var poolKeys: [PoolKey] { pools.withLock { Array($0.keys) } }

    /// Shuts every pool down.
    public func shutdown() async {
        let all = pools.withLock { pools -> [HTTP2ClientPool] in
            defer { pools.removeAll() }
            return Array(pools.values)
        }
        for pool in all { await pool.shutdown() }
    }
}
