import Testing
@testable import ClarionCore

/// The SSRF guard for provider endpoints and webhooks: public addresses only, unless the operator lists hosts or
/// networks (CIDR, RFC 4632 for IPv4 and RFC 4291 section 2.3 for IPv6 prefixes).
@Suite("Outbound address policy")
struct OutboundAddressPolicyTests {
    @Test("CIDR networks: prefix masks, IPv4-mapped IPv6 judged as IPv4, bare addresses are single-address networks")
    func networks() throws {
        let loopback = try #require(IPNetwork("127.0.0.0/8"))
        #expect(loopback.contains(OutboundAddressPolicy.ipv4("127.1.2.3")!))
        #expect(!loopback.contains(OutboundAddressPolicy.ipv4("128.0.0.1")!))
        #expect(loopback.contains(OutboundAddressPolicy.ipv6("::ffff:127.0.0.9")!))
        let ten = try #require(IPNetwork("10.20.0.0/14"))
        #expect(ten.contains(OutboundAddressPolicy.ipv4("10.23.255.255")!))
        #expect(!ten.contains(OutboundAddressPolicy.ipv4("10.24.0.0")!))
        let v6 = try #require(IPNetwork("fd00::/8"))
        #expect(v6.contains(OutboundAddressPolicy.ipv6("fd12::1")!))
        #expect(!v6.contains(OutboundAddressPolicy.ipv4("10.0.0.1")!))
        let one = try #require(IPNetwork("::1"))
        #expect(one.prefixLength == 128 && one.contains(OutboundAddressPolicy.ipv6("::1")!))
        for bad in ["10.0.0.0/33", "::/129", "10.0.0.0/", "10.0.0.0/a", "300.1.1.1/8", "host/8"] {
            #expect(IPNetwork(bad) == nil, "\(bad)")
        }
    }

    @Test("an allow list: host names and networks; private addresses refused unless listed; a malformed entry throws")
    func allowList() throws {
        let policy = try OutboundAddressPolicy(allowList: " 127.0.0.0/8, ::1/128 ,push.internal,")
        #expect(policy.allows(address: "127.0.0.1"))
        #expect(policy.allows(address: "::1"))
        #expect(!policy.allows(address: "10.0.0.1"))
        #expect(!policy.allows(address: "169.254.169.254"), "cloud metadata stays refused")
        #expect(policy.allows(address: "17.0.0.1"), "public addresses need nothing")
        #expect(policy.allowsHost("PUSH.internal"))
        #expect(try OutboundAddressPolicy(allowList: "").isPublicOnly)
        #expect(!OutboundAddressPolicy().allows(address: "127.0.0.1"))
        for bad in ["10.0.0.0/99", "1.2.3", "fe80::zz"] {
            #expect(throws: OutboundPolicyError.self) { _ = try OutboundAddressPolicy(allowList: bad) }
        }
    }
}
