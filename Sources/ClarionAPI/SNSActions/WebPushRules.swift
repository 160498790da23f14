import ClarionCore
import ClarionCrypto
import Foundation

/// The rules of a `WEBPUSH` application and its endpoints, shared by the SNS actions and the native API, which
/// turn `WebPushRuleError` into their own error format (docs/providers.md, Web Push W.2 and W.3).
enum WebPushRules {
    static let subjectAttribute = "VAPIDSubject"
    /// Read-only: the application's VAPID public key, base64url of the uncompressed point, which a web page passes
    /// as `applicationServerKey` to `pushManager.subscribe` (RFC 8292 section 3.2 and the Push API).
    static let publicKeyAttribute = "VAPIDPublicKey"

    struct RuleError: Error {
        /// The attribute or field at fault (`VAPIDSubject`, `PlatformCredential`, `Token`).
        let attribute: String
        let reason: String
    }

    /// RFC 8292 section 2.1: `sub` is a contact URI, `mailto:` or `https:`.
    static func checkSubject(_ subject: String?) throws(RuleError) {
        guard let subject, !subject.isEmpty else {
            throw RuleError(attribute: subjectAttribute, reason: "VAPIDSubject is required for WEBPUSH: a mailto: or https: contact URI (RFC 8292 section 2.1)")
        }
        let lower = subject.lowercased()
        if lower.hasPrefix("mailto:") {
            let address = subject.dropFirst(7)
            guard address.contains("@"), !address.hasPrefix("@"), !address.hasSuffix("@"), !address.contains(where: { $0.isWhitespace }) else {
                throw RuleError(attribute: subjectAttribute, reason: "VAPIDSubject mailto: needs an e-mail address")
            }
            return
        }
        if lower.hasPrefix("https:") {
            guard let url = URL(string: subject), url.scheme?.lowercased() == "https", url.host?.isEmpty == false else {
                throw RuleError(attribute: subjectAttribute, reason: "VAPIDSubject https: must be a URL with a host")
            }
            return
        }
        throw RuleError(attribute: subjectAttribute, reason: "VAPIDSubject must be a mailto: or https: URI (RFC 8292 section 2.1)")
    }

    /// The VAPID private key as it will be stored (PKCS#8 PEM) and its public key (base64url): the given PEM, which
    /// must be a P-256 key, or with none given a new key pair.
    static func keyPair(credential: String?) throws(RuleError) -> (privateKeyPEM: String, publicKey: String) {
        let key: SigningKey
        if let credential, !credential.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
            do {
                key = try SigningKey(pem: credential)
            } catch {
                throw RuleError(attribute: "PlatformCredential", reason: "the VAPID key is not a readable private key PEM: \(error.message)")
            }
        } else {
            key = SigningKey.generateP256()
        }
        guard let point = key.uncompressedPublicKey else {
            throw RuleError(attribute: "PlatformCredential", reason: "a VAPID key is a P-256 (ES256) private key (RFC 8292 section 3.2), this one is RSA")
        }
        return (key.pkcs8PEM, Base64URL.encode(point))
    }

    /// A subscription JSON, checked (W.3: https endpoint, p256dh an uncompressed point on P-256, auth 16 octets),
    /// in the canonical form that is stored, so the same subscription is the same endpoint.
    static func canonicalToken(_ token: String) throws(RuleError) -> String {
        let subscription: WebPushSubscription
        do {
            subscription = try WebPushSubscription.parse(token)
        } catch {
            throw RuleError(attribute: "Token", reason: "\(error.message) [rule \(error.rule)]")
        }
        do {
            _ = try P256PublicKey(uncompressed: subscription.p256dh)
        } catch {
            throw RuleError(attribute: "Token", reason: "keys.p256dh is not a point on the P-256 curve [rule p256dh-on-curve]")
        }
        return subscription.canonicalToken
    }

    /// The token as the APIs show a WEBPUSH endpoint's: keys masked (`WebPushSubscription.maskedToken`).
    static func shownToken(_ token: String, platform: String) -> String {
        guard platform == Platform.webPush.rawValue else { return token }
        return (try? WebPushSubscription.parse(token).maskedToken) ?? "(unreadable subscription)"
    }
}
