import ClarionCore
import ClarionProviders

/// One blocking webhook POST, to an address the outbound policy already checked, on `CurlRequest`.
///
/// Call it only on the webhook sender's own thread (never the cooperative pool). The connection goes to the
/// checked address (`CURLOPT_RESOLVE` pins host:port to it), so a second DNS answer cannot point it elsewhere;
/// redirects are not followed (a redirect could lead past the policy). TLS is verified against the system store.
enum WebhookClient {
    /// The status of the answer, or why there was none.
    static func post(_ url: OutboundURL, address: String, headers: [String: String], body: String,
                     timeoutSeconds: Double) -> Result<Int, WebhookFailure> {
        let pinnedAddress = address.contains(":") ? "[\(address)]" : address
        let milliseconds = max(1, Int(timeoutSeconds * 1000))
        // Answers are not kept: only the status matters.
        let request = CurlRequest(
            url: url.text,
            headers: ["Content-Type: application/json", "Expect:"] + headers.keys.sorted().map { "\($0): \(headers[$0]!)" },
            body: body,
            timeoutMilliseconds: milliseconds,
            connectTimeoutMilliseconds: milliseconds,
            resolve: ["\(url.host):\(url.port):\(pinnedAddress)"])
        switch request.perform() {
        case .success(let response): return .success(response.status)
        case .failure(.timeout): return .failure(.timeout)
        case .failure(let failure): return .failure(.transport(failure.text))
        }
    }
}

enum WebhookFailure: Error, Sendable, Equatable {
    case timeout
    case transport(String)

    var text: String {
        switch self {
        case .timeout: "timed out"
        case .transport(let reason): reason
        }
    }
}
