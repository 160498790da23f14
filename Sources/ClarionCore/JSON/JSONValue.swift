/// A JSON document as the push domain needs it.
///
/// Why not `JSONSerialization`: SNS and the providers care about things it loses. Object members keep their
/// order (a payload re-encoded by Clarion reads like the one that was published), number literals are kept
/// as written (`1` and `true` and `1.0` stay distinguishable, which APNs push-type inference depends on, and
/// large integers are not rounded through `Double`), and duplicate keys can be detected (SNS rejects them).
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case number(JSONNumber)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)

    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    public var objectValue: JSONObject? {
        if case .object(let o) = self { return o }
        return nil
    }

    public var arrayValue: [JSONValue]? {
        if case .array(let a) = self { return a }
        return nil
    }

    public var boolValue: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }

    public var numberValue: JSONNumber? {
        if case .number(let n) = self { return n }
        return nil
    }

    /// The value of an integer literal (`3`, `-7`); nil for `3.0`, `3e0`, strings and everything else.
    public var intValue: Int? { numberValue?.intValue }

    /// Member lookup when the value is an object.
    public subscript(key: String) -> JSONValue? { objectValue?[key] }

    /// A number from a double (see `JSONNumber.init(_: Double)`); null for NaN and infinities.
    public static func double(_ value: Double) -> JSONValue { JSONNumber(value).map(JSONValue.number) ?? .null }
}

/// A JSON number kept as its literal text.
public struct JSONNumber: Sendable, Hashable, CustomStringConvertible {
    /// The literal exactly as it appears in JSON text (`-12`, `3.5`, `1e3`).
    public let literal: String

    public init(_ value: Int) { literal = String(value) }

    public init(_ value: Int64) { literal = String(value) }

    public init(_ value: UInt64) { literal = String(value) }

    /// A finite double: integral values under 10^15 as integers (`1700000000`, not `1.7e9`), others in Swift's
    /// shortest round-trip form. Nil for NaN and infinities, which JSON cannot carry.
    public init?(_ value: Double) {
        guard value.isFinite else { return nil }
        literal = value.rounded(.towardZero) == value && abs(value) < 1e15 ? String(Int64(value)) : "\(value)"
    }

    /// Accepts only RFC 8259 number syntax.
    public init?(literal: String) {
        guard JSONNumber.isValidLiteral(Array(literal.utf8)[...]) else { return nil }
        self.literal = literal
    }

    init(validatedLiteral: String) { literal = validatedLiteral }

