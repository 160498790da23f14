import Testing
@testable import ClarionCore

/// The parser under hostile input (issue "Hardening", findings 1 and 12a): text that is not UTF-8 and unpaired
/// surrogate escapes are refused rather than repaired, documents are bounded in members, values and depth, and
/// repeated keys are found by a hashed index on large objects rather than by scanning every earlier key.
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

    /// `"ab<bytes>cd"` as a JSON string document: `bytes` start at offset 3.
    func quoted(_ bytes: [UInt8]) -> [UInt8] { [0x22, 0x61, 0x62] + bytes + [0x63, 0x64, 0x22] }

    struct Bytes: Sendable, CustomTestStringConvertible {
        let label: String
        let bytes: [UInt8]
        var testDescription: String { label }
    }

    // MARK: UTF-8 (RFC 8259 section 8.1)

    @Test("bytes inside a string that are not well-formed UTF-8 are refused where they start", arguments: [
        Bytes(label: "overlong '/' (C0 AF)", bytes: [0xC0, 0xAF]),
        Bytes(label: "overlong NUL (C1 80)", bytes: [0xC1, 0x80]),
        Bytes(label: "overlong 3-byte (E0 80 AF)", bytes: [0xE0, 0x80, 0xAF]),
        Bytes(label: "overlong 4-byte (F0 80 80 AF)", bytes: [0xF0, 0x80, 0x80, 0xAF]),
        Bytes(label: "surrogate U+D800 encoded (ED A0 80)", bytes: [0xED, 0xA0, 0x80]),
        Bytes(label: "surrogate U+DFFF encoded (ED BF BF)", bytes: [0xED, 0xBF, 0xBF]),
        Bytes(label: "above U+10FFFF (F4 90 80 80)", bytes: [0xF4, 0x90, 0x80, 0x80]),
        Bytes(label: "F5 lead", bytes: [0xF5, 0x80, 0x80, 0x80]),
        Bytes(label: "FF", bytes: [0xFF]),
        Bytes(label: "stray continuation (80)", bytes: [0x80]),
        Bytes(label: "truncated 2-byte (C3 then ASCII)", bytes: [0xC3]),
        Bytes(label: "truncated 3-byte (E2 82 then ASCII)", bytes: [0xE2, 0x82]),
        Bytes(label: "truncated 4-byte (F0 9F 98 then ASCII)", bytes: [0xF0, 0x9F, 0x98]),
        Bytes(label: "latin-1 e-acute (E9)", bytes: [0xE9]),
    ])
    func invalidUTF8(_ c: Bytes) throws {
        let error = try #require(refusal(quoted(c.bytes)))
        #expect(error.code == .invalidUTF8)
        #expect(error.offset == 3)
        // The same after an escape (the decoding path), in a key, and at the very end of the input.
        #expect(refusal([0x22, 0x5C, 0x6E] + c.bytes + [0x22])?.code == .invalidUTF8)
        #expect(refusal(Array(#"{""#.utf8) + c.bytes + Array(#"":1}"#.utf8))?.code == .invalidUTF8)
        #expect(refusal([0x22] + c.bytes)?.code == .invalidUTF8)
    }

    @Test("well-formed UTF-8 is accepted at every boundary of the table (U+0080, U+07FF, U+D7FF, U+E000, U+FFFF, U+10000, U+10FFFF)")
    func validUTF8() throws {
        let text = "\u{80}\u{7FF}\u{800}\u{D7FF}\u{E000}\u{FFFD}\u{FFFF}\u{10000}\u{1F600}\u{10FFFF}"
        let parsed = try JSONValue.parse(bytes: [0x22] + Array(text.utf8) + [0x22])
        #expect(parsed.stringValue == text)
        // And after an escape.
        #expect(try JSONValue.parse(bytes: Array(#""\n"#.utf8) + Array(text.utf8) + [0x22]).stringValue == "\n" + text)
    }

    @Test("a byte outside a string that is not ASCII is an unexpected byte, as before")
    func nonASCIIOutsideStrings() {
        #expect(refusal([0x5B, 0xC3, 0xA9, 0x5D])?.code == .unexpectedByte)
    }

    // MARK: surrogate escapes (RFC 8259 sections 7 and 8.2)

    struct Escape: Sendable, CustomTestStringConvertible {
        let text: String
        let code: JSONParseError.Code
        let offset: Int
        var testDescription: String { text }
    }

    @Test("a \\u escape of a surrogate that is not half of a high + low pair is refused at its backslash", arguments: [
        Escape(text: #""\ud800""#, code: .unpairedSurrogate, offset: 1),
        Escape(text: #""\uDBFF""#, code: .unpairedSurrogate, offset: 1),
        Escape(text: #""\udc00""#, code: .unpairedSurrogate, offset: 1),
        Escape(text: #""ab\uDFFFcd""#, code: .unpairedSurrogate, offset: 3),
        Escape(text: #""\ud800x""#, code: .unpairedSurrogate, offset: 1),
        Escape(text: #""\ud800\u0041""#, code: .unpairedSurrogate, offset: 1),
        Escape(text: #""\ud800\ud800""#, code: .unpairedSurrogate, offset: 1),
        Escape(text: #""\udc00\ud800""#, code: .unpairedSurrogate, offset: 1),
        Escape(text: #""\ud83d\n""#, code: .unpairedSurrogate, offset: 1),
        Escape(text: #"{"\ud800":1}"#, code: .unpairedSurrogate, offset: 2),
        Escape(text: #""\ud800\u12xy""#, code: .invalidEscape, offset: 11),
        Escape(text: #""\ud800"#, code: .unpairedSurrogate, offset: 1),
    ])
    func unpairedSurrogates(_ c: Escape) throws {
        let error = try #require(refusal(Array(c.text.utf8)))
        #expect(error.code == c.code)
        #expect(error.offset == c.offset)
    }

    @Test("a valid surrogate pair is one scalar, in either case of hex")
    func validPairs() throws {
        #expect(try JSONValue.parse(#""\ud83d\ude00""#).stringValue == "\u{1F600}")
        #expect(try JSONValue.parse(#""\uD83D\uDE00!""#).stringValue == "\u{1F600}!")
        #expect(try JSONValue.parse(#""\u00e9\uFFFD""#).stringValue == "\u{E9}\u{FFFD}")
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
        let error = try #require(refusal(quoted([0xFF])))
        #expect(error.reason == "not valid UTF-8 at byte 3")
        #expect(try #require(refusal(object(keys: 10_001))).reason.hasPrefix("an object with more than 10000 members at byte "))
        #expect(try #require(refusal(Array(#""\udc00""#.utf8))).reason == "a \\u escape of an unpaired UTF-16 surrogate at byte 1")
        #expect(try #require(refusal(Array(#"{"a":1,"a":2}"#.utf8), duplicateKeys: .reject)).reason
            == "the key 'a' appears more than once at byte 7")
    }
}
