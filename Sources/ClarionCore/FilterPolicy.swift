import Foundation

/// Where a subscription's filter policy looks: the message's attributes (SNS's default) or its JSON body.
public enum FilterPolicyScope: String, Sendable, Hashable {
    case messageAttributes = "MessageAttributes"
    case messageBody = "MessageBody"
}

/// Why a filter policy was refused. `message` is SNS's text after "Invalid parameter: " (most start with
/// "FilterPolicy: "); the API edge adds its own prefix (docs/providers.md, "SNS subscription filter policies").
public struct FilterPolicyError: Error, Sendable, Hashable, CustomStringConvertible {
    public let message: String

    init(_ reason: String) { message = "FilterPolicy: " + reason }
    init(unprefixed: String) { message = unprefixed }

    public var description: String { message }
}

/// A subscription filter policy, compiled once (when it is stored or first used by a fan-out worker), then
/// evaluated per delivery without parsing or allocating: SNS's grammar and limits as docs/providers.md
/// ("SNS subscription filter policies") lists them, with the documentation pages they come from.
///
/// A policy is an AND of fields; a field is a key path (one key for message attributes, nested keys for the
/// message body) with an OR of conditions; `$or` is an OR of sub-policies at the level where it appears.
public struct FilterPolicy: Sendable, Hashable {
    /// SNS's limits (subscription-filter-policy-constraints).
    public static let maximumKeys = 5
    public static let maximumCombinations = 150
    public static let maximumBytes = 256 * 1024
    /// Nested keys of a MessageBody policy, counting the top level (Clarion's bound: SNS documents none).
    public static let maximumDepth = 5
    /// The numeric range SNS matches (-10^9 ... 10^9).
    static let numericBound = 1_000_000_000.0

    public let scope: FilterPolicyScope
    let root: Group

    /// An AND of fields and `$or` alternatives.
    struct Group: Sendable, Hashable {
        var fields: [Field] = []
        var alternatives: [[Group]] = []
    }

    struct Field: Sendable, Hashable {
        var path: [String]
        var conditions: [Condition]
    }

    enum Condition: Sendable, Hashable {
        case string(String)
        case number(Double)
        case bool(Bool)
        case null
        case prefix(String)
        case suffix(String)
        case equalsIgnoreCase(String)
        case anythingBut([FilterValue])
        case anythingButPrefix(String)
        case anythingButSuffix(String)
        case numeric(lower: Double?, lowerInclusive: Bool, upper: Double?, upperInclusive: Bool)
        case exists(Bool)
        case cidr(CIDRBlock)
    }

    /// Parses and checks `text` for `scope`.
    public static func compile(_ text: String, scope: FilterPolicyScope) throws(FilterPolicyError) -> FilterPolicy {
        guard text.utf8.count <= maximumBytes else { throw FilterPolicyError("Filter policy is too long") }
        let json: JSONValue
        do {
            json = try JSONValue.parse(text)
        } catch {
            throw FilterPolicyError("failed to parse JSON.")
        }
        guard case .object(let object) = json else { throw FilterPolicyError("Filter policy must be a JSON object") }
        var compiler = Compiler(scope: scope)
        let root = try compiler.group(object, path: [], depth: 1)
        let keys = try compiler.keyCount(object)
        guard keys <= maximumKeys else { throw FilterPolicyError("Filter policy can not have more than 5 keys") }
        guard try compiler.combinations(object, depth: 1) <= maximumCombinations else {
            throw FilterPolicyError("Filter policy is too complex")
        }
        return FilterPolicy(scope: scope, root: root)
    }

    /// Whether a message passes: every field of the policy matches (and one alternative of each `$or`).
    public func matches(_ message: FilterMessage) -> Bool {
        Self.matches(root, message, scope: scope)
    }

    private static func matches(_ group: Group, _ message: FilterMessage, scope: FilterPolicyScope) -> Bool {
        for field in group.fields where !matches(field, message, scope: scope) { return false }
        for alternatives in group.alternatives where !alternatives.contains(where: { matches($0, message, scope: scope) }) {
            return false
        }
        return true
    }

