import Foundation

/// Everything the emulator needs: where to listen, which credentials and apps it knows, the token
/// patterns that decide outcomes, the faults to inject and where to record.
///
/// Codable as JSON with camelCase keys; every member has a default, so a config file names only what
/// it changes (`{"port": 8443, "apns": {"keys": [...]}}`). Key material is public keys only, except
/// ADM client secrets, which the ADM token endpoint has to compare.
public struct EmulatorConfiguration: Codable, Sendable {
    /// Numeric address to bind.
    public var host: String = "127.0.0.1"
    /// 0 picks an ephemeral port (tests); read it from the handle.
    public var port: Int = 0
    public var tls: TLS = TLS()
    /// Event-loop threads serving connections.
    public var eventLoops: Int = 1
    public var apns: APNs = APNs()
    public var fcm: FCM = FCM()
    public var adm: ADM = ADM()
    public var hms: HMS = HMS()
    /// Token patterns that decide outcomes; see `EmulatorTokenRule.defaults` for the built-in ones.
    public var tokenRules: [EmulatorTokenRule] = EmulatorTokenRule.defaults
    public var faults: EmulatorFaults = EmulatorFaults()
    /// When set, every provider request (accepted or rejected) is appended to this file as a JSON line.
    public var recordPath: String?
    /// Keep records in memory for `ProviderEmulator.records()` and `GET /_emulator/records`.
    public var recordInMemory: Bool = false
    /// At most this many in-memory records are kept (later ones are counted, not stored): bounded memory.
    public var recordLimit: Int = 100_000

    public init() {}

