import ClarionCore

/// The ISO 8601 basic timestamps SigV4 uses (`20150830T123600Z`), and RFC 1123 `Date` headers, to and from
/// seconds since 1970 in UTC. Hand-written because it is on every signed request and must not depend on the
/// locale or on DateFormatter's cost.
package enum AWSTimestamp {
    /// Parses `YYYYMMDDTHHMMSSZ`.
    package static func parseBasic(_ text: String) -> Int64? {
        let b = Array(text.utf8)
        guard b.count == 16, b[8] == UInt8(ascii: "T"), b[15] == UInt8(ascii: "Z") else { return nil }
        guard let year = number(b[0..<4]), let month = number(b[4..<6]), let day = number(b[6..<8]),
              let hour = number(b[9..<11]), let minute = number(b[11..<13]), let second = number(b[13..<15])
        else { return nil }
        return UTCTime.seconds(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
    }

    /// Parses an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the form HTTP clients send in `Date`.
    package static func parseHTTPDate(_ text: String) -> Int64? { UTCTime.parseIMFFixdate(text) }

    /// Formats seconds since 1970 as `YYYYMMDDTHHMMSSZ`.
    package static func formatBasic(_ seconds: Int64) -> String {
        let (days, secondOfDay) = UTCTime.split(seconds)
        let (year, month, day) = UTCTime.civil(days: days)
        func pad(_ value: Int64, _ width: Int) -> String {
            let s = String(value)
            return String(repeating: "0", count: max(0, width - s.count)) + s
        }
        return pad(year, 4) + pad(month, 2) + pad(day, 2) + "T" + pad(secondOfDay / 3600, 2)
            + pad(secondOfDay / 60 % 60, 2) + pad(secondOfDay % 60, 2) + "Z"
    }

    /// Parses an RFC 3339 `date-time` (section 5.6): `YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM|-HH:MM)`, `T` and `Z`
    /// in either case (section 5.6, NOTE). The offset is required: a local time without one names no instant.
    /// Returns seconds since 1970 in UTC (the fraction kept), or nil. Used for `send_at` (scheduled publishes).
    package static func parseRFC3339(_ text: String) -> Double? {
        let b = Array(text.utf8)
        guard b.count >= 20, b[4] == UInt8(ascii: "-"), b[7] == UInt8(ascii: "-"),
              b[10] == UInt8(ascii: "T") || b[10] == UInt8(ascii: "t"), b[13] == UInt8(ascii: ":"),
              b[16] == UInt8(ascii: ":") else { return nil }
        guard let year = number(b[0..<4]), let month = number(b[5..<7]), let day = number(b[8..<10]),
              let hour = number(b[11..<13]), let minute = number(b[14..<16]), let second = number(b[17..<19])
        else { return nil }
        // date-mday: 01-28, 01-29, 01-30 or 01-31 by month and year (RFC 3339 section 5.7).
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let monthDays = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        guard (1...12).contains(month), day >= 1, day <= monthDays[month - 1] else { return nil }
        var i = 19
        var fraction = 0.0
        if b[i] == UInt8(ascii: ".") {
            i += 1
            var scale = 0.1
            let start = i
            while i < b.count, b[i] >= UInt8(ascii: "0"), b[i] <= UInt8(ascii: "9") {
                fraction += Double(b[i] - UInt8(ascii: "0")) * scale
                scale /= 10
                i += 1
            }
            guard i > start else { return nil }
        }
        guard i < b.count else { return nil }
        var offset = 0
        switch b[i] {
        case UInt8(ascii: "Z"), UInt8(ascii: "z"):
            guard i + 1 == b.count else { return nil }
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            guard i + 6 == b.count, b[i + 3] == UInt8(ascii: ":"), let hours = number(b[(i + 1)..<(i + 3)]),
                  let minutes = number(b[(i + 4)..<(i + 6)]), hours <= 23, minutes <= 59 else { return nil }
            offset = (hours * 60 + minutes) * 60 * (b[i] == UInt8(ascii: "-") ? -1 : 1)
        default:
            return nil
        }
        guard let local = UTCTime.seconds(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
        else { return nil }
        // The local time minus its offset is UTC: 18:00+01:00 is 17:00Z.
        return Double(local - Int64(offset)) + fraction
    }

    private static func number(_ digits: ArraySlice<UInt8>) -> Int? {
        var value = 0
        for d in digits {
            guard d >= UInt8(ascii: "0"), d <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int(d - UInt8(ascii: "0"))
        }
        return value
    }
}
