import ClarionCore
import Foundation

/// Clarion's configuration: defaults, then a file, then the environment, then flags; each later source
/// overrides the earlier ones. The file has the environment's form (`KEY=value` lines, `#` comments),
/// so `deploy/clarion.env` serves as both a systemd EnvironmentFile and a `--config` file.
public struct Configuration: Sendable, Equatable {
    public enum Role: String, Sendable, CaseIterable {
        case all, api, dispatcher
        public var servesAPI: Bool { self != .dispatcher }
        public var dispatches: Bool { self != .api }
    }

    public var listenHost = "127.0.0.1"
    public var listenPort = 8080
    /// Nil: run the embedded PostgreSQL cluster under `dataDirectory`.
    public var databaseURL: String?
    public var dataDirectory = "./var"
    public var masterKey: String?
    /// The node's own region: the native API's resources live there, and ARNs made before regions existed carry it.
    public var region = "us-east-1"
    /// The SNS regions served (CLARION_REGIONS); nil: any valid AWS region name a request's SigV4 scope names.
    public var regions: [String]?
    public var accountID = "123456789012"
    public var accessKeyID: String?
    public var secretAccessKey: String?
    public var role = Role.all
    public var databasePoolSize = 8
    public var providerCAFile: String?
    /// The API port's certificate chain (PEM, leaf first) and private key: both set serves HTTPS.
    public var tlsCertificateFile: String?
    public var tlsKeyFile: String?
    /// Loopback, private and reserved addresses provider endpoints may reach (host names and CIDRs); public
    /// addresses need nothing. `--with-emulator` adds 127.0.0.0/8 and ::1/128 for its own emulator.
    public var providerAllowHosts = ""
    /// Provider connections (APNs, FCM, ADM, HMS, Web Push) open at once over every application's pools.
    public var providerMaxConnections = 512
    /// Seconds an application may go without a request before its provider client, pools and tokens are released
    /// (rebuilt on its next request); 0 keeps them.
    public var providerIdleRelease = 900
    public var apiThreads = 4
    /// Simultaneous API connections at most; the node lowers it to fit the open-file limit (`FileDescriptorBudget`).
    public var maxConnections = 4096
    /// Seconds a request head may take from its first byte (then 408).
    public var headTimeout = 20
    /// Seconds a request body may take from the end of its head, plus its size at `bodyMinimumRate` (then 408).
    public var bodyTimeout = 30
    /// Bytes per second a body is granted beyond `bodyTimeout`; 0 grants nothing for size.
    public var bodyMinimumRate = 16 * 1024
    /// Publish batcher writers, each with its own PostgreSQL session (group commit).
    public var publishWriters = 2
    /// Start the provider emulator in-process (a first try without real provider credentials).
    public var withEmulator = false
    public var emulatorListen = "127.0.0.1:0"
    /// Endpoints whose token was not refreshed for this many days are stale: skipped in fan-out and counted.
    public var staleAfterDays = 270
    /// Loopback, private and reserved addresses HTTP/S subscription URLs may reach (host names and CIDRs); public
    /// addresses need nothing.
    public var subscriptionAllowHosts = ""
    /// Threads sending HTTP/S subscription deliveries: the bound on concurrent outbound POSTs.
    public var subscriptionWorkers = 4
    /// The URL receivers reach this node's API at (SubscribeURL, UnsubscribeURL, SigningCertURL); nil: the
    /// listen address with the API's scheme.
    public var publicURL: String?
    /// Let registration webhooks reach loopback, link-local and private addresses (off by default: SSRF).
    public var webhookAllowPrivate = false
    /// Proxies and load balancers (CIDRs) whose `Forwarded` / `X-Forwarded-For` name the client address.
    public var trustedProxies = ""
    /// Open beacons that fail verification: a source's burst, then this many per second (burst 0: no limit).
    public var beaconLimitBurst = 20
    public var beaconLimitRate = 2
    /// Seconds a node holds the registrations (and webhooks) it claimed: after a node dies, another takes its claims
    /// over this long after they were made. Longer than any batch takes to process.
    public var registrationLease = 30
    /// `GET /metrics` and the counters behind it (on by default; off for a measurement without them).
    public var metricsEnabled = true
    /// Where `/metrics` is served instead of the API listener (host, port); nil serves it on the API listener.
    public var metricsListen: ListenAddress?
    /// `serve --dev`: a node for the test suites of applications that use Clarion, as people use LocalStack. Any
    /// SigV4 access key acts for `accountID` (the signature is parsed, not verified), `POST /_clarion/reset` empties
    /// every resource, the emulator runs beside the node and every platform application without its own
    /// `ProviderEndpoint` sends to it, and the API binds only to loopback unless `--listen` says otherwise.
    public var devMode = false
    /// Let `--dev` run on `--database-url` (a database others may share: reset empties it).
    public var devAllowSharedDatabase = false
    /// Set when `--dev` moved a non-loopback `CLARION_LISTEN` (from the environment or a file) to loopback: the host
    /// it replaced, for the node's warning.
    public var devReplacedListenHost: String?
    /// The lowest level the node's log writes.
    public var logLevel = Log.Level.info
    /// JSON lines or text lines; nil: text when standard error is a terminal, JSON otherwise.
    public var logFormat: Log.Format?

