import Foundation
import Testing
@testable import ClarionCrypto

/// RFC 7515 Appendix A.3 (JWS using ECDSA P-256 SHA-256): the key as JWK coordinates and the example token.
enum RFC7515A3 {
    static let x = Base64URL.decode("f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU")!
    static let y = Base64URL.decode("x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0")!
    static let d = Base64URL.decode("jpsQnnGQmL-YBIffH1136cspYG6-0iY7X1fCE9-E9LI")!
    static let token = "eyJhbGciOiJFUzI1NiJ9.eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ.DtEhU3ljbEg8L38VWAfUAqOyKAM6-Xx-F4GawxaepmXFCgfTjDxw5djxLa8ISlSApmWQxfKTUJqPP3-Kg6NU1Q"

    /// SubjectPublicKeyInfo: the fixed id-ecPublicKey/prime256v1 prefix, then the uncompressed point.
    static var subjectPublicKeyInfo: [UInt8] {
        [UInt8](hexString: "3059301306072a8648ce3d020106082a8648ce3d030107034200")! + [0x04] + x + y
    }

    /// SEC 1 ECPrivateKey (`EC PRIVATE KEY`): version 1, d, the curve OID, the public point.
    static var sec1PrivateKey: [UInt8] {
        [0x30, 0x77, 0x02, 0x01, 0x01, 0x04, 0x20] + d
            + [UInt8](hexString: "a00a06082a8648ce3d030107a144034200")! + [0x04] + x + y
    }
}

@Suite struct SigningKeyTests {
    @Test("ES256: sign produces 64-byte R||S that verifies; a different message does not")
    func es256RoundTrip() throws {
        let key = SigningKey.generateP256()
        #expect(key.algorithm == .es256)
        let message = Array("header.payload".utf8)
        let signature = try key.sign(message)
        #expect(signature.count == 64)
        #expect(key.verifyingKey.verify(signature: signature, message: message))
        #expect(!key.verifyingKey.verify(signature: signature, message: Array("header.payloaD".utf8)))
    }

    @Test("ES256: a signature from another key does not verify")
    func es256WrongKey() throws {
        let message = Array("m".utf8)
        let signature = try SigningKey.generateP256().sign(message)
        #expect(!SigningKey.generateP256().verifyingKey.verify(signature: signature, message: message))
    }

    @Test("ES256: a DER signature or a wrong-length one is not accepted as R||S")
    func es256RejectsDERAndWrongLength() throws {
        let key = SigningKey.generateP256()
        let message = Array("m".utf8)
        let raw = try key.sign(message)
        let der = try #require(ECSignature.derFromRaw(raw))
        #expect(!key.verifyingKey.verify(signature: der, message: message))
        #expect(!key.verifyingKey.verify(signature: Array(raw.dropLast()), message: message))
        #expect(!key.verifyingKey.verify(signature: [UInt8](), message: message))
    }

    @Test("RS256: 2048-bit key signs 256-byte signatures that verify; tampering fails")
    func rs256RoundTrip() throws {
        let key = try SigningKey.generateRSA()
        #expect(key.algorithm == .rs256)
        let message = Array("assertion".utf8)
        var signature = try key.sign(message)
        #expect(signature.count == 256)
        #expect(key.verifyingKey.verify(signature: signature, message: message))
        signature[10] ^= 1
        #expect(!key.verifyingKey.verify(signature: signature, message: message))
    }

    @Test("RS256 keys under 2048 bits cannot be generated")
    func rsaMinimum() {
        #expect(throws: CryptoError.self) { try SigningKey.generateRSA(bits: 1024) }
    }

    @Test("an RSA public key does not verify an ES256 signature and vice versa")
    func crossAlgorithm() throws {
        let message = Array("m".utf8)
        let ec = SigningKey.generateP256()
        let rsa = try SigningKey.generateRSA()
        #expect(!rsa.verifyingKey.verify(signature: try ec.sign(message), message: message))
        #expect(!ec.verifyingKey.verify(signature: try rsa.sign(message), message: message))
    }

    @Test("PKCS#8 PEM round trip: .p8-style text loads back to the same key")
    func pkcs8RoundTrip() throws {
        let key = SigningKey.generateP256()
        let pem = key.pkcs8PEM
        #expect(pem.hasPrefix("-----BEGIN PRIVATE KEY-----\n"))
        #expect(pem.hasSuffix("-----END PRIVATE KEY-----\n"))
        let loaded = try SigningKey(pem: pem)
        #expect(loaded.verifyingKey.subjectPublicKeyInfoDER == key.verifyingKey.subjectPublicKeyInfoDER)
        let signature = try loaded.sign(Array("x".utf8))
        #expect(key.verifyingKey.verify(signature: signature, message: Array("x".utf8)))
    }