    /// True when the literal has no fraction and no exponent.
    public var isInteger: Bool {
        !literal.utf8.contains { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") }
    }

    /// The value when the literal is an integer that fits in `Int`.
    public var intValue: Int? { isInteger ? Int(literal) : nil }

    /// The value when it is integral and fits in `Int64`, written as an integer or not (`1.7e9`, `3.0`): JWT
    /// NumericDate claims may be written either way.
    public var int64Value: Int64? {
        if isInteger { return Int64(literal) }
        guard let value = doubleValue, value.rounded(.towardZero) == value, abs(value) < 9.2e18 else { return nil }
        return Int64(value)
    }

    public var doubleValue: Double? { Double(literal) }

    public var description: String { literal }

    /// Whether `bytes` is exactly one RFC 8259 number. A slice, so the parser checks a literal where it lies.
    static func isValidLiteral(_ bytes: ArraySlice<UInt8>) -> Bool {
        var i = bytes.startIndex
        let n = bytes.endIndex
        func digit(_ at: Int) -> Bool { at < n && bytes[at] >= 0x30 && bytes[at] <= 0x39 }
        if i < n && bytes[i] == UInt8(ascii: "-") { i += 1 }
        guard digit(i) else { return false }
        if bytes[i] == 0x30 { i += 1 } else { while digit(i) { i += 1 } }
        if i < n && bytes[i] == UInt8(ascii: ".") {
            i += 1
            guard digit(i) else { return false }
            while digit(i) { i += 1 }
        }
        if i < n && (bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E")) {
            i += 1
            if i < n && (bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-")) { i += 1 }
            guard digit(i) else { return false }
            while digit(i) { i += 1 }
        }
        return i == n
    }
}

/// A JSON object: members in document order, keys unique.
///
/// Small objects (push payloads, message maps: a handful of keys) are searched linearly, which is faster than
/// hashing for them. Past `indexThreshold` members the object also keeps a key -> position index, so that adding,
/// finding and checking a key stay O(1) on large objects: without it, checking each new key against the ones
/// before is quadratic, and a request body with 40,000 keys would take 800 million key comparisons to parse.
public struct JSONObject: Sendable, Hashable, Sequence {
    public struct Member: Sendable, Hashable {
        public var key: String
        public var value: JSONValue
        public init(key: String, value: JSONValue) {
            self.key = key
            self.value = value
        }
    }

    /// Objects with more members than this keep `index`. Building an object key by key costs about the same
    /// either way at 32 members (2-byte keys favour searching up to about 64, 20-byte keys hashing from about
    /// 24): loadtest/json/IndexThreshold.swift, docs/benchmarks.md.
    static let indexThreshold = 32

    public private(set) var members: [Member]
    /// The position of every key in `members` when there are more than `indexThreshold` of them; nil otherwise.
    /// Derived from `members`, so it takes no part in equality or hashing.
    private var index: [String: Int]?

    public init() { members = [] }

    /// Builds an object from pairs; a repeated key replaces the earlier value in its position.
    public init(_ pairs: [(String, JSONValue)]) {
        members = []
        members.reserveCapacity(pairs.count)
        for (key, value) in pairs { self[key] = value }
    }

    public var count: Int { members.count }
    public var isEmpty: Bool { members.isEmpty }
    public var keys: [String] { members.map(\.key) }

    public func contains(_ key: String) -> Bool { position(of: key) != nil }

    /// Reading returns the member's value; writing replaces it in place, appends a new member, or (nil) removes it.
    public subscript(key: String) -> JSONValue? {
        get { position(of: key).map { members[$0].value } }
        set {
            if let value = newValue {
                _ = insert(value, forKey: key)
            } else if let i = position(of: key) {
                remove(at: i)
            }
        }
    }

    /// Sets `key` to `value` (appending it, or replacing its value in place); false when the key was already there.
    mutating func insert(_ value: consuming JSONValue, forKey key: consuming String) -> Bool {
        guard index != nil else {
            if let i = members.firstIndex(where: { $0.key == key }) {
                members[i].value = value
                return false
            }
            members.append(Member(key: key, value: value))
            if members.count > Self.indexThreshold { rebuildIndex() }
            return true
        }
        // One hash for a new key, the common case: claim the next position, and give a repeated key its own back.
        if let existing = index!.updateValue(members.count, forKey: key) {
            index![key] = existing
            members[existing].value = value
            return false
        }
        members.append(Member(key: key, value: value))
        return true
    }

    public func makeIterator() -> IndexingIterator<[Member]> { members.makeIterator() }

    /// Whether the key index is kept (tests check the invariant: exactly when there are more than `indexThreshold`).
    var isIndexed: Bool { index != nil }

    public static func == (a: JSONObject, b: JSONObject) -> Bool { a.members == b.members }

    public func hash(into hasher: inout Hasher) { hasher.combine(members) }

    private func position(of key: String) -> Int? {
        if let index { return index[key] }
        return members.firstIndex { $0.key == key }
    }

    private mutating func remove(at i: Int) {
        members.remove(at: i)
        // Positions after `i` moved: rebuild (removal is O(n) already).
        if members.count > Self.indexThreshold { rebuildIndex() } else { index = nil }
    }

    private mutating func rebuildIndex() {
        var positions = [String: Int](minimumCapacity: members.count)
        for (i, member) in members.enumerated() { positions[member.key] = i }
        index = positions
    }
}

extension JSONObject: ExpressibleByDictionaryLiteral {
    /// Keeps the literal's key order.
    public init(dictionaryLiteral elements: (String, JSONValue)...) { self.init(elements) }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .number(JSONNumber(value)) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    /// Keeps the literal's key order.
    public init(dictionaryLiteral elements: (String, JSONValue)...) { self = .object(JSONObject(elements)) }
    public init(nilLiteral: ()) { self = .null }
}
