import ClarionCore
import ClarionProviders

/// One blocking POST to an address the outbound policy already checked, on `CurlRequest`: the registration webhooks
/// and the HTTP/S subscription deliveries both send through here.
///
/// Call it only on a sender's own thread (never the cooperative pool). The connection goes to the checked address
/// (`CURLOPT_RESOLVE` pins host:port to it), so a second DNS answer cannot point it elsewhere; redirects are not
/// followed (a redirect could lead past the policy). TLS is verified against the system store, plus
/// `extraTrustedCAPEM` when given. Answers are not kept: only the status matters.
enum OutboundPost {
    /// The status of the answer, or why there was none. `headers` are sent in name order, after `Expect:` (which
    /// stops libcurl from waiting for a 100-continue).
    static func send(_ url: OutboundURL, address: String, headers: [String: String], body: String, timeoutSeconds: Double,
                     extraTrustedCAPEM: String? = nil) -> Result<Int, OutboundPostFailure> {
        let milliseconds = max(1, Int(timeoutSeconds * 1000))
        let request = CurlRequest(
            url: url.text,
            headers: ["Expect:"] + headers.keys.sorted().map { "\($0): \(headers[$0]!)" },
            body: body,
            timeoutMilliseconds: milliseconds,
            connectTimeoutMilliseconds: milliseconds,
            extraTrustedCAPEM: extraTrustedCAPEM,
            resolve: [url.resolveEntry(pinningTo: address)])
        switch request.perform() {
        case .success(let response): return .success(response.status)
        case .failure(.timeout): return .failure(.timeout)
        case .failure(let failure): return .failure(.transport(failure.text))
        }
    }
}

enum OutboundPostFailure: Error, Sendable, Equatable {
    case timeout
    case transport(String)

    var text: String {
        switch self {
        case .timeout: "timed out"
        case .transport(let reason): reason
        }
    }
}
