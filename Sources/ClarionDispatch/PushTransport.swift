import ClarionCore
import ClarionStore
import Foundation

/// One delivery handed to a transport: the endpoint's token and the per-delivery values of the payload.
public struct PushDelivery: Sendable, Hashable {
    public var token: String
    /// Filled into the payload's delivery-id slot when the rendered body has one.
    public var deliveryID: String?
    /// When the endpoint's token was last set (an APNs 410 older than this does not disable the endpoint).
    public var tokenUpdatedAt: Date?
    /// Opaque to the transport; comes back with the outcome.
    public var tag: UInt64

    public init(token: String, deliveryID: String? = nil, tokenUpdatedAt: Date? = nil, tag: UInt64) {
        self.token = token
        self.deliveryID = deliveryID
        self.tokenUpdatedAt = tokenUpdatedAt
        self.tag = tag
    }
}

/// The outcome of one delivery, carrying its tag.
public struct PushResult: Sendable, Hashable {
    public var tag: UInt64
    public var outcome: DeliveryOutcome
    /// The provider's HTTP status when it answered; nil when no answer came (delivery logs and warnings show it).
    public var providerStatus: Int?

    public init(tag: UInt64, outcome: DeliveryOutcome, providerStatus: Int? = nil) {
        self.tag = tag
        self.outcome = outcome
        self.providerStatus = providerStatus
    }
}

/// Receives outcomes several at a time, on whatever thread the transport completes on (an event loop).
/// Implementations only append under a lock and wake the worker: short and non-blocking.
public protocol PushResultSink: AnyObject, Sendable {
    func receive(_ results: [PushResult])
}

/// What the dispatcher needs of a provider connection pool: a batch entry point with no Task or continuation
/// per push. `ClarionProviders.ProviderClient.submit` has this shape; an adapter is a few lines.
public protocol PushTransport: AnyObject, Sendable {
    /// Submits deliveries of one rendered push. Returns how many were admitted, a prefix of `deliveries`
    /// (fewer when the pool's queue is nearly full: the caller keeps the rest and slows down). Every admitted
    /// delivery's outcome reaches `sink` exactly once.
    func submit(_ push: RenderedPush, deliveries: [PushDelivery], sink: any PushResultSink) -> Int
    /// How many deliveries of `push` this transport puts to best use in one submit, when that is more than the
    /// dispatcher's `submitBatchSize`: Push Kit sends up to 1000 tokens of one body in one request, which a
    /// 128-delivery submit would cut into 128-token requests. Nil (the default): the dispatcher's size, which is
    /// what the HTTP/2 platforms (one request per delivery) want.
    func preferredSubmitSize(for push: RenderedPush) -> Int?
}

extension PushTransport {
    public func preferredSubmitSize(for push: RenderedPush) -> Int? { nil }
}

/// How the dispatcher finds the transport and render settings of a platform application. The app wiring
/// implements it with the provider registry (credentials opened with the master key, pools shared).
public protocol PushTransportDirectory: Sendable {
    func resolve(_ application: DispatchApplication) async -> TransportResolution
    /// The dispatcher disabled the application (credentials refused) and no worker of this process sends to it
    /// any more: release what served it.
    func applicationDisabled(_ application: Int64) async
}

extension PushTransportDirectory {
    public func applicationDisabled(_ application: Int64) async {}
}

public enum TransportResolution: Sendable {
    /// Send through this transport; render with these settings.
    case ready(any PushTransport, RenderSettings)
    /// Cannot send: every delivery of the application gets this outcome without a round trip
    /// (`credentialsInvalid` disables the application).
    case unavailable(DeliveryOutcome)
}
