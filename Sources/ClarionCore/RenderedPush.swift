import Foundation

/// Application settings the renderer needs (from the platform application's attributes).
public struct RenderSettings: Sendable, Hashable {
    /// Base of `apns-topic`: `ApplePlatformBundleID` for token auth, the certificate's topic for certificate
    /// auth, the MDM UID for `mdm`. Nil leaves the topic to the provider layer unless the TOPIC attribute is set.
    public var apnsBundleID: String?
    /// The application's default TTL in seconds, below the attribute and the payload in precedence (C.5).
    public var defaultTTL: Int?
    /// When set, every payload carries the delivery id under this key: APNs beside `aps`, FCM and ADM in `data`.
    /// The id is a template slot filled per delivery (see `PayloadTemplate`).
    public var deliveryIDKey: String?

    public init(apnsBundleID: String? = nil, defaultTTL: Int? = nil, deliveryIDKey: String? = nil) {
        self.apnsBundleID = apnsBundleID
        self.defaultTTL = defaultTTL
        self.deliveryIDKey = deliveryIDKey
    }
}

/// The APNs request headers that a rendered push fixes (`:path` and `authorization` are per delivery/connection).
public struct APNsRequestHeaders: Sendable, Hashable {
    public var pushType: APNsPushType
    /// `apns-topic`; nil when neither the TOPIC attribute nor a bundle id is known.
    public var topic: String?
    public var priority: APNsPriority
    /// `apns-expiration` in UNIX seconds; 0 is "deliver once or drop"; nil omits the header.
    public var expiration: Int?
    public var collapseID: String?

    public init(
        pushType: APNsPushType, topic: String?, priority: APNsPriority, expiration: Int?, collapseID: String?
    ) {
        self.pushType = pushType
        self.topic = topic
        self.priority = priority
        self.expiration = expiration
        self.collapseID = collapseID
    }

    /// The header fields in a stable order, values as sent.
    public var fields: [(name: String, value: String)] {
        var out: [(name: String, value: String)] = [("apns-push-type", pushType.rawValue)]
        if let topic { out.append(("apns-topic", topic)) }
        out.append(("apns-priority", String(priority.rawValue)))
        if let expiration { out.append(("apns-expiration", String(expiration))) }
        if let collapseID { out.append(("apns-collapse-id", collapseID)) }
        return out
    }
}

/// One message rendered for one platform: everything the provider request needs except the per-delivery
/// values (the device token, and the delivery id when payloads carry it).
public struct RenderedPush: Sendable, Hashable {
    /// Provider-specific request parts that are not in the body.
    public enum Request: Sendable, Hashable {
        /// The token goes in `:path` (`/3/device/<token>`); the body has no token slot.
        case apns(APNsRequestHeaders)
        /// The body is `{"message":{...,"token":"<token>"}}` (with `"validate_only":true` for dry runs).
        case fcm
        /// The token goes in the path (`/messaging/registrations/<token>/messages`); the body has no token slot.
        case adm
        /// Web Push: the subscription's URL is the path, the body is encrypted per subscription at send time.
        case webPush(WebPushRequestHeaders)
        /// Huawei Push Kit v1: `{"message":{...,"token":["<token>"]}}` to `/v1/<appId>/messages:send` (E.1).
        case hms
    }

    public let platform: Platform
    public let request: Request
    public let body: PayloadTemplate
    /// Publish time + TTL: retries stop here (`RetryPolicy`). For a TTL of 0 it is the publish time itself.
    public let expiresAt: Date

    public init(platform: Platform, request: Request, body: PayloadTemplate, expiresAt: Date) {
        self.platform = platform
        self.request = request
        self.body = body
        self.expiresAt = expiresAt
    }

    /// The request body for one delivery; no JSON is encoded here, only bytes copied.
    public func body(token: String, deliveryID: String? = nil) -> [UInt8] {
        body.fill(token: token, deliveryID: deliveryID ?? "")
    }
}

/// What rendering a message for a platform gives.
public enum RenderResult: Sendable, Hashable {
    /// Ready to send to every endpoint of the platform.
    case push(RenderedPush)
    /// The TTL ran out before hand-off: not sent, counted as expired (C.5).
    case expired
    /// The message cannot be sent to this platform (too large, bad collapse id, malformed payload, ...):
    /// each delivery fails with this reason and no provider round trip; endpoints are untouched.
    case invalid(reason: String)

    /// The outcome to record for each delivery when nothing is sent; nil for `.push`.
    public var outcome: DeliveryOutcome? {
        switch self {
        case .push: nil
        case .expired: .expired
        case .invalid(let reason): .messageInvalid(reason: reason)
        }
    }

    public var push: RenderedPush? {
        if case .push(let p) = self { return p }
        return nil
    }
}
