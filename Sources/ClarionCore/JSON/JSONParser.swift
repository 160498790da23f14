/// Why a JSON text was refused, and where.
public struct JSONParseError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable {
        case unexpectedEnd
        case unexpectedByte
        case invalidNumber
        case invalidEscape
        case controlCharacterInString
        case duplicateKey
        case nestingTooDeep
        case trailingData
        /// Bytes inside a string that are not well-formed UTF-8 (RFC 8259 section 8.1): overlong forms, encoded
        /// surrogates (`ED A0 80`), code points above U+10FFFF, truncated or stray continuation bytes.
        case invalidUTF8
        /// A `\u` escape of a UTF-16 surrogate that is not half of a high + low pair (`"\ud800"`, `"\udc00"`):
        /// RFC 8259 section 8.2 leaves its meaning unpredictable, so it is refused rather than guessed at.
        case unpairedSurrogate
        /// An object with more than `JSONValue.maximumObjectMembers` members.
        case tooManyMembers
        /// A document with more than `JSONValue.maximumValues` values.
        case tooManyValues
    }

    public let code: Code
    /// Byte offset into the input where the problem was seen.
    public let offset: Int
    /// The repeated key, for `duplicateKey`.
    public let key: String?

    public init(code: Code, offset: Int, key: String? = nil) {
        self.code = code
        self.offset = offset
        self.key = key
    }

    public var description: String {
        "\(code.rawValue) at byte \(offset)" + (key.map { " (key \"\($0)\")" } ?? "")
    }

    /// True for the refusals of well-formed JSON that is too large in shape (members, values, depth).
    public var isLimit: Bool { code == .tooManyMembers || code == .tooManyValues || code == .nestingTooDeep }

    /// What is wrong, in words, with its byte offset: for error messages of the APIs (no input is quoted but a
    /// repeated key).
    public var reason: String {
        let what: String
        switch code {
        case .unexpectedEnd: what = "the text ends early"
        case .unexpectedByte: what = "unexpected character"
        case .invalidNumber: what = "invalid number"
        case .invalidEscape: what = "invalid escape sequence"
        case .controlCharacterInString: what = "unescaped control character in a string"
        case .duplicateKey: what = key.map { "the key '\($0)' appears more than once" } ?? "a key appears more than once"
        case .nestingTooDeep: what = "arrays and objects nested more than \(JSONValue.maximumNestingDepth) deep"
        case .trailingData: what = "unexpected data after the JSON value"
        case .invalidUTF8: what = "not valid UTF-8"
        case .unpairedSurrogate: what = "a \\u escape of an unpaired UTF-16 surrogate"
        case .tooManyMembers: what = "an object with more than \(JSONValue.maximumObjectMembers) members"
        case .tooManyValues: what = "more than \(JSONValue.maximumValues) values in one document"
        }
        return what + " at byte \(offset)"
    }
}

extension JSONValue {
    /// What to do when an object repeats a key.
    public enum DuplicateKeyPolicy: Sendable {
        /// Refuse the document (SNS refuses a message map with a repeated key).
        case reject
        /// Keep the last value, in the position of the first (what most JSON readers do).
        case lastWins
    }

    /// Objects and arrays nested deeper than this are refused, so hostile input cannot exhaust the stack.
    public static let maximumNestingDepth = 256

    /// Members one object may list (repeated keys count each time). The largest legitimate objects are FCM and
    /// ADM data maps and APNs custom keys, bounded by the providers' 4 KiB payloads (a few hundred members at most);
    /// SNS message maps have a dozen keys, registration and native bodies a handful. 10,000 is far above all of
    /// them and bounds the work a hostile body can ask for.
    public static let maximumObjectMembers = 10_000

    /// Values in one document: every object member, array element and the top-level value. A native publish of
    /// 100 targets, a registration batch of 100 or an SNS message map is a few thousand at most; 100,000 lets a
    /// 1 MiB body of small values (`[0,0,...]` is 500,000) be refused early instead of built.
    public static let maximumValues = 100_000

    /// Parses one RFC 8259 JSON text (any value at the top, surrounding whitespace allowed).
    public static func parse(_ text: String, duplicateKeys: DuplicateKeyPolicy = .lastWins) throws(JSONParseError) -> JSONValue {
        try parse(bytes: Array(text.utf8), duplicateKeys: duplicateKeys)
    }

    /// Parses JSON from bytes. Strings must be well-formed UTF-8 and `\u` escapes must not leave a surrogate
    /// unpaired: both are refused, never repaired, so what a client sent is what Clarion stores and sends on
    /// (RFC 8259 sections 8.1 and 8.2). The limits above apply to every document.
    public static func parse(bytes: [UInt8], duplicateKeys: DuplicateKeyPolicy = .lastWins) throws(JSONParseError) -> JSONValue {
        var parser = JSONParser(bytes: bytes, duplicateKeys: duplicateKeys)
        return try parser.parseDocument()
    }
}

