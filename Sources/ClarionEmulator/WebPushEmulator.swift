import ClarionCore
import ClarionCrypto
import Foundation
import Synchronization

/// A Web Push service (RFC 8030) as browsers' push services behave, for tests and demos: it issues subscriptions
/// with keys it generates (it plays the browser too), and decrypts and verifies every push it receives.
///
/// - `POST /_emulator/webpush/subscriptions`: a new subscription; answers the browser's `PushSubscription.toJSON()`,
///   `{"endpoint":"https://<this authority>/wp/<id>","expirationTime":null,"keys":{"p256dh":...,"auth":...}}`, plus
///   `"browserPrivateKey"`: the subscription's private key (PKCS#8 DER, base64url), which only a browser holds, so a
///   test can decrypt a recorded push on its own instead of trusting the emulator's decryption.
/// - `POST /_emulator/webpush/subscriptions?count=N` (1 to `bulkLimit`): N subscriptions at once, one JSON object per
///   line (NDJSON), without the private keys, for load tests that need many browsers and decrypt nothing themselves.
/// - `DELETE /_emulator/webpush/subscriptions/<id>`: the user unsubscribed; pushes to it get 410 from then on.
/// - `POST /wp/<id>`: a push, checked in this order:
///   unknown id: 404; unsubscribed: 410 (RFC 8030 section 7.3);
///   no `TTL`, or not a non-negative integer: 400 (section 5.2); `Urgency` not one of very-low, low, normal, high:
///   400 (section 5.3); `Topic` over 32 characters or outside base64url: 400 (section 5.4);
///   no `vapid` authorization, a `k` that is not a P-256 point, a JWT that does not verify with it, `aud` not this
///   service's origin, `exp` missing, past or more than 24 hours ahead, `sub` not `mailto:`/`https:`: 401;
///   a subscription made with an `applicationServerKey` (the request body `{"applicationServerKey": "<base64url>"}`
///   at subscribe) and a push whose `k` is another key: 403 (RFC 8292 section 4.2);
///   `Content-Encoding` not `aes128gcm`: 415; a body over 4096 octets: 413 (RFC 8030 section 7.2);
///   a body that does not decrypt with the subscription's keys, or is more than one record: 400 (RFC 8291 section 4);
///   else 201 with `Location: /m/<id>`, and the record keeps the plaintext and the raw body (base64url).
final class WebPushEmulator: Sendable {
    static let pushPrefix = "/wp/"
    static let subscriptionsPath = "/_emulator/webpush/subscriptions"

    struct Subscription: Sendable {
        let key: P256KeyAgreementKey
        let auth: [UInt8]
        /// The `applicationServerKey` the subscription is restricted to (base64url), if any.
        var applicationServerKey: String?
        var unsubscribed = false
    }

    private let subscriptions = Mutex<[String: Subscription]>([:])
    private let messages = Atomic<UInt64>(0)

    /// What a push decided: the answer, and for the record the plaintext and the raw body.
    struct Outcome {
        var answer: ProviderAnswer
        var plaintext: [UInt8]?
    }

    /// The most subscriptions one bulk request makes.
    static let bulkLimit = 1_000_000

    /// `count` subscriptions as NDJSON lines: the keys are generated straight into OpenSSL (no PKCS#8 round trip, about
    /// 60 us each), and no private key leaves the emulator.
    func subscribe(authority: String, count: Int) -> [UInt8] {
        var lines: [UInt8] = []
        var made: [(String, Subscription)] = []
        made.reserveCapacity(count)
        for _ in 0..<count {
            let id = UUID().uuidString.lowercased()
            let subscription = Subscription(key: P256KeyAgreementKey.generate(), auth: SecureRandom.bytes(16))
            made.append((id, subscription))
            let json: JSONValue = .object([
                "endpoint": .string("https://\(authority)\(Self.pushPrefix)\(id)"),
                "expirationTime": .null,
                "keys": .object(["p256dh": .string(Base64URL.encode(subscription.key.publicKey)), "auth": .string(Base64URL.encode(subscription.auth))]),
            ])
            lines.append(contentsOf: json.encodedSortingKeys())
            lines.append(0x0a)
        }
        subscriptions.withLock { subscriptions in
            for (id, subscription) in made { subscriptions[id] = subscription }
        }
        return lines
    }

    func subscribe(authority: String, body: [UInt8] = []) -> [UInt8] {
        let id = UUID().uuidString.lowercased()
        let pkcs8 = SigningKey.generateP256().pkcs8DER
        var subscription = Subscription(key: try! P256KeyAgreementKey(pkcs8DER: pkcs8), auth: SecureRandom.bytes(16))
        if case .object(let options)? = (try? JSONValue.parse(bytes: body)) { subscription.applicationServerKey = options["applicationServerKey"]?.stringValue }
        subscriptions.withLock { $0[id] = subscription }
        let json: JSONValue = .object([
            "endpoint": .string("https://\(authority)\(Self.pushPrefix)\(id)"),
            "expirationTime": .null,
            "keys": .object(["p256dh": .string(Base64URL.encode(subscription.key.publicKey)), "auth": .string(Base64URL.encode(subscription.auth))]),
            "browserPrivateKey": .string(Base64URL.encode(pkcs8)),
        ])
        return json.encodedSortingKeys()
    }

