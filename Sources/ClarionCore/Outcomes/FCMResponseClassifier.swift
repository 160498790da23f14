import Foundation

/// FCM HTTP v1 answers -> `DeliveryOutcome` (docs/providers.md B.4, F).
///
/// Errors come in Google's envelope `{"error":{"code","message","status","details":[...]}}`; the FCM code
/// is in the `google.firebase.fcm.v1.FcmError` detail's `errorCode` and is read first, then the canonical
/// `status`, then the HTTP status.
public enum FCMResponseClassifier {
    /// FCM's minimum initial back-off for QUOTA_EXCEEDED without Retry-After (B.4): one minute.
    public static let quotaExceededDefaultDelay: TimeInterval = 60

    public static func classify(_ response: ProviderResponse, now: Date) -> DeliveryOutcome {
        let body = response.jsonObject
        if (200..<300).contains(response.status) {
            return .accepted(providerID: body?["name"]?.stringValue)
        }
        let error = body?["error"]?.objectValue
        let message = error?["message"]?.stringValue ?? ""
        let status = error?["status"]?.stringValue
        let details = error?["details"]?.arrayValue?.compactMap(\.objectValue) ?? []
        let errorCode = details.first { detailType($0) == "google.firebase.fcm.v1.FcmError" }?["errorCode"]?.stringValue
        let apnsReason = details.first { detailType($0) == "google.firebase.fcm.v1.ApnsError" }?["reason"]?.stringValue
        let retryAfter = response.retryAfter(now: now)
        let reason = describe(errorCode ?? status ?? "HTTP \(response.status)", message)

        switch errorCode {
        case "UNREGISTERED", "SENDER_ID_MISMATCH":
            return .tokenInvalid(reason: reason, invalidSince: nil)
        case "INVALID_ARGUMENT":
            return isAboutToken(message: message, details: details, apnsReason: apnsReason)
                ? .tokenInvalid(reason: reason, invalidSince: nil) : .messageInvalid(reason: reason)
        case "THIRD_PARTY_AUTH_ERROR", "APNS_AUTH_ERROR":
            return .credentialsInvalid(reason: reason)
        case "QUOTA_EXCEEDED":
            return .retryable(reason: reason, retryAfter: retryAfter ?? quotaExceededDefaultDelay)
        case "UNAVAILABLE", "INTERNAL", "UNSPECIFIED_ERROR":
            return .retryable(reason: reason, retryAfter: retryAfter)
        default:
            break
        }

        switch status {
        case "INVALID_ARGUMENT":
            return isAboutToken(message: message, details: details, apnsReason: apnsReason)
                ? .tokenInvalid(reason: reason, invalidSince: nil) : .messageInvalid(reason: reason)
        case "UNAUTHENTICATED":
            // B.2: a 401 without THIRD_PARTY_AUTH_ERROR is a stale access token: refresh, retry.
            return .authTokenExpired(reason: reason)
        case "PERMISSION_DENIED":
            // The service account may not send for this project (wrong project, API disabled, role missing).
            return .credentialsInvalid(reason: reason)
        case "RESOURCE_EXHAUSTED":
            return .retryable(reason: reason, retryAfter: retryAfter ?? quotaExceededDefaultDelay)
        case "UNAVAILABLE", "INTERNAL", "DEADLINE_EXCEEDED":
            return .retryable(reason: reason, retryAfter: retryAfter)
        default:
            break
        }

        switch response.status {
        case 401: return .authTokenExpired(reason: reason)
        case 403: return .credentialsInvalid(reason: reason)
        case 400: return .messageInvalid(reason: reason)
        case 429: return .retryable(reason: reason, retryAfter: retryAfter ?? quotaExceededDefaultDelay)
        case 500...599: return .retryable(reason: reason, retryAfter: retryAfter)
        // A 404 without the UNREGISTERED detail can be a wrong project id as well as a dead token: disabling
        // endpoints on that guess could disable every endpoint of an application, so nothing is changed.
        default: return .rejected(reason: reason)
        }
    }

    private static func detailType(_ detail: JSONObject) -> String? {
        guard let type = detail["@type"]?.stringValue else { return nil }
        return type.split(separator: "/").last.map(String.init)
    }

    /// INVALID_ARGUMENT names a bad token in a field violation on `message.token`, in its message
    /// ("The registration token is not a valid FCM registration token"), or as a relayed APNs token error
    /// (B.4: 410 Unregistered surfaced as "APNs device token is disabled").
    private static func isAboutToken(message: String, details: [JSONObject], apnsReason: String?) -> Bool {
        if let apnsReason, APNsResponseClassifier.tokenReasons.contains(apnsReason) { return true }
        for detail in details where detailType(detail) == "google.rpc.BadRequest" {
            let violations = detail["fieldViolations"]?.arrayValue ?? []
            if violations.contains(where: { $0["field"]?.stringValue == "message.token" }) { return true }
        }
        let lower = message.lowercased()
        return lower.contains("registration token") || lower.contains("device token")
    }

    private static func describe(_ code: String, _ message: String) -> String {
        message.isEmpty ? code : "\(code): \(message)"
    }
}
