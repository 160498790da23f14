import Foundation

/// The `x-clarion-signature` header of a registration webhook:
/// `t=<unix seconds>,v1=<hex HMAC-SHA256(key, t + "." + body)>`.
///
/// Why besides the body's `Signature` (Base64 HMAC of the callback URL, as the original registration spec has it):
/// that one covers neither the body nor a time, so a captured webhook can be replayed with any body. This one binds
/// the exact body bytes and the attempt's time; receivers reject a `t` too far from their clock (docs/api.md has
/// a verification example). The key is the same as the body signature's: the mobile app's API token the
/// registration presented. `v1` names the scheme so another can be added beside it later.
package enum WebhookSignature {
    package static let header = "x-clarion-signature"

    /// The header value for an attempt at `time` (whole seconds, rounded down).
    package static func value(key: String, body: String, time: Date) -> String {
        let t = String(Int64(time.timeIntervalSince1970.rounded(.down)))
        let mac = Digest.hmacSHA256(key: Array(key.utf8), data: Array((t + "." + body).utf8))
        return "t=\(t),v1=\(mac.hexString)"
    }

    /// `headers` with the signature of this attempt, replacing any header of the same name in any case.
    package static func signed(_ headers: [String: String], key: String?, body: String, time: Date) -> [String: String] {
        guard let key else { return headers }
        var out = headers.filter { $0.key.lowercased() != header }
        out[header] = value(key: key, body: body, time: time)
        return out
    }
}
