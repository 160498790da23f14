import Testing
@testable import ClarionCrypto

@Suite struct ECSignatureTests {
    @Test("DER to R||S pads short integers and drops the sign byte")
    func derToRaw() throws {
        // r = 0x00 0x80 ... (sign byte needed), s = 0x01 (short).
        var r = [UInt8](repeating: 0x11, count: 32)
        r[0] = 0x80
        let der: [UInt8] = [0x30, 0x26, 0x02, 0x21, 0x00] + r + [0x02, 0x01, 0x01]
        let raw = try #require(ECSignature.rawFromDER(der, componentLength: 32))
        #expect(raw.count == 64)
        #expect(Array(raw[0..<32]) == r)
        #expect(Array(raw[32..<64]) == [UInt8](repeating: 0, count: 31) + [0x01])
    }

    @Test("R||S to DER writes minimal integers and round-trips")
    func rawToDER() throws {
        var raw = [UInt8](repeating: 0, count: 64)
        raw[31] = 0x05          // r = 5
        raw[32] = 0xff          // s has its top bit set
        let der = try #require(ECSignature.derFromRaw(raw))
        #expect(Array(der.prefix(5)) == [0x30, 0x26, 0x02, 0x01, 0x05])
        #expect(Array(der[5..<8]) == [0x02, 0x21, 0x00])
        #expect(ECSignature.rawFromDER(der, componentLength: 32) == raw)
    }

    @Test("malformed DER is refused", arguments: [
        [UInt8](),
        [0x30, 0x00],
        [0x30, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01],           // truncated
        [0x30, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01, 0x01, 0x00], // trailing byte
        [0x30, 0x06, 0x02, 0x01, 0x81, 0x02, 0x01, 0x01],     // negative r
        [0x31, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01, 0x01],     // SET, not SEQUENCE
    ])
    func malformed(der: [UInt8]) {
        #expect(ECSignature.rawFromDER(der, componentLength: 32) == nil)
    }

    @Test("an integer wider than the curve is refused")
    func tooWide() {
        let wide = [UInt8](repeating: 0x7f, count: 33)
        let der: [UInt8] = [0x30, 0x26, 0x02, 0x21] + wide + [0x02, 0x01, 0x01]
        #expect(ECSignature.rawFromDER(der, componentLength: 32) == nil)
    }
}
