import ClarionCore
import Foundation

extension OutboundAddressPolicy {
    /// Resolves `host` (blocking: call it on the sender's own thread) and returns the address to connect to, or
    /// why the host is refused.
    package func resolve(_ url: OutboundURL) -> Result<String, OutboundRefusal> {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(url.host, String(url.port), &hints, &list)
        guard status == 0, let first = list else { return .failure(.unresolvable) }
        defer { freeaddrinfo(list) }
        var addresses: [String] = []
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let entry = cursor {
            var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
            if entry.pointee.ai_family == AF_INET, let raw = entry.pointee.ai_addr {
                var address = raw.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
                if inet_ntop(AF_INET, &address, &buffer, socklen_t(buffer.count)) != nil {
                    addresses.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
                }
            } else if entry.pointee.ai_family == AF_INET6, let raw = entry.pointee.ai_addr {
                var address = raw.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_addr }
                if inet_ntop(AF_INET6, &address, &buffer, socklen_t(buffer.count)) != nil {
                    addresses.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
                }
            }
            cursor = entry.pointee.ai_next
        }
        guard let chosen = addresses.first else { return .failure(.unresolvable) }
        if allowsHost(url.host) { return .success(chosen) }
        guard addresses.allSatisfy(allows(address:)) else { return .failure(.refusedAddress) }
        return .success(chosen)
    }
}

extension OutboundURL {
    /// The `CURLOPT_RESOLVE` entry that sends this URL's connection to `address` (an IPv6 address in brackets),
    /// whatever a later DNS answer says: the address the policy judged is the one connected to.
    package func resolveEntry(pinningTo address: String) -> String {
        "\(host):\(port):\(address.contains(":") ? "[\(address)]" : address)"
    }
}

package enum OutboundRefusal: String, Error, Sendable {
    case unresolvable = "the host does not resolve"
    case refusedAddress = "the host resolves to an address the outbound policy refuses"
}
