import ClarionCore
import FuzzSupport

/// ClarionCore's JSON parser (`JSONValue.parse`) and writers (`encoded()`, `encodedSortingKeys()`, `JSONText`), on
/// any bytes.
///
/// Invariants: both duplicate-key policies agree wherever `.reject` accepts; an error's offset lies inside the
/// input; what the writer produces is valid UTF-8 with every control character escaped, parses back (even with
/// `.reject`) to the same value, and writes the same bytes again; objects never hold a key twice. The sorted-keys
/// writer's text parses back to the same members in key order and is a fixed point; `JSONText` quotes every string
/// exactly as the writer does. Topic access policies (`TopicPolicy`) are read from the same documents.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSON(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = bytes(data, size)
    let lenient: JSONValue
    do throws(JSONParseError) {
        lenient = try JSONValue.parse(bytes: input, duplicateKeys: .lastWins)
    } catch {
        require(error.offset >= 0 && error.offset <= input.count, "error offset \(error.offset) outside \(input.count) bytes")
        require(error.code != .duplicateKey, "duplicateKey reported under .lastWins")
        require((try? JSONValue.parse(bytes: input, duplicateKeys: .reject)) == nil, ".reject accepts what .lastWins refuses")
        return 0
    }
    do throws(JSONParseError) {
        let strict = try JSONValue.parse(bytes: input, duplicateKeys: .reject)
        require(strict == lenient, ".reject and .lastWins parse the same text differently")
    } catch {
        require(error.code == .duplicateKey && error.key != nil, ".reject refuses with \(error.code), .lastWins accepts")
    }
    checkTree(lenient, depth: 0)

    let encoded = lenient.encoded()
    require(String(validating: encoded, as: UTF8.self) != nil, "the writer produced invalid UTF-8")
    require(!encoded.contains { $0 < 0x20 }, "the writer left a control character unescaped")
    let reparsed: JSONValue
    do throws(JSONParseError) {
        reparsed = try JSONValue.parse(bytes: encoded, duplicateKeys: .reject)
    } catch {
        fatalError("fuzz invariant: written JSON does not parse: \(error)")
    }
    require(reparsed == lenient, "parse(write(v)) != v")
    require(reparsed.encoded() == encoded, "write is not stable across a round trip")
    checkSortedWriter(lenient)
    if let text = String(validating: input, as: UTF8.self) {
        require((try? JSONValue.parse(text)) == lenient, "parse(String) and parse(bytes:) disagree")
        checkTopicPolicy(text, written: String(decoding: encoded, as: UTF8.self))
    }
    return 0
}

/// `TopicPolicy` (a topic's `Policy` attribute, untrusted input of SetTopicAttributes and CreateTopic) on the same
/// documents: it refuses or accepts without crashing; what it accepts it accepts again once written by the JSON
/// writer, and holds only account ids or "*" as principals; AddPermission's result parses again and grants what it
/// was asked to.
private func checkTopicPolicy(_ text: String, written: String) {
    let arn = "arn:aws:sns:us-east-1:111111111111:fuzz"
    guard let policy = try? TopicPolicy.parse(text, topicARN: arn) else { return }
    require((try? TopicPolicy.parse(written, topicARN: arn)) == policy, "a policy parses differently once rewritten")
    for statement in policy.statements {
        require(statement.principals.allSatisfy { $0 == "*" || TopicPolicy.isAccountID($0) }, "a principal that is not an account")
    }
    guard let added = try? TopicPolicy.adding(to: text, topicARN: arn, label: "fuzz-label-0", accounts: ["222222222222"],
                                              actions: ["Publish"]) else { return }
    guard let again = try? TopicPolicy.parse(added, topicARN: arn) else { fatalError("fuzz invariant: AddPermission's policy does not parse") }
    require(again.statements.count == policy.statements.count + 1, "AddPermission did not add one statement")
    if !policy.statements.contains(where: { $0.effect == .deny }) {
        require(again.allows(account: "222222222222", action: "Publish"), "AddPermission's statement does not grant")
    }
    require(TopicPolicy.removing(from: added, label: "fuzz-label-0") != nil, "RemovePermission does not find the label")
}

private func checkSortedWriter(_ value: JSONValue) {
    let sorted = value.encodedSortingKeys()
    guard let reparsed = try? JSONValue.parse(bytes: sorted, duplicateKeys: .reject) else {
        fatalError("fuzz invariant: the sorted-keys writer's JSON does not parse")
    }
    require(sameIgnoringOrder(value, reparsed), "the sorted-keys writer changed a value")
    require(isSorted(reparsed), "the sorted-keys writer left an object's keys out of order")
    require(reparsed.encodedSortingKeys() == sorted, "the sorted-keys writer is not a fixed point")
}

private func sameIgnoringOrder(_ a: JSONValue, _ b: JSONValue) -> Bool {
    switch (a, b) {
    case (.array(let xs), .array(let ys)): xs.count == ys.count && zip(xs, ys).allSatisfy { sameIgnoringOrder($0, $1) }
    case (.object(let x), .object(let y)):
        x.count == y.count && x.allSatisfy { member in y[member.key].map { sameIgnoringOrder(member.value, $0) } ?? false }
    default: a == b
    }
}

private func isSorted(_ value: JSONValue) -> Bool {
    switch value {
    case .array(let items): items.allSatisfy(isSorted)
    case .object(let object):
        zip(object.keys, object.keys.dropFirst()).allSatisfy { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            && object.allSatisfy { isSorted($0.value) }
    default: true
    }
}

private func checkTree(_ value: JSONValue, depth: Int) {
    require(depth <= JSONValue.maximumNestingDepth, "nesting \(depth) beyond the limit")
    switch value {
    case .number(let number):
        require(JSONNumber(literal: number.literal) != nil, "number literal \(number.literal) is not valid JSON")
        if let int = number.intValue { require(number.isInteger && Int(number.literal) == int, "intValue of \(number.literal)") }
        _ = number.doubleValue
    case .array(let items):
        for item in items { checkTree(item, depth: depth + 1) }
    case .object(let object):
        require(Set(object.keys).count == object.count, "an object holds a key twice")
        for member in object { checkTree(member.value, depth: depth + 1) }
    case .string(let string):
        var quoted: [UInt8] = []
        JSONText.appendQuoted(string, to: &quoted)
        require(quoted == JSONValue.string(string).encoded(), "JSONText and the writer quote a string differently")
        require(JSONText.quote(string) == JSONValue.string(string).jsonText, "JSONText.quote and the writer differ")
    case .null, .bool:
        break
    }
}
