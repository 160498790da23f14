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

/// Campaign variants (A/B) and holdout (issue 18, docs/architecture.md "Campaign variants and holdout").
@Suite("Campaign variants and holdout", .serialized)
struct CampaignVariantTests {
    // MARK: The choice (pure)

    /// The statistical bound: for a hash that behaves like a fair draw, the count of variant B among n = 1000
    /// endpoints with weights 1:3 is Binomial(1000, 0.75): mean 750, standard deviation sqrt(1000 * 0.75 * 0.25)
    /// = 13.7. The test allows 5 standard deviations (±68): a fair draw falls outside with probability below 1e-6,
    /// while a broken choice (e.g. 1:1, 500; or everything to one variant) is more than 18 deviations away. The
    /// choice is deterministic, so the test is too; it is checked for five campaign seeds.
    @Test("1,000 endpoints with weights 1:3 split within 5 standard deviations of 250:750, for several campaigns")
    func weightedDistribution() {
        for campaign in ["launch", "spring-sale", "c-1", "c-2", "x"] {
            let seed = VariantSplit.seed(campaign: campaign)
            var counts = [0, 0]
            for key in Int64(1)...1000 {
                counts[VariantSplit.choose(endpointKey: key, weights: [1, 3], holdout: 0, seed: seed).variant] += 1
            }
            #expect(abs(counts[1] - 750) <= 68, "campaign \(campaign): \(counts)")
            #expect(counts[0] + counts[1] == 1000)
        }
    }

    @Test("the choice is stable: the same endpoint and campaign give the same variant and holdout every time")
    func stableChoice() {
        let seed = VariantSplit.seed(campaign: "launch")
        let first = (Int64(1)...1000).map { VariantSplit.choose(endpointKey: $0, weights: [1, 3], holdout: 10, seed: seed) }
        let second = (Int64(1)...1000).map { VariantSplit.choose(endpointKey: $0, weights: [1, 3], holdout: 10, seed: seed) }
        #expect(first == second)
        // Through the stored attribute (what a dispatcher on another node reads) too.
        let split = VariantSplit(index: 1, name: "B", weights: [1, 3], holdout: 10, seed: seed)
        let parsed = VariantSplit.parse(split.attributeValue())
        #expect(parsed == split)
        #expect((Int64(1)...1000).map { parsed!.choose(endpointKey: $0) } == first)
    }

    /// Holdout 10% of 1000: Binomial(1000, 0.1), sd 9.5, bound ±48 (5 sd). Independence of the variant choice: the
    /// held-out endpoints split 1:3 like everyone (about 100 of them: B share 0.75 ± 5 * sqrt(0.75 * 0.25 / 100) =
    /// ±0.22).
    @Test("a 10% holdout holds out about 100 of 1,000, and the held-out ones split 1:3 like the rest")
    func holdoutIndependent() {
        let seed = VariantSplit.seed(campaign: "launch")
        let choices = (Int64(1)...1000).map { VariantSplit.choose(endpointKey: $0, weights: [1, 3], holdout: 10, seed: seed) }
        let held = choices.filter { if case .heldOut = $0 { true } else { false } }
        #expect(abs(held.count - 100) <= 48)
        let heldB = held.filter { $0.variant == 1 }.count
        #expect(abs(Double(heldB) / Double(held.count) - 0.75) <= 0.22)
        // Without holdout the variants are the same ones: holding out never moves an endpoint between variants.
        let plain = (Int64(1)...1000).map { VariantSplit.choose(endpointKey: $0, weights: [1, 3], holdout: 0, seed: seed).variant }
        #expect(plain == choices.map(\.variant))
    }

    // MARK: Validation (the native JSON error shape names the field)

    static func parse(_ text: String) throws(JSONAPIError) -> CampaignVariants? {
        let object = (try? JSONValue.parse(text))?.objectValue ?? JSONObject()
        return try CampaignVariants.parse(object, hasCampaign: object["campaign"] != nil) { (value, field) throws(JSONAPIError) in
            try NativePublishRoutes.messageText(value, field: field)
        }
    }

    static func field(_ text: String) -> String? {
        do throws(JSONAPIError) {
            _ = try parse(text)
            return nil
        } catch {
            return error.field
        }
    }

