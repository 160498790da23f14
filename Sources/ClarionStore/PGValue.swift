import ClarionCore
import Foundation

/// A value bound to a query parameter, in PostgreSQL's text format. Parameters are always bound,
/// never spliced into SQL.
public protocol PGEncodable: Sendable {
    var pgText: String? { get }
}

extension String: PGEncodable { public var pgText: String? { self } }
extension Int: PGEncodable { public var pgText: String? { String(self) } }
extension Int64: PGEncodable { public var pgText: String? { String(self) } }
extension Int32: PGEncodable { public var pgText: String? { String(self) } }
extension Double: PGEncodable { public var pgText: String? { String(self) } }
extension Bool: PGEncodable { public var pgText: String? { self ? "t" : "f" } }
extension UUID: PGEncodable { public var pgText: String? { lowercasedText } }
extension Date: PGEncodable {
    /// Seconds since the epoch with microseconds; the SQL casts with `to_timestamp($n)`-free form
    /// because PostgreSQL accepts ISO 8601 with a zone.
    public var pgText: String? { PGTimestamp.format(self) }
}
extension Optional: PGEncodable where Wrapped: PGEncodable {
    public var pgText: String? {
        switch self {
        case .none: return nil
        case .some(let value): return value.pgText
        }
    }
}

/// `bytea` in hex form.
public struct PGBytes: PGEncodable, Sendable {
    public let bytes: [UInt8]
    public init(_ bytes: [UInt8]) { self.bytes = bytes }
    public var pgText: String? {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = [0x5c, 0x78]  // \x
        out.reserveCapacity(2 + bytes.count * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// A JSON document bound to a `jsonb` parameter.
public struct PGJSON: PGEncodable, Sendable {
    public let text: String
    public init(text: String) { self.text = text }
    public init(_ object: [String: String]) {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        self.text = String(decoding: data, as: UTF8.self)
    }
    public var pgText: String? { text }
}

/// Text timestamps in UTC. Every connection runs with `TimeZone=UTC`, so the server's output is
/// `YYYY-MM-DD HH:MM:SS[.ffffff]+00`.
enum PGTimestamp {
    static func format(_ date: Date) -> String {
        let micros = Int64((date.timeIntervalSince1970 * 1_000_000).rounded())
        var seconds = micros / 1_000_000
        var fraction = micros % 1_000_000
        if fraction < 0 { fraction += 1_000_000; seconds -= 1 }
        var t = time_t(seconds)
        var parts = tm()
        gmtime_r(&t, &parts)
        func pad(_ v: Int32, _ width: Int) -> String {
            let s = String(v)
            return String(repeating: "0", count: max(0, width - s.count)) + s
        }
        let f = String(fraction)
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2)) "
            + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2))."
            + String(repeating: "0", count: 6 - f.count) + f + "+00"
    }

    /// Parses PostgreSQL's UTC text output. Returns nil for anything else.
    static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> Date? {
        // Minimum "YYYY-MM-DD HH:MM:SS+00" = 22 bytes.
        guard bytes.count >= 22 else { return nil }
        func number(_ from: Int, _ count: Int) -> Int? {
            var v = 0
            for i in from..<(from + count) {
                let c = bytes[i]
                guard c >= 0x30, c <= 0x39 else { return nil }
                v = v * 10 + Int(c - 0x30)
            }
            return v
        }
        guard let year = number(0, 4), let month = number(5, 2), let day = number(8, 2),
              let hour = number(11, 2), let minute = number(14, 2), let second = number(17, 2) else { return nil }
        var index = 19
        var micros = 0
        if index < bytes.count, bytes[index] == 0x2e {  // '.'
            index += 1
            var digits = 0
            while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 {
                if digits < 6 { micros = micros * 10 + Int(bytes[index] - 0x30) }
                digits += 1
                index += 1
            }
            for _ in digits..<6 where digits < 6 { micros *= 10 }
        }
        // Zone must be +00 (UTC session).
        guard index + 3 <= bytes.count, bytes[index] == 0x2b || bytes[index] == 0x2d,
              let zone = number(index + 1, 2), zone == 0 else { return nil }
        let days = Int(UTCTime.days(year: Int64(year), month: Int64(month), day: Int64(day)))
        let seconds = Double(days * 86_400 + hour * 3_600 + minute * 60 + second)
        return Date(timeIntervalSince1970: seconds + Double(micros) / 1_000_000)
    }
}
