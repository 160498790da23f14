import ClarionCore
import ClarionCrypto
import ClarionHTTP2
import ClarionTransport
import Foundation
import Synchronization
import Testing
@testable import ClarionEmulator
@testable import ClarionProviders

/// A settable wall clock shared by the provider layer and the emulator (the emulator may run ahead by an offset).
final class ManualClock: Sendable {
    private let value: Mutex<Date>
    init(_ start: Date = Date(timeIntervalSince1970: 1_800_000_000)) { value = Mutex(start) }
    var now: Date { value.withLock { $0 } }
    func advance(_ seconds: TimeInterval) { value.withLock { $0 = $0.addingTimeInterval(seconds) } }
    var date: @Sendable () -> Date { { self.now } }
    func unixSeconds(offset: TimeInterval = 0) -> @Sendable () -> Double { { self.now.timeIntervalSince1970 + offset } }
}

/// Credentials generated once per test process (RSA generation is the slow part).
enum Demo {
    static let credentials: EmulatorDemoCredentials = try! EmulatorDemoCredentials.generate()
    /// Credentials the emulator does not know (a refused exchange).
    static let stranger: EmulatorDemoCredentials = try! EmulatorDemoCredentials.generate(projectID: "stranger-project")
    static var apns: EmulatorDemoCredentials.APNs { credentials.apns }
}

/// A 64-hex-digit APNs token ending in `suffix` (the emulator's token rules match suffixes such as `dead0410`).
func apnsToken(_ suffix: String = "", seed: Int = 0) -> String {
    let base = String(repeating: "ab", count: 32)
    let head = String(format: "%08x", seed) + base.dropFirst(8)
    return String(head.prefix(64 - suffix.count)) + suffix
}

/// Collects batch-path outcomes.
final class CollectingSink: ProviderResultSink {
    private let results = Mutex<[ProviderDeliveryResult]>([])

    func receive(_ batch: [ProviderDeliveryResult]) {
        results.withLock { $0.append(contentsOf: batch) }
    }

    var all: [ProviderDeliveryResult] { results.withLock { $0 } }

    /// Waits (polling) until `count` outcomes arrived or 15 s passed.
    func wait(for count: Int) async throws -> [ProviderDeliveryResult] {
        for _ in 0..<1500 {
            let now = all
            if now.count >= count { return now }
            try await Task.sleep(for: .milliseconds(10))
        }
        return all
    }
}

/// Polls `condition` for up to 10 s.
func eventually(_ condition: () -> Bool) async throws -> Bool {
    for _ in 0..<1000 {
        if condition() { return true }
        try await Task.sleep(for: .milliseconds(10))
    }
    return condition()
}

/// The `authorization` values of APNs requests, per connection, as the emulator received them.
final class AuthorizationTap: Sendable {
    let entries = Mutex<[(connection: UInt64, authorization: String)]>([])
}

/// An emulator (h2c or TLS) with the demo credentials, a registry, and a shared manual clock.
///
/// The emulator's requests pass through a tap that keeps every `authorization` value APNs requests carried, so
/// a test can count the distinct provider tokens the emulator saw across connections.
final class Harness: Sendable {
    let clock: ManualClock
    let emulator: ProviderEmulator
    let server: HTTP2Server
    let serverLoops: EventLoopGroup
    let registry: ProviderRegistry
    let certificatePEM: String?
    let port: Int
    private let seenAPNsAuthorizations = AuthorizationTap()

    init(tls: Bool = false, emulatorAhead: TimeInterval = 0, options: ProviderOptions = Harness.options,
         adjust: (inout EmulatorConfiguration) -> Void = { _ in }) throws {
        let clock = ManualClock()
        self.clock = clock
        var configuration = Demo.credentials.configuration()
        configuration.recordInMemory = true
        configuration.tls.enabled = tls
        adjust(&configuration)
        emulator = try ProviderEmulator(configuration: configuration, clock: clock.unixSeconds(offset: emulatorAhead))
        let identity = try tlsIdentity(configuration.tls)
        certificatePEM = identity?.certificateChainPEM
        serverLoops = try EventLoopGroup(threadCount: 1)
        let inner = makeHandler(emulator)
        let seen = seenAPNsAuthorizations
        server = try HTTP2Server(
            configuration: HTTP2ServerConfiguration(host: "127.0.0.1", port: 0, tls: identity,
                                                    clientCertificates: emulator.clientCertificateRequest,
                                                    maxConcurrentStreams: emulator.initialMaxConcurrentStreams),
            group: serverLoops,
            handler: { request, context in
                if request.path.hasPrefix("/3/device/"), let authorization = request.header("authorization") {
                    seen.entries.withLock { $0.append((context.connectionID, authorization)) }
                }
                return inner(request, context)
            })
        port = try server.start()
        registry = try ProviderRegistry(options: options, clock: clock.date)
    }

