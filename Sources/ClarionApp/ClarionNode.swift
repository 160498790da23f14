import Foundation
import Synchronization
import ClarionAPI
import ClarionCore
import ClarionCrypto
import ClarionDispatch
import ClarionEmulator
import ClarionHTTP1
import ClarionProviders
import ClarionStore
import ClarionTransport
import ClarionWorkers

/// One running `clarion serve`: the database (embedded or external), migrations, the API server and,
/// on request, the in-process provider emulator. Owns each of them and stops them in reverse order.
public final class ClarionNode: @unchecked Sendable {
    public let configuration: Configuration
    let log = Log("clarion.node")
    private(set) var embedded: EmbeddedPostgres?
    public private(set) var databaseURL = ""
    public private(set) var pool: PGPool?
    public private(set) var masterKey: AESGCMKey?
    private var server: HTTPServer?
    /// The `CLARION_METRICS_LISTEN` listener, serving `/metrics` only.
    private var metricsServer: HTTPServer?
    /// Nil with `CLARION_METRICS=off`: nothing is counted and `/metrics` is not served.
    let metrics: NodeMetrics?
    private var registrationContext: RegistrationContext?
    private var batcher: PublishBatcher?
    private var dispatcher: Dispatcher?
    /// The dispatcher's own connections (2 per shard worker + 2, see `Dispatcher`), so a burst of API
    /// requests never starves a checkpoint and the reverse.
    private var dispatcherPool: PGPool?
    private var dispatcherDone: DispatchSemaphore?
    private var providers: ProviderRegistry?
    private var emulator: EmulatorHandle?
    private var providerDirectory: ProviderRegistryDirectory?
    private var registrationProcessor: RegistrationProcessor?
    private var registrationDone: DispatchSemaphore?
    private var subscriptionSender: HTTPSubscriptionSender?
    private var subscriptionSenderDone: DispatchSemaphore?
    private let migrationsApplied = Atomic<Bool>(false)
    /// Shared by every pool and writer of the node: a database outage is one "database unavailable" line with
    /// its cause and one "database available again", whatever the number of requests and workers that saw it.
    let databaseHealth: DatabaseHealth = {
        let log = Log("clarion.store")
        return DatabaseHealth { event in
            switch event {
            case .unavailable(let cause):
                log.error("database unavailable", ["cause": cause.logText, "code": cause.code.rawValue,
                                                   "effect": "requests that need the database are answered 503 until it returns"])
            case .available(let downFor, let failures):
                log.info("database available again", ["down_seconds": String(format: "%.1f", Double(downFor.components.seconds)
                                                          + Double(downFor.components.attoseconds) / 1e18),
                                                      "failed_calls": String(failures)])
            }
        }
    }()
    /// The soft open-file limit after `start()` raised it.
    private var descriptorLimit: Int?

    public init(configuration: Configuration) {
        self.configuration = configuration
        metrics = configuration.metricsEnabled ? NodeMetrics() : nil
        metrics?.installCollectors(node: self)
    }

    // What the metrics collectors read (set while the node runs).
    var dispatcherPoolForMetrics: PGPool? { dispatcherPool }
    var providersForMetrics: ProviderRegistry? { providers }
    var serverForMetrics: HTTPServer? { server }
    var registrationForMetrics: RegistrationContext? { registrationContext }

    /// The port `/metrics` is served on when `CLARION_METRICS_LISTEN` is set (the bound one for port 0).
    public var metricsPort: Int? { metricsServer?.port }

    /// The emulator's base URL when `--with-emulator` runs one.
    public var emulatorURL: String? { emulator?.baseURL }

    /// The API port actually bound (useful with port 0).
    public var apiPort: Int { server?.port ?? 0 }

    /// Brings the node up; on failure everything started so far is stopped again.
    public func start() throws(NodeError) {
        raiseDescriptorLimit()
        do {
            try startDatabase()
            try migrate()
            try loadMasterKey()
            try bootstrapAccount()
            if configuration.devMode { warnDevMode() }
            if configuration.withEmulator { try startEmulator() }
            if configuration.role.dispatches { try startDispatcher() }
            // Any role: a dispatcher-only node has no API listener, and its delivery metrics are the ones that matter.
            // Bound before the API, so that once /ready answers every listener of the node answers.
            try startMetricsListener()
            if configuration.role.servesAPI { try startAPI() }
        } catch {
            stop()
            throw error
        }
    }

