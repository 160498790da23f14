import Foundation

/// APNs answers -> `DeliveryOutcome` (docs/providers.md A.6, F).
public enum APNsResponseClassifier {
    /// Reasons that mean the device token is dead: disable the endpoint (A.6, C.9).
    static let tokenReasons: Set<String> = ["BadDeviceToken", "DeviceTokenNotForTopic", "Unregistered", "ExpiredToken"]

    /// Reasons that mean this message (its headers or body) is wrong; the endpoint is fine.
    static let messageReasons: Set<String> = [
        "BadCollapseId", "BadExpirationDate", "BadMessageId", "BadPriority", "BadTopic", "InvalidPushType",
        "MissingTopic", "PayloadEmpty", "PayloadTooLarge",
    ]

    /// Reasons that mean the application's credentials or configuration are refused: disable the application.
    /// `TopicDisallowed` is here, not with the token reasons: it says the credential may not push to the topic
    /// (A.6 "credential/config error", F), and treating it as a dead token would disable every endpoint of a
    /// misconfigured application. `BadEnvironmentKeyInToken` is the spelling FCM relays (G.6).
    static let credentialReasons: Set<String> = [
        "BadCertificate", "BadCertificateEnvironment", "InvalidProviderToken", "BadEnvironmentKeyIdInToken",
        "BadEnvironmentKeyInToken", "TopicDisallowed",
    ]

    /// Reasons that are transient or connection-level: retry (on a new connection where APNs asks for one).
    static let retryReasons: Set<String> = [
        "IdleTimeout", "UnrelatedKeyIdInToken", "TooManyProviderTokenUpdates", "TooManyRequests",
        "InternalServerError", "ServiceUnavailable", "Shutdown",
    ]

    /// Classifies one APNs response.
    ///
    /// - Parameter tokenUpdatedAt: when the endpoint's token was last set. A 410 whose `timestamp` is older
    ///   than that says nothing about the current registration (the app re-registered since): the delivery is
    ///   `rejected` and the endpoint stays enabled.
    public static func classify(_ response: ProviderResponse, tokenUpdatedAt: Date?, now: Date) -> DeliveryOutcome {
        if response.status == 200 {
            return .accepted(providerID: response[header: "apns-id"])
        }
        let body = response.jsonObject
        let reason = body?["reason"]?.stringValue ?? "HTTP \(response.status)"
        // `timestamp` is milliseconds since the epoch (A.6; G.3 notes a library that reads seconds).
        let invalidSince = body?["timestamp"]?.numberValue?.doubleValue.map { Date(timeIntervalSince1970: $0 / 1000) }
        return classify(reason: reason, status: response.status, invalidSince: invalidSince,
                        tokenUpdatedAt: tokenUpdatedAt, retryAfter: response.retryAfter(now: now))
    }

    static func classify(
        reason: String, status: Int, invalidSince: Date?, tokenUpdatedAt: Date?, retryAfter: TimeInterval?
    ) -> DeliveryOutcome {
        if tokenReasons.contains(reason) || (status == 410 && !messageReasons.contains(reason)) {
            if let invalidSince, let tokenUpdatedAt, invalidSince < tokenUpdatedAt {
                return .rejected(reason: "\(reason) (APNs time predates the endpoint's last token update)")
            }
            return .tokenInvalid(reason: reason, invalidSince: invalidSince)
        }
        if messageReasons.contains(reason) { return .messageInvalid(reason: reason) }
        if credentialReasons.contains(reason) { return .credentialsInvalid(reason: reason) }
        if reason == "ExpiredProviderToken" { return .authTokenExpired(reason: reason) }
        if retryReasons.contains(reason) { return .retryable(reason: reason, retryAfter: retryAfter) }
        // Unknown reasons (A.6: keep a path for them) and bugs (BadPath, MethodNotAllowed, DuplicateHeaders,
        // MissingDeviceToken, MissingProviderToken, Forbidden): by status.
        switch status {
        case 413: return .messageInvalid(reason: reason)
        case 429, 500...599: return .retryable(reason: reason, retryAfter: retryAfter)
        default: return .rejected(reason: reason)
        }
    }
}
