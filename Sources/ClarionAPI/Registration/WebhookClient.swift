internal import CCurl
import Foundation

/// One blocking webhook POST with libcurl, to an address the outbound policy already checked.
///
/// Call it only on the webhook sender's own thread (never the cooperative pool). The connection goes to the
/// checked address (`CURLOPT_RESOLVE` pins host:port to it), so a second DNS answer cannot point it elsewhere;
/// redirects are not followed (a redirect could lead past the policy). TLS is verified against the system store.
enum WebhookClient {
    private static let initialized: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK

    /// The status of the answer, or why there was none.
    static func post(_ url: OutboundURL, address: String, headers: [String: String], body: String,
                     timeoutSeconds: Double) -> Result<Int, WebhookFailure> {
        guard initialized, let handle = curl_easy_init() else { return .failure(.transport("libcurl could not start")) }
        defer { curl_easy_cleanup(handle) }
        var list: UnsafeMutablePointer<curl_slist>?
        list = curl_slist_append(list, "Content-Type: application/json")
        list = curl_slist_append(list, "Expect:")
        for name in headers.keys.sorted() { list = curl_slist_append(list, "\(name): \(headers[name]!)") }
        defer { curl_slist_free_all(list) }
        let pinnedAddress = address.contains(":") ? "[\(address)]" : address
        var resolve: UnsafeMutablePointer<curl_slist>?
        resolve = curl_slist_append(resolve, "\(url.host):\(url.port):\(pinnedAddress)")
        defer { curl_slist_free_all(resolve) }

        let milliseconds = max(1, Int(timeoutSeconds * 1000))
        var ok = true
        func set(_ code: CURLcode) { if code != CURLE_OK { ok = false } }
        set(clarion_curl_setopt_string(handle, CURLOPT_URL, url.text))
        set(clarion_curl_setopt_slist(handle, CURLOPT_RESOLVE, resolve))
        set(clarion_curl_setopt_long(handle, CURLOPT_POST, 1))
        set(clarion_curl_setopt_string(handle, CURLOPT_COPYPOSTFIELDS, body))
        set(clarion_curl_setopt_slist(handle, CURLOPT_HTTPHEADER, list))
        set(clarion_curl_setopt_long(handle, CURLOPT_NOSIGNAL, 1))
        set(clarion_curl_setopt_long(handle, CURLOPT_TIMEOUT_MS, milliseconds))
        set(clarion_curl_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, milliseconds))
        set(clarion_curl_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 0))
        set(clarion_curl_setopt_long(handle, CURLOPT_PROTOCOLS, Int(CURLPROTO_HTTP | CURLPROTO_HTTPS)))
        set(clarion_curl_setopt_write_callback(handle, discard))
        guard ok else { return .failure(.transport("libcurl refused an option")) }
        let code = curl_easy_perform(handle)
        guard code == CURLE_OK else {
            if code == CURLE_OPERATION_TIMEDOUT { return .failure(.timeout) }
            return .failure(.transport(String(cString: curl_easy_strerror(code))))
        }
        var status = 0
        _ = clarion_curl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        return .success(status)
    }

    /// Answers are not read: only the status matters.
    private static let discard: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
        _, size, count, _ in size * count
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