    /// The soft limit on open files up to the hard one, before anything is opened (the embedded PostgreSQL
    /// inherits it).
    func raiseDescriptorLimit() {
        let (before, after) = FileDescriptorBudget.raiseSoftLimit()
        descriptorLimit = after
        if after != before { log.info("open-file limit raised", ["from": String(before), "to": String(after)]) }
    }

    /// The dispatcher's PostgreSQL sessions: 3 per shard worker, one per direct worker, and 2.
    static func dispatcherPoolSize(_ configuration: DispatcherConfiguration) -> Int {
        3 * configuration.shardWorkers + configuration.directWorkers + 2
    }

    /// Starts the embedded cluster when no database URL is configured.
    func startDatabase() throws(NodeError) {
        if let url = configuration.databaseURL {
            databaseURL = url
        } else {
            let directory = URL(fileURLWithPath: configuration.dataDirectory)
            do {
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            } catch {
                throw NodeError(.configuration, "cannot create data directory \(directory.path): \(error.localizedDescription)")
            }
            do {
                let cluster = try EmbeddedPostgres(dataDirectory: directory)
                try cluster.start()
                embedded = cluster
                databaseURL = cluster.url()
                if let relocated = cluster.relocatedTo {
                    log.info("embedded PostgreSQL placed where the postgres user can reach it",
                             ["directory": cluster.directory.path, "cluster": relocated,
                              "why": "a folder above the data directory is not searchable by the postgres user"])
                }
                log.info("embedded PostgreSQL running", ["directory": cluster.directory.path, "port": String(cluster.port),
                                                         "authentication": "scram-sha-256 (password in postgres.password)"])
            } catch {
                throw NodeError(.unavailable, "embedded PostgreSQL: \(error.message)")
            }
        }
        pool = PGPool(conninfo: databaseURL, size: configuration.databasePoolSize, health: databaseHealth)
    }

    /// Applies pending migrations (serialised across nodes by an advisory lock).
    func migrate() throws(NodeError) {
        guard let pool else { return }
        let migrator = Migrator(defaultRegion: configuration.region)
        do {
            let applied = try pool.withConnectionBlocking { (c) throws(StoreError) in try migrator.migrate(c) }
            if !applied.isEmpty { log.info("migrations applied", ["versions": applied.map(String.init).joined(separator: ",")]) }
            migrationsApplied.store(true, ordering: .releasing)
        } catch {
            throw NodeError(error.code == .unavailable || error.code == .connectionLost ? .unavailable : .internalError,
                            "database: \(error)")
        }
    }

    func loadMasterKey() throws(NodeError) {
        masterKey = try MasterKeySource.resolve(configuration, embedded: embedded != nil, log: log)
    }

    /// The account of `CLARION_ACCOUNT_ID`, and the access key pair of `CLARION_ACCESS_KEY_ID` when one is
    /// configured, exist after start.
    func bootstrapAccount() throws(NodeError) {
        guard let accounts = accountRepository else { return }
        let configuration = self.configuration
        let loopback = Self.isLoopback(configuration.listenHost)
        let demoConfigured = DemoKeyGuard.isDemo(accessKeyID: configuration.accessKeyID, secret: configuration.secretAccessKey)
        do {
            _ = try blockingAwait { () async throws(StoreError) in
                try await accounts.ensureAccount(accountID: configuration.accountID)
                if let id = configuration.accessKeyID, let secret = configuration.secretAccessKey, loopback || !demoConfigured {
                    _ = try await accounts.ensureAccessKey(accountID: configuration.accountID, accessKeyID: id, secret: secret)
                }
                if !loopback {
                    // A demo key stored by an earlier loopback run stays in the database: disable it there too.
                    do throws(StoreError) {
                        try await accounts.disableAccessKey(accessKeyID: DemoKeyGuard.demoAccessKeyID)
                    } catch {
                        if error.code != .notFound { throw error }
                    }
                }
            }
        } catch {
            throw NodeError(error.code == .unavailable ? .unavailable : .configuration, "account bootstrap: \(error)")
        }
        if demoConfigured && loopback {
            log.warning("the demo SNS access key is enabled: it works only while the API listens on loopback",
                        ["access_key_id": DemoKeyGuard.demoAccessKeyID, "listen": configuration.listenHost])
        } else if demoConfigured {
            log.warning("the demo SNS access key is refused: the API listens beyond loopback; set your own CLARION_ACCESS_KEY_ID and CLARION_SECRET_ACCESS_KEY",
                        ["access_key_id": DemoKeyGuard.demoAccessKeyID, "listen": configuration.listenHost])
        }
    }

