import Testing
@testable import ClarionCore

@Suite("JSON reading and writing")
struct JSONValueTests {
    struct RoundTrip: Sendable, CustomTestStringConvertible {
        let input: String
        let compact: String
        var testDescription: String { input }
    }

    @Test("parses and re-encodes compactly, keeping member order and number literals", arguments: [
        RoundTrip(input: #"{ "b": 1, "a": [true, false, null], "c": "x" }"#, compact: #"{"b":1,"a":[true,false,null],"c":"x"}"#),
        RoundTrip(input: #"{"n":-0.5e+10,"big":123456789012345678901234567890}"#, compact: #"{"n":-0.5e+10,"big":123456789012345678901234567890}"#),
        RoundTrip(input: #"{"esc":"q\"b\\s\/n\nt\tu\u00e9\ud83d\ude00"}"#, compact: "{\"esc\":\"q\\\"b\\\\s/n\\nt\\tu\u{e9}\u{1F600}\"}"),
        RoundTrip(input: #"{"ctl":"\u0001"}"#, compact: #"{"ctl":"\u0001"}"#),
        RoundTrip(input: "  [ ]  ", compact: "[]"),
        RoundTrip(input: "\"just a string\"", compact: "\"just a string\""),
        RoundTrip(input: #"{"pair":"\ud800\udc00\uDBFF\uDFFF"}"#, compact: "{\"pair\":\"\u{10000}\u{10FFFF}\"}"),
    ])
    func roundTrip(_ c: RoundTrip) throws {
        #expect(try JSONValue.parse(c.input).jsonText == c.compact)
    }

    struct Bad: Sendable, CustomTestStringConvertible {
        let input: String
        let code: JSONParseError.Code
        var testDescription: String { input }
    }

    @Test("refuses what RFC 8259 refuses", arguments: [
        Bad(input: "", code: .unexpectedEnd),
        Bad(input: "{", code: .unexpectedEnd),
        Bad(input: #"{"a":1,}"#, code: .unexpectedByte),
        Bad(input: #"{"a" 1}"#, code: .unexpectedByte),
        Bad(input: "[1,2", code: .unexpectedEnd),
        Bad(input: "01", code: .invalidNumber),
        Bad(input: "1.", code: .invalidNumber),
        Bad(input: "-", code: .invalidNumber),
        Bad(input: "+1", code: .unexpectedByte),
        Bad(input: #""\x""#, code: .invalidEscape),
        Bad(input: "\"a\nb\"", code: .controlCharacterInString),
        Bad(input: "tru", code: .unexpectedEnd),
        Bad(input: "nul!", code: .unexpectedByte),
        Bad(input: "{} {}", code: .trailingData),
        Bad(input: "{'a':1}", code: .unexpectedByte),
    ])
    func refuses(_ c: Bad) {
        #expect(throws: JSONParseError.self) { try JSONValue.parse(c.input) }
        do {
            _ = try JSONValue.parse(c.input)
        } catch {
            #expect(error.code == c.code)
        }
    }

    @Test("duplicate keys: rejected on request, otherwise the last wins in the first position")
    func duplicateKeys() throws {
        let text = #"{"a":1,"b":2,"a":3}"#
        #expect(try JSONValue.parse(text).jsonText == #"{"a":3,"b":2}"#)
        do {
            _ = try JSONValue.parse(text, duplicateKeys: .reject)
            Issue.record("duplicate key accepted")
        } catch {
            #expect(error.code == .duplicateKey)
            #expect(error.key == "a")
        }
    }

    @Test("nesting deeper than the limit is refused, at the limit accepted")
    func depthLimit() throws {
        let limit = JSONValue.maximumNestingDepth
        let ok = String(repeating: "[", count: limit) + String(repeating: "]", count: limit)
        #expect(throws: Never.self) { try JSONValue.parse(ok) }
        let deep = String(repeating: "[", count: limit + 1) + String(repeating: "]", count: limit + 1)
        do {
            _ = try JSONValue.parse(deep)
            Issue.record("too deep accepted")
        } catch {
            #expect(error.code == .nestingTooDeep)
        }
    }

    @Test("integer, boolean and fractional literals stay distinguishable")
    func numberKinds() {
        #expect(json("1").intValue == 1)
        #expect(json("1.0").intValue == nil)
        #expect(json("1e0").intValue == nil)
        #expect(json("true").intValue == nil)
        #expect(json("true").boolValue == true)
        #expect(json("99999999999999999999").intValue == nil)
        #expect(JSONNumber(literal: "1.5e3")?.doubleValue == 1500)
        #expect(JSONNumber(literal: "1.5.3") == nil)
    }

    @Test("object subscript replaces in place, appends, and removes")
    func objectEditing() {
        var o = object(#"{"a":1,"b":2}"#)
        o["a"] = "x"
        o["c"] = true
        o["b"] = nil
        #expect(o.jsonText == #"{"a":"x","c":true}"#)
    }

    @Test("encodedSortingKeys orders members by their keys' UTF-8 bytes at every depth; encoded keeps built order")
    func sortedWriter() {
        let value: JSONValue = ["b": 1, "B": [["y": true, "x": nil]], "a": ["é": 1, "z": 2]]
        #expect(String(decoding: value.encodedSortingKeys(), as: UTF8.self) == #"{"B":[{"x":null,"y":true}],"a":{"z":2,"é":1},"b":1}"#)
        #expect(value.jsonText == #"{"b":1,"B":[{"y":true,"x":null}],"a":{"é":1,"z":2}}"#)
    }

    @Test("one escaper: quotes, backslashes, controls, and U+2028/U+2029 (line ends in JavaScript) are escaped; other text is not")
    func oneEscaper() throws {
        let text = "a\"b\\c\u{01}\u{08}\n\u{2028}d\u{2029}é—"
        let expected = #""a\"b\\c\u0001\b\n\u2028d\u2029é—""#
        #expect(JSONValue.string(text).jsonText == expected)
        #expect(JSONText.quote(text) == expected)
        var appended: [UInt8] = []
        JSONText.appendQuoted(text, to: &appended)
        #expect(String(decoding: appended, as: UTF8.self) == expected)
        #expect(try JSONValue.parse(expected) == .string(text))
    }

    @Test("numbers from doubles: integral values as integers, fractions in shortest form, no NaN or infinity")
    func doubles() {
        #expect(JSONNumber(1_700_000_000.0)?.literal == "1700000000")
        #expect(JSONNumber(-2.5)?.literal == "-2.5")
        #expect(JSONNumber(Double.nan) == nil)
        #expect(JSONValue.double(.infinity) == .null)
        #expect(JSONNumber(literal: "1.7e9")?.int64Value == 1_700_000_000)
        #expect(JSONNumber(literal: "2.5")?.int64Value == nil)
    }
}