    /// Reads a configuration file. Relative key/certificate paths inside it are resolved against the
    /// file's directory.
    public static func load(path: String) throws(EmulatorConfigurationError) -> EmulatorConfiguration {
        let url = URL(fileURLWithPath: path)
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw EmulatorConfigurationError("cannot read \(path): \(error.localizedDescription)")
        }
        var configuration: EmulatorConfiguration
        do {
            configuration = try JSONDecoder().decode(EmulatorConfiguration.self, from: data)
        } catch {
            throw EmulatorConfigurationError("\(path) is not a valid emulator configuration: \(error)")
        }
        configuration.resolvePaths(relativeTo: url.deletingLastPathComponent().path)
        return configuration
    }

    /// The JSON form (pretty, sorted keys), as `load(path:)` reads it.
    public func jsonData() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(self)
    }

    mutating func resolvePaths(relativeTo directory: String) {
        func resolve(_ path: String?) -> String? {
            guard let path, !path.hasPrefix("/") else { return path }
            return URL(fileURLWithPath: directory).appendingPathComponent(path).path
        }
        tls.certificatePath = resolve(tls.certificatePath)
        tls.privateKeyPath = resolve(tls.privateKeyPath)
        tls.writeCertificateTo = resolve(tls.writeCertificateTo)
        recordPath = resolve(recordPath)
        for index in apns.keys.indices { apns.keys[index].publicKeyPath = resolve(apns.keys[index].publicKeyPath) }
        apns.certificates.trustedCAPath = resolve(apns.certificates.trustedCAPath)
        apns.certificates.acceptedCertificatePaths = apns.certificates.acceptedCertificatePaths.compactMap { resolve($0) }
        for index in fcm.serviceAccounts.indices {
            fcm.serviceAccounts[index].publicKeyPath = resolve(fcm.serviceAccounts[index].publicKeyPath)
            fcm.serviceAccounts[index].serviceAccountPath = resolve(fcm.serviceAccounts[index].serviceAccountPath)
        }
    }

    // MARK: - TLS

    public struct TLS: Codable, Sendable {
        /// false serves h2c (HTTP/2 prior knowledge); true serves TLS with ALPN "h2".
        public var enabled: Bool = false
        /// PEM certificate (chain) and private key; when absent and TLS is on, a self-signed certificate
        /// is generated at start.
        public var certificatePath: String?
        public var privateKeyPath: String?
        /// Where to write the generated certificate (PEM) so clients can trust it.
        public var writeCertificateTo: String?
        /// Names the generated certificate is valid for.
        public var subjectAlternativeNames: [String] = ["localhost", "127.0.0.1"]

        public init() {}
    }

    // MARK: - APNs

    public struct APNs: Codable, Sendable {
        /// Which APNs host this emulator is: a key restricted to the other environment gets
        /// `403 BadEnvironmentKeyIdInToken` (A.5, A.6); sandbox responses carry `apns-unique-id` (A.6).
        public var environment: Environment = .production
        /// Provider-token signing keys (public halves) by key id.
        public var keys: [Key] = []
        /// Bundle ids each team may push to (A.5: a team-scoped key works for all topics of its team).
        public var teams: [Team] = []
        /// Certificate-based auth: the TLS client certificates that authenticate a connection (A.2). Takes
        /// `tls.enabled`: over h2c there is no certificate to look at, and a request without a provider token is
        /// `403 MissingProviderToken` whatever this says.
        public var certificates: Certificates = Certificates()
        /// Advertised until the connection presents a valid provider token (A.7: "only one stream").
        public var maxConcurrentStreamsBeforeToken: UInt32 = 1
        /// Advertised after it: undocumented by Apple; 500 and ~1,500 have been observed (A.7, G.1).
        public var maxConcurrentStreamsAfterToken: UInt32 = 1000
        /// Observed behaviour (A.7): the limit drops to 1 after a rejected notification and comes back
        /// with the next accepted one. Off by default because it makes benchmarks choppy.
        public var lowerLimitAfterRejection: Bool = false
        /// Device tokens are even-length hex within these bounds (A.8: 64 in practice; variable length).
        public var minimumTokenLength: Int = 64
        public var maximumTokenLength: Int = 400
        /// Require `apns-push-type` (watchOS 6+ does, A.2). Off: a missing header means the type the
        /// topic suffix implies (`alert` for a bare bundle id).
        public var requirePushType: Bool = false
        /// Tokens answered `410 Unregistered` with this `timestamp` in ms (0 means "now").
        public var unregisteredTokens: [String: Int64] = [:]
        /// Provider-token age limit in seconds (A.5: more than an hour old is `ExpiredProviderToken`).
        public var tokenMaximumAgeSeconds: Int64 = 3600
        /// A new provider token on a connection whose current token was issued less than this many
        /// seconds earlier is `429 TooManyProviderTokenUpdates` (A.5: not more than once every 20 min).
        public var tokenMinimumRefreshSeconds: Int64 = 1200
        /// An `iat` further than this in the future is `InvalidProviderToken` (emulator choice: clocks
        /// differ a little; a token from the far future is a bug).
        public var tokenClockSkewSeconds: Int64 = 300

        public init() {}

        public enum Environment: String, Codable, Sendable {
            case production
            case sandbox
        }

        public struct Key: Codable, Sendable {
            /// The 10-character key id (`kid`).
            public var keyID: String
            /// The 10-character team id the key belongs to (the token's `iss`).
            public var teamID: String
            /// The key's public half, PEM (`PUBLIC KEY`), inline...
            public var publicKeyPEM: String?
            /// ...or in a file (a `.p8` private key file also works: its public half is used).
            public var publicKeyPath: String?
            /// A key restricted to one environment (team-scoped keys are, A.5); nil works in both.
            public var environment: Environment?
            /// Topic-specific key: the bundle ids it may push to. nil: a team-scoped key (all the
            /// team's bundle ids).
            public var bundleIDs: [String]?
            /// Key ids that may replace this one on a connection (A.5 "related" key); any other key id is
            /// `403 UnrelatedKeyIdInToken`.
            public var relatedKeyIDs: [String]?

            public init(keyID: String, teamID: String, publicKeyPEM: String? = nil, publicKeyPath: String? = nil,
                        environment: Environment? = nil, bundleIDs: [String]? = nil, relatedKeyIDs: [String]? = nil) {
                self.keyID = keyID
                self.teamID = teamID
                self.publicKeyPEM = publicKeyPEM
                self.publicKeyPath = publicKeyPath
                self.environment = environment
                self.bundleIDs = bundleIDs
                self.relatedKeyIDs = relatedKeyIDs
            }
        }

        public struct Team: Codable, Sendable {
            public var teamID: String
            public var bundleIDs: [String]

            public init(teamID: String, bundleIDs: [String]) {
                self.teamID = teamID
                self.bundleIDs = bundleIDs
            }
        }

        /// Which client certificates the emulator accepts in place of a provider token. A certificate may push
        /// to the bundle id in its subject UID (where Apple puts it), with the push types' topic suffixes.
        public struct Certificates: Codable, Sendable {
            /// CA certificate(s), PEM, inline: every client certificate they issued (and that is in date) is
            /// accepted...
            public var trustedCAPEM: String?
            /// ...or in a file (`clarion emulator --write-demo-credentials` writes `apns-client-ca.pem`).
            public var trustedCAPath: String?
            /// Single certificates accepted as they are (self-signed ones, say), PEM, inline...
            public var acceptedCertificatePEMs: [String] = []
            /// ...or in files.
            public var acceptedCertificatePaths: [String] = []

            public init(trustedCAPEM: String? = nil, trustedCAPath: String? = nil, acceptedCertificatePEMs: [String] = [],
                        acceptedCertificatePaths: [String] = []) {
                self.trustedCAPEM = trustedCAPEM
                self.trustedCAPath = trustedCAPath
                self.acceptedCertificatePEMs = acceptedCertificatePEMs
                self.acceptedCertificatePaths = acceptedCertificatePaths
            }

            /// No certificate is accepted: the TLS server does not ask for one.
            public var isEmpty: Bool {
                trustedCAPEM == nil && trustedCAPath == nil && acceptedCertificatePEMs.isEmpty && acceptedCertificatePaths.isEmpty
            }
        }
    }

    // MARK: - FCM

    public struct FCM: Codable, Sendable {
        public var serviceAccounts: [ServiceAccount] = []
        /// `expires_in` of issued access tokens (Google answers 3599).
        public var accessTokenLifetimeSeconds: Int64 = 3599
        /// Audiences accepted in the assertion besides `<scheme>://<this emulator's authority>/token`.
        public var acceptedAudiences: [String] = ["https://oauth2.googleapis.com/token"]
        /// Advertised on a connection once it sends an FCM request (B.6: 100 observed).
        public var maxConcurrentStreams: UInt32 = 100

        public init() {}

        public struct ServiceAccount: Codable, Sendable {
            public var clientEmail: String
            public var projectID: String
            /// The key id (`private_key_id`); when set, an assertion's `kid` header must match it.
            public var privateKeyID: String?
            /// The public key PEM (or a certificate), inline...
            public var publicKeyPEM: String?
            /// ...or in a file...
            public var publicKeyPath: String?
            /// ...or a Google service-account JSON file whose `private_key` gives the public key (and
            /// whose `client_email`/`project_id` must match the ones above).
            public var serviceAccountPath: String?

            public init(clientEmail: String, projectID: String, privateKeyID: String? = nil, publicKeyPEM: String? = nil,
                        publicKeyPath: String? = nil, serviceAccountPath: String? = nil) {
                self.clientEmail = clientEmail
                self.projectID = projectID
                self.privateKeyID = privateKeyID
                self.publicKeyPEM = publicKeyPEM
                self.publicKeyPath = publicKeyPath
                self.serviceAccountPath = serviceAccountPath
            }
        }
    }

    // MARK: - ADM

    public struct ADM: Codable, Sendable {
        public var clients: [Client] = []
        /// `expires_in` of issued access tokens (D.1: ~3600).
        public var accessTokenLifetimeSeconds: Int64 = 3600
        /// Registration ids whose `registrationID` in the 200 answer is a different, canonical one (D.3).
        public var canonicalRegistrationIDs: [String: String] = [:]
        /// Payload limit in bytes (D.2: 6 KB).
        public var maximumPayloadBytes: Int = 6144
        /// Largest accepted `expiresAfter` (D.2: 31 days per Braze; unconfirmed).
        public var maximumExpiresAfterSeconds: Int64 = 2_678_400
        /// Advertised on a connection once it sends an ADM request.
        public var maxConcurrentStreams: UInt32 = 100

        public init() {}

        public struct Client: Codable, Sendable {
            public var clientID: String
            public var clientSecret: String

            public init(clientID: String, clientSecret: String) {
                self.clientID = clientID
                self.clientSecret = clientSecret
            }
        }
    }
}

