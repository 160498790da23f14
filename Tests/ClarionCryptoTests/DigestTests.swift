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
}
