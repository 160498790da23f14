import Testing
@testable import ClarionCore

@Suite("Delivery ids")
struct DeliveryIDTests {
    /// A stand-in keyed MAC (the real one is HMAC-SHA256 from ClarionCrypto, which Core cannot import):
    /// 32 bytes that depend on every input byte and on the key.
    static func fakeMAC(key: UInt8) -> @Sendable ([UInt8]) -> [UInt8] {
        { data in
            var state: UInt64 = 0xCBF2_9CE4_8422_2325 ^ UInt64(key)
            var out: [UInt8] = []
            for round in 0..<32 {
                for b in data { state = (state ^ UInt64(b)) &* 0x0000_0100_0000_01B3 }
                state = (state ^ UInt64(round)) &* 0x0000_0100_0000_01B3
                out.append(UInt8(truncatingIfNeeded: state >> 24))
            }
            return out
        }
    }

    let codec = DeliveryIDCodec(mac: fakeMAC(key: 1))

    @Test("Design 'Delivery ids': round trip, 35 base64url characters, edge keys included", arguments: [
        DeliveryID(messageKey: 1, endpointKey: 2),
        DeliveryID(messageKey: 0, endpointKey: 0),
        DeliveryID(messageKey: .max, endpointKey: .min),
        DeliveryID(messageKey: -1, endpointKey: 9_007_199_254_740_993),
    ])
    func roundTrip(_ id: DeliveryID) throws {
        let text = codec.encode(id)
        #expect(text.utf8.count == DeliveryIDCodec.encodedLength)
        #expect(text.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") })
        #expect(try codec.decode(text) == id)
    }

    @Test("Design 'Delivery ids': the layout is message key || endpoint key || mac[:10], big-endian")
    func layout() throws {
        let id = DeliveryID(messageKey: 0x0102_0304_0506_0708, endpointKey: 0x1112_1314_1516_1718)
        let raw = try #require(Base64URLNoPadding.decode(codec.encode(id)))
        #expect(raw.count == 26)
        #expect(Array(raw[0..<16]) == [1, 2, 3, 4, 5, 6, 7, 8, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18])
        #expect(Array(raw[16...]) == Array(Self.fakeMAC(key: 1)(Array(raw[0..<16])).prefix(10)))
    }

    @Test("Tampering with any character is detected")
    func tamper() {
        let text = codec.encode(DeliveryID(messageKey: 77, endpointKey: 88))
        var chars = Array(text)
        for i in chars.indices {
            let original = chars[i]
            chars[i] = original == "A" ? "B" : "A"
            let altered = String(chars)
            chars[i] = original
            do {
                let decoded = try codec.decode(altered)
                Issue.record("altered id at \(i) accepted as \(decoded)")
            } catch {
                #expect(error.code == .badMAC || error.code == .malformed)
            }
        }
    }

    @Test("An id made with another secret is refused as a forgery")
    func forge() {
        let forger = DeliveryIDCodec(mac: Self.fakeMAC(key: 2))
        let forged = forger.encode(DeliveryID(messageKey: 77, endpointKey: 88))
        #expect(throws: DeliveryIDError(.badMAC)) { try codec.decode(forged) }
    }

    @Test("Malformed ids are refused", arguments: [
        "", "short", String(repeating: "A", count: 34), String(repeating: "A", count: 36),
        String(repeating: "A", count: 34) + "=", String(repeating: "A", count: 34) + "+",
        String(repeating: "A", count: 34) + "B",  // non-canonical: unused low bits set
    ])
    func malformed(_ text: String) {
        #expect(throws: DeliveryIDError(.malformed)) { try codec.decode(text) }
    }

    @Test("base64url without padding matches RFC 4648 test vectors", arguments: [
        ("", ""), ("f", "Zg"), ("fo", "Zm8"), ("foo", "Zm9v"), ("foob", "Zm9vYg"), ("fooba", "Zm9vYmE"), ("foobar", "Zm9vYmFy"),
    ])
    func base64Vectors(_ plain: String, _ encoded: String) {
        #expect(Base64URLNoPadding.encode(Array(plain.utf8)) == encoded)
        #expect(Base64URLNoPadding.decode(encoded) == Array(plain.utf8))
    }

    @Test("base64url uses - and _ instead of + and /")
    func urlAlphabet() {
        #expect(Base64URLNoPadding.encode([0xFB, 0xFF, 0xBF]) == "-_-_")
        #expect(Base64URLNoPadding.decode("-_-_") == [0xFB, 0xFF, 0xBF])
        #expect(Base64URLNoPadding.decode("+/+/") == nil)
    }
}
