import ClarionCore
import ClarionCrypto
import ClarionDispatch
@testable import ClarionHTTP1
import ClarionProviders
import ClarionStore
import ClarionTestSupport
import Foundation
import Testing
@testable import ClarionAPI

/// The whole path: the dispatcher, the real provider clients (HTTP/2, h2c) and `clarion emulator` in its own
/// process (ClarionAPITests does not link the emulator), whose record file shows each payload as accepted.
@Suite("Campaigns through the provider clients to the emulator", .serialized)
struct CampaignEmulatorTests {
    @Test("APNs, FCM and ADM payloads at the emulator carry the namespace in their shape; half opened is 50%")
    func throughEmulator() async throws {
        let emulator = try await EmulatorProcess()
        let base = emulator.base
        let apns = try emulator.json("apns.json")
        let keyPEM = try emulator.text(apns["keyFile"]?.stringValue ?? "")
        let serviceAccount = try emulator.text("fcm-service-account.json")
        let adm = try emulator.json("adm-client.json")

        var fixture = try CampaignFixture()
        func attributes(_ map: [String: String]) -> String { JSONObject(map.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) }).jsonText }
        let apnsTokens = (1...4).map { String(format: "%08x", $0) + String(repeating: "c", count: 56) }
        try fixture.addApplication("ios", platform: "APNS", tokens: apnsTokens)
        try fixture.addApplication("android", platform: "GCM", tokens: (1...4).map { "fcm-token-\($0)" })
        try fixture.addApplication("kindle", platform: "ADM", tokens: (1...4).map { "amzn1.adm-registration.v3.camp\($0)" })
        let c = try fixture.connection()
        let settings: [String: [String: String]] = [
            "ios": [ProviderAttribute.appleTeamID: apns["teamID"]?.stringValue ?? "", ProviderAttribute.appleBundleID: apns["bundleID"]?.stringValue ?? "",
                    ProviderAttribute.providerEndpoint: base],
            "android": [ProviderAttribute.providerEndpoint: base],
            "kindle": [ProviderAttribute.providerEndpoint: base, ProviderAttribute.providerAuthEndpoint: base + "/auth/o2/token"],
        ]
        for (name, map) in settings {
            try c.query("UPDATE platform_applications SET attributes = $1::jsonb WHERE id = $2", [attributes(map), fixture.applications[name]!])
        }
        let keys = fixture.applications
        let credentials: @Sendable (Int64) async throws -> PlatformCredentials = { key in
            if key == keys["ios"] { return PlatformCredentials(credential: keyPEM, principal: apns["keyID"]?.stringValue) }
            if key == keys["kindle"] {
                return PlatformCredentials(credential: adm["clientSecret"]?.stringValue, principal: adm["clientID"]?.stringValue)
            }
            return PlatformCredentials(credential: serviceAccount)
        }
        let registry = try ProviderRegistry(options: ProviderOptions(connectionsPerPool: 1, requestTimeout: .seconds(10), pingInterval: nil))
        let context = fixture.context()
        var router = Router.api()
        registerCampaignAPI(on: &router, context: context)

        let publishBody = try JSONValue.parse(
            #"{"campaign":{"id":"launch","name":"Launch","namespace":"acme","deep_link":"acme://launch","data":{"variant":"b"}}}"#)
        let parsedRequest = try PublishNamespaceRequest.parse(publishBody.objectValue ?? JSONObject())
        let request = try #require(parsedRequest)
        let namespace = try await request.resolve(accountKey: fixture.account, campaigns: context.campaigns)
        let messageID = UUID()
        let text = #"""
            {"default":"Launch day","APNS":"{\"aps\":{\"alert\":{\"title\":\"Launch\",\"body\":\"It is here\"}}}",
             "GCM":"{\"fcmV1Message\":{\"message\":{\"notification\":{\"title\":\"Launch\",\"body\":\"It is here\"}}}}",
             "ADM":"{\"data\":{\"title\":\"Launch\",\"body\":\"It is here\"}}"}
            """#
        let stored = try await MessageRepository(pool: fixture.pool).store(NewMessage(
            externalID: messageID, accountKey: fixture.account, target: .topic(key: fixture.topic, arn: "arn:aws:sns:us-east-1:123456789012:promos"),
            message: text, structure: "json",
            attributesJSON: NativePublishAttributes.stored([PayloadNamespace.attributeName: namespace.attribute(messageID: messageID)])))

        let dispatcher = Dispatcher(pool: fixture.pool, directory: ProviderRegistryDirectory(registry: registry, credentials: credentials),
                                    configuration: DispatcherConfiguration(owner: "camp-emu", shardWorkers: 1, maxPollInterval: 0.2,
                                                                           deliveryIDs: context.deliveryIDs))
        let task = Task { await dispatcher.run() }
        let status = try await fixture.waitForFinal(stored.key)
        dispatcher.shutdown()
        await task.value
        await registry.shutdown()
        emulator.stop()
        #expect(status.state == .completed)
        #expect(status.counters.accepted == 12)

        // The emulator's record: one accepted request per token, the namespace in each platform's shape.
        let records = try emulator.acceptedRecords(["apns", "fcm", "adm"])
        #expect(records.count == 12)
        var deliveryIDs: [String] = []
        var shapes: [String: Int] = [:]
        for record in records {
            let endpoint = record["endpoint"]?.stringValue ?? ""
            let parsedPayload = try JSONValue.parse(record["payload"]?.stringValue ?? "")
            let payload = try #require(parsedPayload.objectValue)
            let inner: JSONObject?
            switch endpoint {
            case "apns":
                #expect(payload["aps"]?["alert"]?["title"] == .string("Launch"))
                inner = payload["acme"]?.objectValue
            case "fcm":
                #expect(payload["message"]?["notification"]?["body"] == .string("It is here"))
                inner = payload["message"]?["data"]?["acme"]?.stringValue.flatMap { jsonObject(Array($0.utf8)) }
            default:
                #expect(payload["data"]?["title"] == .string("Launch"))
                inner = payload["data"]?["acme"]?.stringValue.flatMap { jsonObject(Array($0.utf8)) }
            }
            #expect(inner?["type"] == .string("campaign"))
            #expect(inner?["message_id"] == .string(messageID.uuidString.lowercased()))
            #expect(inner?["deep_link"] == .string("acme://launch"))
            #expect(inner?["variant"] == .string("b"))
            #expect(inner?.count == 5)
            if let id = inner?["delivery_id"]?.stringValue, (try? context.deliveryIDs.decode(id))?.messageKey == stored.key {
                deliveryIDs.append(id)
                shapes[endpoint, default: 0] += 1
            }
        }
        #expect(shapes == ["apns": 4, "fcm": 4, "adm": 4])
        #expect(Set(deliveryIDs).count == 12)

        for (i, id) in deliveryIDs.enumerated() where i % 2 == 0 {
            #expect(await call(router, .post, "/v1/beacons/open", body: #"{"delivery_id":"\#(id)"}"#, from: "10.1.0.\(i)").status == 204)
        }
        let report = try #require(try await context.campaigns.campaignReport(accountKey: fixture.account, externalID: "launch"))
        #expect(report.accepted == 12)
        #expect(report.uniqueOpens == 6)
        #expect(report.openRate == 0.5)
    }
}