    @Test("a service-account private_key with literal \\n escapes still loads")
    func escapedNewlines() throws {
        let key = try SigningKey.generateRSA()
        let escaped = key.pkcs8PEM.replacingOccurrences(of: "\n", with: "\\n")
        let loaded = try SigningKey(pem: escaped)
        #expect(loaded.algorithm == .rs256)
    }

    @Test("public key PEM round trip and a private PEM read as a public key")
    func publicKeyPEM() throws {
        let key = SigningKey.generateP256()
        let pem = key.verifyingKey.pem
        #expect(pem.hasPrefix("-----BEGIN PUBLIC KEY-----\n"))
        #expect(try VerifyingKey(pem: pem).subjectPublicKeyInfoDER == key.verifyingKey.subjectPublicKeyInfoDER)
        #expect(try VerifyingKey(pem: key.pkcs8PEM).subjectPublicKeyInfoDER == key.verifyingKey.subjectPublicKeyInfoDER)
    }

    @Test("RFC 7515 A.3: the SEC 1 EC PRIVATE KEY built from the RFC's d gives the RFC's public point")
    func rfc7515Sec1Key() throws {
        let pem = PEMBlock(label: "EC PRIVATE KEY", der: RFC7515A3.sec1PrivateKey).text
        let key = try SigningKey(pem: pem)
        #expect(key.verifyingKey.subjectPublicKeyInfoDER == RFC7515A3.subjectPublicKeyInfo)
    }

    /// Found by the credentials fuzz target (Tests/fuzz/corpus/credentials/crash-rsa-modulus-damaged): a PKCS#1 key
    /// with six characters of its modulus moved. OpenSSL read it and signed with it, and the key's own public half
    /// refused the signature; as a service account it would have failed every token exchange at Google.
    static let rsaKeyWithDamagedModulus = """
        -----BEGIN RSA PRIVATE KEY-----
        MIIEowIBAAKCAQEAtPO7CB+OBHY7bH88jrZFJJ01a93iYRRYZWsyZ86Gg13oX6uk
        77S23M8rgp6FJBTHtlBMwbNmQRaejZPjfXRlqSjo/i6rl5nEP3nUrAJWaeFb81T+
        W9XRBMf7VSMdXEs2l0tZhMhzpdBb7x7W7+tSno4QitM15HYl68zubRTv/TTGWVV1
        dYZeV3QVJFwSLaqQB+xqdQ5XEFyDjh6d2PlDXyJyyUbzmboqY9sqPV5ODnobyBRz
        uJNDDgTk2mZJRWX8gP9I8VOrMWQNO7OLfSX1FIma0X2hLyvzWhhRhxgnaGEysAuf
        5f9UGvloUez3qEDHKiTPLJSK9JnrqwZ62XHYHwIDAQABAoIBABK/ZdNToZ0ousNk
        81s92zAN8aj5VikEuJvZXWGP7jPSGO9Ak1gaew+pjzJ7RgQU+xQSgcFX2vJHa6nz
        dpBa7OV3zZv4LeMJFWIWN0iS/Wz+4k31slzFbGB4b7vEZZhYWpGWRvIQ6pp1WfEO
        WuJcLeVFthSMCXtgGlGx68n1b1/mWUVHTmJgphY1KYA1DTPphNfONIk8hsQAgOQG
        T3NbbyokawOpAI1L4DfjFdRF7KhuAnrYbQs6Xe4mV3cLvTKr4kLL5ArCMsIP9I8u
        12bZRwgi+S/cTj9nWxPjKhJcEzzqGQR0R9sGmpqLLfXMmxLyz1I4WKhL7mPWBR83
        JmiSPzECgYEA15tEB9RzlV/g2es2OA0187CznoRR2QUx3CvmKl3LzZTx9eGx4BbK
        CHAU9DJ6P+xAK5yF4vRog1TDgn8U7dN912lZ6tJa9nSH/EhoJeCtqLBDAzHa/yL/
        ZNWJNL91yJVYmB2RIXtDOlbGETvTAeympJ+JVWquRZOCdJ/A15TmfeUCgYEA1tpm
        C51W7wOrEgAe7+Hq5Iddu3KeeyiG1yuoS+f0IfSVL3XyRNCqGYQM4FTMCpOI7aZI
        N3/ymprbYDFsMTPiE8yJb6p2MrrL+0QmumDMh8HttxyGbW0CT88za+XKbPaTDMo6
        sIMSwUXnw+8rzEbhKAHVzlZs19MWrMLfemijfbMCgYA9aIGl4ULSZq56It4cdNbL
        A6cFHRbawvoChZZWtsRXV3ba2194PcVpRdMSAlaDYlycj0Yq8AXccgYFYwCpBDWx
        ZtYvZZ5215XrqwvOzgFoLFvJyydex68KHy+nEGkRqkfDe5hceukY8qITQoDE6YxF
        ExNgerQMKQldAitAu64yaQKBgQC25iikjoZo5eiFZFDxyJJbhNjIL6S2FyPinCmi
        pIzxMvKk+nUJG9ER85W6irU/86RHGpyzkloGPvmtg6UkpZQ5Yo9E3gnM2bO37KZD
        VxAGKZKhpMjS8k9bfXm6yl1uMOGxq54WkR4wJcBMzZetSFF360gFZRE3EV1mKGZy
        IA29fQKBgE31N+4mahtwu4JNcwEQ6wqZ8JVwKPZFUZ5Wn3oPQATdZy2IUjtvu9rM
        ZwJvfAdu1OkdRHchzaiPGbwExSxvAFJJ+pTYl4sKn/vgvvhJEoAeOjN1uSf+3RIH
        hOebcsaN3hfY27gvLcbHBajKp1pAiAeAbu/AP9EpqCLbLKPaHyxi
        -----END RSA PRIVATE KEY-----
        """