    private static func matches(_ field: Field, _ message: FilterMessage, scope: FilterPolicyScope) -> Bool {
        let values: [FilterValue]?
        switch scope {
        case .messageAttributes: values = message.attributes[field.path[0]]
        case .messageBody: values = message.bodyValues(at: field.path)
        }
        guard let values else {
            // An absent key matches only `exists: false`.
            return field.conditions.contains(.exists(false))
        }
        for condition in field.conditions where condition.matches(values) { return true }
        return false
    }
}

extension FilterPolicy.Condition {
    func matches(_ values: [FilterValue]) -> Bool {
        switch self {
        case .exists(let wanted): return wanted
        case .anythingBut(let excluded):
            return values.contains { value in !excluded.contains { $0.equals(value) } }
        default:
            return values.contains(where: matches)
        }
    }

    private func matches(_ value: FilterValue) -> Bool {
        switch (self, value) {
        case (.string(let s), .string(let v)): return s == v
        case (.number(let n), .number(let v)): return n == v
        case (.bool(let b), .bool(let v)): return b == v
        case (.null, .null): return true
        case (.prefix(let p), .string(let v)): return v.hasPrefix(p)
        case (.suffix(let s), .string(let v)): return v.hasSuffix(s)
        case (.equalsIgnoreCase(let s), .string(let v)): return v.lowercased() == s
        case (.anythingButPrefix(let p), .string(let v)): return !v.hasPrefix(p)
        case (.anythingButSuffix(let s), .string(let v)): return !v.hasSuffix(s)
        case (.numeric(let lower, let lowerInclusive, let upper, let upperInclusive), .number(let v)):
            if let lower, lowerInclusive ? v < lower : v <= lower { return false }
            if let upper, upperInclusive ? v > upper : v >= upper { return false }
            return true
        case (.cidr(let block), .string(let v)): return block.contains(v)
        default: return false
        }
    }
}

/// One value a policy condition looks at: a String attribute, an element of a String.Array, a Number, or a
/// scalar of the message body.
public enum FilterValue: Sendable, Hashable {
    case string(String)
    case number(Double)
    case bool(Bool)
    case null

    func equals(_ other: FilterValue) -> Bool { self == other }

    init?(_ json: JSONValue) {
        switch json {
        case .string(let s): self = .string(s)
        case .number(let n):
            guard let d = n.doubleValue else { return nil }
            self = .number(d)
        case .bool(let b): self = .bool(b)
        case .null: self = .null
        case .array, .object: return nil
        }
    }
}

/// What a policy is evaluated against: built once per message (and fan-out worker), shared by every subscriber.
public struct FilterMessage: Sendable {
    /// Attribute name -> its values (one for String and Number, the elements for String.Array); Binary
    /// attributes are left out, as SNS ignores them.
    public let attributes: [String: [FilterValue]]
    /// The message body when it is a JSON object (MessageBody scope); nil otherwise, so no body key exists.
    public let body: JSONValue?

    public init(attributes: [String: [FilterValue]], body: JSONValue?) {
        self.attributes = attributes
        self.body = body
    }

    /// From SNS message attributes (String, Number, String.Array; custom types such as `Number.float` by their
    /// base type; Binary left out) and, for the MessageBody scope, the message text: a body that is not a JSON
    /// object has no keys.
    public init(attributes typed: [String: MessageAttributeValue], body message: String?) {
        var out: [String: [FilterValue]] = [:]
        for (name, attribute) in typed {
            guard let text = attribute.stringValue else { continue }
            let type = attribute.dataType
            if type.hasPrefix("String.Array") {
                if case .array(let elements)? = try? JSONValue.parse(text) {
                    out[name] = elements.compactMap(FilterValue.init)
                } else {
                    out[name] = []
                }
            } else if type.hasPrefix("Number") {
                out[name] = Double(text).map { [.number($0)] } ?? []
            } else if type.hasPrefix("String") {
                out[name] = [.string(text)]
            }
        }
        attributes = out
        if let message, let parsed = try? JSONValue.parse(message), case .object = parsed {
            body = parsed
        } else {
            body = nil
        }
    }

