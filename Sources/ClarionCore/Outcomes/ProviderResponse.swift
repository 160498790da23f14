import Foundation

/// A provider's HTTP answer, as the classifiers read it.
public struct ProviderResponse: Sendable, Hashable {
    public let status: Int
    /// Header fields with lower-cased names (HTTP/2 sends them lower-case already).
    public let headers: [String: String]
    public let body: [UInt8]

    public init(status: Int, headers: [(String, String)] = [], body: [UInt8] = []) {
        self.status = status
        var map: [String: String] = [:]
        for (name, value) in headers { map[name.lowercased()] = value }
        self.headers = map
        self.body = body
    }

    public init(status: Int, headers: [(String, String)] = [], body: String) {
        self.init(status: status, headers: headers, body: Array(body.utf8))
    }

    public subscript(header name: String) -> String? { headers[name.lowercased()] }

    /// `Retry-After` in seconds from `now`: an integer number of seconds or an HTTP date (D.3, RFC 9110 §10.2.3).
    /// A date in the past gives 0; an unreadable value gives nil.
    public func retryAfter(now: Date) -> TimeInterval? {
        guard let raw = self[header: "retry-after"]?.trimmingSpaces, !raw.isEmpty else { return nil }
        if let seconds = Int(raw) { return seconds >= 0 ? TimeInterval(seconds) : nil }
        guard let date = HTTPDate.parse(raw) else { return nil }
        return max(0, date.timeIntervalSince(now))
    }

    /// The body as a JSON object, if it is one.
    var jsonObject: JSONObject? {
        guard !body.isEmpty else { return nil }
        return (try? JSONValue.parse(bytes: body))?.objectValue
    }
}

/// IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the HTTP date format servers send today.
/// The obsolete RFC 850 and asctime forms are not read (a Retry-After in them is ignored, falling back to backoff).
enum HTTPDate {
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    static func parse(_ text: String) -> Date? {
        // "Sun, 06 Nov 1994 08:49:37 GMT". Four-digit years only: a longer one would overflow the day count.
        let parts = text.split(separator: " ")
        guard parts.count == 6, parts[0].hasSuffix(","), parts[5] == "GMT",
            let day = Int(parts[1]), (1...31).contains(day),
            let monthIndex = months.firstIndex(of: String(parts[2])),
            let year = Int(parts[3]), (1970...9999).contains(year)
        else { return nil }
        let time = parts[4].split(separator: ":")
        guard time.count == 3, let h = Int(time[0]), let m = Int(time[1]), let s = Int(time[2]),
            (0...23).contains(h), (0...59).contains(m), (0...60).contains(s)
        else { return nil }
        let days = daysFromCivil(year: year, month: monthIndex + 1, day: day)
        return Date(timeIntervalSince1970: TimeInterval(days * 86_400 + h * 3600 + m * 60 + s))
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }
}
