import Testing
@testable import ClarionCrypto

/// The worked examples of RFC 8188 section 3 and RFC 8291 Appendix A are the judges here: every value below is
/// copied from the RFC text (base64url, as the RFCs print them), none is produced by this code.
@Suite struct WebPushCryptoTests {
    static func b(_ text: String) -> [UInt8] { Base64URL.decode(text)! }

    // RFC 8291 Appendix A: the application server's key pair, the user agent's key pair and auth secret, the salt.
    static let plaintext = Array("When I grow up, I want to be a watermelon".utf8)
    static let asPrivate = b("yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw")
    static let asPublic = b("BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8")
    static let uaPrivate = b("q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94")
    static let uaPublic = b("BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4")
    static let salt = b("DGv6ra1nlYgDCS1FRnbzlw")
    static let authSecret = b("BTBZMqHH6r4Tts7J_aSIgg")
    // RFC 8291 Appendix A: the intermediate values and the final message body.
    static let ecdhSecret = b("kyrL1jIIOHEzg3sM2ZWRHDRB62YACZhhSlknJ672kSs")
    static let prkKey = b("Snr3JMxaHVDXHWJn5wdC52WjpCtd2EIEGBykDcZW32k")
    static let ikm = b("S4lYMb_L0FxCeq0WhDx813KgSYqU26kOyzWUdsXYyrg")
    static let prk = b("09_eUZGrsvxChDCGRCdkLiDXrReGOEVeSCdCcPBSJSc")
    static let cek = b("oIhVW04MRdy2XN9CiKLxTg")
    static let nonce = b("4h_95klXJ5E_qnoN")
    static let body = b("DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN")

    @Test("RFC 8291 Appendix A: both key pairs rebuild from their private scalars")
    func appendixAKeys() throws {
        #expect(try P256KeyAgreementKey(privateScalar: Self.asPrivate).publicKey == Self.asPublic)
        #expect(try P256KeyAgreementKey(privateScalar: Self.uaPrivate).publicKey == Self.uaPublic)
    }

