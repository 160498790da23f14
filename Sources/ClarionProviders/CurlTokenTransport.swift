import ClarionCore

/// What a token POST gave: an HTTP answer (any status), or no answer.
enum TokenTransportResult: Sendable {
    case response(ProviderResponse)
    case failed(TransportFailure)
}

/// A blocking form POST for the OAuth token exchanges (FCM jwt-bearer, ADM client credentials), on `CurlRequest`.
///
/// Blocking: call it only on `TokenWorker`'s own thread, never on the cooperative pool.
/// `http://` URLs are spoken as h2c with prior knowledge (the emulator and private providers speak HTTP/2 only,
/// like `ProviderEndpoint`'s http://); `https://` negotiates HTTP/2 or HTTP/1.1 by ALPN.
enum CurlTokenTransport {
    /// Largest response body kept (token answers are a few hundred bytes).
    static let maximumBody = 64 * 1024

    static func postForm(url: String, form: String, trustedCAPEM: String?, timeoutSeconds: Int,
                         addressPolicy: OutboundAddressPolicy? = nil) -> TokenTransportResult {
        // The token URL is a tenant's setting too (ProviderAuthEndpoint, the service account's token_uri): resolve
        // it here, judge every address, and pin libcurl to the one judged (no second resolution to rebind).
        var resolve: [String] = []
        if let addressPolicy {
            guard let target = OutboundURL(url) else { return .failed(.connectFailed("not an http(s) URL: \(url)")) }
            switch addressPolicy.resolve(target) {
            case .success(let address):
                resolve = [target.resolveEntry(pinningTo: address)]
            case .failure(let refusal):
                return .failed(.connectFailed("\(target.host): \(refusal.rawValue) (loopback, private and reserved ranges need CLARION_PROVIDER_ALLOW_HOSTS)"))
            }
        }
        let request = CurlRequest(
            url: url,
            headers: ["Content-Type: application/x-www-form-urlencoded", "Accept: application/json"],
            body: form,
            timeoutMilliseconds: timeoutSeconds * 1000,
            connectTimeoutMilliseconds: min(timeoutSeconds, 10) * 1000,
            httpVersion: url.lowercased().hasPrefix("http://") ? .http2PriorKnowledge : .http2OverTLS,
            extraTrustedCAPEM: trustedCAPEM,
            resolve: resolve,
            maximumResponseBody: maximumBody)
        switch request.perform() {
        case .success(let response):
            return .response(ProviderResponse(status: response.status, headers: response.headers, body: response.body))
        case .failure(.timeout):
            return .failed(.timeout)
        case .failure(.setup(let text)), .failure(.connectFailed(let text)):
            return .failed(.connectFailed(text))
        case .failure(.transferFailed(let text)):
            return .failed(.connectionLost(text))
        }
    }
}
