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

/// `Retry-After`'s HTTP-date form (IMF-fixdate only: one in an obsolete form is ignored, falling back to backoff).
enum HTTPDate {
    static func parse(_ text: String) -> Date? {
        UTCTime.parseIMFFixdate(text).map { Date(timeIntervalSince1970: TimeInterval($0)) }
    }
}