    /// `serve --dev`, said loudly at start (and again for a listen address it moved to loopback): a node that takes any
    /// access key and empties itself on request must never be mistaken for a production one.
    func warnDevMode() {
        log.warning("DEVELOPMENT MODE: any SigV4 access key acts for the default account without its signature checked, POST /_clarion/reset empties every resource, and platform applications without a ProviderEndpoint send to the built-in emulator. Never expose this node or use it for real devices.",
                    ["account_id": configuration.accountID, "listen": configuration.listenHost,
                     "database": configuration.databaseURL == nil ? "embedded" : "shared (--dev-allow-shared-database)"])
        if let replaced = configuration.devReplacedListenHost {
            log.warning("development mode listens on loopback only: the listen host from the environment or configuration file was replaced; pass --listen to choose another",
                        ["configured_host": replaced, "listen": configuration.listenHost])
        }
    }

    /// `serve --dev`: where an application that names no `ProviderEndpoint` sends (the emulator serves every provider's
    /// send and token paths on one port). Web Push has none: each subscription names its own push service.
    static func emulatorEndpoints(_ emulatorURL: String, platform: Platform) -> [String: String] {
        switch platform.provider {
        case .apns: [ProviderAttribute.providerEndpoint: emulatorURL]
        case .fcm: [ProviderAttribute.providerEndpoint: emulatorURL, ProviderAttribute.providerAuthEndpoint: emulatorURL + "/token"]
        case .adm: [ProviderAttribute.providerEndpoint: emulatorURL, ProviderAttribute.providerAuthEndpoint: emulatorURL + "/auth/o2/token"]
        case .webPush: [:]
        case .hms: [ProviderAttribute.providerEndpoint: emulatorURL, ProviderAttribute.providerAuthEndpoint: emulatorURL + "/oauth2/v3/token"]
        }
    }

    /// Where provider endpoints may connect: public addresses, `CLARION_PROVIDER_ALLOW_HOSTS`, and loopback when this
    /// node runs the emulator (its demo credentials point there).
    var providerAddressPolicy: OutboundAddressPolicy {
        var policy = (try? OutboundAddressPolicy(allowList: configuration.providerAllowHosts)) ?? OutboundAddressPolicy()
        if configuration.withEmulator {
            policy.allowedNetworks += [IPNetwork("127.0.0.0/8")!, IPNetwork("::1/128")!]
        }
        return policy
    }

    /// Whether `host` (CLARION_LISTEN's host) reaches this machine only: 127.0.0.0/8, ::1 or localhost.
    static func isLoopback(_ host: String) -> Bool {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        if bare == "localhost" || bare == "::1" { return true }
        let parts = bare.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
    }

    /// Repositories need the pool and the master key, so they exist once both do.
    public var accountRepository: AccountRepository? {
        guard let pool, let masterKey else { return nil }
        return AccountRepository(pool: pool, masterKey: masterKey)
    }

    /// `/ready`: the database answers and the schema is at the version this build expects.
    func readiness() async -> Readiness {
        guard let pool else { return .notReady(reason: "no database") }
        do {
            let version = try await pool.withConnection { (c) throws(StoreError) in try Migrator().currentVersion(c) }
            let expected = Migrator().latestVersion
            return version >= expected ? .ready : .notReady(reason: "schema at version \(version), expected \(expected)")
        } catch {
            return .notReady(reason: "database unreachable: \(error.code.rawValue)")
        }
    }

