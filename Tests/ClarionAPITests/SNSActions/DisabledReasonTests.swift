import ClarionStore
import Foundation
import Testing
@testable import ClarionAPI

/// Why a platform application or endpoint is disabled is visible through both APIs, and re-enabling clears it.
@Suite("Disabled reason and time through the SNS and native APIs", .serialized)
struct DisabledReasonTests {
    typealias Actions = APNsCertificateValidationTests.Actions
    static let disabledAt = "2026-01-02T03:04:05Z"

    /// The Attributes map of an SNS response's XML.
    static func attributes(_ response: XMLResponse) -> [String: String] {
        let xml = String(decoding: response.result ?? [], as: UTF8.self)
        var out: [String: String] = [:]
        let pattern = try! NSRegularExpression(pattern: "<entry><key>([^<]*)</key><value>([^<]*)</value></entry>")
        for match in pattern.matches(in: xml, range: NSRange(xml.startIndex..., in: xml)) {
            out[String(xml[Range(match.range(at: 1), in: xml)!])] = String(xml[Range(match.range(at: 2), in: xml)!])
        }
        return out
    }

    /// What the dispatcher's checkpoint writes when a provider refuses (FanOutJobs), at a fixed time.
    static func disableAsTheDispatcherDoes(_ pool: PGPool, table: String, key: Int64, reason: String) async throws {
        try await pool.withConnection { (c) throws(StoreError) in
            _ = try c.query("UPDATE \(table) SET enabled = false, disabled_reason = $2, disabled_at = $3::timestamptz WHERE id = $1",
                            [key, reason, disabledAt])
        }
    }

    static func disabledAt(_ pool: PGPool, table: String, key: Int64) async throws -> Date? {
        try await pool.withConnection { (c) throws(StoreError) -> Date? in
            try c.query("SELECT disabled_at FROM \(table) WHERE id = $1", [key]).first?.date(0)
        }
    }

