import Foundation

/// A wall-clock time of day, "HH:MM" (24-hour, two digits each): `send_at_local` and quiet hours.
public struct LocalClockTime: Sendable, Hashable, CustomStringConvertible {
    /// Minutes after local midnight, 0...1439.
    public let minutes: Int

    public init?(minutes: Int) {
        guard (0..<1440).contains(minutes) else { return nil }
        self.minutes = minutes
    }

    /// "HH:MM" exactly: 00:00 to 23:59.
    public init?(_ text: String) {
        let bytes = Array(text.utf8)
        guard bytes.count == 5, bytes[2] == UInt8(ascii: ":") else { return nil }
        func digit(_ i: Int) -> Int? {
            let b = bytes[i]
            return (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b) ? Int(b - UInt8(ascii: "0")) : nil
        }
        guard let h1 = digit(0), let h2 = digit(1), let m1 = digit(3), let m2 = digit(4) else { return nil }
        let hour = h1 * 10 + h2, minute = m1 * 10 + m2
        guard hour < 24, minute < 60 else { return nil }
        minutes = hour * 60 + minute
    }

    public var hour: Int { minutes / 60 }
    public var minute: Int { minutes % 60 }
    public var description: String {
        (hour < 10 ? "0" : "") + String(hour) + ":" + (minute < 10 ? "0" : "") + String(minute)
    }

    /// The first instant strictly after `after` whose wall clock in `zone` reads this time. When that time is
    /// already past today (or is now), it is tomorrow's. On a day whose clock skips it (a DST gap: 02:30 on the
    /// spring-forward night), the first instant after the gap; on a day it occurs twice (fall back), the first.
    public func next(after: Date, in zone: TimeZone) -> Date {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let wanted = DateComponents(hour: hour, minute: minute, second: 0)
        return calendar.nextDate(after: after, matching: wanted, matchingPolicy: .nextTime, repeatedTimePolicy: .first,
                                 direction: .forward) ?? after.addingTimeInterval(86_400)
    }

    /// Minutes after local midnight at `instant` in `zone`.
    public static func minutesOfDay(_ instant: Date, in zone: TimeZone) -> Int {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let parts = calendar.dateComponents([.hour, .minute], from: instant)
        return (parts.hour ?? 0) * 60 + (parts.minute ?? 0)
    }
}

/// IANA zone names as the API takes them: Foundation's `TimeZone(identifier:)` decides (it knows the system's
/// tz database). Abbreviations ("EST") and offsets ("+01:00") are refused even where Foundation would read them:
/// an abbreviation is ambiguous and a fixed offset ignores daylight saving, which is what a local time is for.
public enum TimeZoneName {
    public static let maximumLength = 64

    public static func zone(_ name: String) -> TimeZone? {
        guard (1...maximumLength).contains(name.utf8.count), name.contains("/") || name == "UTC",
              let zone = TimeZone(identifier: name) else { return nil }
        return zone
    }
}

/// Quiet hours of a mobile app: from `start` (inclusive) to `end` (exclusive) in local time; `start > end` spans
/// midnight (22:00 to 08:00). Pure: the instant and zone come in.
public struct QuietHours: Sendable, Hashable {
    public let start: LocalClockTime
    public let end: LocalClockTime

    public init?(start: LocalClockTime, end: LocalClockTime) {
        guard start != end else { return nil }
        self.start = start
        self.end = end
    }

    /// Whether `instant` falls in the quiet hours in `zone`.
    public func contains(_ instant: Date, in zone: TimeZone) -> Bool {
        let now = LocalClockTime.minutesOfDay(instant, in: zone)
        return start.minutes < end.minutes
            ? (start.minutes <= now && now < end.minutes)
            : (now >= start.minutes || now < end.minutes)
    }

    /// When a delivery held at `instant` may go: nil when `instant` is not quiet, else the next end of the quiet
    /// hours in `zone`.
    public func release(at instant: Date, in zone: TimeZone) -> Date? {
        guard contains(instant, in: zone) else { return nil }
        return end.next(after: instant, in: zone)
    }
}

