import Testing
@testable import ClarionCore

/// The parser under hostile input (issue "Hardening", finding 1): documents are bounded in members, values and
/// depth, and repeated keys are found by a hashed index on large objects rather than by scanning every earlier key.
@Suite("JSON under hostile input")
struct JSONHostileInputTests {
    func refusal(_ bytes: [UInt8], duplicateKeys: JSONValue.DuplicateKeyPolicy = .lastWins) -> JSONParseError? {
        do {
            _ = try JSONValue.parse(bytes: bytes, duplicateKeys: duplicateKeys)
            return nil
        } catch {
            return error
        }
    }

    // MARK: limits

    /// `{"k0":0,"k1":0,...}` with `keys` members; `repeatLast` makes the last key repeat the first.
    func object(keys: Int, repeatLast: Bool = false) -> [UInt8] {
        var out = "{"
        for i in 0..<keys {
            let key = repeatLast && i == keys - 1 ? 0 : i
            out += (i == 0 ? "" : ",") + "\"k\(key)\":\(i)"
        }
        return Array((out + "}").utf8)
    }

    @Test("an object may have exactly maximumObjectMembers members; one more is refused at the key over the limit")
    func memberLimit() throws {
        let limit = JSONValue.maximumObjectMembers
        #expect(limit == 10_000)
        let atLimit = try JSONValue.parse(bytes: object(keys: limit), duplicateKeys: .reject)
        #expect(atLimit.objectValue?.count == limit)
        let over = object(keys: limit + 1)
        let error = try #require(refusal(over, duplicateKeys: .reject))
        #expect(error.code == .tooManyMembers)
        #expect(error.isLimit)
        #expect(error.offset == over.count - "\"k\(limit)\":\(limit)}".utf8.count)
        // Repeated keys count each time they are listed, even when the last one wins.
        #expect(refusal(object(keys: limit + 1, repeatLast: true), duplicateKeys: .lastWins)?.code == .tooManyMembers)
    }

    @Test("the finding: a 40,000-key object is refused at its 10,001st key, under either duplicate policy")
    func fortyThousandKeys() throws {
        let body = object(keys: 40_000)
        for policy in [JSONValue.DuplicateKeyPolicy.reject, .lastWins] {
            let error = try #require(refusal(body, duplicateKeys: policy))
            #expect(error.code == .tooManyMembers)
            #expect(error.offset < body.count / 3)
        }
    }

    @Test("a document may hold exactly maximumValues values (the top level counts); one more is refused")
    func valueLimit() throws {
        let limit = JSONValue.maximumValues
        #expect(limit == 100_000)
        func zeros(_ n: Int) -> [UInt8] { Array(("[" + Array(repeating: "0", count: n).joined(separator: ",") + "]").utf8) }
        #expect(try JSONValue.parse(bytes: zeros(limit - 1)).arrayValue?.count == limit - 1)
        let error = try #require(refusal(zeros(limit)))
        #expect(error.code == .tooManyValues)
        #expect(error.offset == 1 + 2 * (limit - 1))
        // Members of nested objects count too: 10 objects of 10,000 members each are 100,011 values.
        let objects = "[" + Array(repeating: String(decoding: object(keys: 10_000), as: UTF8.self), count: 10).joined(separator: ",") + "]"
        #expect(refusal(Array(objects.utf8))?.code == .tooManyValues)
    }

    @Test("nesting exactly maximumNestingDepth deep is accepted in objects too; one deeper is refused")
    func objectDepth() throws {
        let limit = JSONValue.maximumNestingDepth
        let ok = String(repeating: #"{"a":"#, count: limit - 1) + "{}" + String(repeating: "}", count: limit - 1)
        #expect(throws: Never.self) { try JSONValue.parse(ok) }
        let deep = String(repeating: #"{"a":"#, count: limit) + "{}" + String(repeating: "}", count: limit)
        #expect(refusal(Array(deep.utf8))?.code == .nestingTooDeep)
    }

    // MARK: repeated keys at every size

    @Test("a repeated key is found at every object size, first, middle or last, with its offset",
          arguments: [1, 2, 31, 32, 33, 34, 100, 9_999])
    func duplicatesAtEverySize(_ size: Int) throws {
        for repeated in Set([0, size / 2, size - 1]) {
            var text = "{"
            for i in 0..<size { text += "\"k\(i)\":\(i)," }
            let offset = text.utf8.count
            text += "\"k\(repeated)\":\"again\"}"
            let error = try #require(refusal(Array(text.utf8), duplicateKeys: .reject), "size \(size), key \(repeated)")
            #expect(error.code == .duplicateKey)
            #expect(error.key == "k\(repeated)")
            #expect(error.offset == offset)
            // Last wins, in the position of the first, and the object keeps its size.
            let object = try #require(try JSONValue.parse(text).objectValue)
            #expect(object.count == size)
            #expect(object.members[repeated].key == "k\(repeated)")
            #expect(object.members[repeated].value == "again")
            #expect(object["k\(repeated)"] == "again")
        }
    }

    @Test("objects past the threshold keep a key index, consistent with their members through every edit")
    func indexInvariant() throws {
        let threshold = JSONObject.indexThreshold
        var edited = JSONObject()
        for i in 0..<(threshold + 8) {
            edited["k\(i)"] = .number(JSONNumber(i))
            #expect(edited.isIndexed == (edited.count > threshold))
        }
        edited["k3"] = "replaced"
        edited["k0"] = nil  // a removal moves every later member
        edited["k\(threshold + 8)"] = "appended"
        #expect(edited.isIndexed)
        #expect(edited.keys == (1..<(threshold + 9)).map { "k\($0)" })
        for (position, member) in edited.members.enumerated() {
            #expect(edited[member.key] == edited.members[position].value)
        }
        #expect(edited["k3"] == "replaced")
        #expect(!edited.contains("k0"))
        while edited.count > threshold { edited[edited.keys[0]] = nil }
        #expect(!edited.isIndexed)
        #expect(edited["k\(threshold + 8)"] == "appended")
        // A parsed large object is indexed too.
        let parsed = try #require(try JSONValue.parse(bytes: object(keys: 1_000)).objectValue)
        #expect(parsed.isIndexed)
        #expect(parsed["k999"] == 999)
        #expect(!parsed.contains("k1000"))
    }

    @Test("equality and hashing see members only, never whether an index was built")
    func equalityIgnoresIndex() throws {
        let threshold = JSONObject.indexThreshold
        let pairs = (0...threshold).map { ("k\($0)", JSONValue.number(JSONNumber($0))) }
        var shrunk = JSONObject(pairs + [("extra", JSONValue.bool(true))])
        shrunk["extra"] = nil  // rebuilt index
        let built = JSONObject(pairs)
        let parsed = try #require(try JSONValue.parse(JSONValue.object(built).jsonText).objectValue)
        #expect(shrunk == built)
        #expect(parsed == built)
        #expect(Set([shrunk, built, parsed]).count == 1)
        var small = JSONObject(Array(pairs.prefix(2)))
        #expect(small != built)
        small = JSONObject(pairs)
        #expect(small.hashValue == built.hashValue)
    }

    // MARK: the API's wording

    @Test("every refusal explains itself with its byte offset")
    func reasons() throws {
        #expect(try #require(refusal(object(keys: 10_001))).reason.hasPrefix("an object with more than 10000 members at byte "))
        #expect(try #require(refusal(Array(#"{"a":1,"a":2}"#.utf8), duplicateKeys: .reject)).reason
            == "the key 'a' appears more than once at byte 7")
    }
}
