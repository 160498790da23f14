import Foundation

/// Huawei Push Kit v1 answers -> `DeliveryOutcome`, one per token of the request (docs/providers.md E.1, E.1a).
///
/// Push Kit answers `{"code":"<8 digits>","msg":"...","requestId":"..."}`; the code decides, the HTTP status only
/// when there is no code:
/// - `80000000` success: every token accepted, `requestId` is the provider id.
/// - `80100000` partial success: `msg` is JSON text naming the tokens refused (`illegal_tokens`); those endpoints
///   are disabled with the reason, the others accepted.
/// - `80300007` all tokens invalid: every endpoint of the request is disabled.
/// - `80100003` (bad message structure), `80300008` (body larger than 4 KB): the message is invalid.
/// - `80200003` (OAuth token expired), `80200001` (OAuth authentication failed): `authTokenExpired`, so the token is
///   renewed and the delivery retried at once; a refused token exchange (a wrong client secret) disables the
///   application (`TokenExchangeClassifier`), and `ProviderClient` turns a second 80200001 on a fresh token into
///   `credentialsInvalid`.
/// - `80300002` (the app may not send: Push Kit not enabled for it): the application's credentials.
/// - `80300010` (token count out of range): this request was malformed; rejected, nothing disabled.
/// - HTTP 429, 503 (flow control) and other 5xx: retried after `Retry-After` when given.
/// - Anything else: rejected, nothing disabled.
public enum HMSResponseClassifier {
    public static let success = "80000000"
    public static let partialSuccess = "80100000"
    public static let badMessage = "80100003"
    public static let authFailed = "80200001"
    public static let tokenExpired = "80200003"
    public static let appNotPermitted = "80300002"
    public static let allTokensInvalid = "80300007"
    public static let messageTooLarge = "80300008"
    public static let tokenCount = "80300010"

    /// A Push Kit answer as read once for all the request's tokens.
    public struct Answer: Sendable, Hashable {
        public var code: String?
        public var message: String
        public var requestID: String?
        /// From a partial success's `msg`: the tokens Push Kit refused.
        public var illegalTokens: Set<String>
    }

    /// Reads a Push Kit body. Never throws: an unreadable body is an answer without a code.
    public static func read(_ body: [UInt8]) -> Answer {
        let object = body.isEmpty ? nil : (try? JSONValue.parse(bytes: body))?.objectValue
        let code: String? = switch object?["code"] {
        case .string(let text)?: text
        case .number(let number)?: number.literal
        default: nil
        }
        let message = object?["msg"]?.stringValue ?? ""
        var illegal = Set<String>()
        if code == partialSuccess, let detail = (try? JSONValue.parse(message))?.objectValue {
            // v1 (HMS Core) lists them as `illegal_tokens`; the v3 answers seen for HarmonyOS nest them by reason
            // under `illegalTokens` (`{"noRight":[...]}`). Both are read, so a gateway in front of either is understood.
            var lists: [JSONValue] = []
            if let list = detail["illegal_tokens"] { lists.append(list) }
            switch detail["illegalTokens"] {
            case .array(let items)?: lists.append(.array(items))
            case .object(let byReason)?: lists.append(contentsOf: byReason.map(\.value))
            default: break
            }
            for list in lists {
                for token in list.arrayValue ?? [] { if let text = token.stringValue { illegal.insert(text) } }
            }
        }
        return Answer(code: code, message: String(message.prefix(200)), requestID: object?["requestId"]?.stringValue,
                      illegalTokens: illegal)
    }

    /// The outcome of each of `tokens`, in order.
    public static func classify(_ response: ProviderResponse, tokens: [String], now: Date) -> [DeliveryOutcome] {
        let answer = read(response.body)
        if answer.code == partialSuccess {
            return tokens.map { token in
                answer.illegalTokens.contains(token)
                    ? .tokenInvalid(reason: "Push Kit \(partialSuccess): the token is not valid (illegal_tokens)", invalidSince: nil)
                    : .accepted(providerID: answer.requestID)
            }
        }
        let outcome = classify(answer, status: response.status, retryAfter: response.retryAfter(now: now))
        return Array(repeating: outcome, count: tokens.count)
    }

    /// One token's outcome.
    public static func classify(_ response: ProviderResponse, token: String, now: Date) -> DeliveryOutcome {
        classify(response, tokens: [token], now: now)[0]
    }

    /// What a code means, in the words the reasons use. Reasons never quote Push Kit's `msg` for these: it can list
    /// tokens (v3 answers put `illegalTokens` there), and a full device token belongs in no log or API answer.
    static let descriptions: [String: String] = [
        allTokensInvalid: "the token is not valid", messageTooLarge: "the message body is larger than 4 KB",
        tokenExpired: "OAuth access token expired", authFailed: "OAuth authentication failed",
        appNotPermitted: "the app may not send pushes", tokenCount: "token count out of range",
    ]

    static func classify(_ answer: Answer, status: Int, retryAfter: TimeInterval?) -> DeliveryOutcome {
        // Any other `msg` is quoted only when it is not JSON (a JSON `msg` carries token lists).
        let quotable = !answer.message.isEmpty && !answer.message.hasPrefix("{") && !answer.message.hasPrefix("[")
        if let code = answer.code {
            let reason = "Push Kit \(code): \(descriptions[code] ?? (quotable ? answer.message : "HTTP \(status)"))"
            switch code {
            case success: return .accepted(providerID: answer.requestID)
            case allTokensInvalid: return .tokenInvalid(reason: reason, invalidSince: nil)
            case badMessage, messageTooLarge: return .messageInvalid(reason: reason)
            case tokenExpired, authFailed: return .authTokenExpired(reason: reason)
            case appNotPermitted: return .credentialsInvalid(reason: reason)
            case tokenCount: return .rejected(reason: reason)
            default: break
            }
            if status == 429 || (500...599).contains(status) { return .retryable(reason: reason, retryAfter: retryAfter) }
            return .rejected(reason: reason)
        }
        switch status {
        case 200..<300: return .rejected(reason: "Push Kit answered \(status) without a result code")
        case 401: return .authTokenExpired(reason: "Push Kit answered 401")
        case 503: return .retryable(reason: "Push Kit answered 503 (flow control)", retryAfter: retryAfter)
        case 429, 500...599: return .retryable(reason: "Push Kit answered \(status)", retryAfter: retryAfter)
        default: return .rejected(reason: "Push Kit answered \(status)")
        }
    }
}
