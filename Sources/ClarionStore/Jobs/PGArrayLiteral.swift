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

    /// Quoted elements; `"` and `\` escaped; nil is NULL. Built as UTF-8 bytes (the publish path turns every
    /// column of a batch into one of these; scalar-by-scalar String appends were a visible cost there).
    static func strings(_ values: [String?]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(values.reduce(2) { $0 + ($1?.utf8.count ?? 4) + 3 })
        out.append(UInt8(ascii: "{"))
        for (i, element) in values.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            guard var element else { out.append(contentsOf: "NULL".utf8); continue }
            out.append(UInt8(ascii: "\""))
            element.withUTF8 { bytes in
                for byte in bytes {
                    if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { out.append(UInt8(ascii: "\\")) }
                    out.append(byte)
                }
            }
            out.append(UInt8(ascii: "\""))
        }
        out.append(UInt8(ascii: "}"))
        return String(decoding: out, as: UTF8.self)
    }
}

/// An array literal as a bound parameter.
struct PGArrayParameter: PGEncodable {
    let text: String
    var pgText: String? { text }
}

extension PGArrayParameter {
    /// A text array (`$1::text[]`, or any type PostgreSQL reads from text elements).
    init(_ values: [String?]) {
        text = PGArrayLiteral.strings(values)
    }
}