    static let options = ProviderOptions(connectionsPerPool: 1, requestTimeout: .seconds(10), pingInterval: nil)

    var baseURL: String { "\(certificatePEM == nil ? "http" : "https")://127.0.0.1:\(port)" }
    var tokenURL: String { baseURL + "/token" }
    var stats: EmulatorStats { emulator.stats() }

    /// Distinct provider tokens and connections the emulator saw on APNs requests.
    var apnsAuthorizations: (tokens: Set<String>, connections: Set<UInt64>) {
        seenAPNsAuthorizations.entries.withLock { seen in (Set(seen.map(\.authorization)), Set(seen.map(\.connection))) }
    }

    // MARK: Attributes

    func apnsAttributes(trustCA: Bool = true) -> [String: String] {
        var attributes = [
            ProviderAttribute.platformCredential: Demo.apns.privateKeyPEM,
            ProviderAttribute.platformPrincipal: Demo.apns.keyID,
            ProviderAttribute.appleTeamID: Demo.apns.teamID,
            ProviderAttribute.appleBundleID: Demo.apns.bundleID,
            ProviderAttribute.providerEndpoint: baseURL,
        ]
        if trustCA, let certificatePEM { attributes[ProviderAttribute.providerCACertificate] = certificatePEM }
        return attributes
    }

    /// APNs certificate auth (C.7): the certificate in PlatformPrincipal, its key in PlatformCredential; the demo
    /// pair (issued by the CA the emulator trusts) unless another is given. No ApplePlatformBundleID unless given:
    /// the topic then comes from the certificate's UID.
    func apnsCertificateAttributes(_ identity: TLSIdentity? = nil, bundleID: String? = nil) -> [String: String] {
        var attributes = [
            ProviderAttribute.platformPrincipal: identity?.certificateChainPEM ?? Demo.credentials.apnsCertificate.certificatePEM,
            ProviderAttribute.platformCredential: identity?.privateKeyPEM ?? Demo.credentials.apnsCertificate.privateKeyPEM,
            ProviderAttribute.providerEndpoint: baseURL,
        ]
        if let bundleID { attributes[ProviderAttribute.appleBundleID] = bundleID }
        if let certificatePEM { attributes[ProviderAttribute.providerCACertificate] = certificatePEM }
        return attributes
    }

    /// The demo service account with its `token_uri` pointing at this emulator.
    func fcmAttributes(_ credentials: EmulatorDemoCredentials = Demo.credentials, trustCA: Bool = true) -> [String: String] {
        let json = credentials.fcm.serviceAccountJSON.replacingOccurrences(of: ProviderCredentials.googleTokenURI, with: tokenURL)
        var attributes = [
            ProviderAttribute.platformCredential: json,
            ProviderAttribute.providerEndpoint: baseURL,
        ]
        if trustCA, let certificatePEM { attributes[ProviderAttribute.providerCACertificate] = certificatePEM }
        return attributes
    }

    func admAttributes(secret: String = Demo.credentials.adm.clientSecret, trustCA: Bool = true) -> [String: String] {
        var attributes = [
            ProviderAttribute.platformPrincipal: Demo.credentials.adm.clientID,
            ProviderAttribute.platformCredential: secret,
            ProviderAttribute.providerEndpoint: baseURL,
            ProviderAttribute.providerAuthEndpoint: baseURL + "/auth/o2/token",
        ]
        if trustCA, let certificatePEM { attributes[ProviderAttribute.providerCACertificate] = certificatePEM }
        return attributes
    }

    func client(_ id: String, _ platform: Platform, _ attributes: [String: String]) throws -> ProviderClient {
        try registry.client(applicationID: id, platform: platform, attributes: attributes)
    }

    // MARK: Rendering (the core renders; these helpers only pick inputs)

    func render(_ payloads: [SNSMessageKey: JSONObject] = [:], text: String? = "hello", platform: Platform,
                attributes: MobilePushAttributes = MobilePushAttributes(),
                apnsBundleID: String? = Demo.apns.bundleID) -> RenderedPush {
        let result = PushRenderer.render(
            SNSMessage(defaultText: text, payloads: payloads), attributes: attributes, platform: platform,
            settings: RenderSettings(apnsBundleID: apnsBundleID), publishedAt: clock.now, now: clock.now)
        guard case .push(let push) = result else { fatalError("test message did not render: \(result)") }
        return push
    }

    func close() async {
        await registry.shutdown()
        await server.shutdown()
        let loops = serverLoops
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                loops.shutdown()
                done.resume()
            }
        }
    }
}

/// A JSON object from a literal.
func json(_ value: JSONValue) -> JSONObject {
    value.objectValue ?? JSONObject()
}
