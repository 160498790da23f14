import ClarionCore
import ClarionCrypto
import FuzzSupport

/// ClarionCore's JSON parser (`JSONValue.parse`) and writer, on any bytes, beside ClarionCrypto's strict JSON parser
/// (`JWTValue`, which reads JWTs and ADM bodies in the emulator).
///
/// Invariants: both duplicate-key policies agree wherever `.reject` accepts; an error's offset lies inside the
/// input; what the writer produces is valid UTF-8 with every control character escaped, parses back (even with
/// `.reject`) to the same value, and writes the same bytes again; objects never hold a key twice. `JWTValue`
/// accepts only what `JSONValue` accepts with `.reject`, reads the same values, and accepts all of it that is valid
/// UTF-8, at most 64 deep, without surrogate escapes and with finite numbers; its own writer round-trips.
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
        require(JWTValue(jsonBytes: input) == nil, "JWTValue accepts what JSONValue refuses")
        return 0
    }
    do throws(JSONParseError) {
        let strict = try JSONValue.parse(bytes: input, duplicateKeys: .reject)
        require(strict == lenient, ".reject and .lastWins parse the same text differently")
        compareWithJWTValue(input, strict)
    } catch {
        require(error.code == .duplicateKey && error.key != nil, ".reject refuses with \(error.code), .lastWins accepts")
        require(JWTValue(jsonBytes: input) == nil, "JWTValue accepts a repeated key")
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

private func compareWithJWTValue(_ input: [UInt8], _ value: JSONValue) {
    guard let other = JWTValue(jsonBytes: input) else {
        let surrogateEscape = input.indices.contains { isSurrogateEscape(input, at: $0) }
        require(String(validating: input, as: UTF8.self) == nil || containerDepth(value) > 64 || surrogateEscape
                || !allNumbersFinite(value), "JWTValue refuses a document JSONValue reads")
        return
    }
    require(same(value, other), "JWTValue and JSONValue read different values")
    require(JWTValue(jsonBytes: other.jsonBytes) == other, "JWTValue's writer does not round-trip")
}

/// `\u` followed by D8-DF (either case): an escape naming a surrogate (the two parsers differ on lone ones).
private func isSurrogateEscape(_ input: [UInt8], at i: Int) -> Bool {
    guard i + 3 < input.count, input[i] == UInt8(ascii: "\\"), input[i + 1] == UInt8(ascii: "u"),
          input[i + 2] | 0x20 == UInt8(ascii: "d") else { return false }
    let nibble = input[i + 3] | 0x20
    return (UInt8(ascii: "8")...UInt8(ascii: "9")).contains(nibble) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(nibble)
}

private func containerDepth(_ value: JSONValue) -> Int {
    switch value {
    case .array(let items): 1 + (items.map(containerDepth).max() ?? 0)
    case .object(let object): 1 + (object.map { containerDepth($0.value) }.max() ?? 0)
    default: 0
    }
}

private func allNumbersFinite(_ value: JSONValue) -> Bool {
    switch value {
    case .number(let number): (Double(number.literal) ?? .infinity).isFinite
    case .array(let items): items.allSatisfy(allNumbersFinite)
    case .object(let object): object.allSatisfy { allNumbersFinite($0.value) }
    default: true
    }
}

private func same(_ a: JSONValue, _ b: JWTValue) -> Bool {
    switch (a, b) {
    case (.null, .null): true
    case (.bool(let x), .bool(let y)): x == y
    case (.number(let x), .number(let y)): Double(x.literal) == y
    case (.string(let x), .string(let y)): x == y
    case (.array(let xs), .array(let ys)): xs.count == ys.count && zip(xs, ys).allSatisfy { same($0, $1) }
    case (.object(let x), .object(let y)):
        x.count == y.count && x.allSatisfy { member in y[member.key].map { same(member.value, $0) } ?? false }
    default: false
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
    case .null, .bool, .string:
        break
    }
}