struct JSONParser {
    let bytes: [UInt8]
    let duplicateKeys: JSONValue.DuplicateKeyPolicy
    var index = 0
    var depth = 0
    /// Values seen so far, against `JSONValue.maximumValues`.
    var values = 0

    init(bytes: [UInt8], duplicateKeys: JSONValue.DuplicateKeyPolicy) {
        self.bytes = bytes
        self.duplicateKeys = duplicateKeys
    }

    mutating func parseDocument() throws(JSONParseError) -> JSONValue {
        skipWhitespace()
        let value = try parseValue()
        skipWhitespace()
        guard index == bytes.count else { throw fail(.trailingData) }
        return value
    }

    private func fail(_ code: JSONParseError.Code, key: String? = nil) -> JSONParseError {
        JSONParseError(code: code, offset: index, key: key)
    }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private mutating func parseValue() throws(JSONParseError) -> JSONValue {
        guard index < bytes.count else { throw fail(.unexpectedEnd) }
        values += 1
        guard values <= JSONValue.maximumValues else { throw fail(.tooManyValues) }
        switch bytes[index] {
        case UInt8(ascii: "{"): return .object(try parseObject())
        case UInt8(ascii: "["): return .array(try parseArray())
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "-"), 0x30...0x39: return .number(try parseNumber())
        default: throw fail(.unexpectedByte)
        }
    }

    private mutating func expectLiteral(_ literal: StaticString) throws(JSONParseError) {
        let count = literal.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw fail(.unexpectedEnd) }
        let start = literal.utf8Start
        for k in 0..<count where bytes[index + k] != start[k] {
            index += k
            throw fail(.unexpectedByte)
        }
        index += count
    }

    private mutating func enter() throws(JSONParseError) {
        depth += 1
        guard depth <= JSONValue.maximumNestingDepth else { throw fail(.nestingTooDeep) }
    }

    private mutating func parseObject() throws(JSONParseError) -> JSONObject {
        try enter()
        defer { depth -= 1 }
        index += 1  // {
        var object = JSONObject()
        skipWhitespace()
        guard index < bytes.count else { throw fail(.unexpectedEnd) }
        if bytes[index] == UInt8(ascii: "}") {
            index += 1
            return object
        }
        var members = 0
        while true {
            skipWhitespace()
            guard index < bytes.count else { throw fail(.unexpectedEnd) }
            guard bytes[index] == UInt8(ascii: "\"") else { throw fail(.unexpectedByte) }
            let keyOffset = index
            members += 1
            guard members <= JSONValue.maximumObjectMembers else { throw fail(.tooManyMembers) }
            let key = try parseString()
            skipWhitespace()
            guard index < bytes.count else { throw fail(.unexpectedEnd) }
            guard bytes[index] == UInt8(ascii: ":") else { throw fail(.unexpectedByte) }
            index += 1
            skipWhitespace()
            let value = try parseValue()
            // One lookup: linear on small objects, hashed on large ones (JSONObject.indexThreshold).
            if !object.insert(value, forKey: copy key) && duplicateKeys == .reject {
                throw JSONParseError(code: .duplicateKey, offset: keyOffset, key: key)
            }
            skipWhitespace()
            guard index < bytes.count else { throw fail(.unexpectedEnd) }
            switch bytes[index] {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"): index += 1; return object
            default: throw fail(.unexpectedByte)
            }
        }
    }

    private mutating func parseArray() throws(JSONParseError) -> [JSONValue] {
        try enter()
        defer { depth -= 1 }
        index += 1  // [
        var array: [JSONValue] = []
        skipWhitespace()
        guard index < bytes.count else { throw fail(.unexpectedEnd) }
        if bytes[index] == UInt8(ascii: "]") {
            index += 1
            return array
        }
        while true {
            skipWhitespace()
            array.append(try parseValue())
            skipWhitespace()
            guard index < bytes.count else { throw fail(.unexpectedEnd) }
            switch bytes[index] {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"): index += 1; return array
            default: throw fail(.unexpectedByte)
            }
        }
    }

    private mutating func parseNumber() throws(JSONParseError) -> JSONNumber {
        let start = index
        while index < bytes.count, Self.isNumberByte(bytes[index]) { index += 1 }
        // Checked and read where it lies: no copy of the literal (a short one becomes a small String, no allocation).
        guard JSONNumber.isValidLiteral(bytes[start..<index]) else {
            index = start
            throw fail(.invalidNumber)
        }
        return JSONNumber(validatedLiteral: String(decoding: bytes[start..<index], as: UTF8.self))
    }

    private static func isNumberByte(_ b: UInt8) -> Bool {
        switch b {
        case 0x30...0x39, UInt8(ascii: "-"), UInt8(ascii: "+"), UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E"):
            return true
        default:
            return false
        }
    }

    private mutating func parseString() throws(JSONParseError) -> String {
        index += 1  // opening quote
        var i = try scanPlain(from: index)
        guard i < bytes.count else { throw JSONParseError(code: .unexpectedEnd, offset: i) }
        if bytes[i] == UInt8(ascii: "\"") {  // no escapes: the common case
            let s = String(decoding: bytes[index..<i], as: UTF8.self)  // validated: nothing to repair
            index = i + 1
            return s
        }
        // Escapes: decoded into a buffer. Reserved up front (the decoded text is never longer than what is left of
        // the input) so that a payload nested as a string, `"{\"aps\":...}"`, is not copied at every doubling.
        var buffer: [UInt8] = []
        buffer.reserveCapacity(min(bytes.count - index, 1024))
        buffer.append(contentsOf: bytes[index..<i])
        while true {
            // At a quote or a backslash.
            guard i < bytes.count else { throw JSONParseError(code: .unexpectedEnd, offset: i) }
            if bytes[i] == UInt8(ascii: "\"") {
                index = i + 1
                return String(decoding: buffer, as: UTF8.self)
            }
            index = i + 1
            guard index < bytes.count else { throw fail(.unexpectedEnd) }
            let e = bytes[index]
            index += 1
            switch e {
            case UInt8(ascii: "\""): buffer.append(0x22)
            case UInt8(ascii: "\\"): buffer.append(0x5C)
            case UInt8(ascii: "/"): buffer.append(0x2F)
            case UInt8(ascii: "b"): buffer.append(0x08)
            case UInt8(ascii: "f"): buffer.append(0x0C)
            case UInt8(ascii: "n"): buffer.append(0x0A)
            case UInt8(ascii: "r"): buffer.append(0x0D)
            case UInt8(ascii: "t"): buffer.append(0x09)
            case UInt8(ascii: "u"): appendScalar(try parseUnicodeEscape(), to: &buffer)
            default:
                index -= 1
                throw fail(.invalidEscape)
            }
            i = try scanPlain(from: index)
            buffer.append(contentsOf: bytes[index..<i])
        }
    }

    /// The position of the first quote or backslash from `i` on (or the end of the input), refusing control
    /// characters and checking that every non-ASCII sequence is well-formed UTF-8 on the way. Printable ASCII
    /// (0x20...0x7F, one unsigned comparison) is tested first: it is nearly every byte of a push payload.
    @inline(__always)
    private func scanPlain(from start: Int) throws(JSONParseError) -> Int {
        var i = start
        while i < bytes.count {
            let b = bytes[i]
            if b &- 0x20 < 0x60 {
                if b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") { return i }
                i += 1
            } else if b < 0x20 {
                throw JSONParseError(code: .controlCharacterInString, offset: i)
            } else {
                i += try utf8SequenceLength(at: i)
            }
        }
        return i
    }

    /// The length of the well-formed UTF-8 sequence starting at `i` with a byte >= 0x80, per the Unicode
    /// standard's table 3-7 (which excludes overlong forms, surrogates and code points above U+10FFFF).
    private func utf8SequenceLength(at i: Int) throws(JSONParseError) -> Int {
        let invalid = JSONParseError(code: .invalidUTF8, offset: i)
        let lead = bytes[i]
        let length: Int
        var low: UInt8 = 0x80, high: UInt8 = 0xBF  // the range of the second byte
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; low = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: length = 3; high = 0x9F
        case 0xF0: length = 4; low = 0x90
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; high = 0x8F
        default: throw invalid  // a continuation byte, C0, C1, F5...FF
        }
        guard i + length <= bytes.count else { throw invalid }
        guard (low...high).contains(bytes[i + 1]) else { throw invalid }
        for k in 2..<length where bytes[i + k] & 0xC0 != 0x80 { throw invalid }
        return length
    }

    /// Reads the hex digits after `\u` and, for a high surrogate, the low surrogate's `\uXXXX` that must follow.
    private mutating func parseUnicodeEscape() throws(JSONParseError) -> Unicode.Scalar {
        let escapeOffset = index - 2
        let first = try readHex4()
        switch first {
        case 0xD800..<0xDC00:
            guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                throw JSONParseError(code: .unpairedSurrogate, offset: escapeOffset)
            }
            index += 2
            let second = try readHex4()
            guard (0xDC00..<0xE000).contains(second) else { throw JSONParseError(code: .unpairedSurrogate, offset: escapeOffset) }
            return Unicode.Scalar(0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00))!
        case 0xDC00..<0xE000:
            throw JSONParseError(code: .unpairedSurrogate, offset: escapeOffset)
        default:
            return Unicode.Scalar(first)!  // below 0x10000 and not a surrogate: always a scalar
        }
    }

    private mutating func readHex4() throws(JSONParseError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw fail(.unexpectedEnd) }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let b = bytes[index]
            let digit: UInt32
            switch b {
            case 0x30...0x39: digit = UInt32(b - 0x30)
            case 0x41...0x46: digit = UInt32(b - 0x41 + 10)
            case 0x61...0x66: digit = UInt32(b - 0x61 + 10)
            default: throw fail(.invalidEscape)
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }

    private func appendScalar(_ scalar: Unicode.Scalar, to buffer: inout [UInt8]) {
        UTF8.encode(scalar) { buffer.append($0) }
    }
}