    // Rule: while disabled, SNS Get*Attributes and List* show Clarion's read-only DisabledReason and DisabledAt
    // (absent while enabled; refused as input); SetPlatformApplicationAttributes / SetEndpointAttributes
    // Enabled=true clear the reason and the time in the store.
    @Test("SNS: DisabledReason and DisabledAt while disabled, read-only, cleared with the time by Enabled=true")
    func snsShowsAndClears() async throws {
        let actions = try Actions()
        defer { actions.stop() }
        let appARN = "arn:aws:sns:us-east-1:123456789012:app/GCM/chat"
        _ = try await actions.call("CreatePlatformApplication", ["Name": "chat", "Platform": "GCM"]
            .merging(APNsCertificateValidationTests.attributes(credential: "key")) { $1 })
        _ = try await actions.call("CreatePlatformEndpoint", ["PlatformApplicationArn": appARN, "Token": "tok-1"])
        let account = try await actions.context.accounts.account(accountID: "123456789012").key
        let app = try await actions.context.applications.get(accountKey: account, region: "us-east-1", platform: "GCM", name: "chat")
        let endpoint = try #require(try await actions.context.endpoints.find(applicationKey: app.key, token: "tok-1"))
        let endpointARN = "arn:aws:sns:us-east-1:123456789012:endpoint/GCM/chat/\(endpoint.externalID.lowercasedText)"

        let enabledApp = Self.attributes(try await actions.call("GetPlatformApplicationAttributes", ["PlatformApplicationArn": appARN]))
        #expect(enabledApp["Enabled"] == "true" && enabledApp["DisabledReason"] == nil && enabledApp["DisabledAt"] == nil)

        try await Self.disableAsTheDispatcherDoes(actions.pool, table: "endpoints", key: endpoint.key, reason: "Unregistered")
        try await Self.disableAsTheDispatcherDoes(actions.pool, table: "platform_applications", key: app.key,
                                                  reason: "ProviderCACertificate: TLS configuration: no certificate in PEM")
        let endpointAttributes = Self.attributes(try await actions.call("GetEndpointAttributes", ["EndpointArn": endpointARN]))
        #expect(endpointAttributes["Enabled"] == "false")
        #expect(endpointAttributes["DisabledReason"] == "Unregistered" && endpointAttributes["DisabledAt"] == Self.disabledAt)
        let listed = Self.attributes(try await actions.call("ListEndpointsByPlatformApplication", ["PlatformApplicationArn": appARN]))
        #expect(listed["DisabledReason"] == "Unregistered" && listed["DisabledAt"] == Self.disabledAt)
        let appAttributes = Self.attributes(try await actions.call("GetPlatformApplicationAttributes", ["PlatformApplicationArn": appARN]))
        #expect(appAttributes["Enabled"] == "false" && appAttributes["DisabledAt"] == Self.disabledAt)
        #expect(appAttributes["DisabledReason"] == "ProviderCACertificate: TLS configuration: no certificate in PEM")
        let apps = Self.attributes(try await actions.call("ListPlatformApplications", [:]))
        #expect(apps["DisabledAt"] == Self.disabledAt)

        // Read-only, as AuthenticationMethod.
        #expect(await actions.refusal("SetEndpointAttributes", ["EndpointArn": endpointARN]
            .merging(APNsCertificateValidationTests.attributes(extra: ["DisabledReason": "x"])) { $1 })?.code == "InvalidParameter")
        #expect(await actions.refusal("SetPlatformApplicationAttributes", ["PlatformApplicationArn": appARN]
            .merging(APNsCertificateValidationTests.attributes(extra: ["DisabledAt": Self.disabledAt])) { $1 })?.code == "InvalidParameter")

        _ = try await actions.call("SetEndpointAttributes", ["EndpointArn": endpointARN]
            .merging(APNsCertificateValidationTests.attributes(extra: ["Enabled": "true"])) { $1 })
        _ = try await actions.call("SetPlatformApplicationAttributes", ["PlatformApplicationArn": appARN]
            .merging(APNsCertificateValidationTests.attributes(extra: ["Enabled": "true"])) { $1 })
        let reenabled = Self.attributes(try await actions.call("GetEndpointAttributes", ["EndpointArn": endpointARN]))
        #expect(reenabled["Enabled"] == "true" && reenabled["DisabledReason"] == nil && reenabled["DisabledAt"] == nil)
        #expect(try await actions.context.endpoints.get(key: endpoint.key).disabledReason == nil)
        #expect(try await Self.disabledAt(actions.pool, table: "endpoints", key: endpoint.key) == nil)
        let app2 = try await actions.context.applications.get(key: app.key)
        #expect(app2.enabled && app2.disabledReason == nil && app2.disabledAt == nil)

        // Disabled through the API: the API's reason and a time; enabled again: both gone.
        _ = try await actions.call("SetEndpointAttributes", ["EndpointArn": endpointARN]
            .merging(APNsCertificateValidationTests.attributes(extra: ["Enabled": "false"])) { $1 })
        let byAPI = Self.attributes(try await actions.call("GetEndpointAttributes", ["EndpointArn": endpointARN]))
        #expect(byAPI["DisabledReason"] == "set by the API" && byAPI["DisabledAt"] != nil)
    }

    // Rule: the native application and endpoint representations carry disabled_reason and disabled_at (one, and
    // every item of a list); PATCH enabled=true clears both, and the attribute map does not repeat them.
    @Test("native API: disabled_reason and disabled_at on applications and endpoints (one and lists); enabled=true clears them")
    func nativeShowsAndClears() async throws {
        try await NativeAPIFixture.with { f in
            _ = try await f.json("POST", "/v1/applications", #"{"name":"chat","platform":"GCM","credential":"k"}"#, expect: 201)
            let created = try await f.json("POST", "/v1/applications/GCM:chat/endpoints", #"{"token":"tok-1"}"#, expect: 201)
            let id = try #require(created["id"] as? String)
            #expect(created["disabled_reason"] is NSNull && created["disabled_at"] is NSNull)
            let account = try await f.context.accounts.account(accountID: NativeAPIFixture.accountID).key
            let app = try await f.context.applications.get(accountKey: account, region: "us-east-1", platform: "GCM", name: "chat")
            let endpoint = try #require(try await f.context.endpoints.find(applicationKey: app.key, token: "tok-1"))
            try await Self.disableAsTheDispatcherDoes(f.pool, table: "endpoints", key: endpoint.key, reason: "UNREGISTERED")
            try await Self.disableAsTheDispatcherDoes(f.pool, table: "platform_applications", key: app.key, reason: "THIRD_PARTY_AUTH_ERROR")

            let one = try await f.json("GET", "/v1/applications/GCM:chat", expect: 200)
            #expect(one["enabled"] as? Bool == false && one["disabled_reason"] as? String == "THIRD_PARTY_AUTH_ERROR")
            #expect(one["disabled_at"] as? String == Self.disabledAt)
            #expect((one["attributes"] as? [String: String])?.keys.contains { $0.hasPrefix("Disabled") } == false)
            let apps = try await f.json("GET", "/v1/applications", expect: 200)
            #expect((apps["items"] as? [[String: Any]])?.first?["disabled_at"] as? String == Self.disabledAt)
            let endpointOne = try await f.json("GET", "/v1/endpoints/\(id)", expect: 200)
            #expect(endpointOne["disabled_reason"] as? String == "UNREGISTERED" && endpointOne["disabled_at"] as? String == Self.disabledAt)
            let endpoints = try await f.json("GET", "/v1/applications/GCM:chat/endpoints", expect: 200)
            #expect((endpoints["items"] as? [[String: Any]])?.first?["disabled_reason"] as? String == "UNREGISTERED")
            #expect((endpoints["items"] as? [[String: Any]])?.first?["disabled_at"] as? String == Self.disabledAt)

            let appAgain = try await f.json("PATCH", "/v1/applications/GCM:chat", #"{"enabled":true}"#, expect: 200)
            #expect(appAgain["enabled"] as? Bool == true && appAgain["disabled_reason"] is NSNull && appAgain["disabled_at"] is NSNull)
            let endpointAgain = try await f.json("PATCH", "/v1/endpoints/\(id)", #"{"enabled":true}"#, expect: 200)
            #expect(endpointAgain["disabled_reason"] is NSNull && endpointAgain["disabled_at"] is NSNull)
            #expect(try await Self.disabledAt(f.pool, table: "endpoints", key: endpoint.key) == nil)
            #expect(try await Self.disabledAt(f.pool, table: "platform_applications", key: app.key) == nil)

            let byAPI = try await f.json("PATCH", "/v1/endpoints/\(id)", #"{"enabled":false}"#, expect: 200)
            #expect(byAPI["disabled_reason"] as? String == "set by the API" && byAPI["disabled_at"] is String)
        }
    }
}