extension EmulatorConfiguration {
    // MARK: - Huawei Push Kit

    public struct HMS: Codable, Sendable {
        public var clients: [Client] = []
        /// `expires_in` of issued access tokens (E.1: one hour).
        public var accessTokenLifetimeSeconds: Int64 = 3600
        /// Body limit without the tokens (E.1: 4096 bytes).
        public var maximumPayloadBytes: Int = 4096
        /// Tokens per request (E.1: 1000).
        public var maximumTokens: Int = 1000
        /// Advertised on a connection once it sends an HMS request.
        public var maxConcurrentStreams: UInt32 = 100

        public init() {}

        public struct Client: Codable, Sendable {
            public var clientID: String
            public var clientSecret: String
            /// The app its tokens may send for; nil: the client id (as AppGallery Connect issues them).
            public var appID: String?

            public init(clientID: String, clientSecret: String, appID: String? = nil) {
                self.clientID = clientID
                self.clientSecret = clientSecret
                self.appID = appID
            }
        }

        enum CodingKeys: String, CodingKey {
            case clients, accessTokenLifetimeSeconds, maximumPayloadBytes, maximumTokens, maxConcurrentStreams
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            let d = Self()
            clients = try c.decode(.clients, default: d.clients)
            accessTokenLifetimeSeconds = try c.decode(.accessTokenLifetimeSeconds, default: d.accessTokenLifetimeSeconds)
            maximumPayloadBytes = try c.decode(.maximumPayloadBytes, default: d.maximumPayloadBytes)
            maximumTokens = try c.decode(.maximumTokens, default: d.maximumTokens)
            maxConcurrentStreams = try c.decode(.maxConcurrentStreams, default: d.maxConcurrentStreams)
        }
    }
}

