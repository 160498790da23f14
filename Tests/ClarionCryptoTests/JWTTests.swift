import Foundation
import Testing
@testable import ClarionCrypto

@Suite struct JWTTests {
    @Test("RFC 7515 A.3: the RFC's ES256 example token verifies under the RFC's public key")
    func rfc7515Example() throws {
        let key = try VerifyingKey(subjectPublicKeyInfoDER: RFC7515A3.subjectPublicKeyInfo)
        let decoded = try JWT.verify(RFC7515A3.token, key: key)
        #expect(decoded.algorithm == .es256)
        #expect(decoded.claimString("iss") == "joe")
        #expect(decoded.claimInt64("exp") == 1_300_819_380)
        #expect(decoded.claims["http://example.com/is_root"] == .bool(true))
    }

    @Test("RFC 7515 A.3: changing one character of the payload breaks the signature")
    func rfc7515Tampered() throws {
        let key = try VerifyingKey(subjectPublicKeyInfoDER: RFC7515A3.subjectPublicKeyInfo)
        var parts = RFC7515A3.token.split(separator: ".").map(String.init)
        // Re-encode the claims with a different issuer ("joe" -> "jod").
        let claims = String(decoding: Base64URL.decode(parts[1])!, as: UTF8.self).replacingOccurrences(of: "joe", with: "jod")
        parts[1] = Base64URL.encode(Array(claims.utf8))
        #expect(throws: CryptoError(.invalidSignature, "the signature does not verify")) {
            try JWT.verify(parts.joined(separator: "."), key: key)
        }
    }

    @Test("APNs-shaped ES256 token: header alg+kid, claims iss+iat, round trip")
    func apnsShapedToken() throws {
        let key = SigningKey.generateP256()
        let token = try JWT.sign(header: ["kid": "ABC123DEFG"], claims: ["iss": "DEF123GHIJ", "iat": 1_700_000_000], key: key)
        let parts = token.split(separator: ".")
        #expect(parts.count == 3)
        #expect(String(decoding: Base64URL.decode(parts[0])!, as: UTF8.self) == #"{"alg":"ES256","kid":"ABC123DEFG"}"#)
        let decoded = try JWT.verify(token, key: key.verifyingKey)
        #expect(decoded.headerString("kid") == "ABC123DEFG")
        #expect(decoded.claimString("iss") == "DEF123GHIJ")
        #expect(decoded.claimInt64("iat") == 1_700_000_000)
        #expect(Base64URL.decode(parts[2])?.count == 64)
    }

    @Test("Google-shaped RS256 assertion round trip")
    func googleShapedAssertion() throws {
        let key = try SigningKey.generateRSA()
        let token = try JWT.sign(
            header: ["typ": "JWT"],
            claims: ["iss": "sa@p.iam.gserviceaccount.com", "scope": "https://www.googleapis.com/auth/firebase.messaging",
                     "aud": "https://oauth2.googleapis.com/token", "iat": 1_700_000_000, "exp": 1_700_003_600],
            key: key)
        let decoded = try JWT.verify(token, key: key.verifyingKey)
        #expect(decoded.algorithm == .rs256)
        #expect(decoded.headerString("typ") == "JWT")
        #expect(decoded.claimInt64("exp") == 1_700_003_600)
    }

    @Test("a token signed by another key fails with invalidSignature")
    func wrongKey() throws {
        let token = try JWT.sign(claims: ["iss": "a"], key: SigningKey.generateP256())
        do {
            _ = try JWT.verify(token, key: SigningKey.generateP256().verifyingKey)
            Issue.record("verified under the wrong key")
        } catch {
            #expect(error.code == .invalidSignature)
        }
    }

    @Test("a tampered header fails even when the JSON stays valid")
    func tamperedHeader() throws {
        let key = SigningKey.generateP256()
        let token = try JWT.sign(header: ["kid": "AAAAAAAAAA"], claims: ["iss": "a"], key: key)
        var parts = token.split(separator: ".").map(String.init)
        parts[0] = Base64URL.encode(Array(#"{"alg":"ES256","kid":"BBBBBBBBBB"}"#.utf8))
        #expect(throws: CryptoError.self) { try JWT.verify(parts.joined(separator: "."), key: key.verifyingKey) }
    }

    @Test("alg none, a missing alg and an ES/RS confusion are refused before any signature check")
    func algorithmConfusion() throws {
        let ec = SigningKey.generateP256()
        let rsa = try SigningKey.generateRSA()
        let claims = Base64URL.encode(Array(#"{"iss":"a"}"#.utf8))
        let none = Base64URL.encode(Array(#"{"alg":"none"}"#.utf8)) + "." + claims + "."
        let missing = Base64URL.encode(Array(#"{"kid":"x"}"#.utf8)) + "." + claims + ".AAAA"
        func code(_ token: String, _ key: VerifyingKey) -> CryptoError.Code? {
            do { _ = try JWT.verify(token, key: key); return nil } catch { return error.code }
        }
        #expect(code(none, ec.verifyingKey) == .unsupportedAlgorithm)
        #expect(code(missing, ec.verifyingKey) == .unsupportedAlgorithm)
        let rsToken = try JWT.sign(claims: ["iss": "a"], key: rsa)
        #expect(code(rsToken, ec.verifyingKey) == .algorithmMismatch)
    }

    @Test("malformed compact tokens are refused", arguments: [
        "", "a.b", "a.b.c.d", "!!.e30.AAAA", "e30.!!.AAAA", "e30.e30.!!",
        "W10.e30.AAAA",                         // header is an array
        "e30.bm90IGpzb24.AAAA",                 // claims are not JSON
        "eyJhbGciOiJFUzI1NiJ9=.e30.AAAA",       // padding
    ])
    func malformed(token: String) {
        do {
            _ = try JWT.decode(token)
            Issue.record("decoded \(token)")
        } catch {
            #expect(error.code == .malformedToken)
        }
    }
}
