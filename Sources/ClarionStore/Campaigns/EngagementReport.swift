import ClarionCore
import Foundation

/// Delivery and open figures of one campaign or one message, as the API, `clarion report <id>` and its
/// `--json` show them.
public struct EngagementReport: Sendable, Hashable {
    public enum Subject: Sendable, Hashable {
        case campaign(CampaignRecord)
        case message(UUID)
    }

    /// Seconds from publish to first open.
    public struct Percentiles: Sendable, Hashable {
        public let p50: Double
        public let p90: Double
        public let p99: Double
    }

    /// Unique opens whose first open fell in the hour starting at `hour` (UTC).
    public struct HourBucket: Sendable, Hashable {
        public let hour: Date
        public let opens: Int64
    }

    /// One variant of a campaign with `variants` (A/B): its messages' figures.
    public struct VariantRow: Sendable, Hashable {
        public let index: Int
        public let name: String
        public let weight: Int
        public let messages: Int64
        /// Endpoints whose variant this is, held-out ones included.
        public let targeted: Int64
        public let sent: Int64
        public let accepted: Int64
        public let failed: Int64
        /// Endpoints of the holdout that would have had this variant: counted, not sent.
        public let heldOut: Int64
        public let uniqueOpens: Int64

        public var openRate: Double? { accepted > 0 ? Double(uniqueOpens) / Double(accepted) : nil }
    }

    public let subject: Subject
    public var messages: Int64 = 0
    public var firstPublishedAt: Date?
    /// Deliveries planned or attempted (the larger of the planned count and the counted targets).
    public var targeted: Int64 = 0
    public var sent: Int64 = 0
    public var accepted: Int64 = 0
    public var failed: Int64 = 0
    public var skipped: Int64 = 0
    public var expired: Int64 = 0
    /// Subscribers whose filter policy did not match (not sent, not a failure).
    public var filtered: Int64 = 0
    /// Endpoints of a campaign's holdout: counted, never sent (schema v21).
    public var heldOut: Int64 = 0
    /// Over the app's frequency cap: not sent (schema v22).
    public var capped: Int64 = 0
    /// Held by quiet hours and sent at their end (their outcomes are in `sent`, `accepted`, ... once sent).
    public var deferred: Int64 = 0
    /// Dropped by quiet hours (`"quiet_hours": "skip"`).
    public var quietSkipped: Int64 = 0
    /// Per variant, in variant order; empty for a campaign without variants.
    public var variants: [VariantRow] = []
    public var failuresByReason: [String: Int64] = [:]
    /// (message, endpoint) pairs opened at least once.
    public var uniqueOpens: Int64 = 0
    /// Every beacon received for them, repeats included.
    public var beacons: Int64 = 0
    public var timeToOpen: Percentiles?
    public var opensPerHour: [HourBucket] = []

    public init(subject: Subject) { self.subject = subject }

    /// Unique opens over accepted deliveries; nil before anything was accepted.
    public var openRate: Double? {
        accepted > 0 ? Double(uniqueOpens) / Double(accepted) : nil
    }

    /// What `clarion report <id>` prints: the table, or with `--json` the API's JSON document.
    public func rendered(json asJSON: Bool) -> String {
        asJSON ? json.jsonText + "\n" : table
    }

    // MARK: JSON

