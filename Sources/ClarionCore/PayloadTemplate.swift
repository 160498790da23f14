/// A request body rendered once per message and platform, with holes for the per-delivery values.
///
/// The dispatcher sends one message to many endpoints; re-encoding JSON for each would cost a parse, a tree
/// and an encode per push. Instead the renderer encodes everything that is shared, and `fill` only copies the
/// literal byte runs and the JSON-escaped slot values into one preallocated array.
///
/// Invariant: `literals.count == slots.count + 1`; slot `i` sits between `literals[i]` and `literals[i + 1]`,
/// and the surrounding quotes belong to the literals, so a slot value is always a JSON string's contents.
public struct PayloadTemplate: Sendable, Hashable {
    public enum Slot: Sendable, Hashable {
        /// The endpoint's device token / registration token (FCM puts it in the body).
        case token
        /// The delivery id (`DeliveryIDCodec`), when the application asked for it in payloads.
        case deliveryID
    }

    public let literals: [[UInt8]]
    public let slots: [Slot]
    /// Bytes that do not depend on the per-delivery values.
    public let fixedByteCount: Int

    /// A body with no holes.
    public init(bytes: [UInt8]) {
        self.init(literals: [bytes], slots: [])
    }

    init(literals: [[UInt8]], slots: [Slot]) {
        precondition(literals.count == slots.count + 1, "PayloadTemplate: literals must surround every slot")
        self.literals = literals
        self.slots = slots
        fixedByteCount = literals.reduce(0) { $0 + $1.count }
    }

    public func contains(_ slot: Slot) -> Bool { slots.contains(slot) }

    /// The body for one delivery. Values are JSON-escaped when they need it (tokens and delivery ids never do).
    public func fill(token: String, deliveryID: String = "") -> [UInt8] {
        if slots.isEmpty { return literals[0] }
        var out: [UInt8] = []
        out.reserveCapacity(fixedByteCount + slots.count * max(token.utf8.count, deliveryID.utf8.count))
        for i in 0..<slots.count {
            out.append(contentsOf: literals[i])
            let value = slots[i] == .token ? token : deliveryID
            if JSONWriter.needsNoEscaping(value) {
                out.append(contentsOf: value.utf8)
            } else {
                JSONWriter.writeEscapedContents(value, to: &out)
            }
        }
        out.append(contentsOf: literals[slots.count])
        return out
    }

    /// The body for several tokens sharing one request (Huawei Push Kit's `"token":["a","b"]`, E.1): the token slot,
    /// which sits inside a JSON array's quotes, takes every token, joined by `","`. For templates whose only slot is
    /// the token (no delivery id: a per-delivery id makes every body different).
    public func fill(tokens: [String]) -> [UInt8] {
        precondition(!contains(.deliveryID), "PayloadTemplate.fill(tokens:): a body with a delivery id is per delivery")
        if slots.isEmpty { return literals[0] }
        var out: [UInt8] = []
        out.reserveCapacity(fixedByteCount + tokens.reduce(0) { $0 + $1.utf8.count + 3 })
        for i in 0..<slots.count {
            out.append(contentsOf: literals[i])
            for (n, token) in tokens.enumerated() {
                if n > 0 { out.append(contentsOf: [UInt8(ascii: "\""), UInt8(ascii: ","), UInt8(ascii: "\"")]) }
                if JSONWriter.needsNoEscaping(token) {
                    out.append(contentsOf: token.utf8)
                } else {
                    JSONWriter.writeEscapedContents(token, to: &out)
                }
            }
        }
        out.append(contentsOf: literals[slots.count])
        return out
    }
}

/// A JSON tree some of whose string values are template slots. Used only while rendering.
indirect enum JSONTemplateNode {
    case value(JSONValue)
    case object([(String, JSONTemplateNode)])
    case slot(PayloadTemplate.Slot)
    /// A JSON string whose contents are the inner node's JSON text (FCM/ADM data values that hold an object,
    /// `PayloadNamespace`). Its slots may only be delivery ids, which never need escaping at either level.
    case embedded(JSONTemplateNode)
    case array([JSONTemplateNode])

    /// A JSON array of one token slot: `["<token>"]` (Push Kit's `token`, E.1; `fill(tokens:)` puts many there).
    static var tokenList: JSONTemplateNode { .array([.slot(.token)]) }

    static func object(_ object: JSONObject) -> JSONTemplateNode {
        .object(object.members.map { ($0.key, .value($0.value)) })
    }

    func template() -> PayloadTemplate {
        var builder = Builder()
        builder.write(self)
        return builder.finish()
    }

    private struct Builder {
        var literals: [[UInt8]] = []
        var slots: [PayloadTemplate.Slot] = []
        var current: [UInt8] = []

        mutating func write(_ node: JSONTemplateNode) {
            switch node {
            case .value(let v):
                JSONWriter.write(v, sortingKeys: false, to: &current)
            case .slot(let slot):
                current.append(UInt8(ascii: "\""))
                literals.append(current)
                slots.append(slot)
                current = [UInt8(ascii: "\"")]
            case .object(let members):
                current.append(UInt8(ascii: "{"))
                for (i, (key, value)) in members.enumerated() {
                    if i > 0 { current.append(UInt8(ascii: ",")) }
                    JSONWriter.writeString(key, to: &current)
                    current.append(UInt8(ascii: ":"))
                    write(value)
                }
                current.append(UInt8(ascii: "}"))
            case .array(let items):
                current.append(UInt8(ascii: "["))
                for (i, item) in items.enumerated() {
                    if i > 0 { current.append(UInt8(ascii: ",")) }
                    write(item)
                }
                current.append(UInt8(ascii: "]"))
            case .embedded(let inner):
                var nested = Builder()
                nested.write(inner)
                let text = nested.finish()
                current.append(UInt8(ascii: "\""))
                for (i, slot) in text.slots.enumerated() {
                    precondition(slot == .deliveryID, "JSONTemplateNode.embedded: only delivery-id slots can be nested")
                    JSONWriter.writeEscapedContents(String(decoding: text.literals[i], as: UTF8.self), to: &current)
                    literals.append(current)
                    slots.append(slot)
                    current = []
                }
                JSONWriter.writeEscapedContents(String(decoding: text.literals[text.slots.count], as: UTF8.self), to: &current)
                current.append(UInt8(ascii: "\""))
            }
        }

        mutating func finish() -> PayloadTemplate {
            PayloadTemplate(literals: literals + [current], slots: slots)
        }
    }
}