/// A configuration that cannot be used (unreadable key, unknown outcome name...).
public struct EmulatorConfigurationError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { "emulator configuration: \(message)" }
}

// MARK: - Decoding with defaults

/// Decoding fills every absent member from the type's defaults, so config files stay short.
extension KeyedDecodingContainer {
    func decode<T: Decodable>(_ key: Key, default value: T) throws -> T {
        try decodeIfPresent(T.self, forKey: key) ?? value
    }
}

extension EmulatorConfiguration {
    enum CodingKeys: String, CodingKey {
        case host, port, tls, eventLoops, apns, fcm, adm, hms, tokenRules, faults, recordPath, recordInMemory, recordLimit
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = EmulatorConfiguration()
        host = try c.decode(.host, default: d.host)
        port = try c.decode(.port, default: d.port)
        tls = try c.decode(.tls, default: d.tls)
        eventLoops = try c.decode(.eventLoops, default: d.eventLoops)
        apns = try c.decode(.apns, default: d.apns)
        fcm = try c.decode(.fcm, default: d.fcm)
        adm = try c.decode(.adm, default: d.adm)
        hms = try c.decode(.hms, default: d.hms)
        tokenRules = try c.decode(.tokenRules, default: d.tokenRules)
        faults = try c.decode(.faults, default: d.faults)
        recordPath = try c.decodeIfPresent(String.self, forKey: .recordPath)
        recordInMemory = try c.decode(.recordInMemory, default: d.recordInMemory)
        recordLimit = try c.decode(.recordLimit, default: d.recordLimit)
    }
}

extension EmulatorConfiguration.TLS {
    enum CodingKeys: String, CodingKey {
        case enabled, certificatePath, privateKeyPath, writeCertificateTo, subjectAlternativeNames
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = Self()
        enabled = try c.decode(.enabled, default: d.enabled)
        certificatePath = try c.decodeIfPresent(String.self, forKey: .certificatePath)
        privateKeyPath = try c.decodeIfPresent(String.self, forKey: .privateKeyPath)
        writeCertificateTo = try c.decodeIfPresent(String.self, forKey: .writeCertificateTo)
        subjectAlternativeNames = try c.decode(.subjectAlternativeNames, default: d.subjectAlternativeNames)
    }
}

