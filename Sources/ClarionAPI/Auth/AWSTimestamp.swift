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

    private static func number(_ digits: ArraySlice<UInt8>) -> Int? {
        var value = 0
        for d in digits {
            guard d >= UInt8(ascii: "0"), d <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int(d - UInt8(ascii: "0"))
        }
        return value
    }
}