    public struct ListenAddress: Sendable, Equatable {
        public var host: String
        public var port: Int
    }

    public init() {}

    /// Every setting: its environment name, its flag, and whether its value is a secret.
    public struct Setting: Sendable {
        public let key: String
        public let flag: String
        public let secret: Bool
        public let help: String
        let apply: @Sendable (inout Configuration, String) throws(ConfigurationError) -> Void
        let read: @Sendable (Configuration) -> String?
    }

    public static let settings: [Setting] = [
        Setting(key: "CLARION_LISTEN", flag: "--listen", secret: false, help: "API listen address host:port (default 127.0.0.1:8080)",
                apply: { (c, v) throws(ConfigurationError) in (c.listenHost, c.listenPort) = try parseHostPort(v, key: "CLARION_LISTEN") },
                read: { "\($0.listenHost):\($0.listenPort)" }),
        Setting(key: "CLARION_DATABASE_URL", flag: "--database-url", secret: true,
                help: "PostgreSQL URL; unset = the embedded cluster under the data directory",
                apply: { c, v in c.databaseURL = v.isEmpty ? nil : v }, read: { $0.databaseURL }),
        Setting(key: "CLARION_DATA_DIR", flag: "--data-dir", secret: false, help: "data directory (default ./var)",
                apply: { (c, v) throws(ConfigurationError) in
                    guard !v.isEmpty else { throw ConfigurationError(key: "CLARION_DATA_DIR", message: "must not be empty") }
                    c.dataDirectory = v
                }, read: { $0.dataDirectory }),
        Setting(key: "CLARION_MASTER_KEY", flag: "--master-key", secret: true,
                help: "32-byte key (base64 or hex) sealing credentials at rest",
                apply: { c, v in c.masterKey = v.isEmpty ? nil : v }, read: { $0.masterKey }),
        Setting(key: "CLARION_REGION", flag: "--region", secret: false, help: "region in ARNs and SigV4 scope (default us-east-1)",
                apply: { (c, v) throws(ConfigurationError) in
                    guard AWSRegion.isValidName(v) else {
                        throw ConfigurationError(key: "CLARION_REGION", message: "'\(v)' is not a region name like us-east-1")
                    }
                    c.region = v
                }, read: { $0.region }),
        Setting(key: "CLARION_REGIONS", flag: "--regions", secret: false,
                help: "SNS regions served, comma-separated; must include CLARION_REGION (default: any AWS region name)",
                apply: { (c, v) throws(ConfigurationError) in
                    let names = v.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
                    guard !names.isEmpty else { c.regions = nil; return }
                    for name in names where !AWSRegion.isValidName(name) {
                        throw ConfigurationError(key: "CLARION_REGIONS", message: "'\(name)' is not a region name like us-east-1")
                    }
                    var seen = Set<String>()
                    c.regions = names.filter { seen.insert($0).inserted }
                }, read: { $0.regions?.joined(separator: ",") ?? "any" }),
        Setting(key: "CLARION_ACCOUNT_ID", flag: "--account-id", secret: false, help: "12-digit account id (default 123456789012)",
                apply: { (c, v) throws(ConfigurationError) in
                    guard v.count == 12, v.allSatisfy({ $0.isASCII && $0.isNumber }) else {
                        throw ConfigurationError(key: "CLARION_ACCOUNT_ID", message: "must be exactly 12 digits")
                    }
                    c.accountID = v
                }, read: { $0.accountID }),
        Setting(key: "CLARION_ACCESS_KEY_ID", flag: "--access-key-id", secret: false,
                help: "SigV4 access key id ensured at start (with CLARION_SECRET_ACCESS_KEY)",
                apply: { c, v in c.accessKeyID = v.isEmpty ? nil : v }, read: { $0.accessKeyID }),
        Setting(key: "CLARION_SECRET_ACCESS_KEY", flag: "--secret-access-key", secret: true,
                help: "SigV4 secret of CLARION_ACCESS_KEY_ID",
                apply: { c, v in c.secretAccessKey = v.isEmpty ? nil : v }, read: { $0.secretAccessKey }),
        Setting(key: "CLARION_ROLE", flag: "--role", secret: false, help: "all | api | dispatcher (default all)",
                apply: { (c, v) throws(ConfigurationError) in
                    guard let role = Role(rawValue: v) else {
                        throw ConfigurationError(key: "CLARION_ROLE", message: "must be one of all, api, dispatcher")
                    }
                    c.role = role
                }, read: { $0.role.rawValue }),
        Setting(key: "CLARION_DB_POOL_SIZE", flag: "--db-pool-size", secret: false, help: "PostgreSQL connections (default 8)",
                apply: { (c, v) throws(ConfigurationError) in c.databasePoolSize = try parseInt(v, key: "CLARION_DB_POOL_SIZE", range: 1...256) },
                read: { String($0.databasePoolSize) }),
        Setting(key: "CLARION_API_THREADS", flag: "--api-threads", secret: false, help: "HTTP server threads (default 4)",
                apply: { (c, v) throws(ConfigurationError) in c.apiThreads = try parseInt(v, key: "CLARION_API_THREADS", range: 1...64) },
                read: { String($0.apiThreads) }),
        Setting(key: "CLARION_MAX_CONNECTIONS", flag: "--max-connections", secret: false,
                help: "simultaneous API connections; lowered to fit the open-file limit (default 4096)",
                apply: { (c, v) throws(ConfigurationError) in c.maxConnections = try parseInt(v, key: "CLARION_MAX_CONNECTIONS", range: 1...1_000_000) },
                read: { String($0.maxConnections) }),
        Setting(key: "CLARION_HEAD_TIMEOUT", flag: "--head-timeout", secret: false,
                help: "seconds a request head may take from its first byte, then 408 and close (default 20)",
                apply: { (c, v) throws(ConfigurationError) in c.headTimeout = try parseInt(v, key: "CLARION_HEAD_TIMEOUT", range: 1...3600) },
                read: { String($0.headTimeout) }),
        Setting(key: "CLARION_BODY_TIMEOUT", flag: "--body-timeout", secret: false,
                help: "seconds a request body may take, plus its size at CLARION_BODY_MIN_RATE, then 408 and close (default 30)",
                apply: { (c, v) throws(ConfigurationError) in c.bodyTimeout = try parseInt(v, key: "CLARION_BODY_TIMEOUT", range: 1...3600) },
                read: { String($0.bodyTimeout) }),
        Setting(key: "CLARION_BODY_MIN_RATE", flag: "--body-min-rate", secret: false,
                help: "bytes per second a large body is granted beyond CLARION_BODY_TIMEOUT; 0 = none (default 16384)",
                apply: { (c, v) throws(ConfigurationError) in c.bodyMinimumRate = try parseInt(v, key: "CLARION_BODY_MIN_RATE", range: 0...1_073_741_824) },
                read: { String($0.bodyMinimumRate) }),
        Setting(key: "CLARION_PUBLISH_WRITERS", flag: "--publish-writers", secret: false,
                help: "group-commit writers for publishes, each with its own PostgreSQL session (default 2)",
                apply: { (c, v) throws(ConfigurationError) in c.publishWriters = try parseInt(v, key: "CLARION_PUBLISH_WRITERS", range: 1...16) },
                read: { String($0.publishWriters) }),
        Setting(key: "CLARION_PROVIDER_CA_FILE", flag: "--provider-ca-file", secret: false,
                help: "extra CA (PEM) trusted for every provider connection",
                apply: { c, v in c.providerCAFile = v.isEmpty ? nil : v }, read: { $0.providerCAFile }),
        Setting(key: "CLARION_TLS_CERT", flag: "--tls-cert", secret: false,
                help: "certificate chain (PEM, leaf first) to serve HTTPS on the API port; needs CLARION_TLS_KEY",
                apply: { c, v in c.tlsCertificateFile = v.isEmpty ? nil : v }, read: { $0.tlsCertificateFile }),
        Setting(key: "CLARION_TLS_KEY", flag: "--tls-key", secret: false,
                help: "private key file (PEM) of CLARION_TLS_CERT; the file is secret, its path is not",
                apply: { c, v in c.tlsKeyFile = v.isEmpty ? nil : v }, read: { $0.tlsKeyFile }),
        Setting(key: "CLARION_PROVIDER_ALLOW_HOSTS", flag: "--provider-allow-hosts", secret: false,
                help: "non-public hosts/CIDRs provider endpoints may reach, comma-separated (e.g. 127.0.0.0/8,::1/128)",
                apply: { (c, v) throws(ConfigurationError) in
                    do throws(OutboundPolicyError) { _ = try OutboundAddressPolicy(allowList: v) } catch {
                        throw ConfigurationError(key: "CLARION_PROVIDER_ALLOW_HOSTS", message: error.description)
                    }
                    c.providerAllowHosts = v
                }, read: { $0.providerAllowHosts }),
        Setting(key: "CLARION_PROVIDER_MAX_CONNECTIONS", flag: "--provider-max-connections", secret: false,
                help: "provider connections open at once over all applications; pools wait their turn beyond it (default 512)",
                apply: { (c, v) throws(ConfigurationError) in
                    c.providerMaxConnections = try parseInt(v, key: "CLARION_PROVIDER_MAX_CONNECTIONS", range: 1...100_000)
                }, read: { String($0.providerMaxConnections) }),
        Setting(key: "CLARION_PROVIDER_IDLE_RELEASE", flag: "--provider-idle-release", secret: false,
                help: "seconds without a request after which an application's provider pools and tokens are released; 0 = never (default 900)",
                apply: { (c, v) throws(ConfigurationError) in
                    c.providerIdleRelease = try parseInt(v, key: "CLARION_PROVIDER_IDLE_RELEASE", range: 0...604_800)
                }, read: { String($0.providerIdleRelease) }),
        Setting(key: "CLARION_SUBSCRIPTION_ALLOW_HOSTS", flag: "--subscription-allow-hosts", secret: false,
                help: "non-public hosts/CIDRs HTTP/S subscription URLs may reach, comma-separated (default none: SSRF guard)",
                apply: { (c, v) throws(ConfigurationError) in
                    do throws(OutboundPolicyError) { _ = try OutboundAddressPolicy(allowList: v) } catch {
                        throw ConfigurationError(key: "CLARION_SUBSCRIPTION_ALLOW_HOSTS", message: error.description)
                    }
                    c.subscriptionAllowHosts = v
                }, read: { $0.subscriptionAllowHosts }),
        Setting(key: "CLARION_SUBSCRIPTION_WORKERS", flag: "--subscription-workers", secret: false,
                help: "threads sending HTTP/S subscription deliveries, one POST each at a time (default 4)",
                apply: { (c, v) throws(ConfigurationError) in c.subscriptionWorkers = try parseInt(v, key: "CLARION_SUBSCRIPTION_WORKERS", range: 1...64) },
                read: { String($0.subscriptionWorkers) }),
        Setting(key: "CLARION_PUBLIC_URL", flag: "--public-url", secret: false,
                help: "base URL subscribers reach the API at, for SubscribeURL/UnsubscribeURL/SigningCertURL (default: the listen address)",
                apply: { (c, v) throws(ConfigurationError) in
                    guard v.isEmpty || v.hasPrefix("http://") || v.hasPrefix("https://") else {
                        throw ConfigurationError(key: "CLARION_PUBLIC_URL", message: "must start with http:// or https://")
                    }
                    c.publicURL = v.isEmpty ? nil : v
                }, read: { $0.publicURL }),
        Setting(key: "CLARION_TRUSTED_PROXIES", flag: "--trusted-proxies", secret: false,
                help: "proxies/load balancers (CIDRs, comma-separated) whose Forwarded / X-Forwarded-For name the client",
                apply: { (c, v) throws(ConfigurationError) in
                    let entries = v.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
                    guard entries.allSatisfy({ IPNetwork($0) != nil }) else {
                        throw ConfigurationError(key: "CLARION_TRUSTED_PROXIES", message: "'\(v)' is not a comma-separated list of IP addresses and CIDR networks")
                    }
                    c.trustedProxies = v
                }, read: { $0.trustedProxies }),
        Setting(key: "CLARION_BEACON_LIMIT_BURST", flag: "--beacon-limit-burst", secret: false,
                help: "open beacons failing verification a source may send at once (default 20; 0: no limit)",
                apply: { (c, v) throws(ConfigurationError) in c.beaconLimitBurst = try parseInt(v, key: "CLARION_BEACON_LIMIT_BURST", range: 0...1_000_000) },
                read: { String($0.beaconLimitBurst) }),
        Setting(key: "CLARION_BEACON_LIMIT_RATE", flag: "--beacon-limit-rate", secret: false,
                help: "open beacons failing verification per second and source after the burst (default 2)",
                apply: { (c, v) throws(ConfigurationError) in c.beaconLimitRate = try parseInt(v, key: "CLARION_BEACON_LIMIT_RATE", range: 0...1_000_000) },
                read: { String($0.beaconLimitRate) }),
        Setting(key: "CLARION_REGISTRATION_LEASE", flag: "--registration-lease", secret: false,
                help: "seconds a node holds the registrations it claimed; another node takes over a dead node's after it (default 30)",
                apply: { (c, v) throws(ConfigurationError) in c.registrationLease = try parseInt(v, key: "CLARION_REGISTRATION_LEASE", range: 5...3600) },
                read: { String($0.registrationLease) }),
        Setting(key: "CLARION_WITH_EMULATOR", flag: "--with-emulator", secret: false,
                help: "also run the provider emulator in-process (true/false)",
                apply: { (c, v) throws(ConfigurationError) in c.withEmulator = try parseBool(v, key: "CLARION_WITH_EMULATOR") },
                read: { String($0.withEmulator) }),
        Setting(key: "CLARION_STALE_AFTER_DAYS", flag: "--stale-after-days", secret: false,
                help: "days without a token refresh after which an endpoint is stale (default 270)",
                apply: { (c, v) throws(ConfigurationError) in c.staleAfterDays = try parseInt(v, key: "CLARION_STALE_AFTER_DAYS", range: 1...36_500) },
                read: { String($0.staleAfterDays) }),
        Setting(key: "CLARION_WEBHOOK_ALLOW_PRIVATE", flag: "--webhook-allow-private", secret: false,
                help: "let webhooks reach loopback/private addresses (true/false, default false: SSRF guard)",
                apply: { (c, v) throws(ConfigurationError) in c.webhookAllowPrivate = try parseBool(v, key: "CLARION_WEBHOOK_ALLOW_PRIVATE") },
                read: { String($0.webhookAllowPrivate) }),
        Setting(key: "CLARION_EMULATOR_LISTEN", flag: "--emulator-listen", secret: false,
                help: "emulator address with --with-emulator (default 127.0.0.1:0 = a free port)",
                apply: { (c, v) throws(ConfigurationError) in _ = try parseHostPort(v, key: "CLARION_EMULATOR_LISTEN"); c.emulatorListen = v },
                read: { $0.emulatorListen }),
        Setting(key: "CLARION_METRICS", flag: "--metrics", secret: false,
                help: "count deliveries and requests and serve GET /metrics (on/off, default on)",
                apply: { (c, v) throws(ConfigurationError) in
                    switch v.lowercased() {
                    case "on", "true", "1": c.metricsEnabled = true
                    case "off", "false", "0": c.metricsEnabled = false
                    default: throw ConfigurationError(key: "CLARION_METRICS", message: "must be on or off")
                    }
                }, read: { $0.metricsEnabled ? "on" : "off" }),
        Setting(key: "CLARION_METRICS_LISTEN", flag: "--metrics-listen", secret: false,
                help: "serve /metrics only on this host:port, not on the API listener (default: on the API listener)",
                apply: { (c, v) throws(ConfigurationError) in
                    if v.isEmpty {
                        c.metricsListen = nil
                    } else {
                        let (host, port) = try parseHostPort(v, key: "CLARION_METRICS_LISTEN")
                        c.metricsListen = ListenAddress(host: host, port: port)
                    }
                }, read: { $0.metricsListen.map { "\($0.host):\($0.port)" } }),
        Setting(key: "CLARION_DEV", flag: "--dev", secret: false,
                help: "development mode for test suites: any access key, POST /_clarion/reset, emulator, loopback only (true/false, default false)",
                apply: { (c, v) throws(ConfigurationError) in c.devMode = try parseBool(v, key: "CLARION_DEV") },
                read: { String($0.devMode) }),
        Setting(key: "CLARION_DEV_ALLOW_SHARED_DATABASE", flag: "--dev-allow-shared-database", secret: false,
                help: "let --dev use --database-url, which /_clarion/reset empties (true/false, default false)",
                apply: { (c, v) throws(ConfigurationError) in
                    c.devAllowSharedDatabase = try parseBool(v, key: "CLARION_DEV_ALLOW_SHARED_DATABASE")
                }, read: { String($0.devAllowSharedDatabase) }),
        Setting(key: "CLARION_LOG_LEVEL", flag: "--log-level", secret: false,
                help: "lowest level logged: debug, info, warning, error (default info)",
                apply: { (c, v) throws(ConfigurationError) in
                    guard let level = Log.Level(name: v) else {
                        throw ConfigurationError(key: "CLARION_LOG_LEVEL", message: "must be debug, info, warning or error")
                    }
                    c.logLevel = level
                }, read: { $0.logLevel.name }),
        Setting(key: "CLARION_LOG_FORMAT", flag: "--log-format", secret: false,
                help: "json or text lines (default: text when stderr is a terminal, json otherwise)",
                apply: { (c, v) throws(ConfigurationError) in
                    if v.isEmpty || v.lowercased() == "auto" {
                        c.logFormat = nil
                    } else if let format = Log.Format(rawValue: v.lowercased()) {
                        c.logFormat = format
                    } else {
                        throw ConfigurationError(key: "CLARION_LOG_FORMAT", message: "must be json or text")
                    }
                }, read: { $0.logFormat?.rawValue ?? "auto" }),
    ]

