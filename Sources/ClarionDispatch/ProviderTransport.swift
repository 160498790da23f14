import ClarionCore
import ClarionProviders
import ClarionStore
import Foundation
import Synchronization

/// `PushTransport` over a `ClarionProviders.ProviderClient` (the HTTP/2 pools of one platform application).
public final class ProviderClientTransport: PushTransport {
    public let client: ProviderClient

    public init(client: ProviderClient) {
        self.client = client
    }

    public func submit(_ push: RenderedPush, deliveries: [PushDelivery], sink: any PushResultSink) -> Int {
        let converted = deliveries.map {
            ProviderDelivery(token: $0.token, deliveryID: $0.deliveryID, tokenUpdatedAt: $0.tokenUpdatedAt, tag: $0.tag)
        }
        // The dispatcher's own inbox takes provider results as they are; any other sink gets them converted.
        let providerSink: any ProviderResultSink = (sink as? CompletionInbox) ?? ProviderSinkBridge(sink)
        return client.submit(push, deliveries: converted, sink: providerSink)
    }

    public func preferredSubmitSize(for push: RenderedPush) -> Int? {
        client.preferredSubmitSize(for: push)
    }
}

extension CompletionInbox: ProviderResultSink {
    func receive(_ results: [ProviderDeliveryResult]) {
        receive(results.map { PushResult(tag: $0.tag, outcome: $0.outcome, providerStatus: $0.providerStatus) })
    }
}

/// Converts provider results for a sink that is not the dispatcher's inbox.
final class ProviderSinkBridge: ProviderResultSink {
    let sink: any PushResultSink

    init(_ sink: any PushResultSink) {
        self.sink = sink
    }

    func receive(_ results: [ProviderDeliveryResult]) {
        sink.receive(results.map { PushResult(tag: $0.tag, outcome: $0.outcome, providerStatus: $0.providerStatus) })
    }
}

/// Resolves platform applications to provider clients from a `ProviderRegistry` (which shares pools, JWT signers
/// and OAuth token sources between applications with the same credentials).
///
/// The credentials are sealed in the database; `credentials` opens them (the app wiring passes
/// `PlatformApplicationRepository.credentials(applicationKey:)`). Attributes that cannot make a client (a
/// missing or unusable key, a refused CA) disable the application like a provider's credential refusal.
public struct ProviderRegistryDirectory: PushTransportDirectory {
    public let registry: ProviderRegistry
    public let credentials: @Sendable (Int64) async throws -> PlatformCredentials
    public let serverTrustedCAPEM: String?
    /// Payload key for delivery ids (`RenderSettings.deliveryIDKey`); nil puts none in payloads.
    public let deliveryIDKey: String?
    /// `serve --dev`: connection attributes (`ProviderEndpoint`, `ProviderAuthEndpoint`) for an application that
    /// names no `ProviderEndpoint` of its own, by platform: the node's emulator. Nil: the providers' own hosts.
    public var endpointDefaults: (@Sendable (Platform) -> [String: String])?

    public init(registry: ProviderRegistry, credentials: @escaping @Sendable (Int64) async throws -> PlatformCredentials,
                serverTrustedCAPEM: String? = nil, deliveryIDKey: String? = nil) {
        self.registry = registry
        self.credentials = credentials
        self.serverTrustedCAPEM = serverTrustedCAPEM
        self.deliveryIDKey = deliveryIDKey
    }

    public func applicationDisabled(_ application: Int64) async {
        resolved.remove(application)
        await registry.applicationDisabled(applicationID: String(application))
    }

    /// Transports already resolved, by application; see `ResolvedTransports`.
    private let resolved = ResolvedTransports()

    /// The application's transport: reused while its row (platform, attributes, enabled, sealed credentials) is the
    /// one it was made from, else its credentials are opened and its client looked up again.
    public func resolve(_ application: DispatchApplication) async -> TransportResolution {
        // Only while the registry still serves the application with the client the entry holds (a change made
        // through the API on this node builds a new client and releases what the old one used).
        if let cached = resolved.lookup(application),
           case .ready(let transport as ProviderClientTransport, _) = cached,
           registry.existingClient(applicationID: String(application.key)) === transport.client {
            return cached
        }
        let resolution = await resolveFromStore(application)
        if case .ready = resolution { resolved.remember(application, resolution) }
        return resolution
    }

    private func resolveFromStore(_ application: DispatchApplication) async -> TransportResolution {
        guard let platform = Platform(rawValue: application.platform) else {
            return .unavailable(.rejected(reason: "UnknownPlatform"))
        }
        let opened: PlatformCredentials
        do {
            opened = try await credentials(application.key)
        } catch {
            // A store problem is not the application's fault: retry later rather than disable it.
            return .unavailable(.retryable(reason: "CredentialsUnavailable", retryAfter: 5))
        }
        var attributes = application.attributes
        if let credential = opened.credential { attributes[ProviderAttribute.platformCredential] = credential }
        if let principal = opened.principal { attributes[ProviderAttribute.platformPrincipal] = principal }
        if let endpointDefaults, (attributes[ProviderAttribute.providerEndpoint] ?? "").trimmingCharacters(in: .whitespaces).isEmpty {
            for (name, value) in endpointDefaults(platform) where attributes[name] == nil { attributes[name] = value }
        }
        do {
            let client = try registry.client(applicationID: String(application.key), platform: platform,
                                             attributes: attributes, serverTrustedCAPEM: serverTrustedCAPEM)
            let ttl = application.attributes["DefaultTTL"].flatMap { Int($0) }
            return .ready(ProviderClientTransport(client: client),
                          RenderSettings(apnsBundleID: client.application.apnsBundleID, defaultTTL: ttl,
                                         deliveryIDKey: deliveryIDKey))
        } catch {
            return .unavailable(.credentialsInvalid(reason: error.description))
        }
    }
}

/// Ready transports by application, each with the application row it was resolved from. Every shard of a new
/// message asks for its applications' transports; opening the credentials (a query, AES-GCM, parsing the key or
/// service account) each time would be a large share of the gateway's work when direct publishes are delivered,
/// one shard per message. An entry is used only for the identical row: any change to the attributes, the enabled flag or
/// the sealed credentials (whose digest is part of the row) resolves again. Bounded; cleared when full.
final class ResolvedTransports: Sendable {
    private struct Entry {
        let application: DispatchApplication
        let resolution: TransportResolution
    }

    private let entries = Mutex<[Int64: Entry]>([:])
    static let limit = 10_000

    func lookup(_ application: DispatchApplication) -> TransportResolution? {
        entries.withLock { entries in
            guard let entry = entries[application.key], entry.application == application else { return nil }
            return entry.resolution
        }
    }

    func remember(_ application: DispatchApplication, _ resolution: TransportResolution) {
        entries.withLock { entries in
            if entries.count >= Self.limit, entries[application.key] == nil { entries.removeAll(keepingCapacity: true) }
            entries[application.key] = Entry(application: application, resolution: resolution)
        }
    }

    func remove(_ application: Int64) {
        _ = entries.withLock { $0.removeValue(forKey: application) }
    }
}

