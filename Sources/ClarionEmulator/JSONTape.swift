/// A lean JSON parse for the FCM send hot path: one flat array of entries pointing into the body
/// bytes, no `String` and no dictionary per value. Keys and strings are compared as bytes; a `String`
/// is made only for the few values a check needs (the target) and for error messages.
///
/// Validates the full RFC 8259 grammar, UTF-8 in strings and escape syntax; nesting is limited to 64.
/// Why not `JSONValue` (ClarionCore's tree): building dictionaries and strings for every member costs more
/// than the rest of the request.
package struct JSONTape {
    package enum Kind: UInt8 {
        case object, array, string, number, `true`, `false`, null
    }

    struct Entry {
        var kind: Kind
        /// Strings: the content between the quotes; others: the raw token; containers: `{`...`}`.
        var start: Int32
        var end: Int32
        var escaped = false
        /// For object members: the key's content range.
        var keyStart: Int32 = -1
        var keyEnd: Int32 = -1
        var keyEscaped = false
        var firstChild: Int32 = -1
        var next: Int32 = -1
    }

    let bytes: [UInt8]
    private(set) var entries: [Entry] = []
    package static let maximumDepth = 64

    /// nil when `bytes` is not exactly one valid JSON document.
    package init?(_ bytes: [UInt8]) {
        self.bytes = bytes
        entries.reserveCapacity(32)
        var parser = Parser(bytes: bytes)
        guard let root = parser.parseValue(into: &entries, depth: 0) else { return nil }
        parser.skipWhitespace()
        guard parser.index == bytes.count, root == 0 else { return nil }
    }

    package var root: Int { 0 }

    package func kind(_ index: Int) -> Kind { entries[index].kind }

    /// Children of a container, in document order.
    package func children(_ index: Int) -> ChildSequence { ChildSequence(entries: entries, first: entries[index].firstChild) }

    package struct ChildSequence: Sequence, IteratorProtocol {
        let entries: [Entry]
        var current: Int32
        init(entries: [Entry], first: Int32) {
            self.entries = entries
            self.current = first
        }
        package mutating func next() -> Int? {
            guard current >= 0 else { return nil }
            defer { current = entries[Int(current)].next }
            return Int(current)
        }
    }

    /// The member of `object` whose key equals `name` (bytes of an unescaped key).
    func member(_ object: Int, _ name: [UInt8]) -> Int? {
        for child in children(object) where keyEquals(child, name) { return child }
        return nil
    }

    func keyEquals(_ index: Int, _ name: [UInt8]) -> Bool {
        let entry = entries[index]
        if entry.keyEscaped { return Array(key(index).utf8) == name }
        let length = Int(entry.keyEnd - entry.keyStart)
        guard length == name.count else { return false }
        let start = Int(entry.keyStart)
        for offset in 0..<length where bytes[start + offset] != name[offset] { return false }
        return true
    }

    func keyHasPrefix(_ index: Int, _ prefix: [UInt8]) -> Bool {
        let entry = entries[index]
        if entry.keyEscaped { return key(index).utf8.starts(with: prefix) }
        guard Int(entry.keyEnd - entry.keyStart) >= prefix.count else { return false }
        let start = Int(entry.keyStart)
        for offset in 0..<prefix.count where bytes[start + offset] != prefix[offset] { return false }
        return true
    }

    /// The member's key, unescaped.
    package func key(_ index: Int) -> String {
        let entry = entries[index]
        return Self.decode(bytes[Int(entry.keyStart)..<Int(entry.keyEnd)], escaped: entry.keyEscaped)
    }

    /// A string value, unescaped (nil when the entry is not a string).
    package func string(_ index: Int) -> String? {
        let entry = entries[index]
        guard entry.kind == .string else { return nil }
        return Self.decode(bytes[Int(entry.start)..<Int(entry.end)], escaped: entry.escaped)
    }

    /// UTF-8 length of a string value once unescaped.
    package func stringLength(_ index: Int) -> Int {
        let entry = entries[index]
        return entry.escaped ? string(index)!.utf8.count : Int(entry.end - entry.start)
    }

    /// The value as written in the body (strings with their quotes), for error messages.
    package func literal(_ index: Int) -> String {
        let entry = entries[index]
        let range = entry.kind == .string ? Int(entry.start) - 1..<Int(entry.end) + 1 : Int(entry.start)..<Int(entry.end)
        return String(decoding: bytes[range], as: UTF8.self)
    }

    /// The raw token length (numbers).
    func rawLength(_ index: Int) -> Int { Int(entries[index].end - entries[index].start) }

    func stringEqualsIgnoringASCIICase(_ index: Int, _ upper: StaticString) -> Bool {
        let entry = entries[index]
        guard entry.kind == .string, !entry.escaped, Int(entry.end - entry.start) == upper.utf8CodeUnitCount else { return false }
        return upper.withUTF8Buffer { expected in
            for offset in 0..<expected.count {
                var byte = bytes[Int(entry.start) + offset]
                if (0x61...0x7a).contains(byte) { byte -= 0x20 }
                if byte != expected[offset] { return false }
            }
            return true
        }
    }

    private static func decode(_ slice: ArraySlice<UInt8>, escaped: Bool) -> String {
        guard escaped else { return String(decoding: slice, as: UTF8.self) }
        // Re-parse the quoted form with the strict parser, which handles every escape.
        var quoted: [UInt8] = [0x22]
        quoted.append(contentsOf: slice)
        quoted.append(0x22)
        var parser = Parser(bytes: quoted)
        return parser.decodeString() ?? ""
    }

    // MARK: - Parser

    struct Parser {
        let bytes: [UInt8]
        var index = 0

        init(bytes: [UInt8]) { self.bytes = bytes }

        mutating func skipWhitespace() {
            while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x0a || bytes[index] == 0x0d || bytes[index] == 0x09 {
                index += 1
            }
        }

        /// Parses one value, appending its entry (and its descendants') to `entries`; returns its index.
        mutating func parseValue(into entries: inout [Entry], depth: Int) -> Int? {
            skipWhitespace()
            guard index < bytes.count else { return nil }
            let start = index
            switch bytes[index] {
            case UInt8(ascii: "{"):
                guard depth < JSONTape.maximumDepth else { return nil }
                let me = entries.count
                entries.append(Entry(kind: .object, start: Int32(start), end: Int32(start)))
                index += 1
                skipWhitespace()
                var previous: Int32 = -1
                if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                    index += 1
                } else {
                    while true {
                        skipWhitespace()
                        guard index < bytes.count, bytes[index] == 0x22 else { return nil }
                        guard let (keyStart, keyEnd, keyEscaped) = scanString() else { return nil }
                        skipWhitespace()
                        guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { return nil }
                        index += 1
                        guard let child = parseValue(into: &entries, depth: depth + 1) else { return nil }
                        entries[child].keyStart = Int32(keyStart)
                        entries[child].keyEnd = Int32(keyEnd)
                        entries[child].keyEscaped = keyEscaped
                        if previous < 0 { entries[me].firstChild = Int32(child) } else { entries[Int(previous)].next = Int32(child) }
                        previous = Int32(child)
                        skipWhitespace()
                        guard index < bytes.count else { return nil }
                        if bytes[index] == UInt8(ascii: ",") {
                            index += 1
                        } else if bytes[index] == UInt8(ascii: "}") {
                            index += 1
                            break
                        } else {
                            return nil
                        }
                    }
                }
                entries[me].end = Int32(index)
                return me
            case UInt8(ascii: "["):
                guard depth < JSONTape.maximumDepth else { return nil }
                let me = entries.count
                entries.append(Entry(kind: .array, start: Int32(start), end: Int32(start)))
                index += 1
                skipWhitespace()
                var previous: Int32 = -1
                if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                    index += 1
                } else {
                    while true {
                        guard let child = parseValue(into: &entries, depth: depth + 1) else { return nil }
                        if previous < 0 { entries[me].firstChild = Int32(child) } else { entries[Int(previous)].next = Int32(child) }
                        previous = Int32(child)
                        skipWhitespace()
                        guard index < bytes.count else { return nil }
                        if bytes[index] == UInt8(ascii: ",") {
                            index += 1
                        } else if bytes[index] == UInt8(ascii: "]") {
                            index += 1
                            break
                        } else {
                            return nil
                        }
                    }
                }
                entries[me].end = Int32(index)
                return me
            case 0x22:
                guard let (contentStart, contentEnd, escaped) = scanString() else { return nil }
                entries.append(Entry(kind: .string, start: Int32(contentStart), end: Int32(contentEnd), escaped: escaped))
                return entries.count - 1
            case UInt8(ascii: "t"):
                guard literal("true") else { return nil }
                entries.append(Entry(kind: .true, start: Int32(start), end: Int32(index)))
                return entries.count - 1
            case UInt8(ascii: "f"):
                guard literal("false") else { return nil }
                entries.append(Entry(kind: .false, start: Int32(start), end: Int32(index)))
                return entries.count - 1
            case UInt8(ascii: "n"):
                guard literal("null") else { return nil }
                entries.append(Entry(kind: .null, start: Int32(start), end: Int32(index)))
                return entries.count - 1
            default:
                guard scanNumber() else { return nil }
                entries.append(Entry(kind: .number, start: Int32(start), end: Int32(index)))
                return entries.count - 1
            }
        }

        mutating func literal(_ text: StaticString) -> Bool {
            let count = text.utf8CodeUnitCount
            guard index + count <= bytes.count else { return false }
            let matches = text.withUTF8Buffer { expected in
                (0..<count).allSatisfy { bytes[index + $0] == expected[$0] }
            }
            if matches { index += count }
            return matches
        }

        /// Scans a string literal at the opening quote: its content range and whether it has escapes.
        /// Checks escape syntax, control characters and (for non-ASCII content) UTF-8.
        mutating func scanString() -> (Int, Int, Bool)? {
            index += 1
            let start = index
            var escaped = false
            var ascii = true
            while index < bytes.count {
                let byte = bytes[index]
                if byte == 0x22 {
                    let end = index
                    index += 1
                    if !ascii, String(validating: bytes[start..<end], as: UTF8.self) == nil { return nil }
                    if escaped {
                        // Validate escapes (and surrogate pairing) by decoding once.
                        var check = Parser(bytes: Array(bytes[(start - 1)...end]))
                        guard check.decodeString() != nil else { return nil }
                    }
                    return (start, end, escaped)
                }
                if byte == 0x5c {
                    escaped = true
                    index += 2
                    continue
                }
                if byte < 0x20 { return nil }
                if byte >= 0x80 { ascii = false }
                index += 1
            }
            return nil
        }

        /// Decodes a quoted string (escapes included) starting at `index`.
        mutating func decodeString() -> String? {
            guard index < bytes.count, bytes[index] == 0x22 else { return nil }
            index += 1
            var out: [UInt8] = []
            while index < bytes.count {
                let byte = bytes[index]
                index += 1
                switch byte {
                case 0x22:
                    return String(validating: out, as: UTF8.self)
                case 0x5c:
                    guard index < bytes.count else { return nil }
                    let escape = bytes[index]
                    index += 1
                    switch escape {
                    case 0x22, 0x5c, 0x2f: out.append(escape)
                    case UInt8(ascii: "b"): out.append(0x08)
                    case UInt8(ascii: "f"): out.append(0x0c)
                    case UInt8(ascii: "n"): out.append(0x0a)
                    case UInt8(ascii: "r"): out.append(0x0d)
                    case UInt8(ascii: "t"): out.append(0x09)
                    case UInt8(ascii: "u"):
                        guard var scalar = hex4() else { return nil }
                        if (0xd800..<0xdc00).contains(scalar) {
                            guard index + 1 < bytes.count, bytes[index] == 0x5c, bytes[index + 1] == UInt8(ascii: "u") else { return nil }
                            index += 2
                            guard let low = hex4(), (0xdc00..<0xe000).contains(low) else { return nil }
                            scalar = 0x10000 + ((scalar - 0xd800) << 10) + (low - 0xdc00)
                        } else if (0xdc00..<0xe000).contains(scalar) {
                            return nil
                        }
                        guard let unicode = Unicode.Scalar(scalar) else { return nil }
                        out.append(contentsOf: Array(String(Character(unicode)).utf8))
                    default:
                        return nil
                    }
                default:
                    if byte < 0x20 { return nil }
                    out.append(byte)
                }
            }
            return nil
        }

        mutating func hex4() -> UInt32? {
            guard index + 4 <= bytes.count else { return nil }
            var value: UInt32 = 0
            for _ in 0..<4 {
                let byte = bytes[index]
                let digit: UInt32
                switch byte {
                case 0x30...0x39: digit = UInt32(byte - 0x30)
                case 0x61...0x66: digit = UInt32(byte - 0x61 + 10)
                case 0x41...0x46: digit = UInt32(byte - 0x41 + 10)
                default: return nil
                }
                value = value << 4 | digit
                index += 1
            }
            return value
        }

        /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`
        mutating func scanNumber() -> Bool {
            func digits() -> Int {
                let begin = index
                while index < bytes.count, (0x30...0x39).contains(bytes[index]) { index += 1 }
                return index - begin
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count else { return false }
            if bytes[index] == UInt8(ascii: "0") {
                index += 1
            } else if digits() == 0 {
                return false
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                index += 1
                guard digits() > 0 else { return false }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
                guard digits() > 0 else { return false }
            }
            return true
        }
    }
}
