import Foundation

/// How one delivery ended, as a value: a provider rejection is never an exception, because it is an ordinary
/// answer that the dispatcher acts on per endpoint, and a batch of outcomes must travel as data.
///
/// Each case says what the dispatcher does with the endpoint, the application and the delivery; see
/// `endpointAction`, `disablesApplication` and `isRetryable`.
public enum DeliveryOutcome: Sendable, Hashable {
    /// The provider took the push. `providerID`: APNs `apns-id`, FCM message `name`, ADM `X-Amzn-RequestId`.
    case accepted(providerID: String?)
    /// The device token is dead: disable the endpoint with this reason and time, never retry.
    /// `invalidSince` is the provider's own time when it gives one (APNs 410 `timestamp`).
    case tokenInvalid(reason: String, invalidSince: Date?)
    /// The push was delivered and the provider names a new token for the device (ADM canonical
    /// registration id): store `newToken` on the endpoint.
    case tokenReplaced(newToken: String, providerID: String?)
    /// The message cannot be delivered as it is (too large, bad collapse id, bad TTL, bad push type, ...):
    /// the delivery fails, the endpoint is untouched, no retry.
    case messageInvalid(reason: String)
    /// The provider refused this delivery for good, but neither the token nor the credentials are shown to
    /// be bad (APNs `Forbidden`, a 410 older than the endpoint's last token update, a bug such as
    /// `BadPath`): the delivery fails, nothing else changes, no retry.
    case rejected(reason: String)
    /// Clarion's credentials for the application are refused (InvalidProviderToken, BadCertificate,
    /// THIRD_PARTY_AUTH_ERROR, a refused token exchange): disable the platform application with the reason,
    /// stop its sends. The delivery is not retried.
    case credentialsInvalid(reason: String)
    /// The provider auth token is stale (APNs ExpiredProviderToken, FCM UNAUTHENTICATED, ADM
    /// AccessTokenExpired): mint or fetch a new token (APNs: and a new connection), then retry.
    case authTokenExpired(reason: String)
    /// A transient failure: retry later, not before `retryAfter` seconds when the provider says so.
    case retryable(reason: String, retryAfter: TimeInterval?)
    /// Not sent: the TTL ran out before hand-off or before a retry was due.
    case expired

    /// What to do to the endpoint.
    public enum EndpointAction: Sendable, Hashable {
        case none
        case disable(reason: String, at: Date?)
        case replaceToken(String)
    }

    public var endpointAction: EndpointAction {
        switch self {
        case .tokenInvalid(let reason, let at): .disable(reason: reason, at: at)
        case .tokenReplaced(let token, _): .replaceToken(token)
        default: .none
        }
    }

    /// True when the platform application must be disabled.
    public var disablesApplication: Bool {
        if case .credentialsInvalid = self { return true }
        return false
    }

    /// True for outcomes that may succeed if sent again (subject to `RetryPolicy`).
    public var isRetryable: Bool {
        switch self {
        case .retryable, .authTokenExpired: true
        default: false
        }
    }

    /// True when the device got (or will get) the push.
    public var isDelivered: Bool {
        switch self {
        case .accepted, .tokenReplaced: true
        default: false
        }
    }

    /// A bounded label for metrics and delivery logs (never a token or an id).
    public var label: String {
        switch self {
        case .accepted: "accepted"
        case .tokenInvalid: "token_invalid"
        case .tokenReplaced: "token_replaced"
        case .messageInvalid: "message_invalid"
        case .rejected: "rejected"
        case .credentialsInvalid: "credentials_invalid"
        case .authTokenExpired: "auth_token_expired"
        case .retryable: "retryable"
        case .expired: "expired"
        }
    }

    /// The reason text for logs and delivery-failure events; nil for successes and `expired`.
    public var reason: String? {
        switch self {
        case .accepted, .tokenReplaced, .expired: nil
        case .tokenInvalid(let r, _), .messageInvalid(let r), .rejected(let r), .credentialsInvalid(let r),
            .authTokenExpired(let r), .retryable(let r, _):
            r
        }
    }
}
