import Testing
import Foundation
@testable import ClarionCrypto

/// SHA-256 against FIPS 180-2's examples and HMAC-SHA256 against RFC 4231's test cases (the digest code
/// builds HMAC itself over a fetched SHA-256, so the vectors are what keep it honest).
struct DigestTests {
    @Test func sha256MatchesFIPS180Examples() {
        #expect(Digest.sha256("abc").hexString == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(Digest.sha256("").hexString == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(Digest.sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq").hexString
                == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        #expect(Digest.sha256(Array(repeating: UInt8(ascii: "a"), count: 1_000_000)).hexString
                == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test func hmacSHA256MatchesRFC4231() {
        // Test case 1: 20-byte key of 0x0b.
        #expect(Digest.hmacSHA256(key: [UInt8](repeating: 0x0b, count: 20), string: "Hi There").hexString
                == "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
        // Test case 2: a key shorter than the output.
        #expect(Digest.hmacSHA256(key: Array("Jefe".utf8), string: "what do ya want for nothing?").hexString
                == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        // Test case 3: 0xaa key, 50 bytes of 0xdd.
        #expect(Digest.hmacSHA256(key: [UInt8](repeating: 0xaa, count: 20), data: [UInt8](repeating: 0xdd, count: 50)).hexString
                == "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe")
        // Test case 6: a 131-byte key (longer than the block: hashed first).
        #expect(Digest.hmacSHA256(key: [UInt8](repeating: 0xaa, count: 131),
                                  string: "Test Using Larger Than Block-Size Key - Hash Key First").hexString
                == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
    }

    @Test func hmacWithAnEmptyKeyIsDefined() {
        // HMAC-SHA256("", "") as published by common implementations (Python's hmac).
        #expect(Digest.hmacSHA256(key: [UInt8](), string: "").hexString
                == "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad")
    }
}

struct HexTests {
    @Test func appendHexMatchesHexStringAndAppends() {
        let bytes: [UInt8] = [0x00, 0x09, 0x0a, 0x7f, 0x80, 0xab, 0xff]
        #expect(bytes.hexString == "00090a7f80abff")
        var out = Array("x=".utf8)
        bytes.appendHex(to: &out)
        #expect(String(decoding: out, as: UTF8.self) == "x=00090a7f80abff")
        var empty: [UInt8] = []
        [UInt8]().appendHex(to: &empty)
        #expect(empty.isEmpty)
    }
}

struct RandomUUIDTests {
    @Test func randomUUIDsAreVersion4AndDistinct() {
        var seen = Set<UUID>()
        for _ in 0..<1000 {
            let id = UUID.random()
            let text = id.uuidString
            #expect(Array(text)[14] == "4")
            #expect("89AB".contains(Array(text)[19]))
            seen.insert(id)
        }
        #expect(seen.count == 1000)
    }

    /// Ids come from a 4 KiB reserve (256 ids a block): ids drawn by several threads across many refills are all
    /// distinct, so no byte of a block is handed out twice and the refill is not racy.
    @Test func concurrentIdsAcrossReserveRefillsAreDistinct() async {
        let perTask = 2_000
        let all = await withTaskGroup(of: [UUID].self) { group in
            for _ in 0..<4 { group.addTask { (0..<perTask).map { _ in UUID.random() } } }
            return await group.reduce(into: [UUID]()) { $0 += $1 }
        }
        #expect(all.count == 4 * perTask)
        #expect(Set(all).count == all.count)
    }

    /// One reserve across several refills (256 values a block) never hands out the same bytes twice.
    @Test func reserveValuesAcrossRefillsAreDistinct() {
        var reserve = RandomReserve()
        var seen = Set<UUID>()
        for _ in 0..<(4 * RandomReserve.blockSize / 16 + 7) { seen.insert(UUID(uuid: reserve.next())) }
        #expect(seen.count == 4 * RandomReserve.blockSize / 16 + 7)
    }

    /// RFC 9562 5.7: version 7 carries the Unix time in milliseconds in its first 48 bits, big-endian.
    @Test func timeOrderedIdsCarryTheirMillisecondAndSortByIt() {
        let at: UInt64 = 1_764_460_800_123  // 2025-11-30T00:00:00.123Z
        let id = UUID.timeOrdered(unixMilliseconds: at)
        let text = id.uuidString.lowercased()
        #expect(text.hasPrefix(String(at, radix: 16).leftPadded(to: 12).prefix(8)))
        let hex = text.replacingOccurrences(of: "-", with: "")
        #expect(UInt64(hex.prefix(12), radix: 16) == 1_764_460_800_123)
        #expect(Array(text)[14] == "7")
        #expect("89ab".contains(Array(text)[19]))

        let later = UUID.timeOrdered(unixMilliseconds: at + 1)
        #expect(later.uuidString.lowercased() > text)
        var seen = Set<UUID>()
        for _ in 0..<1000 { seen.insert(UUID.timeOrdered(unixMilliseconds: at)) }
        #expect(seen.count == 1000)
        let now = UUID.unixMillisecondsNow()
        #expect(now > 1_764_460_800_000 && now < 4_102_444_800_000)
    }
}

private extension String {
    func leftPadded(to width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}