    /// The scalar values at a key path of the body: arrays along the way are looked through (each element
    /// object), an array at the end gives its elements; nil when the key is absent.
    func bodyValues(at path: [String]) -> [FilterValue]? {
        guard let body else { return nil }
        var nodes: [JSONValue] = [body]
        for key in path {
            var next: [JSONValue] = []
            for node in nodes {
                switch node {
                case .object(let object):
                    if let value = object[key] { next.append(value) }
                case .array(let elements):
                    for case .object(let object) in elements { if let value = object[key] { next.append(value) } }
                default: break
                }
            }
            if next.isEmpty { return nil }
            nodes = next
        }
        var values: [FilterValue] = []
        for node in nodes {
            if case .array(let elements) = node {
                values.append(contentsOf: elements.compactMap(FilterValue.init))
            } else if let value = FilterValue(node) {
                values.append(value)
            }
        }
        return values
    }
}

/// Builds the matcher and applies SNS's checks, with SNS's messages.
private struct Compiler {
    let scope: FilterPolicyScope

    mutating func group(_ object: JSONObject, path: [String], depth: Int) throws(FilterPolicyError) -> FilterPolicy.Group {
        var result = FilterPolicy.Group()
        for member in object {
            switch member.value {
            case .array(let items) where member.key == "$or" && items.count >= 2
                    && items.allSatisfy({ $0.objectValue != nil }):
                // `$or`: an array of at least two objects, each a sub-policy at this level (and-or-logic).
                var alternatives: [FilterPolicy.Group] = []
                for case .object(let branch) in items {
                    alternatives.append(try group(branch, path: path, depth: depth))
                }
                result.alternatives.append(alternatives)
            case .array(let items):
                var conditions: [FilterPolicy.Condition] = []
                for item in items { conditions.append(try condition(item)) }
                result.fields.append(FilterPolicy.Field(path: path + [member.key], conditions: conditions))
            case .object(let nested):
                guard scope == .messageBody else {
                    throw FilterPolicyError(unprefixed: "Filter policy scope MessageAttributes does not support nested filter policy")
                }
                guard depth < FilterPolicy.maximumDepth else {
                    throw FilterPolicyError("Filter policy can not have more than \(FilterPolicy.maximumDepth) levels of nested keys")
                }
                let inner = try group(nested, path: path + [member.key], depth: depth + 1)
                result.fields += inner.fields
                result.alternatives += inner.alternatives
            default:
                throw FilterPolicyError("\"\(member.key)\" must be an object or an array")
            }
        }
        return result
    }

    /// Keys that hold conditions, counted on the longest AND path: one per field, the largest `$or` branch.
    func keyCount(_ object: JSONObject) throws(FilterPolicyError) -> Int {
        var count = 0
        for member in object {
            switch member.value {
            case .array(let items) where member.key == "$or" && items.count >= 2
                    && items.allSatisfy({ $0.objectValue != nil }):
                var widest = 0
                for case .object(let branch) in items { widest = max(widest, try keyCount(branch)) }
                count += widest
            case .object(let nested): count += try keyCount(nested)
            default: count += 1
            }
        }
        return count
    }

    /// SNS's complexity: the product, over the arrays of an AND, of the number of values (times the key's
    /// nesting depth in a body policy); `$or` adds up its branches.
    func combinations(_ object: JSONObject, depth: Int) throws(FilterPolicyError) -> Int {
        var product = 1
        for member in object {
            switch member.value {
            case .array(let items) where member.key == "$or" && items.count >= 2
                    && items.allSatisfy({ $0.objectValue != nil }):
                var sum = 0
                for case .object(let branch) in items { sum += try combinations(branch, depth: depth) }
                product = product.multipliedReportingOverflow(by: sum).partialValue
            case .array(let items):
                product = product.multipliedReportingOverflow(by: items.count * depth).partialValue
            case .object(let nested):
                product = product.multipliedReportingOverflow(by: try combinations(nested, depth: depth + 1)).partialValue
            default: break
            }
            if product > FilterPolicy.maximumCombinations { return product }
        }
        return product
    }