    func startAPI() throws(NodeError) {
        guard let pool, let masterKey else { throw NodeError(.internalError, "database not started") }
        let batcher = PublishBatcher(pool: pool, writers: configuration.publishWriters, onBatch: metrics?.publishBatchObserver)
        self.batcher = batcher
        let resources = APIResources(pool: pool, masterKey: masterKey, batcher: batcher, region: configuration.region,
                                     settingsCheck: ProviderSettingsCheck())
        let registration = RegistrationContext(pool: pool, masterKey: masterKey, region: configuration.region,
                                               accountKeys: resources.accountKeys)
        registrationContext = registration
        let signing = try messageSigningIdentity(pool: pool, masterKey: masterKey)
        var emulatorReset: (@Sendable () -> Void)?
        if let emulator { emulatorReset = { emulator.emulator.reset() } }
        let router = APIRoutes.router(pool: pool, masterKey: masterKey, resources: resources, configuration: configuration,
                                      registration: registration, signingCertificatePEM: signing.certificatePEM,
                                      metrics: configuration.metricsListen == nil ? metrics?.route() : nil,
                                      emulatorReset: emulatorReset,
                                      readiness: { [weak self] in await self?.readiness() ?? .notReady(reason: "shutting down") })
        startRegistrationProcessor(pool: pool, masterKey: masterKey)
        let budget = FileDescriptorBudget(configuration: configuration,
                                          descriptorLimit: descriptorLimit ?? FileDescriptorBudget.raiseSoftLimit().after)
        let fields = ["connections": String(budget.connections), "configured": String(budget.configured),
                      "open_file_limit": String(budget.descriptorLimit), "reserved": String(budget.reserved)]
        if budget.connections < budget.configured {
            log.warning("API connection limit lowered to fit the open-file limit", fields)
        } else {
            log.info("API connection limit", fields)
        }
        let tls = try apiTLSIdentity()
        var serverConfiguration = HTTPServerConfiguration(
            host: configuration.listenHost, port: configuration.listenPort, threadPoolSize: configuration.apiThreads,
            requestHeadTimeout: .seconds(configuration.headTimeout), requestBodyTimeout: .seconds(configuration.bodyTimeout),
            requestBodyMinimumRate: configuration.bodyMinimumRate, connectionLimit: budget.connections,
            accessLog: BufferedAccessLog(), tls: tls, readiness: { [weak self] in
                await self?.readiness() ?? .notReady(reason: "shutting down")
            })
        serverConfiguration.requestMetrics = metrics?.api
        let server = HTTPServer(configuration: serverConfiguration, router: router)
        do { try server.start() } catch {
            throw NodeError(.unavailable, "API server on \(configuration.listenHost):\(configuration.listenPort): \(error.message)")
        }
        self.server = server
        try startSubscriptionSender(pool: pool, signing: signing, scheme: tls == nil ? "http" : "https", port: server.port)
        log.info("API listening", ["address": "\(configuration.listenHost):\(server.port)", "role": configuration.role.rawValue,
                                   "scheme": tls == nil ? "http" : "https"])
    }

    /// CLARION_TLS_CERT and CLARION_TLS_KEY, read and checked (the key must be the certificate's) before the port
    /// opens; nil when neither is set. One without the other is a configuration error, not plain HTTP.
    func apiTLSIdentity() throws(NodeError) -> TLSIdentity? {
        switch (configuration.tlsCertificateFile, configuration.tlsKeyFile) {
        case (nil, nil):
            return nil
        case (let certificate?, let key?):
            let identity: TLSIdentity
            do {
                identity = TLSIdentity(certificateChainPEM: try String(contentsOfFile: certificate, encoding: .utf8),
                                       privateKeyPEM: try String(contentsOfFile: key, encoding: .utf8))
            } catch {
                throw NodeError(.configuration, "CLARION_TLS_CERT / CLARION_TLS_KEY: cannot read: \(error.localizedDescription)")
            }
            do { try identity.validate() } catch {
                throw NodeError(.configuration, "CLARION_TLS_CERT / CLARION_TLS_KEY: \(error.reason)")
            }
            return identity
        default:
            throw NodeError(.configuration, "CLARION_TLS_CERT and CLARION_TLS_KEY go together: set both to serve HTTPS, or neither")
        }
    }

