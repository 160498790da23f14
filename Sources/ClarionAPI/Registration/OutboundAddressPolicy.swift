import Foundation

/// An absolute http(s) URL split into what the webhook sender needs.
struct OutboundURL: Sendable, Equatable {
    let scheme: String
    /// Without IPv6 brackets.
    let host: String
    let port: Int
    let text: String

    init?(_ text: String) {
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

/// Which addresses outbound webhooks may reach (SSRF guard).
///
/// By default every address a host resolves to must be public: loopback, link-local, private (RFC 1918, unique
/// local), shared (100.64/10), unspecified, multicast and reserved ranges are refused, and IPv4 addresses inside
/// IPv6 (mapped, NAT64) are judged as IPv4. A host is refused when any of its addresses is, and the sender connects
/// to the address that was checked (no second resolution to rebind). Tests and closed networks allow private
/// ranges with `allowPrivateNetworks`, or name hosts in `allowedHosts`.
public struct OutboundAddressPolicy: Sendable, Hashable {
    public var allowPrivateNetworks: Bool
    /// Hosts (lower-case names or literal addresses) allowed whatever they resolve to.
    public var allowedHosts: Set<String>

    public init(allowPrivateNetworks: Bool = false, allowedHosts: Set<String> = []) {
        self.allowPrivateNetworks = allowPrivateNetworks
        self.allowedHosts = Set(allowedHosts.map { $0.lowercased() })
    }

    public static let publicOnly = OutboundAddressPolicy()

    /// Whether a literal address may be reached under this policy.
    public func allows(address: String) -> Bool {
        allowPrivateNetworks || Self.isPublic(address)
    }

    func allowsHost(_ host: String) -> Bool { allowedHosts.contains(host.lowercased()) }

    /// True for a global unicast address; false for the refused ranges and for text that is not an address.
    public static func isPublic(_ address: String) -> Bool {
        if let v4 = ipv4(address) { return isPublicIPv4(v4) }
        if let v6 = ipv6(address) { return isPublicIPv6(v6) }
        return false
    }

    static func ipv4(_ text: String) -> [UInt8]? {
        var storage = in_addr()
        guard inet_pton(AF_INET, text, &storage) == 1 else { return nil }
        return withUnsafeBytes(of: &storage) { Array($0) }
    }

    static func ipv6(_ text: String) -> [UInt8]? {
        var storage = in6_addr()
        guard inet_pton(AF_INET6, text, &storage) == 1 else { return nil }
        return withUnsafeBytes(of: &storage) { Array($0) }
    }

    static func isPublicIPv4(_ a: [UInt8]) -> Bool {
        switch (a[0], a[1]) {
        case (0, _), (10, _), (127, _): return false
        case (100, 64...127): return false          // shared address space (CGNAT)
        case (169, 254): return false               // link-local
        case (172, 16...31): return false
        case (192, 168): return false
        case (192, 0) where a[2] == 0 || a[2] == 2: return false   // IETF protocol assignments, TEST-NET-1
        case (198, 18...19): return false           // benchmarking
        case (198, 51) where a[2] == 100: return false
        case (203, 0) where a[2] == 113: return false
        case (224...255, _): return false           // multicast, reserved, broadcast
        default: return true
        }
    }

    static func isPublicIPv6(_ a: [UInt8]) -> Bool {
        let zeroPrefix10 = a[0..<10].allSatisfy { $0 == 0 }
        if zeroPrefix10 && a[10] == 0xff && a[11] == 0xff { return isPublicIPv4(Array(a[12..<16])) }  // ::ffff:a.b.c.d
        if a[0..<12].allSatisfy({ $0 == 0 }) { return false }       // ::, ::1, IPv4-compatible
        if a[0] == 0x00, a[1] == 0x64, a[2] == 0xff, a[3] == 0x9b, a[4..<12].allSatisfy({ $0 == 0 }) {
            return isPublicIPv4(Array(a[12..<16]))                   // 64:ff9b::/96 NAT64
        }
        if a[0] & 0xfe == 0xfc { return false }                      // fc00::/7 unique local
        if a[0] == 0xfe && a[1] & 0xc0 == 0x80 { return false }      // fe80::/10 link-local
        if a[0] == 0xfe && a[1] & 0xc0 == 0xc0 { return false }      // fec0::/10 site-local (deprecated)
        if a[0] == 0xff { return false }                             // multicast
        if a[0] == 0x20, a[1] == 0x01, a[2] == 0x0d, a[3] == 0xb8 { return false }  // documentation
        return true
    }

    /// Resolves `host` (blocking: call it on the sender's own thread) and returns the address to connect to, or
    /// why the host is refused.
    func resolve(_ url: OutboundURL) -> Result<String, OutboundRefusal> {
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

enum OutboundRefusal: String, Error, Sendable {
    case unresolvable = "the host does not resolve"
    case refusedAddress = "the host resolves to an address the outbound policy refuses"
}