    @Test("a key whose public and private parts disagree is refused at load: a damaged RSA modulus, another key's EC point")
    func mismatchedKeyParts() throws {
        func expectDamaged(_ load: () throws(CryptoError) -> SigningKey) {
            do {
                _ = try load()
                Issue.record("a damaged key loaded")
            } catch {
                #expect(error.code == .invalidKey)
                #expect(error.message.contains("do not match"), "\(error.message)")
            }
        }
        expectDamaged { () throws(CryptoError) in try SigningKey(pem: Self.rsaKeyWithDamagedModulus) }
        // SEC 1 with the RFC's private scalar and the public point of another key.
        let otherPoint = SigningKey.generateP256().verifyingKey.subjectPublicKeyInfoDER.suffix(65)
        let mismatched = [0x30, 0x77, 0x02, 0x01, 0x01, 0x04, 0x20] + RFC7515A3.d
            + [UInt8](hexString: "a00a06082a8648ce3d030107a144034200")! + otherPoint
        expectDamaged { () throws(CryptoError) in try SigningKey(block: PEMBlock(label: "EC PRIVATE KEY", der: mismatched)) }
        // The same layout with the matching point still loads.
        _ = try SigningKey(block: PEMBlock(label: "EC PRIVATE KEY", der: RFC7515A3.sec1PrivateKey))
    }

    @Test("PEM problems are reported, not crashed on", arguments: [
        "",
        "no pem here",
        "-----BEGIN PRIVATE KEY-----\nMIGH\n",
        "-----BEGIN PRIVATE KEY-----\n!!!!\n-----END PRIVATE KEY-----\n",
        "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PUBLIC KEY-----\n",
        "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n",
        "-----BEGIN EC PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,00\n\nAAAA\n-----END EC PRIVATE KEY-----\n",
        "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
        "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
    ])
    func badPrivateKeyPEM(text: String) {
        #expect(throws: CryptoError.self) { try SigningKey(pem: text) }
    }

    @Test("a public key PEM is not accepted as a private key, and says what it found")
    func publicIsNotPrivate() throws {
        let pem = SigningKey.generateP256().verifyingKey.pem
        do {
            _ = try SigningKey(pem: pem)
            Issue.record("a PUBLIC KEY loaded as a private key")
        } catch {
            #expect(error.code == .invalidPEM)
            #expect(error.message.contains("PUBLIC KEY"))
        }
    }

    @Test("PEM parsing finds every block in a bundle and ignores text between blocks")
    func pemBundle() throws {
        let a = PEMBlock(label: "CERTIFICATE", der: [1, 2, 3])
        let b = PEMBlock(label: "PUBLIC KEY", der: Array(0..<100))
        let blocks = try PEMBlock.parseAll("subject=x\n" + a.text + "\r\nnote\n" + b.text)
        #expect(blocks == [a, b])
    }
}
