import Foundation

/// A message's time to live for one platform, as SNS resolves it (docs/providers.md C.5).
///
/// Precedence: the message attribute, then the TTL in the platform payload, then the application's default,
/// then SNS's own default of four weeks. The TTL counts from publish time: when the push is handed to the
/// provider the time already spent (dwell) is subtracted, and a message whose TTL has run out is not sent.
public struct TimeToLive: Sendable, Hashable {
    public enum Source: Sendable, Hashable {
        case attribute
        case payload
        case applicationDefault
        /// Nothing was given; SNS's four weeks apply to Clarion's own bookkeeping (expiry, retries), and the
        /// provider request carries no TTL so the provider's default (also four weeks) applies.
        case snsDefault
    }

    /// SNS's default TTL: four weeks, which is also FCM's maximum (B.3).
    public static let snsDefaultSeconds = 2_419_200

    /// The longest TTL kept: a year. Longer ones (publishers may give any whole number) are kept as this. Nothing is
    /// lost, since every provider stores a push for about a month at most (APNs 30 days, FCM 28, ADM 31), and the
    /// expiry arithmetic stays in range: a TTL near `Int.max` overflows whole seconds after publish time.
    public static let maximumSeconds = 31_536_000

    public let seconds: Int
    public let source: Source

    public init(seconds: Int, source: Source) {
        self.seconds = min(seconds, Self.maximumSeconds)
        self.source = source
    }

    /// Applies the precedence rule.
    public static func resolve(attribute: Int?, payload: Int?, applicationDefault: Int?) -> TimeToLive {
        if let attribute { return TimeToLive(seconds: attribute, source: .attribute) }
        if let payload { return TimeToLive(seconds: payload, source: .payload) }
        if let applicationDefault { return TimeToLive(seconds: applicationDefault, source: .applicationDefault) }
        return TimeToLive(seconds: snsDefaultSeconds, source: .snsDefault)
    }

    /// True when the provider request should carry a TTL (anything the publisher or application chose).
    public var isExplicit: Bool { source != .snsDefault }

    /// The absolute end of the message's life: publish time + TTL.
    public func expiresAt(publishedAt: Date) -> Date { publishedAt.addingTimeInterval(TimeInterval(seconds)) }

    /// What is left of the TTL at hand-off time.
    public enum Remaining: Sendable, Hashable {
        /// Send with this many whole seconds to live (at least 1).
        case seconds(Int)
        /// A TTL of 0: deliver now or drop, where the provider gives 0 that meaning (APNs, FCM). Dwell does
        /// not expire it: it is handed over once, immediately.
        case nowOrNever
        /// The TTL ran out before hand-off (or is 0 for a provider without "now or never"): do not send.
        case expired
    }

    /// The remaining TTL at `now` (C.5). Whole seconds, rounded down; less than one second left is expired.
    /// - Parameter zeroMeansNowOrNever: true for APNs and FCM; for ADM a TTL of 0 drops the message (C.5).
    public func remaining(publishedAt: Date, now: Date, zeroMeansNowOrNever: Bool) -> Remaining {
        if seconds == 0 { return zeroMeansNowOrNever ? .nowOrNever : .expired }
        let dwell = max(0, now.timeIntervalSince(publishedAt))
        let left = (Double(seconds) - dwell).rounded(.down)
        return left >= 1 ? .seconds(Int(left)) : .expired
    }
}

/// Reads TTLs written inside payloads.
enum PayloadTTL {
    /// An integer number of seconds (`time_to_live`, `expiresAfter`); a numeric string is accepted too.
    static func seconds(_ value: JSONValue) -> Int? {
        switch value {
        case .number(let n):
            guard let i = n.intValue, i >= 0 else { return nil }
            return i
        case .string(let s):
            guard let i = Int(s), i >= 0 else { return nil }
            return i
        default:
            return nil
        }
    }

    /// A protobuf Duration string such as `"3600s"` or `"10023.32s"`, rounded down to seconds (B.3).
    static func durationSeconds(_ value: JSONValue) -> Int? {
        guard let text = value.stringValue, text.hasSuffix("s") else { return nil }
        let number = text.dropLast()
        guard !number.isEmpty, number.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }),
            number.filter({ $0 == "." }).count <= 1, number.first != ".", number.last != "."
        else { return nil }
        let whole = number.split(separator: ".", omittingEmptySubsequences: false)[0]
        return Int(whole)
    }

    /// The Duration string FCM takes.
    static func duration(_ seconds: Int) -> JSONValue { .string("\(seconds)s") }
}