    func condition(_ item: JSONValue) throws(FilterPolicyError) -> FilterPolicy.Condition {
        switch item {
        case .string(let s): return .string(s)
        case .number(let n): return .number(try number(n))
        case .bool(let b): return .bool(b)
        case .null: return .null
        case .array: throw FilterPolicyError("Match value must be String, number, true, false, or null")
        case .object(let object):
            guard object.count == 1, let member = object.members.first else {
                throw FilterPolicyError("Only one key allowed in match expression")
            }
            return try operation(member.key, member.value)
        }
    }

    func operation(_ name: String, _ value: JSONValue) throws(FilterPolicyError) -> FilterPolicy.Condition {
        switch name {
        case "prefix", "suffix", "equals-ignore-case":
            guard case .string(let s) = value else { throw FilterPolicyError("\(name) match pattern must be a string") }
            switch name {
            case "prefix": return .prefix(s)
            case "suffix": return .suffix(s)
            default: return .equalsIgnoreCase(s.lowercased())
            }
        case "exists":
            guard case .bool(let b) = value else {
                throw FilterPolicyError("exists match pattern must be either true or false.")
            }
            return .exists(b)
        case "anything-but": return try anythingBut(value)
        case "numeric": return try numeric(value)
        case "cidr":
            guard case .string(let s) = value, let block = CIDRBlock(s) else {
                throw FilterPolicyError("Malformed CIDR, one '/' required")
            }
            return .cidr(block)
        default:
            throw FilterPolicyError("Unrecognized match type \(name)")
        }
    }

    func anythingBut(_ value: JSONValue) throws(FilterPolicyError) -> FilterPolicy.Condition {
        switch value {
        case .string(let s): return .anythingBut([.string(s)])
        case .number(let n): return .anythingBut([.number(try number(n))])
        case .array(let items):
            var excluded: [FilterValue] = []
            for item in items {
                switch item {
                case .string(let s): excluded.append(.string(s))
                case .number(let n): excluded.append(.number(try number(n)))
                default:
                    throw FilterPolicyError("Inside anything but list, start|null|boolean is not supported.")
                }
            }
            return .anythingBut(excluded)
        case .object(let object):
            guard object.count == 1, let member = object.members.first else {
                throw FilterPolicyError("Only one key allowed in match expression")
            }
            guard case .string(let s) = member.value else {
                throw FilterPolicyError("\(member.key) match pattern must be a string")
            }
            switch member.key {
            case "prefix": return .anythingButPrefix(s)
            case "suffix": return .anythingButSuffix(s)
            default: throw FilterPolicyError("Unsupported anything-but pattern: \(member.key)")
            }
        case .bool, .null:
            throw FilterPolicyError("Inside anything but list, start|null|boolean is not supported.")
        }
    }

    /// `[op, n]` or `[">" | ">=", n, "<" | "<=", m]` with n < m (numeric-value-matching).
    func numeric(_ value: JSONValue) throws(FilterPolicyError) -> FilterPolicy.Condition {
        guard case .array(let terms) = value, !terms.isEmpty else {
            throw FilterPolicyError("Value of numeric must be an array.")
        }
        guard case .string(let op) = terms[0] else { throw FilterPolicyError("Invalid member in numeric match: \(terms[0].text)") }
        guard ["<", "<=", "=", ">", ">="].contains(op) else {
            throw FilterPolicyError("Unrecognized numeric range operator: \(op)")
        }
        guard terms.count >= 2, case .number(let first) = terms[1] else {
            throw FilterPolicyError("Value of \(op == "=" ? "equals" : op) must be numeric")
        }
        let a = try number(first)
        if terms.count == 2 {
            switch op {
            case "=": return .numeric(lower: a, lowerInclusive: true, upper: a, upperInclusive: true)
            case "<": return .numeric(lower: nil, lowerInclusive: false, upper: a, upperInclusive: false)
            case "<=": return .numeric(lower: nil, lowerInclusive: false, upper: a, upperInclusive: true)
            case ">": return .numeric(lower: a, lowerInclusive: false, upper: nil, upperInclusive: false)
            default: return .numeric(lower: a, lowerInclusive: true, upper: nil, upperInclusive: false)
            }
        }
        guard op == ">" || op == ">=" else { throw FilterPolicyError("Too many elements in numeric expression") }
        guard case .string(let op2) = terms[2] else { throw FilterPolicyError("Bad value in numeric range: \(terms[2].text)") }
        guard op2 == "<" || op2 == "<=" else { throw FilterPolicyError("Bad numeric range operator: \(op2)") }
        guard terms.count >= 4, case .number(let second) = terms[3] else {
            throw FilterPolicyError("Value of \(op2) must be numeric")
        }
        let b = try number(second)
        guard a < b else { throw FilterPolicyError("Bottom must be less than top") }
        guard terms.count == 4 else { throw FilterPolicyError("Too many terms in numeric range expression") }
        return .numeric(lower: a, lowerInclusive: op == ">=", upper: b, upperInclusive: op2 == "<=")
    }

