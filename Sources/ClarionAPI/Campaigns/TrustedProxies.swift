import ClarionCore
import Foundation
import ClarionHTTP1

/// The client address of a request behind reverse proxies or load balancers (`CLARION_TRUSTED_PROXIES`).
///
/// The forwarding headers are believed only when the peer itself is a trusted proxy; anyone else could write
/// them. Then the chain (`Forwarded: for=...`, RFC 7239, or else `X-Forwarded-For`, each in the order the hops
/// appended them) is read from the nearest hop back, skipping trusted proxies: the first address that is not
/// one is the client. A chain of nothing but trusted proxies gives its first address; no header, the peer.
public struct TrustedProxies: Sendable {
    public let networks: [IPNetwork]

    public init(_ networks: [IPNetwork] = []) { self.networks = networks }

    /// Parses `10.0.0.0/8,::1/128, 192.0.2.7`; nil when an entry is not an address or network.
    public init?(list: String) {
        var networks: [IPNetwork] = []
        for entry in list.split(separator: ",") {
            let text = entry.trimmingCharacters(in: .whitespaces)
            if text.isEmpty { continue }
            guard let network = IPNetwork(text) else { return nil }
            networks.append(network)
        }
        self.networks = networks
    }

    func isTrusted(_ address: String) -> Bool {
        guard !networks.isEmpty, let bytes = IPNetwork(address)?.bytes else { return false }
        return networks.contains { $0.contains(bytes) }
    }

    /// The client address of a request from `peer` with these headers.
    public func clientAddress(peer: String, headers: HTTPHeaders) -> String {
        guard isTrusted(peer) else { return peer }
        var chain = Self.forwardedFor(headers)
        if chain.isEmpty {
            headers.forEachValue("x-forwarded-for") { value in
                for part in value.split(separator: ",") {
                    let hop = Self.bareAddress(part.trimmingCharacters(in: .whitespaces))
                    if !hop.isEmpty { chain.append(hop) }
                }
            }
        }
        guard !chain.isEmpty else { return peer }
        for hop in chain.reversed() where !isTrusted(hop) { return hop }
        return chain[0]
    }

    /// The `for=` values of every `Forwarded` element, in order (RFC 7239 section 4: `for=192.0.2.60`,
    /// `for="[2001:db8:cafe::17]:4711"`, `for=unknown`).
    static func forwardedFor(_ headers: HTTPHeaders) -> [String] {
        var hops: [String] = []
        headers.forEachValue("forwarded") { value in
            for element in value.split(separator: ",") {
                for pair in element.split(separator: ";") {
                    let parts = pair.split(separator: "=", maxSplits: 1)
                    guard parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces).lowercased() == "for" else { continue }
                    var node = parts[1].trimmingCharacters(in: .whitespaces)
                    if node.hasPrefix("\""), node.hasSuffix("\""), node.count >= 2 { node = String(node.dropFirst().dropLast()) }
                    let hop = bareAddress(node)
                    if !hop.isEmpty { hops.append(hop) }
                }
            }
        }
        return hops
    }

    /// An address without its port: `[2001:db8::1]:4711` → `2001:db8::1`, `192.0.2.1:80` → `192.0.2.1`. An empty
    /// hop (`for=""`, `:80`) is skipped by the callers, so the answer is never empty.
    static func bareAddress(_ node: String) -> String {
        if node.hasPrefix("["), let close = node.firstIndex(of: "]") {
            return String(node[node.index(after: node.startIndex)..<close])
        }
        if node.filter({ $0 == ":" }).count == 1, let colon = node.firstIndex(of: ":") {
            return String(node[..<colon])
        }
        return node
    }
}
