import ClarionCore
import ClarionStore
import Foundation

/// No silent failure (an endpoint or application disabled with no recorded reason cannot be explained to its
/// owner, nor undone on purpose): every platform application
/// or endpoint the dispatcher disables, and every message it finishes with deliveries given up, gets exactly one
/// warning. The facts come from the store's own UPDATEs (`FailureReport`), so a disable is reported by the one
/// transaction that made it, on whichever node, and only once it is committed; workers call this after the
/// checkpoint returned, outside any lock.
///
/// Fields say which resource (keys, ids, account, application name, platform: with the region, the ARN), why (the
/// outcome class and the provider's reason text) and what the provider answered (its HTTP status when one came
/// back). Never a device token: its first characters at most.
extension Log {
    static let applicationDisabled = "platform application disabled"
    static let endpointDisabled = "endpoint disabled"
    static let messageGivenUp = "message given up"
    static let deliveriesGivenUp = "message completed with deliveries given up"

    /// Most reasons listed in a message's warning (provider reasons are a small set; this bounds the line).
    static let reasonsListed = 10

    func report(_ report: FailureReport) {
        for app in report.applications {
            var fields = [
                "application": app.name, "application_key": String(app.application), "platform": app.platform,
                "account": app.accountID, "outcome": "credentials_invalid", "reason": app.reason,
                "disabled_at": Self.time(app.disabledAt), "message_key": String(app.message),
            ]
            fields["provider_status"] = app.providerStatus.map(String.init)
            warning(Self.applicationDisabled, fields)
        }
        for endpoint in report.endpoints {
            var fields = [
                "endpoint": endpoint.externalID.lowercasedText, "endpoint_key": String(endpoint.endpoint),
                "application": endpoint.applicationName, "platform": endpoint.platform, "account": endpoint.accountID,
                "token_prefix": endpoint.tokenPrefix + "…", "outcome": "token_invalid", "reason": endpoint.reason,
                "disabled_at": Self.time(endpoint.disabledAt), "message_key": String(endpoint.message),
            ]
            fields["provider_status"] = endpoint.providerStatus.map(String.init)
            warning(Self.endpointDisabled, fields)
        }
        for message in report.messages {
            let c = message.counters
            warning(message.state == .completed ? Self.deliveriesGivenUp : Self.messageGivenUp, [
                "message": message.externalID.lowercasedText, "message_key": String(message.message),
                "account": message.accountID, "target": message.targetKind, "state": message.state.rawValue,
                "targeted": String(c.targeted), "accepted": String(c.accepted), "failed": String(c.failed),
                "expired": String(c.expired), "skipped": String(c.skipped),
                "failures": Self.reasons(message.failuresByReason),
            ])
        }
    }

    /// `reason=count` pairs, most frequent first, at most `reasonsListed` of them.
    static func reasons(_ byReason: [String: Int64]) -> String {
        let sorted = byReason.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
        var parts = sorted.prefix(reasonsListed).map { "\($0.key)=\($0.value)" }
        if sorted.count > reasonsListed { parts.append("(\(sorted.count - reasonsListed) more)") }
        return parts.joined(separator: ", ")
    }

    static func time(_ date: Date) -> String {
        ISO8601DateFormatter.string(from: date, timeZone: TimeZone(identifier: "UTC")!,
                                    formatOptions: [.withInternetDateTime, .withFractionalSeconds])
    }
}
