internal import CCurl
import ClarionCore
import Foundation

/// A blocking form POST with libcurl, for the OAuth token exchanges (FCM jwt-bearer, ADM client credentials).
///
/// Low rate and off the hot path (interop.md: libcurl is fine for that, not for pushes). Blocking: call it only
/// on `TokenWorker`'s own thread, never on the cooperative pool. Each call uses a new easy handle, so no
/// connection is reused: that also sidesteps Debian 7.88's failure on a reused h2c prior-knowledge connection
/// (curl #10634).
///
/// `http://` URLs are spoken as h2c with prior knowledge (the emulator and private providers speak HTTP/2 only,
/// like `ProviderEndpoint`'s http://); `https://` negotiates HTTP/2 or HTTP/1.1 by ALPN.
/// What a token POST gave: an HTTP answer (any status), or no answer.
enum TokenTransportResult: Sendable {
    case response(ProviderResponse)
    case failed(TransportFailure)
}

enum CurlTokenTransport {
    /// libcurl's global init, once per process, before the first handle.
    private static let initialized: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK

    /// Largest response body kept (token answers are a few hundred bytes).
    static let maximumBody = 64 * 1024

    /// Response being collected; passed to the C callbacks through `Unmanaged`.
    private final class Collector {
        var body: [UInt8] = []
        var headers: [(String, String)] = []
    }

    static func postForm(url: String, form: String, trustedCAPEM: String?, timeoutSeconds: Int) -> TokenTransportResult {
        guard initialized, let handle = curl_easy_init() else { return .failed(.connectFailed("libcurl could not start")) }
        defer { curl_easy_cleanup(handle) }
        var headerList: UnsafeMutablePointer<curl_slist>?
        headerList = curl_slist_append(headerList, "Content-Type: application/x-www-form-urlencoded")
        headerList = curl_slist_append(headerList, "Accept: application/json")
        defer { curl_slist_free_all(headerList) }

        let collector = Collector()
        let context = Unmanaged.passRetained(collector)
        defer { context.release() }

        var ok = true
        func set(_ code: CURLcode) { if code != CURLE_OK { ok = false } }
        set(clarion_curl_setopt_string(handle, CURLOPT_URL, url))
        set(clarion_curl_setopt_long(handle, CURLOPT_POST, 1))
        set(clarion_curl_setopt_string(handle, CURLOPT_COPYPOSTFIELDS, form))
        set(clarion_curl_setopt_slist(handle, CURLOPT_HTTPHEADER, headerList))
        set(clarion_curl_setopt_long(handle, CURLOPT_NOSIGNAL, 1))
        set(clarion_curl_setopt_long(handle, CURLOPT_TIMEOUT, timeoutSeconds))
        set(clarion_curl_setopt_long(handle, CURLOPT_CONNECTTIMEOUT, min(timeoutSeconds, 10)))
        set(clarion_curl_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 0))
        set(clarion_curl_setopt_long(handle, CURLOPT_PROTOCOLS, Int(CURLPROTO_HTTP | CURLPROTO_HTTPS)))
        let version = url.lowercased().hasPrefix("http://") ? CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE : CURL_HTTP_VERSION_2TLS
        set(clarion_curl_setopt_long(handle, CURLOPT_HTTP_VERSION, Int(version)))
        set(clarion_curl_setopt_pointer(handle, CURLOPT_WRITEDATA, context.toOpaque()))
        set(clarion_curl_setopt_write_callback(handle, writeCallback))
        set(clarion_curl_setopt_pointer(handle, CURLOPT_HEADERDATA, context.toOpaque()))
        set(clarion_curl_setopt_header_callback(handle, headerCallback))
        if let trustedCAPEM {
            // CAINFO_BLOB replaces the default bundle: give it the system bundle plus the extra certificates.
            var bundle = systemCABundle()
            bundle.append(contentsOf: Array(("\n" + trustedCAPEM + "\n").utf8))
            set(bundle.withUnsafeBytes { clarion_curl_setopt_cainfo_blob(handle, $0.baseAddress, $0.count) })
        }
        guard ok else { return .failed(.connectFailed("libcurl refused an option")) }

        let code = curl_easy_perform(handle)
        guard code == CURLE_OK else {
            let text = String(cString: curl_easy_strerror(code))
            switch code {
            case CURLE_OPERATION_TIMEDOUT: return .failed(.timeout)
            case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_CONNECT, CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION,
                 CURLE_SSL_CACERT_BADFILE, CURLE_UNSUPPORTED_PROTOCOL, CURLE_URL_MALFORMAT:
                return .failed(.connectFailed(text))
            default: return .failed(.connectionLost(text))
            }
        }
        var status = 0
        _ = clarion_curl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        return .response(ProviderResponse(status: status, headers: collector.headers, body: collector.body))
    }

    /// libcurl's default CA bundle (Debian: /etc/ssl/certs/ca-certificates.crt), read once.
    private static let systemBundle: [UInt8] = {
        var paths: [String] = []
        if let path = clarion_curl_default_cainfo() { paths.append(String(cString: path)) }
        paths.append("/etc/ssl/certs/ca-certificates.crt")
        for path in paths {
            if let data = FileManager.default.contents(atPath: path) { return Array(data) }
        }
        return []
    }()

    private static func systemCABundle() -> [UInt8] { systemBundle }

    private static let writeCallback: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
        data, size, count, context in
        guard let data, let context else { return 0 }
        let collector = Unmanaged<Collector>.fromOpaque(context).takeUnretainedValue()
        let length = size * count
        guard collector.body.count + length <= maximumBody else { return 0 }  // aborts the transfer
        data.withMemoryRebound(to: UInt8.self, capacity: length) {
            collector.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: length))
        }
        return length
    }

    private static let headerCallback: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
        data, size, count, context in
        guard let data, let context else { return 0 }
        let collector = Unmanaged<Collector>.fromOpaque(context).takeUnretainedValue()
        let length = size * count
        let line = data.withMemoryRebound(to: UInt8.self, capacity: length) {
            String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
        }
        if line.hasPrefix("HTTP/") {
            collector.headers.removeAll()  // a new response (after 100-continue or a redirect)
        } else if let colon = line.firstIndex(of: ":"), collector.headers.count < 100 {
            let name = line[..<colon].trimmingCharacters(in: .whitespaces).lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespacesAndNewlines)
            collector.headers.append((name, value))
        }
        return length
    }
}
