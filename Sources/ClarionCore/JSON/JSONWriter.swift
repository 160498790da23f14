extension JSONValue {
    /// Compact JSON (no whitespace), members in their stored order, number literals as stored,
    /// non-ASCII written as UTF-8 and only `"`, `\` and control characters escaped.
    public func encoded() -> [UInt8] {
        var out: [UInt8] = []
        JSONWriter.write(self, sortingKeys: false, to: &out)
        return out
    }

    /// Compact JSON with every object's members ordered by their keys' UTF-8 bytes: one text for one value
    /// whatever order it was built in (JWT headers and claims, documents compared byte for byte).
    public func encodedSortingKeys() -> [UInt8] {
        var out: [UInt8] = []
        JSONWriter.write(self, sortingKeys: true, to: &out)
        return out
    }

    /// `encoded()` as a `String`.
    public var jsonText: String { String(decoding: encoded(), as: UTF8.self) }
}

extension JSONObject {
    public func encoded() -> [UInt8] { JSONValue.object(self).encoded() }
    public func encodedSortingKeys() -> [UInt8] { JSONValue.object(self).encodedSortingKeys() }
    public var jsonText: String { JSONValue.object(self).jsonText }
}

enum JSONWriter {
    static func write(_ value: JSONValue, sortingKeys: Bool, to out: inout [UInt8]) {
        switch value {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .number(let n): out.append(contentsOf: n.literal.utf8)
        case .string(let s): writeString(s, to: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                write(item, sortingKeys: sortingKeys, to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let object):
            out.append(UInt8(ascii: "{"))
            let members = sortingKeys
                ? object.members.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) } : object.members
            for (i, member) in members.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                writeString(member.key, to: &out)
                out.append(UInt8(ascii: ":"))
                write(member.value, sortingKeys: sortingKeys, to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    static func writeString(_ s: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        writeEscapedContents(s, to: &out)
        out.append(UInt8(ascii: "\""))
    }

    /// The characters of a JSON string without the quotes: `"`, `\\` and control characters escaped as RFC 8259
    /// requires, and U+2028 / U+2029 as `\u2028` / `\u2029` (legal in JSON, line ends in JavaScript), so a
    /// document can be placed in a script or a log line as is. Every JSON writer in the package escapes here.
    static func writeEscapedContents(_ s: String, to out: inout [UInt8]) {
        if needsNoEscaping(s) {
            out.append(contentsOf: s.utf8)
            return
        }
        let hex: StaticString = "0123456789abcdef"
        var text = s  // withUTF8 reads a native string in place (no copy of its bytes)
        text.withUTF8 { bytes in
            var i = 0
            while i < bytes.count {
                let b = bytes[i]
                switch b {
                case UInt8(ascii: "\""): out.append(0x5C); out.append(0x22)
                case UInt8(ascii: "\\"): out.append(0x5C); out.append(0x5C)
                case 0x0A: out.append(0x5C); out.append(UInt8(ascii: "n"))
                case 0x0D: out.append(0x5C); out.append(UInt8(ascii: "r"))
                case 0x09: out.append(0x5C); out.append(UInt8(ascii: "t"))
                case 0x08: out.append(0x5C); out.append(UInt8(ascii: "b"))
                case 0x0C: out.append(0x5C); out.append(UInt8(ascii: "f"))
                case 0x00..<0x20:
                    out.append(contentsOf: "\\u00".utf8)
                    out.append(hex.utf8Start[Int(b >> 4)])
                    out.append(hex.utf8Start[Int(b & 0x0F)])
                case 0xE2 where i + 2 < bytes.count && bytes[i + 1] == 0x80 && (bytes[i + 2] == 0xA8 || bytes[i + 2] == 0xA9):
                    out.append(contentsOf: (bytes[i + 2] == 0xA8 ? "\\u2028" : "\\u2029").utf8)
                    i += 2
                default: out.append(b)
                }
                i += 1
            }
        }
    }

    /// True when `s` can be copied into a JSON string without escaping (the common case for tokens and ids).
    static func needsNoEscaping(_ s: String) -> Bool {
        !s.utf8Contains { $0 < 0x20 || $0 == 0x22 || $0 == 0x5C || $0 == 0xE2 }
    }
}
