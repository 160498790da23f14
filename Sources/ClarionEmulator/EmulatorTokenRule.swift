/// A device-token pattern that decides the outcome of a push deterministically, so a test (or a load
/// test) gets an `Unregistered`, a `QUOTA_EXCEEDED` or a canonical id just by choosing the token.
///
/// `outcome` is the provider's own name for the answer:
/// - APNs: a `reason` from docs/providers.md A.6 (`Unregistered`, `ExpiredToken`, `BadDeviceToken`,
///   `DeviceTokenNotForTopic`, `TooManyRequests`, `InternalServerError`, `ServiceUnavailable`, ...).
/// - FCM: an `errorCode` from B.4 (`UNREGISTERED`, `INVALID_ARGUMENT`, `SENDER_ID_MISMATCH`,
///   `THIRD_PARTY_AUTH_ERROR`, `QUOTA_EXCEEDED`, `UNAVAILABLE`, `INTERNAL`).
/// - HMS: `IllegalToken` (Push Kit refuses the token) or `FlowControl` (503), E.1.
/// - ADM: a `reason` from D.3 (`Unregistered`, `InvalidRegistrationId`, `MaxRateExceeded`,
///   `InternalServerError`, `ServiceUnavailable`), or `Canonical`: a 200 whose `registrationID` is the
///   token with the matched prefix replaced by `canonicalPrefix`.
///
/// The first matching rule wins. Rules run after the request is otherwise valid, so a malformed request
/// still gets its own error.
public struct EmulatorTokenRule: Codable, Sendable, Hashable {
    public var provider: EmulatorProvider
    /// The token starts with this (case-sensitive).
    public var prefix: String?
    /// The token ends with this (case-insensitive for APNs, whose tokens are hex).
    public var suffix: String?
    public var outcome: String
    /// For ADM `Canonical`: what replaces the matched prefix (default `renewed-`).
    public var canonicalPrefix: String?

    public init(provider: EmulatorProvider, prefix: String? = nil, suffix: String? = nil, outcome: String, canonicalPrefix: String? = nil) {
        self.provider = provider
        self.prefix = prefix
        self.suffix = suffix
        self.outcome = outcome
        self.canonicalPrefix = canonicalPrefix
    }

    /// The built-in patterns. APNs tokens must stay hex, so APNs uses suffixes `dead0NNN`/`dead1NNN`
    /// (eight hex digits: a random token hits one by chance once in 4 billion); FCM and ADM use prefixes.
    ///
    /// | provider | token | outcome |
    /// |---|---|---|
    /// | APNs | ends `dead0410` | 410 `Unregistered` (with `timestamp`) |
    /// | APNs | ends `dead1410` | 410 `ExpiredToken` |
    /// | APNs | ends `dead0400` | 400 `BadDeviceToken` |
    /// | APNs | ends `dead1400` | 400 `DeviceTokenNotForTopic` |
    /// | APNs | ends `dead0429` | 429 `TooManyRequests` |
    /// | APNs | ends `dead0500` | 500 `InternalServerError` |
    /// | APNs | ends `dead0503` | 503 `ServiceUnavailable` |
    /// | FCM | `unregistered-` | 404 `UNREGISTERED` |
    /// | FCM | `invalid-` | 400 `INVALID_ARGUMENT` (invalid registration token) |
    /// | FCM | `mismatch-` | 403 `SENDER_ID_MISMATCH` |
    /// | FCM | `thirdpartyauth-` | 401 `THIRD_PARTY_AUTH_ERROR` |
    /// | FCM | `quota-` | 429 `QUOTA_EXCEEDED` with Retry-After |
    /// | FCM | `unavailable-` | 503 `UNAVAILABLE` with Retry-After |
    /// | FCM | `internal-` | 500 `INTERNAL` |
    /// | ADM | `unregistered-` | 400 `Unregistered` |
    /// | ADM | `invalid-` | 400 `InvalidRegistrationId` |
    /// | ADM | `ratelimited-` | 429 `MaxRateExceeded` with Retry-After |
    /// | ADM | `unavailable-` | 503 with Retry-After |
    /// | ADM | `internal-` | 500 |
    /// | ADM | `canonical-` | 200, `registrationID` = `renewed-` + the rest |
    /// | HMS | `invalid-` | the token is illegal: 80300007 when all are, else 80100000 listing it |
    /// | HMS | `unavailable-` | 503 flow control with Retry-After |
    public static let defaults: [EmulatorTokenRule] = [
        .init(provider: .apns, suffix: "dead0410", outcome: "Unregistered"),
        .init(provider: .apns, suffix: "dead1410", outcome: "ExpiredToken"),
        .init(provider: .apns, suffix: "dead0400", outcome: "BadDeviceToken"),
        .init(provider: .apns, suffix: "dead1400", outcome: "DeviceTokenNotForTopic"),
        .init(provider: .apns, suffix: "dead0429", outcome: "TooManyRequests"),
        .init(provider: .apns, suffix: "dead0500", outcome: "InternalServerError"),
        .init(provider: .apns, suffix: "dead0503", outcome: "ServiceUnavailable"),
        .init(provider: .fcm, prefix: "unregistered-", outcome: "UNREGISTERED"),
        .init(provider: .fcm, prefix: "invalid-", outcome: "INVALID_ARGUMENT"),
        .init(provider: .fcm, prefix: "mismatch-", outcome: "SENDER_ID_MISMATCH"),
        .init(provider: .fcm, prefix: "thirdpartyauth-", outcome: "THIRD_PARTY_AUTH_ERROR"),
        .init(provider: .fcm, prefix: "quota-", outcome: "QUOTA_EXCEEDED"),
        .init(provider: .fcm, prefix: "unavailable-", outcome: "UNAVAILABLE"),
        .init(provider: .fcm, prefix: "internal-", outcome: "INTERNAL"),
        .init(provider: .adm, prefix: "unregistered-", outcome: "Unregistered"),
        .init(provider: .adm, prefix: "invalid-", outcome: "InvalidRegistrationId"),
        .init(provider: .adm, prefix: "ratelimited-", outcome: "MaxRateExceeded"),
        .init(provider: .adm, prefix: "unavailable-", outcome: "ServiceUnavailable"),
        .init(provider: .adm, prefix: "internal-", outcome: "InternalServerError"),
        .init(provider: .adm, prefix: "canonical-", outcome: "Canonical"),
        .init(provider: .hms, prefix: "invalid-", outcome: "IllegalToken"),
        .init(provider: .hms, prefix: "unavailable-", outcome: "FlowControl"),
    ]

