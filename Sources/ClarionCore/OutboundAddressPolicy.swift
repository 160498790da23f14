import Foundation

/// Which addresses outbound connections may reach (SSRF guard): registration webhooks, and provider endpoints
/// (`ProviderEndpoint`, `ProviderAuthEndpoint`), which any tenant can set.
///
/// By default every address a host resolves to must be public: loopback, link-local, private (RFC 1918, unique
/// local), shared (100.64/10), unspecified, multicast and reserved ranges are refused, and IPv4 addresses inside
/// IPv6 (mapped, NAT64) are judged as IPv4. A host is refused when any of its addresses is, and the sender connects
/// to the address that was checked (no second resolution to rebind). Tests and closed networks allow private
/// ranges with `allowPrivateNetworks`, name hosts in `allowedHosts`, or networks in `allowedNetworks`
/// (`CLARION_PROVIDER_ALLOW_HOSTS=127.0.0.0/8,::1/128,push.internal`).
public struct OutboundAddressPolicy: Sendable, Hashable {
    public var allowPrivateNetworks: Bool
    /// Hosts (lower-case names or literal addresses) allowed whatever they resolve to.
    public var allowedHosts: Set<String>
    /// Networks whose addresses are allowed though not public.
    public var allowedNetworks: [IPNetwork]

    public init(allowPrivateNetworks: Bool = false, allowedHosts: Set<String> = [], allowedNetworks: [IPNetwork] = []) {
        self.allowPrivateNetworks = allowPrivateNetworks
        self.allowedHosts = Set(allowedHosts.map { $0.lowercased() })
        self.allowedNetworks = allowedNetworks
    }

    /// Public addresses, plus a comma-separated list of host names and CIDR networks (a bare address is its own
    /// /32 or /128). Throws on an entry that looks like an address or network but is not one.
    public init(allowList: String) throws(OutboundPolicyError) {
        var hosts: Set<String> = []
        var networks: [IPNetwork] = []
        for raw in allowList.split(separator: ",") {
            let entry = raw.trimmingCharacters(in: .whitespaces)
            guard !entry.isEmpty else { continue }
            if let network = IPNetwork(entry) {
                networks.append(network)
            } else if entry.contains("/") || entry.contains(":") || entry.allSatisfy({ $0.isNumber || $0 == "." }) {
                throw OutboundPolicyError(entry: entry)
            } else {
                hosts.insert(entry.lowercased())
            }
        }
        self.init(allowedHosts: hosts, allowedNetworks: networks)
    }

    /// Whether the policy adds anything to "public addresses only".
    public var isPublicOnly: Bool { !allowPrivateNetworks && allowedHosts.isEmpty && allowedNetworks.isEmpty }

    public static let publicOnly = OutboundAddressPolicy()

    /// Whether a literal address may be reached under this policy.
    public func allows(address: String) -> Bool {
        if allowPrivateNetworks || Self.isPublic(address) { return true }
        guard !allowedNetworks.isEmpty, let bytes = Self.ipv4(address) ?? Self.ipv6(address) else { return false }
        return allowedNetworks.contains { $0.contains(bytes) }
    }

    /// Whether `host` is named in the allowed hosts (any address it resolves to is then allowed).
    public func allowsHost(_ host: String) -> Bool { allowedHosts.contains(host.lowercased()) }

    /// True for a global unicast address; false for the refused ranges and for text that is not an address.
    public static func isPublic(_ address: String) -> Bool {
        if let v4 = ipv4(address) { return isPublicIPv4(v4) }
        if let v6 = ipv6(address) { return isPublicIPv6(v6) }
        return false
    }

    package static func ipv4(_ text: String) -> [UInt8]? {
        var storage = in_addr()
        guard inet_pton(AF_INET, text, &storage) == 1 else { return nil }
        return withUnsafeBytes(of: &storage) { Array($0) }
    }

    package static func ipv6(_ text: String) -> [UInt8]? {
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
}

/// An entry of an allow list that is neither a host name nor a valid address or network.
public struct OutboundPolicyError: Error, Sendable, CustomStringConvertible {
    public let entry: String
    public var description: String { "'\(entry)' is not a host name, an IP address or a CIDR network" }
}

/// An IPv4 or IPv6 network in CIDR notation (`10.0.0.0/8`, `::1/128`); a bare address is a single-address network.
public struct IPNetwork: Sendable, Hashable, CustomStringConvertible {
    /// The network's address bytes (4 or 16), host bits cleared.
    public let bytes: [UInt8]
    public let prefixLength: Int

    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        let addressText = String(parts[0]).trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        guard let address = OutboundAddressPolicy.ipv4(addressText) ?? OutboundAddressPolicy.ipv6(addressText) else { return nil }
        let bits = address.count * 8
        var length = bits
        if parts.count == 2 {
            guard let n = Int(parts[1]), (0...bits).contains(n), parts[1].allSatisfy(\.isNumber) else { return nil }
            length = n
        }
        var masked = address
        for i in 0..<masked.count {
            let keep = max(0, min(8, length - i * 8))
            masked[i] &= keep == 8 ? 0xff : UInt8(truncatingIfNeeded: 0xff << (8 - keep))
        }
        bytes = masked
        prefixLength = length
    }

    /// Whether `address` (4 or 16 bytes) lies in the network; an IPv4-mapped IPv6 address counts as IPv4.
    public func contains(_ address: [UInt8]) -> Bool {
        var candidate = address
        if candidate.count == 16, bytes.count == 4, candidate[0..<10].allSatisfy({ $0 == 0 }),
           candidate[10] == 0xff, candidate[11] == 0xff {
            candidate = Array(candidate[12..<16])
        }
        guard candidate.count == bytes.count else { return false }
        for i in 0..<bytes.count {
            let keep = max(0, min(8, prefixLength - i * 8))
            let mask: UInt8 = keep == 8 ? 0xff : UInt8(truncatingIfNeeded: 0xff << (8 - keep))
            if candidate[i] & mask != bytes[i] { return false }
        }
        return true
    }

    public var description: String {
        let text = bytes.count == 4 ? bytes.map(String.init).joined(separator: ".")
            : stride(from: 0, to: 16, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }.joined(separator: ":")
        return "\(text)/\(prefixLength)"
    }
}
