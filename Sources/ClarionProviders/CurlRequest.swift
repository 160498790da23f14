internal import CCurl
import Foundation

/// One blocking HTTP POST with libcurl: the one place Clarion drives libcurl, for the OAuth token exchanges
/// (`CurlTokenTransport`), and the registration webhooks and HTTP/S subscription deliveries (ClarionWorkers'
/// `OutboundPost`).
///
/// Low rate and off the hot path: a blocking call on a handle of its own is fine there, and pushes go over
/// ClarionHTTP2's multiplexed connections instead. Blocking: call `perform`
/// only on a thread of its own, never on the cooperative pool. Each call uses a new easy handle, so no connection
/// is reused (that also sidesteps Debian 7.88's failure on a reused h2c prior-knowledge connection, curl #10634).
/// Redirects are never followed; only http and https are spoken.
///
/// The libcurl rules this keeps, in one place:
/// - `curl_global_init` runs once per process, before the first handle (`CurlGlobal`).
/// - A list given to the handle (headers, `CURLOPT_RESOLVE`) must stay valid until the handle is gone: the handle
///   is cleaned up first, then the lists are freed (`defer` runs in reverse order: two separate `defer`s had it
///   the other way round).
/// - `curl_slist_append` returns NULL when it fails and leaves the list it got as it was (`CurlStringList`).
/// - Nothing Swift lends outlives its closure: the URL and body are copied by libcurl (`CURLOPT_URL`,
///   `CURLOPT_COPYPOSTFIELDS`), the CA bundle too (`CURLOPT_CAINFO_BLOB` with `CURL_BLOB_COPY`), and the callbacks'
///   context is a retained object released after the handle is gone.
package struct CurlRequest: Sendable {
    package enum HTTPVersion: Sendable {
        /// What libcurl picks (HTTP/2 over TLS by ALPN, HTTP/1.1 otherwise).
        case libcurlDefault
        /// HTTP/2 without upgrade on `http://` (h2c with prior knowledge).
        case http2PriorKnowledge
        /// HTTP/2 negotiated by ALPN over TLS, HTTP/1.1 on `http://`.
        case http2OverTLS
    }

    package var url: String
    /// Header lines, "Name: value"; "Name:" removes a header libcurl would add (`Expect:`).
    package var headers: [String]
    package var body: String
    package var timeoutMilliseconds: Int
    package var connectTimeoutMilliseconds: Int
    package var httpVersion: HTTPVersion
    /// CA certificates (PEM) trusted besides the system bundle. nil: the system bundle only.
    package var extraTrustedCAPEM: String?
    /// `CURLOPT_RESOLVE` entries, "host:port:address": connect to that address, whatever DNS says.
    package var resolve: [String]
    /// Response headers and bodies up to this many bytes are kept (a larger body fails the transfer); nil: the
    /// answer is not kept, only its status.
    package var maximumResponseBody: Int?

    package init(url: String, headers: [String] = [], body: String, timeoutMilliseconds: Int,
                 connectTimeoutMilliseconds: Int, httpVersion: HTTPVersion = .libcurlDefault,
                 extraTrustedCAPEM: String? = nil, resolve: [String] = [], maximumResponseBody: Int? = nil) {
        self.url = url
        self.headers = headers
        self.body = body
        self.timeoutMilliseconds = timeoutMilliseconds
        self.connectTimeoutMilliseconds = connectTimeoutMilliseconds
        self.httpVersion = httpVersion
        self.extraTrustedCAPEM = extraTrustedCAPEM
        self.resolve = resolve
        self.maximumResponseBody = maximumResponseBody
    }

    /// Sends the request and waits for the answer (blocking).
    package func perform() -> Result<CurlResponse, CurlFailure> {
        guard CurlGlobal.isInitialized, let handle = curl_easy_init() else { return .failure(.setup("libcurl could not start")) }
        var headerList = CurlStringList()
        var resolveList = CurlStringList()
        let collector = Collector(maximumBody: maximumResponseBody)
        let context = Unmanaged.passRetained(collector)
        defer {
            // The handle may use the lists and the callbacks' context until it is cleaned up: it goes first.
            curl_easy_cleanup(handle)
            headerList.free()
            resolveList.free()
            context.release()
        }
        do throws(CurlFailure) {
            for line in headers { try headerList.append(line) }
            for entry in resolve { try resolveList.append(entry) }
        } catch {
            return .failure(error)
        }

        var ok = true
        func set(_ code: CURLcode) { if code != CURLE_OK { ok = false } }
        set(clarion_curl_setopt_string(handle, CURLOPT_URL, url))
        if let list = resolveList.head { set(clarion_curl_setopt_slist(handle, CURLOPT_RESOLVE, list)) }
        set(clarion_curl_setopt_long(handle, CURLOPT_POST, 1))
        set(clarion_curl_setopt_string(handle, CURLOPT_COPYPOSTFIELDS, body))
        if let list = headerList.head { set(clarion_curl_setopt_slist(handle, CURLOPT_HTTPHEADER, list)) }
        set(clarion_curl_setopt_long(handle, CURLOPT_NOSIGNAL, 1))
        set(clarion_curl_setopt_long(handle, CURLOPT_TIMEOUT_MS, timeoutMilliseconds))
        set(clarion_curl_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, connectTimeoutMilliseconds))
        set(clarion_curl_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 0))
        set(clarion_curl_setopt_long(handle, CURLOPT_PROTOCOLS, Int(CURLPROTO_HTTP | CURLPROTO_HTTPS)))
        switch httpVersion {
        case .libcurlDefault: break
        case .http2PriorKnowledge:
            set(clarion_curl_setopt_long(handle, CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE)))
        case .http2OverTLS:
            set(clarion_curl_setopt_long(handle, CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS)))
        }
        set(clarion_curl_setopt_pointer(handle, CURLOPT_WRITEDATA, context.toOpaque()))
        set(clarion_curl_setopt_write_callback(handle, Collector.writeCallback))
        if maximumResponseBody != nil {
            set(clarion_curl_setopt_pointer(handle, CURLOPT_HEADERDATA, context.toOpaque()))
            set(clarion_curl_setopt_header_callback(handle, Collector.headerCallback))
        }
        if let extraTrustedCAPEM {
            // CAINFO_BLOB replaces the default bundle: give it the system bundle plus the extra certificates.
            // libcurl copies the blob (CURL_BLOB_COPY), so the pointer need not outlive this closure.
            var bundle = CurlGlobal.systemCABundle
            bundle.append(contentsOf: Array(("\n" + extraTrustedCAPEM + "\n").utf8))
            set(bundle.withUnsafeBytes { clarion_curl_setopt_cainfo_blob(handle, $0.baseAddress, $0.count) })
        }
        guard ok else { return .failure(.setup("libcurl refused an option")) }

        let code = curl_easy_perform(handle)
        guard code == CURLE_OK else {
            let text = String(cString: curl_easy_strerror(code))
            switch code {
            case CURLE_OPERATION_TIMEDOUT: return .failure(.timeout)
            case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_CONNECT, CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION,
                 CURLE_SSL_CACERT_BADFILE, CURLE_UNSUPPORTED_PROTOCOL, CURLE_URL_MALFORMAT:
                return .failure(.connectFailed(text))
            default: return .failure(.transferFailed(text))
            }
        }
        var status = 0
        _ = clarion_curl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        return .success(CurlResponse(status: status, headers: collector.headers, body: collector.body))
    }

    /// The answer being collected; the C callbacks reach it through `Unmanaged` (their user data).
    private final class Collector {
        let maximumBody: Int?
        var body: [UInt8] = []
        var headers: [(String, String)] = []

        init(maximumBody: Int?) {
            self.maximumBody = maximumBody
        }

        static let writeCallback: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
            data, size, count, context in
            guard let data, let context else { return 0 }
            let collector = Unmanaged<Collector>.fromOpaque(context).takeUnretainedValue()
            let length = size * count
            guard let maximumBody = collector.maximumBody else { return length }  // not kept
            guard collector.body.count + length <= maximumBody else { return 0 }  // aborts the transfer
            data.withMemoryRebound(to: UInt8.self, capacity: length) {
                collector.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: length))
            }
            return length
        }

        static let headerCallback: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
            data, size, count, context in
            guard let data, let context else { return 0 }
            let collector = Unmanaged<Collector>.fromOpaque(context).takeUnretainedValue()
            let length = size * count
            let line = data.withMemoryRebound(to: UInt8.self, capacity: length) {
                String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
            }
            if line.hasPrefix("HTTP/") {
                collector.headers.removeAll()  // a new response (after 100-continue)
            } else if let colon = line.firstIndex(of: ":"), collector.headers.count < 100 {
                let name = line[..<colon].trimmingCharacters(in: .whitespaces).lowercased()
                let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespacesAndNewlines)
                collector.headers.append((name, value))
            }
            return length
        }
    }
}

