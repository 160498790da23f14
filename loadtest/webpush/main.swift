// CPU per Web Push delivery (issue 19, "Cost"): what the sender does for each subscription, on one thread.
//
//   webpushbench N      encrypt one payload to N subscriptions the way WebPushSender does (a fresh ephemeral P-256
//                       key and salt per message, ECDH, HKDF, AES-128-GCM), plus the cached VAPID header; prints
//                       process CPU microseconds per delivery for each step alone and all together.
//
// The ceiling is measured by run.sh in the same run: OpenSSL's own P-256 ECDH rate (`openssl speed ecdhp256`), the
// one operation no Web Push sender can avoid per subscription.
import ClarionCrypto
import Foundation

func cpuMicros() -> Double {
    var spec = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &spec)
    return Double(spec.tv_sec) * 1e6 + Double(spec.tv_nsec) / 1e3
}

func measure(_ name: String, _ count: Int, _ body: () throws -> Void) rethrows -> Double {
    let start = cpuMicros()
    for _ in 0..<count { try body() }
    let per = (cpuMicros() - start) / Double(count)
    print(String(format: "%-44@ %9.1f us CPU per delivery", name as NSString, per))
    return per
}

let count = Int(CommandLine.arguments.dropFirst().first ?? "") ?? 2000
let payload = Array(#"{"notification":{"title":"Order shipped","body":"Your order #12345 is on its way"},"order":"12345"}"#.utf8)
let agents = (0..<64).map { _ in P256KeyAgreementKey.generate() }
let subscribers = agents.map { try! P256PublicKey(uncompressed: $0.publicKey) }
let auth = SecureRandom.bytes(16)
let signer = try VAPIDSigner(key: .generateP256(), subject: "mailto:bench@example.com")
var i = 0

print("\(count) deliveries, \(payload.count)-byte payload, one thread")
let keygen = measure("ephemeral P-256 key generation", count) { _ = P256KeyAgreementKey.generate() }
let ephemeral = P256KeyAgreementKey.generate()
let ecdh = try measure("ECDH with the subscription's key", count) { i &+= 1; _ = try ephemeral.sharedSecret(with: subscribers[i & 63]) }
let parse = try measure("p256dh point decoding (per subscription)", count) { i &+= 1; _ = try P256PublicKey(uncompressed: agents[i & 63].publicKey) }
let vapid = try measure("VAPID header (cached per origin)", count) { _ = try signer.authorization(origin: "https://push.example", now: 1_800_000_000) }
let full = try measure("full: decode + encrypt + VAPID header", count) {
    i &+= 1
    let key = try P256PublicKey(uncompressed: agents[i & 63].publicKey)
    _ = try WebPushEncryption.encrypt(plaintext: payload, subscriberPublicKey: key, authSecret: auth)
    _ = try signer.authorization(origin: "https://push.example", now: 1_800_000_000)
}
print(String(format: "deliveries per second per core (full): %.0f", 1e6 / full))
print(String(format: "key generation + ECDH share of the full cost: %.0f %%", 100 * (keygen + ecdh) / full))
_ = (parse, vapid)