    func matches(_ token: String) -> Bool {
        if let prefix, !token.hasPrefix(prefix) { return false }
        if let suffix {
            if provider == .apns {
                guard token.utf8.count >= suffix.utf8.count,
                      token.utf8.suffix(suffix.utf8.count).elementsEqual(suffix.utf8, by: { Self.lower($0) == Self.lower($1) })
                else { return false }
            } else if !token.hasSuffix(suffix) {
                return false
            }
        }
        return prefix != nil || suffix != nil
    }

    private static func lower(_ byte: UInt8) -> UInt8 {
        (0x41...0x5a).contains(byte) ? byte | 0x20 : byte
    }
}

/// The rules of one provider, checked in order, with prefixes and suffixes as bytes: this runs on
/// every accepted push.
struct TokenRuleSet: Sendable {
    struct Compiled: Sendable {
        let rule: EmulatorTokenRule
        let prefix: [UInt8]?
        /// Lower-cased for APNs (hex tokens compare case-insensitively).
        let suffix: [UInt8]?
        let caseInsensitiveSuffix: Bool
    }

    let compiled: [Compiled]
    var rules: [EmulatorTokenRule] { compiled.map(\.rule) }
    /// Quick rejection, so most tokens (matching no rule) cost two lookups: a token can match only if its first
    /// byte starts some rule's prefix, or its last byte (lower-cased for APNs) ends the suffix of a rule that has
    /// no prefix.
    private let firstBytes: [Bool]
    private let lastBytes: [Bool]

    init(_ all: [EmulatorTokenRule], provider: EmulatorProvider) {
        compiled = all.filter { $0.provider == provider && ($0.prefix != nil || $0.suffix != nil) }.map { rule in
            let insensitive = provider == .apns
            return Compiled(rule: rule, prefix: rule.prefix.map { Array($0.utf8) },
                            suffix: rule.suffix.map { Array((insensitive ? $0.lowercased() : $0).utf8) },
                            caseInsensitiveSuffix: insensitive)
        }
        var first = [Bool](repeating: false, count: 256)
        var last = [Bool](repeating: false, count: 256)
        for entry in compiled {
            if let prefix = entry.prefix {
                if let byte = prefix.first {
                    first[Int(byte)] = true
                } else {
                    first = [Bool](repeating: true, count: 256)
                }
            } else if let suffix = entry.suffix {
                if let byte = suffix.last {
                    last[Int(byte)] = true
                } else {
                    last = [Bool](repeating: true, count: 256)
                }
            }
        }
        firstBytes = first
        lastBytes = last
    }

    func match(_ token: some StringProtocol) -> EmulatorTokenRule? {
        guard !compiled.isEmpty else { return nil }
        if let found = token.utf8.withContiguousStorageIfAvailable({ match(bytes: $0) }) { return found }
        return Array(token.utf8).withUnsafeBufferPointer { match(bytes: $0) }
    }

    func match(bytes: UnsafeBufferPointer<UInt8>) -> EmulatorTokenRule? {
        guard let head = bytes.first, var tail = bytes.last else { return matchAll(bytes) }
        if (0x41...0x5a).contains(tail) { tail |= 0x20 }  // APNs suffixes are lower-cased; others have none here
        if !firstBytes[Int(head)] && !lastBytes[Int(tail)] && !lastBytes[Int(bytes.last!)] { return nil }
        return matchAll(bytes)
    }

    private func matchAll(_ bytes: UnsafeBufferPointer<UInt8>) -> EmulatorTokenRule? {
        for entry in compiled {
            if let prefix = entry.prefix {
                guard bytes.count >= prefix.count else { continue }
                var same = true
                for index in 0..<prefix.count where bytes[index] != prefix[index] {
                    same = false
                    break
                }
                guard same else { continue }
            }
            if let suffix = entry.suffix {
                guard bytes.count >= suffix.count else { continue }
                let start = bytes.count - suffix.count
                var same = true
                for index in 0..<suffix.count {
                    var byte = bytes[start + index]
                    if entry.caseInsensitiveSuffix, (0x41...0x5a).contains(byte) { byte |= 0x20 }
                    if byte != suffix[index] {
                        same = false
                        break
                    }
                }
                guard same else { continue }
            }
            return entry.rule
        }
        return nil
    }
}
