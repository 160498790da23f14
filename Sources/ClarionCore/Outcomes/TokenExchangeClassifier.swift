import Foundation

/// OAuth token exchanges (FCM's jwt-bearer grant, ADM's client-credentials grant) that did not yield a token.
///
/// The answer applies to the pushes waiting for that token: a refusal disables the application, anything
/// else is retried.
public enum TokenExchangeClassifier {
    public static func classify(_ response: ProviderResponse, now: Date) -> DeliveryOutcome {
        let body = response.jsonObject
        let code = body?["error"]?.stringValue
        let text = body?["error_description"]?.stringValue
        let reason = "token exchange refused: " + ([code, text].compactMap { $0 }.joined(separator: ": "))
            + (code == nil && text == nil ? "HTTP \(response.status)" : "")
        switch response.status {
        case 400, 401, 403:
            // invalid_client, invalid_grant, unauthorized_client, invalid_scope: the credentials are refused.
            return .credentialsInvalid(reason: reason)
        case 429, 500...599:
            return .retryable(reason: "token exchange failed: HTTP \(response.status)", retryAfter: response.retryAfter(now: now))
        default:
            return .retryable(reason: "token exchange failed: HTTP \(response.status)", retryAfter: nil)
        }
    }

    /// The exchange could not be made at all.
    public static func classify(_ failure: TransportFailure) -> DeliveryOutcome {
        TransportFailureClassifier.classify(failure)
    }
}
