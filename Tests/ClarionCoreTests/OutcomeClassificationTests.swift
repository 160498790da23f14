import Foundation
import Testing
@testable import ClarionCore

@Suite("Provider answers to delivery outcomes")
struct OutcomeClassificationTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let rule: String
        let status: Int
        let headers: [String: String]
        let body: String
        let expected: DeliveryOutcome
        var testDescription: String { rule }

        init(_ rule: String, _ status: Int, headers: [String: String] = [:], _ body: String, _ expected: DeliveryOutcome) {
            self.rule = rule
            self.status = status
            self.headers = headers
            self.body = body
            self.expected = expected
        }

        var response: ProviderResponse {
            ProviderResponse(status: status, headers: headers.map { ($0.key, $0.value) }, body: body)
        }
    }

    // 2024-12-31T23:00:00Z in milliseconds, one hour before t0.
    static let apnsTimestamp = "1735686000000"
    static let apnsTimestampDate = Date(timeIntervalSince1970: 1_735_686_000)

    @Test("APNs A.6 responses", arguments: [
        Case("APNs A.6: 200 is accepted with the apns-id", 200, headers: ["apns-id": "8D0C1B4F-6E7A-4C6B-9C3F-3E3B2B5A7C10"], "",
             .accepted(providerID: "8D0C1B4F-6E7A-4C6B-9C3F-3E3B2B5A7C10")),
        Case("APNs A.6: 400 BadDeviceToken disables the endpoint", 400, #"{"reason":"BadDeviceToken"}"#,
             .tokenInvalid(reason: "BadDeviceToken", invalidSince: nil)),
        Case("APNs A.6: 400 DeviceTokenNotForTopic disables the endpoint", 400, #"{"reason":"DeviceTokenNotForTopic"}"#,
             .tokenInvalid(reason: "DeviceTokenNotForTopic", invalidSince: nil)),
        Case("APNs A.6: 410 Unregistered disables the endpoint as of the timestamp (milliseconds)", 410,
             #"{"reason":"Unregistered","timestamp":\#(apnsTimestamp)}"#,
             .tokenInvalid(reason: "Unregistered", invalidSince: apnsTimestampDate)),
        Case("APNs A.6: 410 ExpiredToken disables the endpoint", 410, #"{"reason":"ExpiredToken","timestamp":\#(apnsTimestamp)}"#,
             .tokenInvalid(reason: "ExpiredToken", invalidSince: apnsTimestampDate)),
        Case("APNs A.6: 400 BadCollapseId is a message error", 400, #"{"reason":"BadCollapseId"}"#, .messageInvalid(reason: "BadCollapseId")),
        Case("APNs A.6: 400 BadExpirationDate is a message error", 400, #"{"reason":"BadExpirationDate"}"#, .messageInvalid(reason: "BadExpirationDate")),
        Case("APNs A.6: 400 BadPriority is a message error", 400, #"{"reason":"BadPriority"}"#, .messageInvalid(reason: "BadPriority")),
        Case("APNs A.6: 400 InvalidPushType is a message error", 400, #"{"reason":"InvalidPushType"}"#, .messageInvalid(reason: "InvalidPushType")),
        Case("APNs A.6: 400 BadTopic is a message error", 400, #"{"reason":"BadTopic"}"#, .messageInvalid(reason: "BadTopic")),
        Case("APNs A.6: 413 PayloadTooLarge is a message error", 413, #"{"reason":"PayloadTooLarge"}"#, .messageInvalid(reason: "PayloadTooLarge")),
        Case("APNs A.6: 400 TopicDisallowed is a credential/config error, not a dead token", 400, #"{"reason":"TopicDisallowed"}"#,
             .credentialsInvalid(reason: "TopicDisallowed")),
        Case("APNs A.6: 403 InvalidProviderToken disables the application", 403, #"{"reason":"InvalidProviderToken"}"#,
             .credentialsInvalid(reason: "InvalidProviderToken")),
        Case("APNs A.6: 403 BadCertificate disables the application", 403, #"{"reason":"BadCertificate"}"#,
             .credentialsInvalid(reason: "BadCertificate")),
        Case("APNs A.6: 403 BadCertificateEnvironment disables the application", 403, #"{"reason":"BadCertificateEnvironment"}"#,
             .credentialsInvalid(reason: "BadCertificateEnvironment")),
        Case("APNs A.6: 403 BadEnvironmentKeyIdInToken disables the application", 403, #"{"reason":"BadEnvironmentKeyIdInToken"}"#,
             .credentialsInvalid(reason: "BadEnvironmentKeyIdInToken")),
        Case("APNs G.6: the BadEnvironmentKeyInToken spelling is matched too", 403, #"{"reason":"BadEnvironmentKeyInToken"}"#,
             .credentialsInvalid(reason: "BadEnvironmentKeyInToken")),
        Case("APNs A.5: 403 ExpiredProviderToken means a new JWT and a retry", 403, #"{"reason":"ExpiredProviderToken"}"#,
             .authTokenExpired(reason: "ExpiredProviderToken")),
        Case("APNs A.6: 403 Forbidden is not retried and changes nothing else", 403, #"{"reason":"Forbidden"}"#, .rejected(reason: "Forbidden")),
        Case("APNs A.6: 429 TooManyRequests is retried after Retry-After", 429, headers: ["Retry-After": "30"], #"{"reason":"TooManyRequests"}"#,
             .retryable(reason: "TooManyRequests", retryAfter: 30)),
        Case("APNs A.5: 429 TooManyProviderTokenUpdates is retried", 429, #"{"reason":"TooManyProviderTokenUpdates"}"#,
             .retryable(reason: "TooManyProviderTokenUpdates", retryAfter: nil)),
        Case("APNs A.6: 500 InternalServerError is retried", 500, #"{"reason":"InternalServerError"}"#,
             .retryable(reason: "InternalServerError", retryAfter: nil)),
        Case("APNs A.6: 503 Shutdown is retried", 503, #"{"reason":"Shutdown"}"#, .retryable(reason: "Shutdown", retryAfter: nil)),
        Case("APNs A.6: 400 IdleTimeout is retried", 400, #"{"reason":"IdleTimeout"}"#, .retryable(reason: "IdleTimeout", retryAfter: nil)),
        Case("APNs A.5: 403 UnrelatedKeyIdInToken is retried on a new connection", 403, #"{"reason":"UnrelatedKeyIdInToken"}"#,
             .retryable(reason: "UnrelatedKeyIdInToken", retryAfter: nil)),
        Case("APNs A.6: 404 BadPath (a bug) is rejected", 404, #"{"reason":"BadPath"}"#, .rejected(reason: "BadPath")),
        Case("APNs A.6: an unknown 5xx reason is retried", 502, #"{"reason":"SomethingNew"}"#, .retryable(reason: "SomethingNew", retryAfter: nil)),
        Case("APNs A.6: an unknown 4xx reason is rejected", 400, #"{"reason":"SomethingNew"}"#, .rejected(reason: "SomethingNew")),
        Case("APNs A.6: a 503 with no body is retried", 503, "", .retryable(reason: "HTTP 503", retryAfter: nil)),
    ])
    func apns(_ c: Case) {
        #expect(APNsResponseClassifier.classify(c.response, tokenUpdatedAt: nil, now: t0) == c.expected)
    }

    @Test("Issue 4: an APNs 410 older than the endpoint's last token update does not disable it")
    func apnsStale410() {
        let response = ProviderResponse(status: 410, body: #"{"reason":"Unregistered","timestamp":\#(Self.apnsTimestamp)}"#)
        let updatedAfter = APNsResponseClassifier.classify(response, tokenUpdatedAt: Self.apnsTimestampDate.addingTimeInterval(1), now: t0)
        guard case .rejected(let reason) = updatedAfter else { Issue.record("got \(updatedAfter)"); return }
        #expect(reason.hasPrefix("Unregistered"))
        #expect(updatedAfter.endpointAction == .none)

        let updatedBefore = APNsResponseClassifier.classify(response, tokenUpdatedAt: Self.apnsTimestampDate.addingTimeInterval(-1), now: t0)
        #expect(updatedBefore == .tokenInvalid(reason: "Unregistered", invalidSince: Self.apnsTimestampDate))
        #expect(updatedBefore.endpointAction == .disable(reason: "Unregistered", at: Self.apnsTimestampDate))
    }

    static func fcmError(_ code: Int, _ status: String, _ message: String, errorCode: String? = nil, extra: String = "") -> String {
        var details: [String] = []
        if let errorCode {
            details.append(#"{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"\#(errorCode)"}"#)
        }
        if !extra.isEmpty { details.append(extra) }
        return #"{"error":{"code":\#(code),"message":"\#(message)","status":"\#(status)","details":[\#(details.joined(separator: ","))]}}"#
    }

    @Test("FCM B.4 responses", arguments: [
        Case("FCM B.1: 200 is accepted with the message name", 200, #"{"name":"projects/demo/messages/0:1500415314455276%31bd1c9631bd1c96"}"#,
             .accepted(providerID: "projects/demo/messages/0:1500415314455276%31bd1c9631bd1c96")),
        Case("FCM B.4: 404 UNREGISTERED disables the endpoint", 404,
             fcmError(404, "NOT_FOUND", "Requested entity was not found.", errorCode: "UNREGISTERED"),
             .tokenInvalid(reason: "UNREGISTERED: Requested entity was not found.", invalidSince: nil)),
        Case("FCM B.4: 403 SENDER_ID_MISMATCH disables the endpoint", 403,
             fcmError(403, "PERMISSION_DENIED", "SenderId mismatch", errorCode: "SENDER_ID_MISMATCH"),
             .tokenInvalid(reason: "SENDER_ID_MISMATCH: SenderId mismatch", invalidSince: nil)),
        Case("FCM B.4: 400 INVALID_ARGUMENT about the registration token disables the endpoint", 400,
             fcmError(400, "INVALID_ARGUMENT", "The registration token is not a valid FCM registration token", errorCode: "INVALID_ARGUMENT"),
             .tokenInvalid(reason: "INVALID_ARGUMENT: The registration token is not a valid FCM registration token", invalidSince: nil)),
        Case("FCM B.4: INVALID_ARGUMENT with a field violation on message.token disables the endpoint", 400,
             fcmError(400, "INVALID_ARGUMENT", "Invalid value", extra: #"{"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":[{"field":"message.token","description":"Invalid registration token"}]}"#),
             .tokenInvalid(reason: "INVALID_ARGUMENT: Invalid value", invalidSince: nil)),
        Case("FCM B.4: INVALID_ARGUMENT relaying APNs Unregistered disables the endpoint", 400,
             fcmError(400, "INVALID_ARGUMENT", "APNs device token is disabled", errorCode: "INVALID_ARGUMENT",
                      extra: #"{"@type":"type.googleapis.com/google.firebase.fcm.v1.ApnsError","statusCode":410,"reason":"Unregistered"}"#),
             .tokenInvalid(reason: "INVALID_ARGUMENT: APNs device token is disabled", invalidSince: nil)),
        Case("FCM B.4: other INVALID_ARGUMENT is a message error", 400,
             fcmError(400, "INVALID_ARGUMENT", "Invalid value at 'message.data[0].value' (TYPE_STRING), 1", errorCode: "INVALID_ARGUMENT"),
             .messageInvalid(reason: "INVALID_ARGUMENT: Invalid value at 'message.data[0].value' (TYPE_STRING), 1")),
        Case("FCM B.4: 401 THIRD_PARTY_AUTH_ERROR disables the application", 401,
             fcmError(401, "UNAUTHENTICATED", "Auth error from APNS or Web Push Service", errorCode: "THIRD_PARTY_AUTH_ERROR"),
             .credentialsInvalid(reason: "THIRD_PARTY_AUTH_ERROR: Auth error from APNS or Web Push Service")),
        Case("FCM B.2: 401 UNAUTHENTICATED without an FCM code means refresh the access token and retry", 401,
             fcmError(401, "UNAUTHENTICATED", "Request had invalid authentication credentials."),
             .authTokenExpired(reason: "UNAUTHENTICATED: Request had invalid authentication credentials.")),
        Case("FCM B.4: 403 PERMISSION_DENIED without an FCM code disables the application", 403,
             fcmError(403, "PERMISSION_DENIED", "Permission 'cloudmessaging.messages.create' denied"),
             .credentialsInvalid(reason: "PERMISSION_DENIED: Permission 'cloudmessaging.messages.create' denied")),
        Case("FCM B.4: 429 QUOTA_EXCEEDED honours Retry-After", 429, headers: ["retry-after": "120"],
             fcmError(429, "RESOURCE_EXHAUSTED", "Quota exceeded", errorCode: "QUOTA_EXCEEDED"),
             .retryable(reason: "QUOTA_EXCEEDED: Quota exceeded", retryAfter: 120)),
        Case("FCM B.4: 429 QUOTA_EXCEEDED without Retry-After waits at least a minute", 429,
             fcmError(429, "RESOURCE_EXHAUSTED", "Quota exceeded", errorCode: "QUOTA_EXCEEDED"),
             .retryable(reason: "QUOTA_EXCEEDED: Quota exceeded", retryAfter: 60)),
        Case("FCM B.4: 503 UNAVAILABLE is retried", 503, headers: ["Retry-After": "5"],
             fcmError(503, "UNAVAILABLE", "The service is currently unavailable.", errorCode: "UNAVAILABLE"),
             .retryable(reason: "UNAVAILABLE: The service is currently unavailable.", retryAfter: 5)),
        Case("FCM B.4: 500 INTERNAL is retried", 500, fcmError(500, "INTERNAL", "Internal error", errorCode: "INTERNAL"),
             .retryable(reason: "INTERNAL: Internal error", retryAfter: nil)),
        Case("FCM B.4: a 404 without the UNREGISTERED detail changes nothing", 404,
             fcmError(404, "NOT_FOUND", "Requested entity was not found."),
             .rejected(reason: "NOT_FOUND: Requested entity was not found.")),
        Case("FCM: a 502 from a proxy, no JSON, is retried", 502, "<html>Bad Gateway</html>", .retryable(reason: "HTTP 502", retryAfter: nil)),
    ])
    func fcm(_ c: Case) {
        #expect(FCMResponseClassifier.classify(c.response, now: t0) == c.expected)
    }

    @Test("ADM D.3 responses", arguments: [
        Case("ADM D.3: 200 with the same registrationID is accepted with the request id", 200, headers: ["X-Amzn-RequestId": "req-1"],
             #"{"registrationID":"amzn1.adm-registration.v2.SENT"}"#, .accepted(providerID: "req-1")),
        Case("ADM D.3: 200 with another registrationID replaces the token", 200, headers: ["X-Amzn-RequestId": "req-2"],
             #"{"registrationID":"amzn1.adm-registration.v2.NEW"}"#,
             .tokenReplaced(newToken: "amzn1.adm-registration.v2.NEW", providerID: "req-2")),
        Case("ADM D.3: 400 InvalidRegistrationId disables the endpoint", 400, #"{"reason":"InvalidRegistrationId"}"#,
             .tokenInvalid(reason: "InvalidRegistrationId", invalidSince: nil)),
        Case("ADM D.3: 400 Unregistered disables the endpoint", 400, #"{"reason":"Unregistered"}"#,
             .tokenInvalid(reason: "Unregistered", invalidSince: nil)),
        Case("ADM D.3: 400 InvalidData is a message error", 400, #"{"reason":"InvalidData"}"#, .messageInvalid(reason: "InvalidData")),
        Case("ADM D.3: 400 InvalidConsolidationKey is a message error", 400, #"{"reason":"InvalidConsolidationKey"}"#,
             .messageInvalid(reason: "InvalidConsolidationKey")),
        Case("ADM D.3: 400 InvalidExpiration is a message error", 400, #"{"reason":"InvalidExpiration"}"#, .messageInvalid(reason: "InvalidExpiration")),
        Case("ADM D.3: 413 MessageTooLarge is a message error", 413, #"{"reason":"MessageTooLarge"}"#, .messageInvalid(reason: "MessageTooLarge")),
        Case("ADM D.3: 401 AccessTokenExpired means a new access token and a retry", 401, #"{"reason":"AccessTokenExpired"}"#,
             .authTokenExpired(reason: "AccessTokenExpired")),
        Case("ADM D.3: 429 MaxRateExceeded honours Retry-After", 429, headers: ["Retry-After": "10"], #"{"reason":"MaxRateExceeded"}"#,
             .retryable(reason: "MaxRateExceeded", retryAfter: 10)),
        Case("ADM D.3: 500 with no body is retried", 500, "", .retryable(reason: "HTTP 500", retryAfter: nil)),
        Case("ADM D.3: 503 honours an HTTP-date Retry-After", 503, headers: ["Retry-After": "Wed, 01 Jan 2025 00:02:00 GMT"], "",
             .retryable(reason: "HTTP 503", retryAfter: 120)),
    ])
    func adm(_ c: Case) {
        #expect(ADMResponseClassifier.classify(c.response, sentToken: "amzn1.adm-registration.v2.SENT", now: t0) == c.expected)
    }

    @Test("Token exchange (FCM jwt-bearer, ADM client credentials)", arguments: [
        Case("Issue 4: a refused token exchange disables the application", 400,
             #"{"error":"invalid_grant","error_description":"Invalid JWT Signature."}"#,
             .credentialsInvalid(reason: "token exchange refused: invalid_grant: Invalid JWT Signature.")),
        Case("ADM D.1: invalid_client is refused credentials", 401, #"{"error":"invalid_client","error_description":"Client authentication failed"}"#,
             .credentialsInvalid(reason: "token exchange refused: invalid_client: Client authentication failed")),
        Case("Token exchange: a 503 is retried", 503, headers: ["Retry-After": "3"], "", .retryable(reason: "token exchange failed: HTTP 503", retryAfter: 3)),
    ])
    func tokenExchange(_ c: Case) {
        #expect(TokenExchangeClassifier.classify(c.response, now: t0) == c.expected)
    }

    @Test("Transport failures are retried; an APNs GOAWAY naming bad credentials, or a TLS alert refusing our client certificate (A.6 BadCertificate), disables the application", arguments: [
        (TransportFailure.connectionLost("EOF"), DeliveryOutcome.retryable(reason: "connection lost: EOF", retryAfter: nil)),
        (.streamReset(errorCode: 7), .retryable(reason: "stream reset (HTTP/2 error 7)", retryAfter: nil)),
        (.timeout, .retryable(reason: "timeout", retryAfter: nil)),
        (.connectFailed("ECONNREFUSED"), .retryable(reason: "connect failed: ECONNREFUSED", retryAfter: nil)),
        (.goAway(errorCode: 0, debugData: Array(#"{"reason":"Shutdown"}"#.utf8)), .retryable(reason: "GOAWAY: Shutdown", retryAfter: nil)),
        (.goAway(errorCode: 0, debugData: Array(#"{"reason":"BadCertificate"}"#.utf8)), .credentialsInvalid(reason: "BadCertificate")),
        (.goAway(errorCode: 0, debugData: Array(#"{"reason":"ExpiredProviderToken"}"#.utf8)), .authTokenExpired(reason: "ExpiredProviderToken")),
        (.goAway(errorCode: 2, debugData: []), .retryable(reason: "GOAWAY (HTTP/2 error 2)", retryAfter: nil)),
        (.clientCertificateRejected("sslv3 alert certificate expired"),
         .credentialsInvalid(reason: "BadCertificate (TLS client certificate refused: sslv3 alert certificate expired)")),
    ])
    func transport(_ failure: TransportFailure, _ expected: DeliveryOutcome) {
        #expect(TransportFailureClassifier.classify(failure) == expected)
    }

    @Test("Retry-After: seconds, HTTP dates (past ones are 0), garbage ignored")
    func retryAfter() {
        func value(_ header: String) -> TimeInterval? {
            ProviderResponse(status: 503, headers: [("Retry-After", header)]).retryAfter(now: t0)
        }
        #expect(value("0") == 0)
        #expect(value(" 42 ") == 42)
        #expect(value("Wed, 01 Jan 2025 01:00:00 GMT") == 3600)
        #expect(value("Tue, 31 Dec 2024 23:00:00 GMT") == 0)
        #expect(value("Sun, 06 Nov 1994 08:49:37 GMT") == 0)
        #expect(value("soon") == nil)
        #expect(value("-5") == nil)
        #expect(value("Wed, 01 Foo 2025 01:00:00 GMT") == nil)
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT") == Date(timeIntervalSince1970: 784_111_777))
    }

    /// The day count overflowed `Int` and trapped, taking the dispatcher down with the answer of one provider (or of
    /// whatever answers at a configured ProviderEndpoint). Tests/fuzz/corpus/provider-responses/crash-retry-after-year-overflow.
    @Test("Retry-After: an HTTP date with a year beyond four digits is unreadable, not a crash")
    func retryAfterHugeYear() {
        let response = ProviderResponse(status: 503, headers: [("Retry-After", "Sun, 06 Nov 99999999999999999 08:49:37 GMT")])
        #expect(response.retryAfter(now: t0) == nil)
        #expect(HTTPDate.parse("Fri, 31 Dec 9999 23:59:59 GMT") != nil)
        #expect(HTTPDate.parse("Mon, 01 Jan 10000 00:00:00 GMT") == nil)
        #expect(APNsResponseClassifier.classify(response, tokenUpdatedAt: nil, now: t0) == .retryable(reason: "HTTP 503", retryAfter: nil))
    }

    @Test("Outcome effects: what happens to the endpoint, the application, and retries")
    func effects() {
        let at = Date(timeIntervalSince1970: 1)
        #expect(DeliveryOutcome.tokenInvalid(reason: "r", invalidSince: at).endpointAction == .disable(reason: "r", at: at))
        #expect(DeliveryOutcome.tokenReplaced(newToken: "n", providerID: nil).endpointAction == .replaceToken("n"))
        #expect(DeliveryOutcome.tokenReplaced(newToken: "n", providerID: nil).isDelivered)
        #expect(DeliveryOutcome.messageInvalid(reason: "r").endpointAction == .none)
        #expect(DeliveryOutcome.credentialsInvalid(reason: "r").disablesApplication)
        #expect(!DeliveryOutcome.tokenInvalid(reason: "r", invalidSince: nil).disablesApplication)
        #expect(DeliveryOutcome.retryable(reason: "r", retryAfter: nil).isRetryable)
        #expect(DeliveryOutcome.authTokenExpired(reason: "r").isRetryable)
        #expect(!DeliveryOutcome.rejected(reason: "r").isRetryable)
        #expect(DeliveryOutcome.expired.label == "expired")
        #expect(DeliveryOutcome.rejected(reason: "why").reason == "why")
    }
}