    @Test("RFC 8291 Appendix A: ecdh_secret, PRK_key, IKM, PRK, CEK and NONCE, step by step")
    func appendixAIntermediates() throws {
        let server = try P256KeyAgreementKey(privateScalar: Self.asPrivate)
        let agent = try P256KeyAgreementKey(privateScalar: Self.uaPrivate)
        #expect(try server.sharedSecret(with: P256PublicKey(uncompressed: Self.uaPublic)) == Self.ecdhSecret)
        #expect(try agent.sharedSecret(with: P256PublicKey(uncompressed: Self.asPublic)) == Self.ecdhSecret)
        #expect(HKDF.extract(salt: Self.authSecret, inputKeyingMaterial: Self.ecdhSecret) == Self.prkKey)
        #expect(WebPushEncryption.inputKeyingMaterial(ecdhSecret: Self.ecdhSecret, authSecret: Self.authSecret,
                                                      subscriberPublicKey: Self.uaPublic, serverPublicKey: Self.asPublic) == Self.ikm)
        #expect(HKDF.extract(salt: Self.salt, inputKeyingMaterial: Self.ikm) == Self.prk)
        let keys = AES128GCMContentCoding.keys(inputKeyingMaterial: Self.ikm, salt: Self.salt)
        #expect(keys.contentEncryptionKey == Self.cek)
        #expect(keys.nonce == Self.nonce)
    }

    @Test("RFC 8291 Appendix A: the encrypted body is byte for byte the RFC's")
    func appendixABody() throws {
        let body = try WebPushEncryption.encrypt(plaintext: Self.plaintext,
                                                 subscriberPublicKey: P256PublicKey(uncompressed: Self.uaPublic),
                                                 authSecret: Self.authSecret,
                                                 ephemeralKey: P256KeyAgreementKey(privateScalar: Self.asPrivate),
                                                 salt: Self.salt)
        #expect(body == Self.body)
        #expect(body.count == 144)  // RFC 8291 section 5: Content-Length 144 with this body
    }

    @Test("RFC 8291 Appendix A: the user agent's side decrypts the RFC's body")
    func appendixADecrypt() throws {
        let agent = try P256KeyAgreementKey(privateScalar: Self.uaPrivate)
        #expect(try WebPushEncryption.decrypt(body: Self.body, subscriberKey: agent, authSecret: Self.authSecret) == Self.plaintext)
        var altered = Self.body
        altered[100] ^= 1
        #expect(throws: CryptoError.self) { try WebPushEncryption.decrypt(body: altered, subscriberKey: agent, authSecret: Self.authSecret) }
        #expect(throws: CryptoError.self) {
            try WebPushEncryption.decrypt(body: Self.body, subscriberKey: agent, authSecret: [UInt8](repeating: 7, count: 16))
        }
    }

    @Test("a fresh key and salt per message: two encryptions differ, both decrypt, padding is removed")
    func roundTripWithPadding() throws {
        let agent = P256KeyAgreementKey.generate()
        let auth = SecureRandom.bytes(16)
        let recipient = try P256PublicKey(uncompressed: agent.publicKey)
        let one = try WebPushEncryption.encrypt(plaintext: Self.plaintext, subscriberPublicKey: recipient, authSecret: auth, paddingLength: 100)
        let two = try WebPushEncryption.encrypt(plaintext: Self.plaintext, subscriberPublicKey: recipient, authSecret: auth)
        #expect(one != two)
        #expect(one.count == 86 + Self.plaintext.count + 1 + 100 + 16)
        #expect(try WebPushEncryption.decrypt(body: one, subscriberKey: agent, authSecret: auth) == Self.plaintext)
        #expect(try WebPushEncryption.decrypt(body: two, subscriberKey: agent, authSecret: auth) == Self.plaintext)
    }

    @Test("RFC 8291 section 4: 3993 octets of plaintext fill the 4096-octet body, one more is refused")
    func sizeLimit() throws {
        let agent = P256KeyAgreementKey.generate()
        let recipient = try P256PublicKey(uncompressed: agent.publicKey)
        let auth = SecureRandom.bytes(16)
        let full = try WebPushEncryption.encrypt(plaintext: [UInt8](repeating: 0x61, count: 3993), subscriberPublicKey: recipient, authSecret: auth)
        #expect(full.count == 4096)
        #expect(throws: CryptoError.self) {
            try WebPushEncryption.encrypt(plaintext: [UInt8](repeating: 0x61, count: 3994), subscriberPublicKey: recipient, authSecret: auth)
        }
    }

    @Test("a p256dh that is not an uncompressed point on P-256 is refused")
    func badPublicKeys() {
        #expect(throws: CryptoError.self) { try P256PublicKey(uncompressed: Array(Self.uaPublic.prefix(64))) }
        var compressedTag = Self.uaPublic
        compressedTag[0] = 0x02
        #expect(throws: CryptoError.self) { try P256PublicKey(uncompressed: compressedTag) }
        var offCurve = Self.uaPublic
        offCurve[64] ^= 1
        #expect(throws: CryptoError.self) { try P256PublicKey(uncompressed: offCurve) }
    }

    // RFC 8188 section 3.1: "I am the walrus", IKM yqdlZ-tYemfogSmv7Ws5PQ, rs 4096, empty keyid.
    @Test("RFC 8188 section 3.1: one record, encrypted byte for byte and decrypted")
    func rfc8188SingleRecord() throws {
        let ikm = Self.b("yqdlZ-tYemfogSmv7Ws5PQ")
        let expected = Self.b("I1BsxtFttlv3u_Oo94xnmwAAEAAA-NAVub2qFgBEuQKRapoZu-IxkIva3MEB1PD-ly8Thjg")
        let body = try AES128GCMContentCoding.encrypt(plaintext: Array("I am the walrus".utf8), inputKeyingMaterial: ikm,
                                                      salt: Self.b("I1BsxtFttlv3u_Oo94xnmw"), keyID: [], recordSize: 4096)
        #expect(body == expected)
        #expect(try AES128GCMContentCoding.decrypt(body: expected, inputKeyingMaterial: ikm) == Array("I am the walrus".utf8))
    }

    // RFC 8188 section 3.2: two records of rs 25, keyid "a1", the first with one octet of padding.
    @Test("RFC 8188 section 3.2: two records with a keyid and padding decrypt")
    func rfc8188TwoRecords() throws {
        let ikm = Self.b("BO3ZVPxUlnLORbVGMpbT1Q")
        let body = Self.b("uNCkWiNYzKTnBN9ji3-qWAAAABkCYTHOG8chz_gnvgOqdGYovxyjuqRyJFjEDyoF1Fvkj6hQPdPHI51OEUKEpgz3SsLWIqS_uA")
        let header = try AES128GCMContentCoding.header(of: body)
        #expect(header.recordSize == 25)
        #expect(header.keyID == Array("a1".utf8))
        #expect(try AES128GCMContentCoding.decrypt(body: body, inputKeyingMaterial: ikm) == Array("I am the walrus".utf8))
        // Dropping the last record leaves a last record with the "more records" delimiter: refused (section 2).
        #expect(throws: CryptoError.self) {
            try AES128GCMContentCoding.decrypt(body: Array(body.prefix(header.length + 25)), inputKeyingMaterial: ikm)
        }
    }

    @Test("RFC 5869 Appendix A.1: HKDF-SHA256 test case 1 (first 32 octets of OKM)")
    func hkdfVector() {
        let ikm = [UInt8](repeating: 0x0b, count: 22)
        let salt = [UInt8](hexString: "000102030405060708090a0b0c")!
        let info = [UInt8](hexString: "f0f1f2f3f4f5f6f7f8f9")!
        let prk = HKDF.extract(salt: salt, inputKeyingMaterial: ikm)
        #expect(prk.hexString == "077709362c2e32df0ddc3f0dc47bba6390b6c73bb50f9c3122ec844ad7c2b3e5")
        #expect(HKDF.expand(pseudorandomKey: prk, info: info, length: 32).hexString
            == "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf")
    }
}

