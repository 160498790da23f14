import Testing
@testable import ClarionCore

/// The parser under hostile input (issue "Hardening", finding 1): repeated keys are found by a hashed index on large
/// objects rather than by scanning every earlier key.
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

    /// `{"k0":0,"k1":0,...}` with `keys` members; `repeatLast` makes the last key repeat the first.
    func object(keys: Int, repeatLast: Bool = false) -> [UInt8] {
        var out = "{"
        for i in 0..<keys {
            let key = repeatLast && i == keys - 1 ? 0 : i
            out += (i == 0 ? "" : ",") + "\"k\(key)\":\(i)"
        }
        return Array((out + "}").utf8)
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
}