    @Test("weights > 0, at most 5 variants, holdout 0 to 50, variants only on a campaign publish: each error names its field")
    func validation() throws {
        let campaign = #""campaign":{"name":"n","namespace":"acme"}"#
        #expect(Self.field(#"{\#(campaign),"variants":[{"weight":0,"message":"a"}]}"#) == "variants[0].weight")
        #expect(Self.field(#"{\#(campaign),"variants":[{"weight":1,"message":"a"},{"weight":-2,"message":"b"}]}"#) == "variants[1].weight")
        #expect(Self.field(#"{\#(campaign),"variants":[{"weight":1.5,"message":"a"}]}"#) == "variants[0].weight")
        let six = (0..<6).map { _ in #"{"weight":1,"message":"m"}"# }.joined(separator: ",")
        #expect(Self.field(#"{\#(campaign),"variants":[\#(six)]}"#) == "variants")
        #expect(Self.field(#"{\#(campaign),"variants":[]}"#) == "variants")
        #expect(Self.field(#"{\#(campaign),"message":"x","holdout":51}"#) == "holdout")
        #expect(Self.field(#"{\#(campaign),"message":"x","holdout":-1}"#) == "holdout")
        #expect(Self.field(#"{"message":"x","holdout":10}"#) == "holdout")
        #expect(Self.field(#"{"variants":[{"weight":1,"message":"a"}]}"#) == "variants")
        #expect(Self.field(#"{\#(campaign),"message":"x","variants":[{"weight":1,"message":"a"}]}"#) == "message")
        #expect(Self.field(#"{\#(campaign),"variants":[{"weight":1}]}"#) == "variants[0].message")
        #expect(Self.field(#"{\#(campaign),"variants":[{"weight":1,"message":7}]}"#) == "variants[0].message")
        #expect(Self.field(#"{\#(campaign),"variants":[{"name":"A","weight":1,"message":"a"},{"name":"A","weight":1,"message":"b"}]}"#) == "variants[1].name")
        #expect(Self.field(#"{\#(campaign),"variants":[{"weight":1,"message":"a","extra":1}]}"#) == "variants[0].extra")
        let five = (0..<5).map { #"{"weight":\#($0 + 1),"message":"m\#($0)"}"# }.joined(separator: ",")
        let parsed = try #require(try Self.parse(#"{\#(campaign),"variants":[\#(five)],"holdout":50}"#))
        #expect(parsed.variants.map(\.name) == ["A", "B", "C", "D", "E"])
        #expect(parsed.variants.map(\.weight) == [1, 2, 3, 4, 5])
        #expect(parsed.holdout == 50)
        let alone = try #require(try Self.parse(#"{\#(campaign),"message":"x","holdout":10}"#))
        #expect(alone.variants.count == 1 && alone.variants[0].text == "x" && alone.holdout == 10)
        #expect(try Self.parse(#"{\#(campaign),"message":"x"}"#) == nil)
    }

    @Test("a publisher cannot set the reserved Clarion.Variant attribute")
    func reservedAttribute() {
        do throws(JSONAPIError) {
            _ = try PublishNamespaceRequest.parse(JSONObject(), attributes: [VariantSplit.attributeName: .string("{}")])
            Issue.record("accepted a publisher's Clarion.Variant")
        } catch {
            #expect(error.field == "attributes.Clarion.Variant")
        }
    }

    // MARK: Through the dispatcher, the provider client and the emulator, with PostgreSQL

    @Test("1,000 endpoints, variants 1:3 and a 10% holdout: each endpoint gets its variant's payload, twice the same; held out counted not sent; report per variant")
    func throughEmulator() async throws {
        let emulator = try await EmulatorProcess()
        let base = emulator.base
        let serviceAccount = try emulator.text("fcm-service-account.json")

        var fixture = try CampaignFixture()
        try fixture.addApplication("android", platform: "GCM", tokens: (1...1000).map { "fcm-variant-\($0)" })
        let c = try fixture.connection()
        try c.query("UPDATE platform_applications SET attributes = $1::jsonb WHERE id = $2",
                    [JSONObject([(ProviderAttribute.providerEndpoint, .string(base))]).jsonText, fixture.applications["android"]!])
        var endpointKey: [String: Int64] = [:]
        for row in try c.query("SELECT token, id FROM endpoints").rows { endpointKey[row.string(0)!] = row.int64(1)! }
        #expect(endpointKey.count == 1000)

        let registry = try ProviderRegistry(options: ProviderOptions(connectionsPerPool: 1, requestTimeout: .seconds(10), pingInterval: nil))
        let context = fixture.context()
        var router = Router.api()
        registerCampaignAPI(on: &router, context: context)

        // What the native publish stores for `"campaign"` + `"variants"` + `"holdout"` on one topic target: one
        // message per variant (NativePublishRoutes.preparePublish; Tests/e2e/test_campaign_variants.py drives the route).
        let body = try JSONValue.parse(#"""
            {"campaign":{"id":"ab-launch","name":"AB launch","namespace":"acme"},"holdout":10,
             "variants":[{"name":"short","weight":1,"message":{"GCM":{"fcmV1Message":{"message":{"notification":{"title":"Hi","body":"short copy"}}}}}},
                         {"name":"long","weight":3,"message":{"GCM":{"fcmV1Message":{"message":{"notification":{"title":"Hello","body":"the long copy"}}}}}}]}
            """#).objectValue!
        let variants = try #require(try CampaignVariants.parse(body, hasCampaign: true) { (value, field) throws(JSONAPIError) in
            try NativePublishRoutes.messageText(value, field: field)
        })
        let request = try #require(try PublishNamespaceRequest.parse(body))
        let namespace = try await request.resolve(accountKey: fixture.account, campaigns: context.campaigns)
        let seed = VariantSplit.seed(campaign: "ab-launch")

        var messageKeys: [[Int64]] = [[], []]  // per run, per variant
        for run in 0..<2 {
            var keys: [Int64] = []
            for (index, variant) in variants.variants.enumerated() {
                let id = UUID()
                let attributes = NativePublishAttributes.stored([
                    PayloadNamespace.attributeName: namespace.attribute(messageID: id, variant: variant.name),
                    VariantSplit.attributeName: variants.split(index: index, campaign: "ab-launch").attributeValue(),
                ])
                let stored = try await MessageRepository(pool: fixture.pool).store(NewMessage(
                    externalID: id, accountKey: fixture.account, target: .topic(key: fixture.topic, arn: "arn:aws:sns:us-east-1:123456789012:promos"),
                    message: variant.text, structure: variant.structure?.rawValue, attributesJSON: attributes))
                keys.append(stored.key)
            }
            messageKeys[run] = keys
        }
        let dispatcher = Dispatcher(pool: fixture.pool, directory: ProviderRegistryDirectory(registry: registry, credentials: { _ in
            PlatformCredentials(credential: serviceAccount)
        }), configuration: DispatcherConfiguration(owner: "variants", shardWorkers: 2, maxPollInterval: 0.2, deliveryIDs: context.deliveryIDs))
        let task = Task { await dispatcher.run() }
        var statuses: [MessageStatus] = []
        for key in messageKeys.flatMap({ $0 }) { statuses.append(try await fixture.waitForFinal(key, timeout: 120)) }
        dispatcher.shutdown()
        await task.value
        await registry.shutdown()
        emulator.stop()

        // Expected from the pure choice.
        var expectedVariant: [String: Int] = [:]
        var expectedHeld: [Int] = [0, 0]
        var expectedSent: [Int] = [0, 0]
        for (token, key) in endpointKey {
            switch VariantSplit.choose(endpointKey: key, weights: [1, 3], holdout: 10, seed: seed) {
            case .variant(let v):
                expectedVariant[token] = v
                expectedSent[v] += 1
            case .heldOut(let v):
                expectedHeld[v] += 1
            }
        }
        for (i, status) in statuses.enumerated() {
            let v = i % 2
            #expect(status.state == .completed)
            #expect(status.counters.accepted == Int64(expectedSent[v]))
            #expect(status.counters.heldOut == Int64(expectedHeld[v]))
            #expect(status.counters.targeted == Int64(expectedSent[v] + expectedHeld[v]))
        }

        // The emulator's records: every send carries its endpoint's variant, in both runs; no held-out token was sent.
        let records = try emulator.acceptedRecords(["fcm"])
        #expect(records.count == 2 * (expectedSent[0] + expectedSent[1]))
        var seen: [String: [String]] = [:]
        var deliveryIDs: [(variant: Int, id: String)] = []
        for record in records {
            let payload = try #require(try JSONValue.parse(record["payload"]?.stringValue ?? "").objectValue)
            let token = String((record["token"]?.stringValue ?? "").split(separator: "/").last ?? "")
            let inner = payload["message"]?["data"]?["acme"]?.stringValue.flatMap { jsonObject(Array($0.utf8)) }
            let name = inner?["variant"]?.stringValue ?? "?"
            let bodyText = payload["message"]?["notification"]?["body"]?.stringValue
            let variant = try #require(expectedVariant[token], "held-out or unknown token \(token) was sent")
            #expect(name == ["short", "long"][variant])
            #expect(bodyText == ["short copy", "the long copy"][variant])
            seen[token, default: []].append(name)
            if let id = inner?["delivery_id"]?.stringValue, (try? context.deliveryIDs.decode(id))?.messageKey == messageKeys[0][variant] {
                deliveryIDs.append((variant, id))
            }
        }
        #expect(seen.count == expectedVariant.count)
        #expect(seen.values.allSatisfy { $0.count == 2 && $0[0] == $0[1] })

        // Opens: every second delivery of variant "short" in the first run, every fourth of "long".
        var opened = [0, 0]
        for (i, item) in deliveryIDs.enumerated() where (item.variant == 0 && i % 2 == 0) || (item.variant == 1 && i % 4 == 0) {
            #expect(await call(router, .post, "/v1/beacons/open", body: #"{"delivery_id":"\#(item.id)"}"#).status == 204)
            opened[item.variant] += 1
        }
        let report = try #require(try await context.campaigns.campaignReport(accountKey: fixture.account, externalID: "ab-launch"))
        #expect(report.heldOut == Int64(2 * (expectedHeld[0] + expectedHeld[1])))
        #expect(report.targeted == 2000)
        #expect(report.variants.map(\.name) == ["short", "long"])
        for v in 0..<2 {
            let row = report.variants[v]
            #expect(row.weight == [1, 3][v])
            #expect(row.messages == 2)
            #expect(row.sent == Int64(2 * expectedSent[v]))
            #expect(row.accepted == Int64(2 * expectedSent[v]))
            #expect(row.heldOut == Int64(2 * expectedHeld[v]))
            #expect(row.uniqueOpens == Int64(opened[v]))
        }
        let json = report.json
        #expect(json["variants"]?.arrayValue?.count == 2)
        #expect(json["deliveries"]?["held_out"] == .number(JSONNumber(2 * (expectedHeld[0] + expectedHeld[1]))))
    }
}
