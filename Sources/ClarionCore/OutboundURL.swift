import Foundation

/// An absolute http(s) URL split into what an outbound POST needs (registration webhooks, HTTP/S subscriptions, token
/// exchanges): checked when a URL is accepted, resolved and pinned when it is used.
package struct OutboundURL: Sendable, Equatable {
    package let scheme: String
    /// Without IPv6 brackets.
    package let host: String
    package let port: Int
    package let text: String

    package init?(_ text: String) {
        guard text.utf8.count <= 2048, let components = URLComponents(string: text),
              let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https",
              var host = components.host, !host.isEmpty, components.user == nil, components.password == nil else { return nil }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty, !host.utf8.contains(where: { $0 <= 0x20 || $0 == 0x7f }) else { return nil }
        self.scheme = scheme
        self.host = host
        self.port = components.port ?? (scheme == "https" ? 443 : 80)
        self.text = text
    }
}
