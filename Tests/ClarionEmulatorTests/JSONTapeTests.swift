import Testing
@testable import ClarionEmulator

@Suite struct JSONTapeTests {
    @Test("JSONTape: members, kinds, strings with escapes and literals come back as written")
    func parses() throws {
        let tape = try #require(JSONTape(Array(#" {"a": [1, -2.5e3, true, false, null], "s\u0074r": "x\"y\u00e9", "o": {}} "#.utf8)))
        #expect(tape.kind(tape.root) == .object)
        let array = try #require(tape.member(tape.root, Array("a".utf8)))
        #expect(tape.children(array).map { tape.kind($0) } == [.number, .number, .true, .false, .null])
        #expect(tape.children(array).map { tape.literal($0) } == ["1", "-2.5e3", "true", "false", "null"])
        let string = try #require(tape.member(tape.root, Array("str".utf8)))  // escaped key, compared unescaped
        #expect(tape.string(string) == "x\"yé")
        #expect(tape.stringLength(string) == 5)  // UTF-8 bytes: é is two
        #expect(tape.key(string) == "str")
        #expect(tape.children(try #require(tape.member(tape.root, Array("o".utf8)))).map { $0 }.isEmpty)
    }

    @Test("JSONTape: invalid documents are refused", arguments: [
        "", "{", "}", "{\"a\"}", "{\"a\":}", "{\"a\":1,}", "[1,]", "[1 2]", "01", "1.", "-", "+1", "tru", "nul",
        "\"open", "\"bad \\x\"", "\"\\u12\"", "\"\\udc00\"", "\"\\ud800\"", "\"tab\there\"", "{} []", "{'a':1}",
    ])
    func invalid(text: String) {
        #expect(JSONTape(Array(text.utf8)) == nil)
    }

    @Test("JSONTape: invalid UTF-8 inside a string is refused; valid multi-byte text is kept")
    func utf8() throws {
        #expect(JSONTape([0x22, 0xc3, 0x28, 0x22]) == nil)
        let tape = try #require(JSONTape(Array("\"€😀\"".utf8)))
        #expect(tape.string(tape.root) == "€😀")
    }

    @Test("JSONTape: nesting deeper than 64 is refused")
    func depth() {
        #expect(JSONTape(Array((String(repeating: "[", count: 65) + String(repeating: "]", count: 65)).utf8)) == nil)
        #expect(JSONTape(Array((String(repeating: "[", count: 64) + String(repeating: "]", count: 64)).utf8)) != nil)
    }

    @Test("FCM B.3: field names written with JSON escapes are still recognised")
    func escapedFieldNames() {
        let body = Array(#"{"message":{"t\u006fken":"abc","d\u0061ta":{"k":1}}}"#.utf8)
        guard case .invalid(let field, _) = FCMMessageCheck.check(body: body) else {
            Issue.record("non-string data value accepted")
            return
        }
        #expect(field == #"message.data["k"].value"#)
    }
}
