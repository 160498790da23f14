import ClarionCore
import Synchronization

/// VAPID (RFC 8292): the application server identifies itself to a push service with an ES256 JWT about the
/// push service's origin, sent as `Authorization: vapid t=<JWT>, k=<public key>` (section 3, 3.1, 3.2).
///
/// Claims (section 2): `aud` is the origin of the push resource URL, `exp` is at most 24 hours after the
/// request, `sub` is a contact URI (`mailto:` or `https:`). One signer per VAPID key; its tokens are cached per
/// origin and reused until `renewalMargin` before they expire, so a fan-out to 100k subscriptions of the same
/// push service signs once, not 100k times (ECDSA is the second-largest cost after the per-message ECDH).
///
/// Time is passed in (`now`, Unix seconds): the signer reads no clock.
///
/// States per origin: *none* -> (`authorization`) -> *cached(token, exp)*; *cached* -> (`now >= exp - renewalMargin`
/// at `authorization`) -> *cached(new)*. When more than `maximumOrigins` origins are cached the oldest-expiring
/// half is dropped (every browser vendor has its own origin; the number is small, the bound is for safety).
public final class VAPIDSigner: Sendable {
    /// RFC 8292 section 2: "exp" no more than 24 hours from the time of the request.
    public static let maximumLifetime: Int64 = 24 * 60 * 60

    public let subject: String
    /// The public key as base64url of the uncompressed point: `k=`, and a page's `applicationServerKey`.
    public let publicKey: String
    public let lifetime: Int64
    public let renewalMargin: Int64
    public let maximumOrigins: Int
    private let key: SigningKey

    private struct Token {
        var authorization: String
        var expires: Int64
    }

    private struct State {
        var tokens: [String: Token] = [:]
        var minted = 0
    }

    private let state = Mutex(State())

    /// `lifetime` 12 hours leaves room for clock skew under the 24-hour cap; renewal one hour before expiry.
    public init(key: SigningKey, subject: String, lifetime: Int64 = 12 * 60 * 60, renewalMargin: Int64 = 60 * 60,
                maximumOrigins: Int = 1024) throws(CryptoError) {
        guard let point = key.uncompressedPublicKey else {
            throw CryptoError(.invalidKey, "a VAPID key is a P-256 (ES256) key")
        }
        precondition(lifetime > renewalMargin && lifetime <= Self.maximumLifetime && renewalMargin >= 0,
                     "a VAPID token lives at most 24 hours and longer than its renewal margin")
        self.key = key
        self.subject = subject
        self.publicKey = Base64URL.encode(point)
        self.lifetime = lifetime
        self.renewalMargin = renewalMargin
        self.maximumOrigins = maximumOrigins
    }

    /// The `Authorization` header value for a push to `origin` (`https://host[:port]`) at `now`.
    ///
    /// Signing happens under the lock: one ECDSA signature (tens of microseconds) per origin and renewal; holding
    /// the lock makes every concurrent caller share that one token.
    public func authorization(origin: String, now: Int64) throws(CryptoError) -> String {
        try state.withLock { state throws(CryptoError) -> String in
            if let token = state.tokens[origin], now < token.expires - renewalMargin {
                return token.authorization
            }
            let expires = now + lifetime
            let jwt = try JWT.sign(header: ["typ": .string("JWT")],
                                   claims: ["aud": .string(origin), "exp": .number(JSONNumber(expires)), "sub": .string(subject)],
                                   key: key)
            let token = Token(authorization: "vapid t=\(jwt), k=\(publicKey)", expires: expires)
            if state.tokens[origin] == nil, state.tokens.count >= maximumOrigins {
                let byExpiry = state.tokens.sorted { $0.value.expires < $1.value.expires }
                for (dropped, _) in byExpiry.prefix(state.tokens.count / 2 + 1) { state.tokens[dropped] = nil }
            }
            state.tokens[origin] = token
            state.minted += 1
            return token.authorization
        }
    }

    /// Tokens signed so far (tests check the cache).
    public var mintedCount: Int { state.withLock { $0.minted } }

    /// Splits `vapid t=<jwt>, k=<key>` (RFC 8292 section 3: two auth-params, in any order). Nil when the
    /// scheme is not `vapid` or a parameter is missing.
    public static func parseAuthorization(_ value: String) -> (token: String, publicKey: String)? {
        let trimmed = value.trimmingPrefixWhitespace()
        guard trimmed.count > 6, trimmed.prefix(6).lowercased() == "vapid " else { return nil }
        var token: String?
        var key: String?
        for part in trimmed.dropFirst(6).split(separator: ",") {
            let pair = part.trimmingPrefixWhitespace()
            guard let equals = pair.firstIndex(of: "=") else { return nil }
            let name = pair[..<equals].lowercased()
            let parameter = String(pair[pair.index(after: equals)...]).trimmingSuffixWhitespace()
            switch name {
            case "t": token = parameter
            case "k": key = parameter
            default: continue
            }
        }
        guard let token, let key, !token.isEmpty, !key.isEmpty else { return nil }
        return (token, key)
    }
}

extension StringProtocol {
    fileprivate func trimmingPrefixWhitespace() -> Substring {
        let s = self[...]
        return Substring(s.drop(while: { $0 == " " || $0 == "\t" }))
    }

    fileprivate func trimmingSuffixWhitespace() -> String {
        var s = String(self)
        while let last = s.last, last == " " || last == "\t" { s.removeLast() }
        return s
    }
}
