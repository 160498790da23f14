import Foundation

/// ADM answers -> `DeliveryOutcome` (docs/providers.md D.3, F).
public enum ADMResponseClassifier {
    static let messageReasons: Set<String> = [
        "InvalidData", "InvalidConsolidationKey", "InvalidExpiration", "InvalidChecksum", "InvalidType",
        "MessageTooLarge",
    ]

    /// - Parameter sentToken: the registration id the push was sent to. A 200 naming a different
    ///   `registrationID` is ADM's canonical id: the push was delivered and the endpoint's token is replaced.
    public static func classify(_ response: ProviderResponse, sentToken: String, now: Date) -> DeliveryOutcome {
        let body = response.jsonObject
        let requestID = response[header: "x-amzn-requestid"]
        if response.status == 200 {
            if let current = body?["registrationID"]?.stringValue, !current.isEmpty, current != sentToken {
                return .tokenReplaced(newToken: current, providerID: requestID)
            }
            return .accepted(providerID: requestID)
        }
        let reason = body?["reason"]?.stringValue ?? "HTTP \(response.status)"
        let retryAfter = response.retryAfter(now: now)
        switch reason {
        case "InvalidRegistrationId", "Unregistered":
            return .tokenInvalid(reason: reason, invalidSince: nil)
        case _ where messageReasons.contains(reason):
            return .messageInvalid(reason: reason)
        case "AccessTokenExpired":
            return .authTokenExpired(reason: reason)
        case "MaxRateExceeded":
            return .retryable(reason: reason, retryAfter: retryAfter)
        default:
            break
        }
        switch response.status {
        // A 401 with another reason: the token was refused; fetching a new one tells whether the client
        // credentials still work (a refused exchange is `credentialsInvalid`, see `TokenExchangeClassifier`).
        case 401: return .authTokenExpired(reason: reason)
        case 413: return .messageInvalid(reason: reason)
        case 429, 500...599: return .retryable(reason: reason, retryAfter: retryAfter)
        default: return .rejected(reason: reason)
        }
    }
}