/// What a campaign (or an opted-in publish) asks of its fan-out about time, carried in the reserved attribute
/// `Clarion.Timing` of each stored message (only Clarion writes it: a publish naming it is refused), so every node
/// reads it with the message:
///
///     {"zone": "Asia/Tokyo", "fallback": "Europe/Berlin", "local": "09:00", "cap": true, "quiet": "defer"}
///
/// - `zone`: a `send_at_local` message serves only the endpoints whose zone (their own, else `fallback`) is this
///   one; the publish stores one such message per distinct zone, each scheduled at that zone's local time.
/// - `fallback`: the zone of endpoints without one (also for quiet hours).
/// - `cap`: deliveries count against, and are refused by, the app's frequency cap.
/// - `quiet`: what quiet hours do to a delivery: `defer` (sent at their end) or `skip` (not sent); absent: ignored.
public struct CampaignTiming: Sendable, Hashable {
    public static let attributeName = "Clarion.Timing"

    public enum QuietMode: String, Sendable, Hashable {
        case defer_ = "defer"
        case skip
    }

    public var zone: String?
    public var fallback: String?
    public var local: LocalClockTime?
    public var cap: Bool
    public var quiet: QuietMode?

    public init(zone: String? = nil, fallback: String? = nil, local: LocalClockTime? = nil, cap: Bool = false,
                quiet: QuietMode? = nil) {
        self.zone = zone
        self.fallback = fallback
        self.local = local
        self.cap = cap
        self.quiet = quiet
    }

    /// Nothing asked: no attribute is stored.
    public var isEmpty: Bool { zone == nil && fallback == nil && !cap && quiet == nil }

    /// The zone of an endpoint whose own is `endpointZone` (nil or unknown: the fallback, else UTC).
    public func effectiveZoneName(_ endpointZone: String?) -> String {
        if let endpointZone, TimeZoneName.zone(endpointZone) != nil { return endpointZone }
        return fallback ?? "UTC"
    }

    public func attributeValue() -> MessageAttributeValue {
        var object = JSONObject()
        if let zone { object["zone"] = .string(zone) }
        if let fallback { object["fallback"] = .string(fallback) }
        if let local { object["local"] = .string(local.description) }
        if cap { object["cap"] = .bool(true) }
        if let quiet { object["quiet"] = .string(quiet.rawValue) }
        return .string(JSONValue.object(object).jsonText)
    }

    /// Reads the attribute; nil when absent or unreadable (then the message is sent as an ordinary publish).
    public static func parse(_ value: MessageAttributeValue?) -> CampaignTiming? {
        guard let text = value?.stringValue,
              let object = (try? JSONValue.parse(bytes: Array(text.utf8)))?.objectValue else { return nil }
        var timing = CampaignTiming()
        timing.zone = object["zone"]?.stringValue.flatMap { TimeZoneName.zone($0) != nil ? $0 : nil }
        timing.fallback = object["fallback"]?.stringValue.flatMap { TimeZoneName.zone($0) != nil ? $0 : nil }
        timing.local = object["local"]?.stringValue.flatMap { LocalClockTime($0) }
        timing.cap = object["cap"] == .bool(true)
        timing.quiet = object["quiet"]?.stringValue.flatMap(QuietMode.init(rawValue:))
        return timing
    }
}

/// A mobile app's frequency cap: at most `max` capped-kind pushes per endpoint in any `windowSeconds`.
public struct FrequencyCap: Sendable, Hashable {
    public static let maximumRange = 1...1000
    public static let windowRange = 60...(30 * 86_400)

    public let max: Int
    public let windowSeconds: Int

    public init?(max: Int, windowSeconds: Int) {
        guard Self.maximumRange.contains(max), Self.windowRange.contains(windowSeconds) else { return nil }
        self.max = max
        self.windowSeconds = windowSeconds
    }
}
