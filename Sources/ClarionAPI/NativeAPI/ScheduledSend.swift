import ClarionCore
import ClarionStore
import Foundation

/// `"send_at"` on a publish (native publish, audience publish, campaign publish): an RFC 3339 date-time with an
/// offset. A time not in the future sends at once (stored like a publish without it); one more than
/// `maximumAhead` away is refused, so a typo in the year cannot park a message for a decade.
package enum ScheduledSend {
    /// 365 days (docs/api.md, "Scheduled sends").
    package static let maximumAhead: TimeInterval = 365 * 86_400

    /// The field's time, checked for syntax only; nil when absent or null.
    package static func parse(_ value: JSONValue?, field: String = "send_at") throws(JSONAPIError) -> Date? {
        guard let value, value != .null else { return nil }
        guard let text = value.stringValue, let seconds = AWSTimestamp.parseRFC3339(text) else {
            throw JSONAPIError.invalidField(field, "The field '\(field)' must be an RFC 3339 date-time with a time offset, "
                                            + "such as 2026-12-24T18:00:00+01:00 or 2026-12-24T17:00:00Z.")
        }
        return Date(timeIntervalSince1970: seconds)
    }

    /// When to store the message as scheduled: nil sends at once (no time, or a time not after `now`).
    package static func resolve(_ requested: Date?, now: Date, field: String = "send_at") throws(JSONAPIError) -> Date? {
        guard let requested, requested > now else { return nil }
        guard requested.timeIntervalSince(now) <= maximumAhead else {
            throw JSONAPIError.invalidField(field, "The field '\(field)' may be at most 365 days ahead.")
        }
        return requested
    }
}

/// `"pace"` on a topic or audience publish: `{"over_seconds": N}` (the planned targets spread over N seconds) or
/// `{"per_second": R}`, exactly one. Applied across all nodes (one budget in PostgreSQL per message).
package enum PublishPace {
    /// 30 days: a window longer than any TTL (28 days) would only expire what it holds back.
    package static let maximumOverSeconds = 30 * 86_400
    package static let maximumPerSecond = 1_000_000.0

    package static func parse(_ value: JSONValue?, field: String = "pace") throws(JSONAPIError) -> MessagePace? {
        guard let value, value != .null else { return nil }
        let shape = "The field '\(field)' must be {\"over_seconds\": 1 to \(maximumOverSeconds)} or {\"per_second\": a number above 0}."
        guard let object = value.objectValue, object.count == 1 else { throw JSONAPIError.invalidField(field, shape) }
        if let over = object["over_seconds"] {
            guard let seconds = over.intValue, (1...maximumOverSeconds).contains(seconds) else {
                throw JSONAPIError.invalidField("\(field).over_seconds", shape)
            }
            return .overSeconds(seconds)
        }
        if let rate = object["per_second"] {
            guard case .number(let number) = rate, let perSecond = Double(number.literal), perSecond > 0,
                  perSecond <= maximumPerSecond else {
                throw JSONAPIError.invalidField("\(field).per_second", shape)
            }
            return .perSecond(perSecond)
        }
        throw JSONAPIError.invalidField(field, shape)
    }
}

/// `send_at_local`, `fallback_time_zone`, `frequency_cap` and `quiet_hours` of a publish (docs/api.md, "Local-time
/// sends, frequency capping and quiet hours"), read into the `Clarion.Timing` its messages carry.
///
/// A campaign publish (`"campaign"`) is capped and defers in quiet hours unless it says otherwise; any other
/// publish is transactional: exempt from both unless it opts in (`"frequency_cap": true`, `"quiet_hours": "defer"`
/// or `"skip"`).
package enum LocalTimingRequest {
    package static func parse(_ body: NativeFields, isCampaign: Bool) throws(JSONAPIError) -> CampaignTiming {
        var timing = CampaignTiming()
        if let text = try body.string("send_at_local") {
            guard let local = LocalClockTime(text) else {
                throw JSONAPIError.invalidField("send_at_local", "The field 'send_at_local' must be a local time \"HH:MM\" (00:00 to 23:59), such as \"09:00\".")
            }
            timing.local = local
        }
        if let name = try body.string("fallback_time_zone") {
            guard TimeZoneName.zone(name) != nil else { throw invalidZone("fallback_time_zone", name) }
            timing.fallback = name
        }
        timing.cap = try body.bool("frequency_cap") ?? isCampaign
        switch try body.string("quiet_hours") {
        case nil: timing.quiet = isCampaign ? .defer_ : nil
        case "defer": timing.quiet = .defer_
        case "skip": timing.quiet = .skip
        case "ignore": timing.quiet = nil
        default:
            throw JSONAPIError.invalidField("quiet_hours", "The field 'quiet_hours' must be \"defer\", \"skip\" or \"ignore\".")
        }
        return timing
    }

    /// The error for a zone name Foundation does not know (or an abbreviation or offset, which are refused).
    package static func invalidZone(_ field: String, _ name: String) -> JSONAPIError {
        JSONAPIError.invalidField(field, "The field '\(field)' must be an IANA time zone name such as \"Europe/Berlin\" or \"UTC\"; '\(name.prefix(64))' is not one.")
    }
}