    /// `/metrics` on its own listener when `CLARION_METRICS_LISTEN` is set (then the API listener has no such route).
    func startMetricsListener() throws(NodeError) {
        guard let metrics, let address = configuration.metricsListen else { return }
        var router = Router.api()
        router.add(.get, "/metrics", errorFormat: .json, metrics.route())
        let server = HTTPServer(configuration: HTTPServerConfiguration(host: address.host, port: address.port, threadPoolSize: 1,
                                                                       connectionLimit: 64),
                                router: router)
        do { try server.start() } catch {
            throw NodeError(.unavailable, "metrics listener on \(address.host):\(address.port): \(error.message)")
        }
        metricsServer = server
        log.info("metrics listening", ["address": "\(address.host):\(server.port)", "path": "/metrics"])
    }

    /// The fan-out dispatcher: shard workers over provider clients that share pools, JWT signers and
    /// OAuth token sources between applications with the same credentials.
    func startDispatcher() throws(NodeError) {
        guard let pool, let masterKey else { throw NodeError(.internalError, "database not started") }
        let caPEM: String?
        do { caPEM = try ProviderApplication.serverTrustedCAPEM(environment: providerEnvironment) } catch {
            throw NodeError(.configuration, "CLARION_PROVIDER_CA_FILE: \(error)")
        }
        let registry: ProviderRegistry
        let providerLog = Log("clarion.providers")
        var options = ProviderOptions()
        options.addressPolicy = providerAddressPolicy
        options.metrics = metrics?.providers
        options.maxProviderConnections = configuration.providerMaxConnections
        options.idleClientRelease = configuration.providerIdleRelease > 0 ? .seconds(configuration.providerIdleRelease) : nil
        do {
            registry = try ProviderRegistry(options: options, log: providerLog)
        } catch {
            throw NodeError(.internalError, "provider registry: \(error)")
        }
        registry.startIdleSweep()
        providers = registry
        let applications = PlatformApplicationRepository(pool: pool, masterKey: masterKey)
        var directory = ProviderRegistryDirectory(
            registry: registry,
            credentials: { key in try await applications.credentials(applicationKey: key) },
            serverTrustedCAPEM: caPEM)
        if configuration.devMode, let emulatorURL = emulator?.baseURL {
            directory.endpointDefaults = { platform in Self.emulatorEndpoints(emulatorURL, platform: platform) }
        }
        providerDirectory = directory
        // Delivery ids (campaign pushes, open beacons) carry an HMAC under a secret derived from the master key,
        // so every node signs and verifies alike without another setting.
        // The dispatcher's warnings (applications and endpoints disabled, messages given up) and store errors go
        // to the node's structured log; without this they went nowhere.
        let dispatchLog = Log("clarion.dispatch")
        var dispatcherConfiguration = DispatcherConfiguration(
            staleAfter: TimeInterval(configuration.staleAfterDays) * 86_400,
            deliveryIDs: DeliveryIDSecret.codec(masterKey: masterKey),
            log: dispatchLog)
        dispatcherConfiguration.metrics = metrics?.deliveries
        let workPool = PGPool(conninfo: databaseURL, size: Self.dispatcherPoolSize(dispatcherConfiguration),
                              applicationName: "clarion-dispatch", health: databaseHealth)
        dispatcherPool = workPool
        let dispatcher = Dispatcher(pool: workPool, directory: directory, configuration: dispatcherConfiguration,
                                    listenConninfo: databaseURL)
        self.dispatcher = dispatcher
        let done = DispatchSemaphore(value: 0)
        dispatcherDone = done
        Task.detached {
            await dispatcher.run()
            done.signal()
        }
        log.info("dispatcher running")
    }