    /// True when the subscription existed.
    func unsubscribe(id: String) -> Bool {
        subscriptions.withLock { subscriptions in
            guard subscriptions[id] != nil else { return false }
            subscriptions[id]?.unsubscribed = true
            return true
        }
    }

    static func subscriptionID(ofPushPath path: String) -> String? {
        guard path.hasPrefix(pushPrefix) else { return nil }
        let id = path.dropFirst(pushPrefix.count)
        guard !id.isEmpty, !id.contains("/"), !id.contains("?") else { return nil }
        return String(id)
    }

    func handlePush(_ request: EmulatorRequest, id: String, now: Double) -> Outcome {
        func refuse(_ status: Int, _ reason: String) -> Outcome {
            let body = JSONValue.object(["code": .number(JSONNumber(status)), "reason": .string(reason)]).encodedSortingKeys()
            return Outcome(answer: ProviderAnswer(response: EmulatorResponse(status: status, headers: [("content-type", "application/json")], body: body),
                                                  reason: reason))
        }
        guard request.method == "POST" else { return refuse(405, "method not allowed") }
        guard let subscription = subscriptions.withLock({ $0[id] }) else { return refuse(404, "no such subscription") }
        if subscription.unsubscribed { return refuse(410, "push subscription has expired or was unsubscribed") }

        guard let ttlText = request.header("ttl"), let ttl = Int(ttlText), ttl >= 0 else {
            return refuse(400, "missing or invalid TTL header")
        }
        if let urgency = request.header("urgency"), !["very-low", "low", "normal", "high"].contains(urgency) {
            return refuse(400, "invalid Urgency header")
        }
        if let topic = request.header("topic") {
            let valid = !topic.isEmpty && topic.utf8.count <= 32 && topic.utf8.allSatisfy {
                ($0 >= 0x41 && $0 <= 0x5a) || ($0 >= 0x61 && $0 <= 0x7a) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2d || $0 == 0x5f
            }
            if !valid { return refuse(400, "invalid Topic header") }
        }

        guard let authorization = request.header("authorization") else { return refuse(401, "missing vapid authorization") }
        guard let (token, keyText) = VAPIDSigner.parseAuthorization(authorization) else {
            return refuse(401, "authorization is not vapid t=..., k=...")
        }
        if let failure = Self.checkVAPID(token: token, key: keyText, origin: "https://\(Self.originAuthority(request.authority))", now: now) {
            return refuse(401, failure)
        }
        if let restricted = subscription.applicationServerKey, restricted != keyText {
            return refuse(403, "the subscription is restricted to another application server key")
        }

        guard request.header("content-encoding")?.lowercased() == "aes128gcm" else {
            return refuse(415, "Content-Encoding must be aes128gcm")
        }
        guard request.body.count <= 4096 else { return refuse(413, "payload larger than 4096 octets") }
        let plaintext: [UInt8]
        do {
            plaintext = try WebPushEncryption.decrypt(body: request.body, subscriberKey: subscription.key, authSecret: subscription.auth)
        } catch {
            return refuse(400, "decryption failed: \(error.message)")
        }
        let number = messages.wrappingAdd(1, ordering: .relaxed).newValue
        let response = EmulatorResponse(status: 201, headers: [("location", "/m/\(id)/\(number)"), ("ttl", String(ttl))])
        return Outcome(answer: ProviderAnswer(response: response, token: Substring(id)), plaintext: plaintext)
    }

    /// The authority as an origin writes it: the default https port left out.
    static func originAuthority(_ authority: String) -> String {
        authority.hasSuffix(":443") ? String(authority.dropLast(4)) : authority
    }

    /// Why a VAPID token is refused; nil when it is good (RFC 8292 section 2 and 3).
    static func checkVAPID(token: String, key keyText: String, origin: String, now: Double) -> String? {
        guard let point = Base64URL.decode(keyText), let key = try? P256PublicKey(uncompressed: point) else {
            return "k is not a base64url P-256 public key"
        }
        let jwt: DecodedJWT
        do {
            jwt = try JWT.verify(token, key: key.verifyingKey)
        } catch {
            return "the VAPID JWT does not verify with k: \(error)"
        }
        guard jwt.claimString("aud") == origin else { return "aud is not \(origin)" }
        guard let exp = jwt.claimInt64("exp") else { return "exp is missing" }
        guard Double(exp) > now else { return "the VAPID JWT has expired" }
        guard Double(exp) <= now + 24 * 3600 else { return "exp is more than 24 hours ahead" }
        guard let sub = jwt.claimString("sub"), sub.hasPrefix("mailto:") || sub.hasPrefix("https:") else {
            return "sub is not a mailto: or https: URI"
        }
        return nil
    }
}
