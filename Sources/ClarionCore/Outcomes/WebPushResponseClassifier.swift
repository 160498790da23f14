import Foundation

/// Push-service answers -> `DeliveryOutcome` (docs/providers.md, Web Push W.5).
///
/// - 201 Created (RFC 8030 section 5): accepted; the `Location` header names the push message resource.
/// - 404 Not Found, 410 Gone (RFC 8030 section 7.3, "the push subscription has expired"): the subscription is
///   gone for good: the endpoint is disabled with the status and any reason the service gives.
/// - 413 Payload Too Large (RFC 8030 section 7.2): the message is invalid for every subscription.
/// - 429 Too Many Requests (RFC 8030 section 8.4) and 5xx: retried, after `Retry-After` when given.
/// - 401 (the VAPID token is missing or invalid, RFC 8292 section 4): one token serves every subscription of the
///   origin, so it is the application's credentials.
/// - 403 (the subscription is restricted to another application server key, RFC 8292 section 4.2): this subscription
///   can never take our pushes; the endpoint is disabled, as FCM's `SENDER_ID_MISMATCH` (403) disables a token.
///   Disabling the application instead would let one stale subscription stop a site's every push.
/// - 400 and other statuses: this delivery is rejected; nothing is disabled (as an unclassified APNs/FCM 400).
public enum WebPushResponseClassifier {
    public static func classify(_ response: ProviderResponse, now: Date) -> DeliveryOutcome {
        let status = response.status
        if (200..<300).contains(status) { return .accepted(providerID: response[header: "location"]) }
        let detail = reason(response)
        switch status {
        case 404, 410: return .tokenInvalid(reason: "push service answered \(status): \(detail)", invalidSince: nil)
        case 413: return .messageInvalid(reason: "push service answered 413: \(detail)")
        case 429, 500...599: return .retryable(reason: "push service answered \(status): \(detail)", retryAfter: response.retryAfter(now: now))
        case 401: return .credentialsInvalid(reason: "push service refused the VAPID authorization (401): \(detail)")
        case 403: return .tokenInvalid(reason: "push service refused this subscription for our VAPID key (403): \(detail)", invalidSince: nil)
        default: return .rejected(reason: "push service answered \(status): \(detail)")
        }
    }

    /// A short reason from the body: a JSON `reason`/`message`/`error` member (Mozilla's autopush answers JSON),
    /// else the first line of text, else the status text.
    static func reason(_ response: ProviderResponse) -> String {
        if let object = response.jsonObject {
            for key in ["reason", "message", "error"] {
                if let text = object[key]?.stringValue, !text.isEmpty { return String(text.prefix(200)) }
            }
        }
        let text = String(decoding: response.body.prefix(200), as: UTF8.self)
        let line = text.split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
        return line.isEmpty ? "HTTP \(response.status)" : line
    }
}