    /// Processes registration requests durably and sends their webhooks from the outbox, off the request path.
    /// Dry-run validation uses the dispatcher's provider clients when this node dispatches.
    func startRegistrationProcessor(pool: PGPool, masterKey: AESGCMKey) {
        let validator: (any DryRunValidator)? = providerDirectory.map {
            TransportDryRunValidator(directory: $0, jobs: FanOutJobs(pool: pool))
        }
        let processor = RegistrationProcessor(
            pool: pool, masterKey: masterKey, validator: validator,
            configuration: RegistrationProcessorConfiguration(
                leaseSeconds: Double(configuration.registrationLease), webhookTimeout: 5,
                outboundPolicy: OutboundAddressPolicy(allowPrivateNetworks: configuration.webhookAllowPrivate)))
        registrationProcessor = processor
        let done = DispatchSemaphore(value: 0)
        registrationDone = done
        Task.detached {
            await processor.run()
            done.signal()
        }
    }

    /// The key and certificate that sign HTTP/S subscription deliveries: made once, sealed under the master key,
    /// shared by every node (`SigningKeyRepository`).
    func messageSigningIdentity(pool: PGPool, masterKey: AESGCMKey) throws(NodeError) -> MessageSigningIdentity {
        do {
            return try SigningKeyRepository(pool: pool, masterKey: masterKey).loadOrCreate {
                let made = try SelfSignedCertificate.generateMessageSigning(commonName: "Clarion SNS message signing")
                return MessageSigningIdentity(privateKeyPEM: made.privateKeyPEM, certificatePEM: made.certificatePEM)
            }
        } catch {
            throw NodeError(error.isTransient ? .unavailable : .internalError, "message signing key: \(error)")
        }
    }

    /// Sends HTTP/S subscription deliveries from their durable queue, through the subscription outbound policy.
    func startSubscriptionSender(pool: PGPool, signing: MessageSigningIdentity, scheme: String, port: Int) throws(NodeError) {
        let caPEM: String?
        do { caPEM = try ProviderApplication.serverTrustedCAPEM(environment: providerEnvironment) } catch {
            throw NodeError(.configuration, "CLARION_PROVIDER_CA_FILE: \(error)")
        }
        let host = configuration.listenHost == "0.0.0.0" || configuration.listenHost == "::" ? "127.0.0.1" : configuration.listenHost
        let bracketed = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        let policy = (try? OutboundAddressPolicy(allowList: configuration.subscriptionAllowHosts)) ?? OutboundAddressPolicy()
        let senderConfiguration = HTTPSubscriptionSenderConfiguration(
            workers: configuration.subscriptionWorkers, outboundPolicy: policy, extraTrustedCAPEM: caPEM,
            publicBaseURL: configuration.publicURL ?? "\(scheme)://\(bracketed):\(port)", region: configuration.region)
        let sender: HTTPSubscriptionSender
        do { sender = try HTTPSubscriptionSender(pool: pool, signingKeyPEM: signing.privateKeyPEM, configuration: senderConfiguration) } catch {
            throw NodeError(.internalError, "message signing key: \(error)")
        }
        subscriptionSender = sender
        let done = DispatchSemaphore(value: 0)
        subscriptionSenderDone = done
        Task.detached {
            await sender.run()
            done.signal()
        }
        log.info("http subscription sender running", ["workers": String(senderConfiguration.workers),
                                                      "public_url": senderConfiguration.publicBaseURL,
                                                      "allow_hosts": configuration.subscriptionAllowHosts])
    }

    /// The environment the provider layer reads server-wide settings from (the configured CA file).
    var providerEnvironment: [String: String] {
        var environment: [String: String] = [:]
        if let file = configuration.providerCAFile { environment["CLARION_PROVIDER_CA_FILE"] = file }
        return environment
    }