    public var json: JSONValue {
        func number(_ value: Int64) -> JSONValue { .number(JSONNumber(literal: String(value))!) }
        func decimal(_ value: Double, places: Int = 3) -> JSONValue {
            .number(JSONNumber(literal: String(format: "%.\(places)f", value)) ?? JSONNumber(0))
        }
        var object = JSONObject()
        switch subject {
        case .campaign(let campaign):
            object["campaign"] = .object(JSONObject([
                ("id", .string(campaign.externalID)), ("name", .string(campaign.name)),
                ("namespace", .string(campaign.namespace)),
            ]))
        case .message(let id):
            object["message"] = .object(JSONObject([("id", .string(id.lowercasedText))]))
        }
        object["messages"] = number(messages)
        object["first_published_at"] = firstPublishedAt.map { .string(Self.timestamp($0)) } ?? .null
        object["deliveries"] = .object(JSONObject([
            ("targeted", number(targeted)), ("sent", number(sent)), ("accepted", number(accepted)),
            ("failed", number(failed)), ("skipped", number(skipped)), ("expired", number(expired)),
            ("filtered", number(filtered)), ("held_out", number(heldOut)), ("capped", number(capped)),
            ("deferred", number(deferred)), ("quiet_skipped", number(quietSkipped)),
        ]))
        object["variants"] = .array(variants.map { v in
            .object(JSONObject([
                ("name", .string(v.name)), ("index", .number(JSONNumber(v.index))), ("weight", .number(JSONNumber(v.weight))),
                ("messages", number(v.messages)), ("targeted", number(v.targeted)), ("sent", number(v.sent)),
                ("accepted", number(v.accepted)), ("failed", number(v.failed)), ("held_out", number(v.heldOut)),
                ("opens", number(v.uniqueOpens)), ("open_rate", v.openRate.map { decimal($0, places: 4) } ?? .null),
            ]))
        })
        object["failures_by_reason"] = .object(JSONObject(failuresByReason.keys.sorted().map { ($0, number(failuresByReason[$0]!)) }))
        object["opens"] = .object(JSONObject([
            ("unique", number(uniqueOpens)), ("beacons", number(beacons)),
            ("rate", openRate.map { decimal($0, places: 4) } ?? .null),
        ]))
        object["time_to_open_seconds"] = timeToOpen.map { p in
            .object(JSONObject([("p50", decimal(p.p50)), ("p90", decimal(p.p90)), ("p99", decimal(p.p99))]))
        } ?? .null
        object["opens_per_hour"] = .array(opensPerHour.map { bucket in
            .object(JSONObject([("hour", .string(Self.timestamp(bucket.hour))), ("opens", number(bucket.opens))]))
        })
        return .object(object)
    }

    // MARK: Table

    /// A plain-text table for a terminal: one figure per line, then failures and opens per hour.
    public var table: String {
        var rows: [(String, String)] = []
        switch subject {
        case .campaign(let campaign):
            rows.append(("Campaign", "\(campaign.externalID) (\(campaign.name))"))
            rows.append(("Namespace", campaign.namespace))
            rows.append(("Messages", String(messages)))
        case .message(let id):
            rows.append(("Message", id.lowercasedText))
        }
        if let firstPublishedAt { rows.append(("Published", Self.timestamp(firstPublishedAt))) }
        rows += [("Targeted", String(targeted)), ("Sent", String(sent)), ("Accepted", String(accepted)),
                 ("Failed", String(failed))]
        for reason in failuresByReason.keys.sorted() { rows.append(("  " + reason, String(failuresByReason[reason]!))) }
        if skipped > 0 { rows.append(("Skipped", String(skipped))) }
        if expired > 0 { rows.append(("Expired", String(expired))) }
        if filtered > 0 { rows.append(("Filtered", String(filtered))) }
        if heldOut > 0 { rows.append(("Held out", String(heldOut))) }
        if capped > 0 { rows.append(("Capped", String(capped))) }
        if deferred > 0 { rows.append(("Deferred", String(deferred))) }
        if quietSkipped > 0 { rows.append(("Quiet-hours skipped", String(quietSkipped))) }
        rows.append(("Unique opens", String(uniqueOpens)))
        rows.append(("Open rate", openRate.map { String(format: "%.1f%%", $0 * 100) } ?? "-"))
        if let p = timeToOpen {
            rows.append(("Time to open p50", Self.duration(p.p50)))
            rows.append(("Time to open p90", Self.duration(p.p90)))
            rows.append(("Time to open p99", Self.duration(p.p99)))
        }
        let width = rows.map(\.0.count).max() ?? 0
        var out = rows.map { $0.0.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + $0.1 }
        if !variants.isEmpty {
            out.append("")
            out.append("Variant  Weight  Sent  Accepted  Held out  Opens  Open rate")
            for v in variants {
                let rate = v.openRate.map { String(format: "%.1f%%", $0 * 100) } ?? "-"
                out.append("\(v.name)  \(v.weight)  \(v.sent)  \(v.accepted)  \(v.heldOut)  \(v.uniqueOpens)  \(rate)")
            }
        }
        if !opensPerHour.isEmpty {
            out.append("")
            out.append("Opens per hour (UTC)")
            for bucket in opensPerHour { out.append("  \(Self.timestamp(bucket.hour))  \(bucket.opens)") }
        }
        return out.joined(separator: "\n") + "\n"
    }

    static func timestamp(_ date: Date) -> String {
        let seconds = Int64(date.timeIntervalSince1970.rounded(.down))
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        return String(format: "%04d-%02d-%02dT%02d:%02d:%02dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1,
                      Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec))
    }

    static func duration(_ seconds: Double) -> String {
        if seconds < 60 { return String(format: "%.1fs", seconds) }
        if seconds < 3600 { return String(format: "%.1fmin", seconds / 60) }
        return String(format: "%.1fh", seconds / 3600)
    }
}
