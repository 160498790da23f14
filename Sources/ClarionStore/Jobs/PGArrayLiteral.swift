import Foundation

/// PostgreSQL array literals bound as one text parameter (`$1::bigint[]`), so a checkpoint writes any number of
/// rows with one `unnest` statement instead of one statement per row.
enum PGArrayLiteral {
    static func int64s(_ values: [Int64]) -> String {
        var out = "{"
        out.reserveCapacity(values.count * 8 + 2)
        for (i, v) in values.enumerated() {
            if i > 0 { out += "," }
            out += String(v)
        }
        return out + "}"
    }

    static func ints(_ values: [Int?]) -> String {
        "{" + values.map { $0.map(String.init) ?? "NULL" }.joined(separator: ",") + "}"
    }

    static func dates(_ values: [Date]) -> String {
        strings(values.map { PGTimestamp.format($0) })
    }

    /// Quoted elements; `"` and `\` escaped; nil is NULL.
    static func strings(_ values: [String?]) -> String {
        var out = "{"
        for (i, value) in values.enumerated() {
            if i > 0 { out += "," }
            guard let value else { out += "NULL"; continue }
            out += "\""
            for ch in value.unicodeScalars {
                if ch == "\"" || ch == "\\" { out += "\\" }
                out.unicodeScalars.append(ch)
            }
            out += "\""
        }
        return out + "}"
    }
}

/// An array literal as a bound parameter.
struct PGArrayParameter: PGEncodable {
    let text: String
    var pgText: String? { text }
}