    /// Flags that are true when given without a value (`--dev`, not `--dev true`).
    static let switchFlags: Set<String> = ["--with-emulator", "--dev", "--dev-allow-shared-database"]

    /// Builds the configuration from a file (`--config` or `CLARION_CONFIG`), the environment and flags.
    /// Returns the arguments that were not configuration flags.
    public static func load(arguments: [String], environment: [String: String]) throws(ConfigurationError) -> (Configuration, [String]) {
        var configuration = Configuration()
        var rest: [String] = []
        var flagValues: [(Setting, String)] = []
        var configFile = environment["CLARION_CONFIG"]
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            var name = argument
            var inlineValue: String?
            if argument.hasPrefix("--"), let eq = argument.firstIndex(of: "=") {
                name = String(argument[..<eq])
                inlineValue = String(argument[argument.index(after: eq)...])
            }
            if name == "--config" {
                guard let value = inlineValue ?? (index + 1 < arguments.count ? arguments[index + 1] : nil) else {
                    throw ConfigurationError(key: "--config", message: "needs a file path")
                }
                configFile = value
                index += inlineValue == nil ? 2 : 1
                continue
            }
            if let setting = settings.first(where: { $0.flag == name }) {
                if switchFlags.contains(name), inlineValue == nil {
                    flagValues.append((setting, "true"))
                    index += 1
                    continue
                }
                guard let value = inlineValue ?? (index + 1 < arguments.count ? arguments[index + 1] : nil) else {
                    throw ConfigurationError(key: name, message: "needs a value")
                }
                flagValues.append((setting, value))
                index += inlineValue == nil ? 2 : 1
                continue
            }
            rest.append(argument)
            index += 1
        }
        if let configFile {
            let values = try parseFile(configFile)
            for setting in settings { if let v = values[setting.key] { try setting.apply(&configuration, v) } }
            for key in values.keys where !settings.contains(where: { $0.key == key }) {
                throw ConfigurationError(key: key, message: "unknown setting in \(configFile)")
            }
        }
        for setting in settings { if let v = environment[setting.key] { try setting.apply(&configuration, v) } }
        for (setting, value) in flagValues { try setting.apply(&configuration, value) }
        if (configuration.accessKeyID == nil) != (configuration.secretAccessKey == nil) {
            throw ConfigurationError(key: "CLARION_ACCESS_KEY_ID",
                                     message: "CLARION_ACCESS_KEY_ID and CLARION_SECRET_ACCESS_KEY go together")
        }
        if let id = configuration.accessKeyID, !(16...128).contains(id.count) {
            throw ConfigurationError(key: "CLARION_ACCESS_KEY_ID", message: "must be 16 to 128 characters")
        }
        if let regions = configuration.regions, !regions.contains(configuration.region) {
            throw ConfigurationError(key: "CLARION_REGIONS",
                                     message: "must include CLARION_REGION (\(configuration.region)), where the native API's resources live")
        }
        if configuration.devMode {
            try configuration.applyDevMode(listenFlagGiven: flagValues.contains { $0.0.flag == "--listen" })
        }
        return (configuration, rest)
    }

    /// The regions the SNS API serves.
    public var servedRegions: ServedRegions { regions.map { .listed(Set($0)) } ?? .any }

    /// What `--dev` implies and refuses. A database URL is refused unless `--dev-allow-shared-database`: reset
    /// empties every resource, and a URL may name a database other nodes or people use. Only the `--listen` flag moves
    /// the API off loopback: a `CLARION_LISTEN` from the environment or a file (a deployment's `clarion.env`) may say
    /// 0.0.0.0 for production and must not expose a node that takes any access key.
    mutating func applyDevMode(listenFlagGiven: Bool) throws(ConfigurationError) {
        if databaseURL != nil && !devAllowSharedDatabase {
            throw ConfigurationError(key: "CLARION_DEV",
                                     message: "--dev is refused with --database-url: POST /_clarion/reset empties every resource of that database; give --dev-allow-shared-database if it is yours alone")
        }
        withEmulator = true
        if !listenFlagGiven && !ClarionNode.isLoopback(listenHost) {
            devReplacedListenHost = listenHost
            listenHost = "127.0.0.1"
        }
    }

    /// `KEY=value` lines; blank lines and `#` comments ignored; optional surrounding quotes removed.
    static func parseFile(_ path: String) throws(ConfigurationError) -> [String: String] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw ConfigurationError(key: "--config", message: "cannot read \(path)")
        }
        var values: [String: String] = [:]
        for (number, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            guard let eq = line.firstIndex(of: "=") else {
                throw ConfigurationError(key: "--config", message: "\(path):\(number + 1): expected KEY=value")
            }
            let key = line[..<eq].trimmingCharacters(in: .whitespaces)
            var value = line[line.index(after: eq)...].trimmingCharacters(in: .whitespaces)
            if value.count >= 2, let first = value.first, first == "\"" || first == "'", value.last == first {
                value = String(value.dropFirst().dropLast())
            }
            values[key] = value
        }
        return values
    }

    /// The settings as a table for `--help`: environment name, flag, help. Each column is as wide as its longest
    /// entry, so no name is cut.
    public static func settingsTable(indent: String = "  ") -> String {
        let keyWidth = settings.map(\.key.count).max() ?? 0
        let flagWidth = settings.map(\.flag.count).max() ?? 0
        return settings.map { setting in
            indent + setting.key.padding(toLength: keyWidth, withPad: " ", startingAt: 0) + "  "
                + setting.flag.padding(toLength: flagWidth, withPad: " ", startingAt: 0) + "  " + setting.help
        }.joined(separator: "\n")
    }

    /// The effective configuration as `KEY=value` lines, secrets masked.
    public func printable() -> String {
        Self.settings.map { setting in
            let value = setting.read(self)
            let shown: String
            switch (value, setting.secret) {
            case (nil, _): shown = setting.key == "CLARION_DATABASE_URL" ? "(embedded PostgreSQL under \(dataDirectory))" : "(unset)"
            case (let v?, true): shown = Self.mask(v, key: setting.key)
            case (let v?, false): shown = v
            }
            return "\(setting.key)=\(shown)"
        }.joined(separator: "\n")
    }

    /// Masks a secret; a database URL keeps its host and database but loses its password.
    static func mask(_ value: String, key: String) -> String {
        if key == "CLARION_DATABASE_URL", var components = URLComponents(string: value), components.password != nil {
            components.password = "****"
            return components.string ?? "****"
        }
        if key == "CLARION_DATABASE_URL" { return value.contains("password") ? "****" : value }
        return "****"
    }
}

public struct ConfigurationError: Error, Sendable, CustomStringConvertible {
    public let key: String
    public let message: String
    public var description: String { "\(key): \(message)" }
}

func parseHostPort(_ value: String, key: String) throws(ConfigurationError) -> (String, Int) {
    guard let colon = value.lastIndex(of: ":"), let port = Int(value[value.index(after: colon)...]), (0...65535).contains(port) else {
        throw ConfigurationError(key: key, message: "'\(value)' is not host:port")
    }
    var host = String(value[..<colon])
    if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
    return (host.isEmpty ? "0.0.0.0" : host, port)
}

func parseInt(_ value: String, key: String, range: ClosedRange<Int>) throws(ConfigurationError) -> Int {
    guard let n = Int(value), range.contains(n) else {
        throw ConfigurationError(key: key, message: "'\(value)' is not a whole number in \(range.lowerBound)...\(range.upperBound)")
    }
    return n
}

func parseBool(_ value: String, key: String) throws(ConfigurationError) -> Bool {
    switch value.lowercased() {
    case "1", "true", "yes", "on": return true
    case "0", "false", "no", "off", "": return false
    default: throw ConfigurationError(key: key, message: "'\(value)' is not true or false")
    }
}
