import Foundation

/// A browser's push subscription, as `PushSubscription.toJSON()` gives it (W3C Push API): the push resource URL
/// (`endpoint`) and the two keys message encryption needs (RFC 8291 section 2): `keys.p256dh`, the user agent's
/// P-256 public key as an uncompressed point, and `keys.auth`, a 16-octet authentication secret, both base64url.
///
/// This is the token of a `WEBPUSH` endpoint. `parse` checks the shape (docs/providers.md, Web Push W.3); whether
/// the point lies on the curve needs the crypto layer, which the API checks next. The stored token is
/// `canonicalToken`, so the same subscription sent twice, in any member order or spacing, is the same endpoint.
public struct WebPushSubscription: Sendable, Hashable {
    /// The push resource URL (RFC 8030 section 5: the application server POSTs the message to it).
    public let endpoint: String
    /// `https://host[:port]`, lower-case, without the default port: the VAPID `aud` (RFC 8292 section 2) and the
    /// key of the connection pool.
    public let origin: String
    /// The host name or address literal, lower-case, for the outbound address policy.
    public let host: String
    public let port: Int
    /// The path and query of `endpoint`, for the request's `:path`.
    public let path: String
    /// 65 octets, `0x04 || X || Y`.
    public let p256dh: [UInt8]
    /// 16 octets.
    public let auth: [UInt8]

    /// Why a subscription was refused: `rule` names the rule (W.3 in docs/providers.md), `message` says it for people.
    public struct ValidationError: Error, Sendable, Hashable, CustomStringConvertible {
        public let rule: String
        public let message: String
        public var description: String { message }
    }

    public static let maximumEndpointLength = 2048

    /// Parses `text` (the subscription JSON). Unknown members (`expirationTime`) are ignored.
    public static func parse(_ text: String) throws(ValidationError) -> WebPushSubscription {
        guard let value = try? JSONValue.parse(text), let object = value.objectValue else {
            throw ValidationError(rule: "subscription-json",
                                  message: "a WEBPUSH token is the browser's PushSubscription JSON: {\"endpoint\":\"https://...\",\"keys\":{\"p256dh\":\"...\",\"auth\":\"...\"}}")
        }
        guard let endpoint = object["endpoint"]?.stringValue, !endpoint.isEmpty else {
            throw ValidationError(rule: "endpoint-required", message: "the subscription has no endpoint string")
        }
        guard let keys = object["keys"]?.objectValue else {
            throw ValidationError(rule: "keys-required", message: "the subscription has no keys object (keys.p256dh and keys.auth)")
        }
        guard let p256dhText = keys["p256dh"]?.stringValue, let authText = keys["auth"]?.stringValue else {
            throw ValidationError(rule: "keys-required", message: "the subscription needs keys.p256dh and keys.auth as strings")
        }
        let location = try checkEndpoint(endpoint)
        guard let p256dh = decodeBase64URL(p256dhText) else {
            throw ValidationError(rule: "p256dh-base64url", message: "keys.p256dh is not base64url")
        }
        guard p256dh.count == 65, p256dh[0] == 0x04 else {
            throw ValidationError(rule: "p256dh-uncompressed-point",
                                  message: "keys.p256dh must be an uncompressed P-256 point (65 octets starting 0x04), it has \(p256dh.count) octets")
        }
        guard let auth = decodeBase64URL(authText) else {
            throw ValidationError(rule: "auth-base64url", message: "keys.auth is not base64url")
        }
        guard auth.count == 16 else {
            throw ValidationError(rule: "auth-16-octets", message: "keys.auth must be 16 octets (RFC 8291 section 2.1), it has \(auth.count)")
        }
        return WebPushSubscription(endpoint: endpoint, origin: location.origin, host: location.host, port: location.port,
                                   path: location.path, p256dh: p256dh, auth: auth)
    }

    /// RFC 8030 section 8: the push resource must be reached over HTTPS. No user info, no fragment.
    static func checkEndpoint(_ endpoint: String) throws(ValidationError) -> (origin: String, host: String, port: Int, path: String) {
        guard endpoint.utf8.count <= maximumEndpointLength else {
            throw ValidationError(rule: "endpoint-length", message: "the endpoint URL is longer than \(maximumEndpointLength) characters")
        }
        guard let components = URLComponents(string: endpoint), let scheme = components.scheme?.lowercased() else {
            throw ValidationError(rule: "endpoint-url", message: "the endpoint is not a URL")
        }
        guard scheme == "https" else {
            throw ValidationError(rule: "endpoint-https", message: "the endpoint must be an https URL (RFC 8030 section 8), not \(scheme)")
        }
        guard let rawHost = components.host, !rawHost.isEmpty else {
            throw ValidationError(rule: "endpoint-url", message: "the endpoint URL has no host")
        }
        guard components.user == nil, components.password == nil, components.fragment == nil else {
            throw ValidationError(rule: "endpoint-url", message: "the endpoint URL may not carry user info or a fragment")
        }
        let host = rawHost.lowercased()
        let port = components.port ?? 443
        guard (1...65535).contains(port) else { throw ValidationError(rule: "endpoint-url", message: "the endpoint port is out of range") }
        let hostText = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        let origin = port == 443 ? "https://\(hostText)" : "https://\(hostText):\(port)"
        var path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        if let query = components.percentEncodedQuery { path += "?" + query }
        let bareHost = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        return (origin, bareHost, port, path)
    }

    /// `{"endpoint":...,"keys":{"auth":...,"p256dh":...}}`, keys as unpadded base64url: the stored token.
    public var canonicalToken: String {
        JSONValue.object(JSONObject([
            ("endpoint", .string(endpoint)),
            ("keys", .object(JSONObject([("auth", .string(Self.encodeBase64URL(auth))), ("p256dh", .string(Self.encodeBase64URL(p256dh)))]))),
        ])).jsonText
    }

    /// The token as the APIs show it: the endpoint's origin and the last 8 characters of its path, and each key's
    /// first 4 characters. Enough to recognise a subscription, never enough to encrypt to it or push to it.
    public var maskedToken: String {
        let tail = String(path.suffix(8))
        let p256dhText = Self.encodeBase64URL(p256dh)
        return JSONValue.object(JSONObject([
            ("endpoint", .string("\(origin)/…\(tail)")),
            ("keys", .object(JSONObject([("auth", .string("****")), ("p256dh", .string(String(p256dhText.prefix(4)) + "…"))]))),
        ])).jsonText
    }

    /// base64url, padded or not (browsers give it unpadded; some libraries pad); nil on any other character.
    static func decodeBase64URL(_ text: String) -> [UInt8]? {
        var body = text
        while body.hasSuffix("=") { body.removeLast() }
        guard body.utf8.allSatisfy({ ($0 >= 0x41 && $0 <= 0x5a) || ($0 >= 0x61 && $0 <= 0x7a) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2d || $0 == 0x5f }),
              body.utf8.count % 4 != 1
        else { return nil }
        var standard = body.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        standard += String(repeating: "=", count: (4 - standard.utf8.count % 4) % 4)
        return Data(base64Encoded: standard).map { [UInt8]($0) }
    }

    static func encodeBase64URL(_ bytes: [UInt8]) -> String {
        var text = Data(bytes).base64EncodedString()
        while text.hasSuffix("=") { text.removeLast() }
        return text.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
    }
}
