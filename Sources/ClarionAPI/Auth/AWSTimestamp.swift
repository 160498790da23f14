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
        return epochSeconds(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
    }

    /// Parses an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the form HTTP clients send in `Date`.
    package static func parseHTTPDate(_ text: String) -> Int64? {
        let parts = text.split(separator: " ")
        guard parts.count == 6, parts[5] == "GMT" else { return nil }
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        guard let day = Int(parts[1]), let monthIndex = months.firstIndex(of: String(parts[2])),
              let year = Int(parts[3]) else { return nil }
        let time = parts[4].split(separator: ":")
        guard time.count == 3, let hour = Int(time[0]), let minute = Int(time[1]), let second = Int(time[2]) else {
            return nil
        }
        return epochSeconds(year: year, month: monthIndex + 1, day: day, hour: hour, minute: minute, second: second)
    }

    /// Formats seconds since 1970 as `YYYYMMDDTHHMMSSZ`.
    package static func formatBasic(_ seconds: Int64) -> String {
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        let (year, month, day) = civil(fromDays: days)
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
        guard let local = epochSeconds(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
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

    /// Years are four digits, as both formats write them: a longer one (a `Date` header can hold any number) would
    /// overflow the day count.
    private static func epochSeconds(year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int) -> Int64? {
        guard (0...9999).contains(year), (1...12).contains(month), (1...31).contains(day), (0...23).contains(hour),
              (0...59).contains(minute), (0...60).contains(second) else { return nil }
        return days(year: Int64(year), month: Int64(month), day: Int64(day)) * 86_400
            + Int64(hour * 3600 + minute * 60 + second)
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
    private static func days(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    private static func civil(fromDays z0: Int64) -> (Int64, Int64, Int64) {
        let z = z0 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