/// What came back: any HTTP status.
package struct CurlResponse: Sendable {
    package var status: Int
    /// Lower-cased names; empty unless the request kept its answer (`maximumResponseBody`).
    package var headers: [(String, String)]
    package var body: [UInt8]
}

/// Why no answer came back.
package enum CurlFailure: Error, Sendable, Equatable {
    /// Nothing was sent: libcurl did not start, refused an option, or could not build a list.
    case setup(String)
    case timeout
    /// No connection: name resolution, connect, TLS handshake or verification, a bad URL.
    case connectFailed(String)
    /// Connected, then the transfer failed (including an answer larger than `maximumResponseBody`).
    case transferFailed(String)

    package var text: String {
        switch self {
        case .setup(let text), .connectFailed(let text), .transferFailed(let text): text
        case .timeout: "timed out"
        }
    }
}

/// libcurl's process-wide state.
enum CurlGlobal {
    /// `curl_global_init`, once per process before the first handle: a `static let` is initialised exactly once,
    /// thread-safely, on first use, whichever sender gets there first.
    static let isInitialized: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK

    /// libcurl's default CA bundle (Debian: /etc/ssl/certs/ca-certificates.crt), read once.
    static let systemCABundle: [UInt8] = {
        var paths: [String] = []
        if let path = clarion_curl_default_cainfo() { paths.append(String(cString: path)) }
        paths.append("/etc/ssl/certs/ca-certificates.crt")
        for path in paths {
            if let data = FileManager.default.contents(atPath: path) { return Array(data) }
        }
        return []
    }()
}

/// A libcurl string list (`curl_slist`), built a line at a time and freed with `free()` once the handle that
/// used it is gone.
///
/// `curl_slist_append` copies the line, and returns NULL when it fails (out of memory) leaving the list it was
/// given as it was. `list = curl_slist_append(list, line)` therefore lost the whole list on a failure (a leak)
/// and sent the request without those headers; here the list is kept and the failure thrown.
struct CurlStringList {
    typealias Append = (UnsafeMutablePointer<curl_slist>?, UnsafePointer<CChar>) -> UnsafeMutablePointer<curl_slist>?

    private(set) var head: UnsafeMutablePointer<curl_slist>?

    mutating func append(_ line: String, using append: Append = { curl_slist_append($0, $1) }) throws(CurlFailure) {
        guard let longer = line.withCString({ append(head, $0) }) else {
            throw .setup("libcurl could not add to a list (out of memory)")
        }
        head = longer
    }

    /// The lines, in order.
    var lines: [String] {
        var out: [String] = []
        var node = head
        while let current = node {
            if let data = current.pointee.data { out.append(String(cString: data)) }
            node = current.pointee.next
        }
        return out
    }

    mutating func free() {
        curl_slist_free_all(head)
        head = nil
    }
}