@Suite struct VAPIDSignerTests {
    @Test("RFC 8292 section 2 and 3: vapid t=<ES256 JWT about the origin>, k=<the uncompressed public key>")
    func headerShape() throws {
        let key = SigningKey.generateP256()
        let signer = try VAPIDSigner(key: key, subject: "mailto:ops@example.com")
        let value = try signer.authorization(origin: "https://push.example.net", now: 1_700_000_000)
        let parsed = try #require(VAPIDSigner.parseAuthorization(value))
        #expect(Base64URL.decode(parsed.publicKey) == key.uncompressedPublicKey)
        #expect(parsed.publicKey == signer.publicKey)
        let point = try P256PublicKey(uncompressed: Base64URL.decode(parsed.publicKey)!)
        let jwt = try JWT.verify(parsed.token, key: point.verifyingKey)
        #expect(jwt.headerString("typ") == "JWT")
        #expect(jwt.algorithm == .es256)
        #expect(jwt.claimString("aud") == "https://push.example.net")
        #expect(jwt.claimString("sub") == "mailto:ops@example.com")
        let exp = try #require(jwt.claimInt64("exp"))
        #expect(exp > 1_700_000_000 && exp - 1_700_000_000 <= VAPIDSigner.maximumLifetime)
    }

    @Test("one token per origin, reused until the renewal margin before exp, then renewed")
    func cachePerOrigin() throws {
        let signer = try VAPIDSigner(key: .generateP256(), subject: "https://example.com/contact", lifetime: 3600, renewalMargin: 600)
        let a1 = try signer.authorization(origin: "https://a.example", now: 1000)
        let b1 = try signer.authorization(origin: "https://b.example", now: 1000)
        #expect(a1 != b1)
        #expect(try signer.authorization(origin: "https://a.example", now: 3999) == a1)
        #expect(signer.mintedCount == 2)
        let a2 = try signer.authorization(origin: "https://a.example", now: 4000)  // exp 4600 - margin 600
        #expect(a2 != a1)
        #expect(signer.mintedCount == 3)
    }

    @Test("the cache is bounded: past maximumOrigins, the oldest tokens are dropped")
    func boundedCache() throws {
        let signer = try VAPIDSigner(key: .generateP256(), subject: "mailto:a@b.c", maximumOrigins: 4)
        for i in 0..<4 { _ = try signer.authorization(origin: "https://o\(i).example", now: 100 + Int64(i)) }
        _ = try signer.authorization(origin: "https://o4.example", now: 200)
        #expect(signer.mintedCount == 5)
        _ = try signer.authorization(origin: "https://o3.example", now: 201)  // survived the eviction: cached
        #expect(signer.mintedCount == 5)
        _ = try signer.authorization(origin: "https://o0.example", now: 202)  // evicted: signed again
        #expect(signer.mintedCount == 6)
    }

    @Test("an RSA key is not a VAPID key")
    func rsaRefused() {
        let rsa = try! SigningKey.generateRSA(bits: 2048)
        #expect(throws: CryptoError.self) { try VAPIDSigner(key: rsa, subject: "mailto:a@b.c") }
    }

    @Test("parseAuthorization takes the parameters in any order and refuses other schemes")
    func parse() {
        let parsed = VAPIDSigner.parseAuthorization("vapid k=KEY, t=a.b.c")
        #expect(parsed?.token == "a.b.c")
        #expect(parsed?.publicKey == "KEY")
        #expect(VAPIDSigner.parseAuthorization("Bearer a.b.c") == nil)
        #expect(VAPIDSigner.parseAuthorization("vapid t=a.b.c") == nil)
    }
}
