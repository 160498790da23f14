import Synchronization
import ClarionTransport

/// The pools of one application, keyed by origin + credential identity (APNs: team + key id + environment), never
/// by host alone; a pool with a TLS client certificate is keyed by that certificate too. Pools are spread over the
/// group's loops as they are created.
public final class HTTP2Client: Sendable {
    public struct PoolKey: Hashable, Sendable {
        public var origin: HTTP2Origin
        public var identity: String
        /// SHA-256 (hex) of the client certificate the pool presents; nil without one. Part of the key whatever
        /// `identity` says, so two certificates never share connections.
        public var clientCertificateSHA256: String?

        public init(origin: HTTP2Origin, identity: String, clientCertificateSHA256: String? = nil) {
            self.origin = origin
            self.identity = identity
            self.clientCertificateSHA256 = clientCertificateSHA256
        }

        /// The key of the pool `configuration` describes.
        public init(configuration: HTTP2PoolConfiguration) {
            self.init(origin: configuration.origin, identity: configuration.identity,
                      clientCertificateSHA256: configuration.clientIdentity.map { identity in
                          // An unreadable certificate cannot make a pool (creation throws); key it apart anyway.
                          (try? identity.leafCertificate().sha256) ?? "unreadable"
                      })
        }
    }

    public let group: EventLoopGroup
    private let pools = Mutex<[PoolKey: HTTP2ClientPool]>([:])
    /// HTTP/1.1 pools for origins that do not negotiate h2 (Web Push), keyed and removed like the HTTP/2 ones.
    private let http1Pools = Mutex<[PoolKey: HTTP1ClientPool]>([:])

    public init(group: EventLoopGroup) {
        self.group = group
    }

    /// The pool for `configuration.origin` + `configuration.identity`, created with `configuration` the first
    /// time; later calls with the same key return that pool (their other settings are ignored).
    public func pool(for configuration: HTTP2PoolConfiguration) throws(TLSConfigurationError) -> HTTP2ClientPool {
        let key = PoolKey(configuration: configuration)
        // Created under the lock so two callers never build two pools for one key. Creation parses the PEMs
        // (once per pool); no I/O on any connection happens here.
        return try pools.withLock { pools throws(TLSConfigurationError) -> HTTP2ClientPool in
            if let existing = pools[key] { return existing }
            let created = try HTTP2ClientPool(configuration: configuration, group: group)
            pools[key] = created
            return created
        }
    }

    /// The HTTP/1.1 pool for `configuration.origin` + `configuration.identity`, created the first time (as `pool(for:)`).
    public func http1Pool(for configuration: HTTP2PoolConfiguration) throws(TLSConfigurationError) -> HTTP1ClientPool {
        let key = PoolKey(configuration: configuration)
        return try http1Pools.withLock { pools throws(TLSConfigurationError) -> HTTP1ClientPool in
            if let existing = pools[key] { return existing }
            let created = try HTTP1ClientPool(configuration: configuration, group: group)
            pools[key] = created
            return created
        }
    }

    public func existingHTTP1Pool(_ key: PoolKey) -> HTTP1ClientPool? {
        http1Pools.withLock { $0[key] }
    }

    public func existingPool(_ key: PoolKey) -> HTTP2ClientPool? {
        pools.withLock { $0[key] }
    }

    /// The pool without a client certificate for `origin` + `identity`.
    public func existingPool(origin: HTTP2Origin, identity: String) -> HTTP2ClientPool? {
        existingPool(PoolKey(origin: origin, identity: identity))
    }

    /// Shuts one pool down and forgets it (e.g. the credential was deleted), the HTTP/1.1 one of the key too.
    public func removePool(_ key: PoolKey) async {
        let pool = pools.withLock { $0.removeValue(forKey: key) }
        await pool?.shutdown()
        let http1 = http1Pools.withLock { $0.removeValue(forKey: key) }
        await http1?.shutdown()
    }

    /// `removePool(_:)` for the pool without a client certificate for `origin` + `identity`.
    public func removePool(origin: HTTP2Origin, identity: String) async {
        await removePool(PoolKey(origin: origin, identity: identity))
    }

    /// The keys of every pool, HTTP/2 and HTTP/1.1 (one key can have both).
    public var poolKeys: [PoolKey] {
        let http2 = pools.withLock { Set($0.keys) }
        return Array(http2.union(http1Pools.withLock { $0.keys }))
    }

    /// Shuts every pool down.
    public func shutdown() async {
        let all = pools.withLock { pools -> [HTTP2ClientPool] in
            defer { pools.removeAll() }
            return Array(pools.values)
        }
        for pool in all { await pool.shutdown() }
        let http1 = http1Pools.withLock { pools -> [HTTP1ClientPool] in
            defer { pools.removeAll() }
            return Array(pools.values)
        }
        for pool in http1 { await pool.shutdown() }
    }
}