    func number(_ n: JSONNumber) throws(FilterPolicyError) -> Double {
        guard let d = n.doubleValue, d.isFinite, abs(d) <= FilterPolicy.numericBound else {
            throw FilterPolicyError("Numeric values must be between -1000000000 and 1000000000: \(n.literal)")
        }
        return d
    }
}

private extension JSONValue {
    var text: String { jsonText }
}

/// An IPv4 or IPv6 network for `cidr` matching (ip-address-matching): the address bytes and prefix length.
public struct CIDRBlock: Sendable, Hashable {
    let network: [UInt8]
    let prefixLength: Int

    public init?(_ text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let length = Int(parts[1]), let address = Self.address(String(parts[0])),
              length >= 0, length <= address.count * 8 else { return nil }
        network = Self.masked(address, length)
        prefixLength = length
    }

    /// Whether `text` is an address of the same family inside this network.
    public func contains(_ text: String) -> Bool {
        guard let address = Self.address(text), address.count == network.count else { return false }
        return Self.masked(address, prefixLength) == network
    }

    static func masked(_ bytes: [UInt8], _ length: Int) -> [UInt8] {
        var out = bytes
        for i in out.indices {
            let bits = max(0, min(8, length - i * 8))
            out[i] &= bits == 0 ? 0 : UInt8(truncatingIfNeeded: 0xFF << (8 - bits))
        }
        return out
    }

    /// Dotted IPv4 (4 bytes) or IPv6 with `::` and an optional dotted tail (16 bytes).
    static func address(_ text: String) -> [UInt8]? {
        if !text.contains(":") { return ipv4(Substring(text)) }
        let halves = text.components(separatedBy: "::")
        guard halves.count <= 2 else { return nil }
        func groups(_ part: String) -> [UInt8]? {
            guard !part.isEmpty else { return [] }
            var bytes: [UInt8] = []
            let pieces = part.split(separator: ":", omittingEmptySubsequences: false)
            for (i, piece) in pieces.enumerated() {
                if i == pieces.count - 1, piece.contains(".") {
                    guard let v4 = ipv4(piece) else { return nil }
                    bytes += v4
                } else {
                    guard (1...4).contains(piece.count), let v = UInt16(piece, radix: 16) else { return nil }
                    bytes += [UInt8(v >> 8), UInt8(v & 0xFF)]
                }
            }
            return bytes
        }
        guard let head = groups(halves[0]) else { return nil }
        if halves.count == 1 { return head.count == 16 ? head : nil }
        guard let tail = groups(halves[1]), head.count + tail.count <= 14 else { return nil }
        return head + Array(repeating: 0, count: 16 - head.count - tail.count) + tail
    }

    static func ipv4(_ text: Substring) -> [UInt8]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var bytes: [UInt8] = []
        for part in parts {
            guard (1...3).contains(part.count), part.allSatisfy(\.isASCII), let v = UInt8(part) else { return nil }
            bytes.append(v)
        }
        return bytes
    }
}
