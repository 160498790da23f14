import Testing
@testable import ClarionCrypto

@Suite struct Base64URLTests {
    @Test("RFC 4648 section 10 vectors encode without padding")
    func rfc4648Vectors() {
        let vectors: [(String, String)] = [
            ("", ""), ("f", "Zg"), ("fo", "Zm8"), ("foo", "Zm9v"),
            ("foob", "Zm9vYg"), ("fooba", "Zm9vYmE"), ("foobar", "Zm9vYmFy"),
        ]
        for (plain, encoded) in vectors {
            #expect(Base64URL.encode(Array(plain.utf8)) == encoded)
            #expect(Base64URL.decode(encoded) == Array(plain.utf8))
        }
    }

    @Test("the URL-safe alphabet uses - and _ where base64 has + and /")
    func urlSafeAlphabet() {
        #expect(Base64URL.encode([0xfb, 0xff, 0xbf]) == "-_-_")
        #expect(Base64URL.decode("-_-_") == [0xfb, 0xff, 0xbf])
    }

    @Test("padding, standard-alphabet characters, whitespace and impossible lengths are refused")
    func strictDecoding() {
        #expect(Base64URL.decode("Zg==") == nil)
        #expect(Base64URL.decode("+/+/") == nil)
        #expect(Base64URL.decode("Zm9 v") == nil)
        #expect(Base64URL.decode("Zm9vY") == nil)  // 5 characters: one stray sextet
    }

    @Test("non-zero trailing bits are refused so a value has one spelling")
    func trailingBits() {
        #expect(Base64URL.decode("Zg") == [0x66])
        #expect(Base64URL.decode("Zh") == nil)
    }

    @Test("round trip over all byte values and lengths 0 to 70")
    func roundTrip() {
        for length in 0...70 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ length) }
            #expect(Base64URL.decode(Base64URL.encode(bytes)) == bytes)
        }
    }
}

@Suite struct JWTValueTests {
    @Test("parses objects, arrays, strings with escapes, numbers, booleans and null")
    func parsesJSON() throws {
        let value = try #require(JWTValue(json: #" { "a" : [1, -2.5, 3e2, true, false, null], "s": "q\"\\\/\n\u00e9\ud83d\ude00" } "#))
        #expect(value["a"] == .array([.number(1), .number(-2.5), .number(300), .bool(true), .bool(false), .null]))
        #expect(value["s"] == .string("q\"\\/\né😀"))
    }

    @Test("true stays a boolean and 1 stays a number")
    func booleansAreNotNumbers() throws {
        let value = try #require(JWTValue(json: #"{"t": true, "one": 1}"#))
        #expect(value["t"]?.boolValue == true)
        #expect(value["t"]?.numberValue == nil)
        #expect(value["one"]?.int64Value == 1)
        #expect(value["one"]?.boolValue == nil)
    }

    @Test("a repeated object key is refused")
    func duplicateKeys() {
        #expect(JWTValue(json: #"{"iss": "a", "iss": "b"}"#) == nil)
    }

    @Test("invalid JSON is refused", arguments: [
        "", "{", "{\"a\":}", "[1,]", "{\"a\":1,}", "01", "1.", ".5", "-", "tru", "\"unterminated",
        "\"bad \\x escape\"", "\"lone \\udc00 surrogate\"", "{} {}", "\"raw \n newline\"", "NaN", "1e400",
    ])
    func invalidJSON(text: String) {
        #expect(JWTValue(json: text) == nil)
    }

    @Test("nesting deeper than 64 levels is refused")
    func depthLimit() {
        let deep = String(repeating: "[", count: 65) + String(repeating: "]", count: 65)
        let fine = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        #expect(JWTValue(json: deep) == nil)
        #expect(JWTValue(json: fine) != nil)
    }

    @Test("serialises compactly with sorted keys, integral numbers without a fraction, and escapes")
    func serialises() {
        let value: JWTValue = ["kid": "ABC123DEFG", "alg": "ES256", "iat": 1_700_000_000, "x": 1.5, "c": "a\"b\u{01}"]
        #expect(value.jsonString == #"{"alg":"ES256","c":"a\"b\u0001","iat":1700000000,"kid":"ABC123DEFG","x":1.5}"#)
        #expect(JWTValue(json: value.jsonString) == value)
    }
}
