/// Calendar arithmetic in UTC on the proleptic Gregorian calendar, without Foundation's formatters (their cost and
/// their locale have no place on a per-request path): days since 1970-01-01 to and from a civil date
/// (H. Hinnant's `days_from_civil` and `civil_from_days`), and the IMF-fixdate of HTTP (RFC 9110, 5.6.7). Used by
/// SigV4's timestamps, `Retry-After`, and the log's timestamps.
public enum UTCTime {
    /// Days since 1970-01-01 of a civil date.
    public static func days(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The civil date of a day count since 1970-01-01.
    public static func civil(days z0: Int64) -> (year: Int64, month: Int64, day: Int64) {
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

    /// A day count and the second within that day, for any second since 1970 (negative ones too).
    public static func split(_ seconds: Int64) -> (days: Int64, secondOfDay: Int64) {
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        return (days, seconds - days * 86_400)
    }

    /// Seconds since 1970 of a civil time, nil when a field is out of range. Years are four digits, as every format
    /// read here writes them: a longer one (a `Date` header can hold any number) would overflow the day count.
    public static func seconds(year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int) -> Int64? {
        guard (0...9999).contains(year), (1...12).contains(month), (1...31).contains(day), (0...23).contains(hour),
              (0...59).contains(minute), (0...60).contains(second) else { return nil }
        return days(year: Int64(year), month: Int64(month), day: Int64(day)) * 86_400
            + Int64(hour * 3600 + minute * 60 + second)
    }

    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// Seconds since 1970 of an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the one HTTP date form senders
    /// generate today; the obsolete RFC 850 and asctime forms are not read (nil).
    public static func parseIMFFixdate(_ text: String) -> Int64? {
        let parts = text.split(separator: " ")
        guard parts.count == 6, parts[0].hasSuffix(","), parts[5] == "GMT", let day = Int(parts[1]),
              let monthIndex = months.firstIndex(of: String(parts[2])), let year = Int(parts[3]) else { return nil }
        let time = parts[4].split(separator: ":")
        guard time.count == 3, let hour = Int(time[0]), let minute = Int(time[1]), let second = Int(time[2]) else {
            return nil
        }
        return seconds(year: year, month: monthIndex + 1, day: day, hour: hour, minute: minute, second: second)
    }

    /// RFC 3339 in UTC with milliseconds (`2026-12-02T20:44:09.123Z`): the log's timestamps and SNS's `Timestamp`.
    public static func appendRFC3339Milliseconds(_ seconds: Int64, milliseconds: Int, to out: inout [UInt8]) {
        let (days, secondOfDay) = split(seconds)
        let (year, month, day) = civil(days: days)
        func digits(_ value: Int64, _ count: Int) {
            var divisor: Int64 = 1
            for _ in 1..<count { divisor *= 10 }
            while divisor > 0 {
                out.append(UInt8(ascii: "0") + UInt8(value / divisor % 10))
                divisor /= 10
            }
        }
        digits(year, 4); out.append(UInt8(ascii: "-"))
        digits(month, 2); out.append(UInt8(ascii: "-"))
        digits(day, 2); out.append(UInt8(ascii: "T"))
        digits(secondOfDay / 3600, 2); out.append(UInt8(ascii: ":"))
        digits(secondOfDay / 60 % 60, 2); out.append(UInt8(ascii: ":"))
        digits(secondOfDay % 60, 2); out.append(UInt8(ascii: "."))
        digits(Int64(milliseconds), 3); out.append(UInt8(ascii: "Z"))
    }
}