    /// The provider emulator with freshly generated demo credentials written under `<data dir>/demo`.
    func startEmulator() throws(NodeError) {
        let (host, port) = (try? parseHostPort(configuration.emulatorListen, key: "")) ?? ("127.0.0.1", 0)
        let directory = URL(fileURLWithPath: configuration.dataDirectory).appendingPathComponent("demo").path
        do {
            var base = EmulatorConfiguration()
            base.host = host
            base.port = port
            // Keep the last 100k records in memory (GET /_emulator/records) so a first try can see what arrived.
            base.recordInMemory = true
            // The demo credentials point FCM's token_uri at the emulator, so its port must be known
            // first: bind, then write credentials naming the bound port.
            let probe = port == 0 ? EmbeddedPostgres.freePort() : port
            base.port = probe
            let demo = try EmulatorDemoCredentials.generate(tokenURI: "http://\(host):\(probe)/token")
            let configuration = demo.configuration(base: base)
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            _ = try demo.write(to: directory, base: base)
            emulator = try runEmulator(configuration: configuration)
            log.info("provider emulator running (h2c)", ["url": "http://\(host):\(probe)", "credentials": directory])
        } catch {
            throw NodeError(.unavailable, "provider emulator: \(error)")
        }
    }

    /// Stops accepting requests, finishes in-flight ones, then stops the emulator, the pool and the
    /// embedded cluster.
    public func stop() {
        if let server {
            let done = DispatchSemaphore(value: 0)
            Task.detached { await server.shutdown(); done.signal() }
            done.wait()
            self.server = nil
        }
        if let metricsServer {
            let done = DispatchSemaphore(value: 0)
            Task.detached { await metricsServer.shutdown(); done.signal() }
            done.wait()
            self.metricsServer = nil
        }
        if let subscriptionSender {
            subscriptionSender.shutdown()
            subscriptionSenderDone?.wait()
            self.subscriptionSender = nil
        }
        if let registrationProcessor {
            registrationProcessor.shutdown()
            registrationDone?.wait()
            self.registrationProcessor = nil
        }
        batcher?.shutdown()
        batcher = nil
        if let dispatcher {
            // Stop claiming, finish or hand back in-flight shards (leases released), then go on.
            dispatcher.shutdown()
            dispatcherDone?.wait()
            self.dispatcher = nil
        }
        dispatcherPool?.shutdown()
        dispatcherPool = nil
        if let providers {
            let done = DispatchSemaphore(value: 0)
            Task.detached { await providers.shutdown(); done.signal() }
            done.wait()
            self.providers = nil
        }
        emulator?.shutdownAndWait()
        emulator = nil
        pool?.shutdown()
        pool = nil
        if let embedded {
            if embedded.isOwner {
                embedded.stop()
                log.info("embedded PostgreSQL stopped")
            }
            self.embedded = nil
        }
    }

    /// SIGINT and SIGTERM, caught from the moment this is made. Make it before the node starts: a node answers
    /// `/ready` before `start()` returns, and a signal sent as soon as it did (a supervisor, a test) would otherwise
    /// meet the default action (the process killed, nothing stopped cleanly) or, once the default was ignored, a
    /// signal source not yet made (the signal lost: a node that never stops). Making the sources also needs file
    /// descriptors, which a node at its open-file limit may no longer have.
    public final class TerminationSignals {
        private final class Received: Sendable {
            let number = Atomic<Int32>(0)
            let done = DispatchSemaphore(value: 0)
        }

        private let received = Received()
        private let sources: [any DispatchSourceSignal]

        public init() {
            signal(SIGINT, SIG_IGN)
            signal(SIGTERM, SIG_IGN)
            let queue = DispatchQueue(label: "clarion.signals")
            let received = self.received
            sources = [SIGINT, SIGTERM].map { number -> any DispatchSourceSignal in
                let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
                source.setEventHandler {
                    received.number.store(number, ordering: .relaxed)
                    received.done.signal()
                }
                source.resume()
                return source
            }
        }

        /// Blocks until SIGINT or SIGTERM arrived (at once if one came already); returns its number.
        public func wait() -> Int32 {
            received.done.wait()
            sources.forEach { $0.cancel() }
            return received.number.load(ordering: .relaxed)
        }
    }
}