extension EmulatorConfiguration.APNs {
    enum CodingKeys: String, CodingKey {
        case environment, keys, teams, certificates, maxConcurrentStreamsBeforeToken, maxConcurrentStreamsAfterToken
        case lowerLimitAfterRejection, minimumTokenLength, maximumTokenLength, requirePushType, unregisteredTokens
        case tokenMaximumAgeSeconds, tokenMinimumRefreshSeconds, tokenClockSkewSeconds
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = Self()
        environment = try c.decode(.environment, default: d.environment)
        keys = try c.decode(.keys, default: d.keys)
        teams = try c.decode(.teams, default: d.teams)
        certificates = try c.decode(.certificates, default: d.certificates)
        maxConcurrentStreamsBeforeToken = try c.decode(.maxConcurrentStreamsBeforeToken, default: d.maxConcurrentStreamsBeforeToken)
        maxConcurrentStreamsAfterToken = try c.decode(.maxConcurrentStreamsAfterToken, default: d.maxConcurrentStreamsAfterToken)
        lowerLimitAfterRejection = try c.decode(.lowerLimitAfterRejection, default: d.lowerLimitAfterRejection)
        minimumTokenLength = try c.decode(.minimumTokenLength, default: d.minimumTokenLength)
        maximumTokenLength = try c.decode(.maximumTokenLength, default: d.maximumTokenLength)
        requirePushType = try c.decode(.requirePushType, default: d.requirePushType)
        unregisteredTokens = try c.decode(.unregisteredTokens, default: d.unregisteredTokens)
        tokenMaximumAgeSeconds = try c.decode(.tokenMaximumAgeSeconds, default: d.tokenMaximumAgeSeconds)
        tokenMinimumRefreshSeconds = try c.decode(.tokenMinimumRefreshSeconds, default: d.tokenMinimumRefreshSeconds)
        tokenClockSkewSeconds = try c.decode(.tokenClockSkewSeconds, default: d.tokenClockSkewSeconds)
    }
}

extension EmulatorConfiguration.FCM {
    enum CodingKeys: String, CodingKey {
        case serviceAccounts, accessTokenLifetimeSeconds, acceptedAudiences, maxConcurrentStreams
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = Self()
        serviceAccounts = try c.decode(.serviceAccounts, default: d.serviceAccounts)
        accessTokenLifetimeSeconds = try c.decode(.accessTokenLifetimeSeconds, default: d.accessTokenLifetimeSeconds)
        acceptedAudiences = try c.decode(.acceptedAudiences, default: d.acceptedAudiences)
        maxConcurrentStreams = try c.decode(.maxConcurrentStreams, default: d.maxConcurrentStreams)
    }
}

extension EmulatorConfiguration.ADM {
    enum CodingKeys: String, CodingKey {
        case clients, accessTokenLifetimeSeconds, canonicalRegistrationIDs, maximumPayloadBytes
        case maximumExpiresAfterSeconds, maxConcurrentStreams
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = Self()
        clients = try c.decode(.clients, default: d.clients)
        accessTokenLifetimeSeconds = try c.decode(.accessTokenLifetimeSeconds, default: d.accessTokenLifetimeSeconds)
        canonicalRegistrationIDs = try c.decode(.canonicalRegistrationIDs, default: d.canonicalRegistrationIDs)
        maximumPayloadBytes = try c.decode(.maximumPayloadBytes, default: d.maximumPayloadBytes)
        maximumExpiresAfterSeconds = try c.decode(.maximumExpiresAfterSeconds, default: d.maximumExpiresAfterSeconds)
        maxConcurrentStreams = try c.decode(.maxConcurrentStreams, default: d.maxConcurrentStreams)
    }
}

extension EmulatorConfiguration.APNs.Certificates {
    enum CodingKeys: String, CodingKey {
        case trustedCAPEM, trustedCAPath, acceptedCertificatePEMs, acceptedCertificatePaths
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = Self()
        trustedCAPEM = try c.decodeIfPresent(String.self, forKey: .trustedCAPEM)
        trustedCAPath = try c.decodeIfPresent(String.self, forKey: .trustedCAPath)
        acceptedCertificatePEMs = try c.decode(.acceptedCertificatePEMs, default: d.acceptedCertificatePEMs)
        acceptedCertificatePaths = try c.decode(.acceptedCertificatePaths, default: d.acceptedCertificatePaths)
    }
}
