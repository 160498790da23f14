import Testing
import ClarionCore
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

@Suite struct JWTJSONTests {
    /// RFC 7515 section 4: a JWS parser must reject repeated header parameter names or keep only the last; Clarion's
    /// emulator checks tokens as strictly as it can, so it rejects them (in the claims set too).
    @Test("a repeated header parameter or claim name is refused (RFC 7515 section 4)", arguments: [
        (#"{"alg":"ES256","alg":"none"}"#, #"{"iss":"a"}"#),
        (#"{"alg":"ES256"}"#, #"{"iss":"a","iss":"b"}"#),
    ])
    func repeatedNames(header: String, claims: String) {
        let token = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(claims.utf8)) + ".c2ln"
        #expect(throws: CryptoError.self) { try JWT.decode(token) }
    }

    /// RFC 7519 section 2: a NumericDate is a JSON number, which may carry a fraction or an exponent.
    @Test("an integral NumericDate reads the same written as 1700000000, 1.7e9 or 1700000000.0; 1.5 is no integer")
    func numericDates() throws {
        for (literal, expected) in [("1700000000", Int64(1_700_000_000)), ("1.7e9", 1_700_000_000),
                                    ("1700000000.0", 1_700_000_000), ("1.5", nil)] as [(String, Int64?)] {
            let token = Base64URL.encode(Array(#"{"alg":"ES256"}"#.utf8)) + "."
                + Base64URL.encode(Array(#"{"exp":\#(literal)}"#.utf8)) + ".c2ln"
            #expect(try JWT.decode(token).claimInt64("exp") == expected, "\(literal)")
        }
    }

    @Test("header and claims are written with sorted keys, whatever order they were built in")
    func sortedKeys() throws {
        let key = SigningKey.generateP256()
        let token = try JWT.sign(header: ["typ": "JWT", "kid": "K"], claims: ["z": 1, "a": "x", "m": ["b": 1, "a": 2]], key: key)
        let parts = token.split(separator: ".")
        #expect(String(decoding: Base64URL.decode(parts[0])!, as: UTF8.self) == #"{"alg":"ES256","kid":"K","typ":"JWT"}"#)
        #expect(String(decoding: Base64URL.decode(parts[1])!, as: UTF8.self) == #"{"a":"x","m":{"a":2,"b":1},"z":1}"#)
    }
}
