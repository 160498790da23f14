import ClarionCore
import ClarionCrypto
import ClarionDispatch
@testable import ClarionHTTP1
import ClarionStore
import ClarionTestSupport
import Foundation
import Testing
@testable import ClarionAPI

@Suite("Campaigns: namespace rendering, delivery ids, open beacons, reports", .serialized)
struct CampaignTests {
    static let deliveryID = "AAAAAAAAAAEAAAAAAAAAAgABAgMEBQYHCAk"  // 35 characters, base64url

    static func namespace() -> PayloadNamespace {
        PayloadNamespace(key: "acme", kind: .campaign, messageID: "5a0c1b2e-0000-4000-8000-000000000001",
                         deepLink: "acme://sale", fields: [.init(key: "discount", value: "20%")], campaign: "spring")
    }

    static func render(_ platform: Platform, message: String, structure: MessageStructure?) throws -> RenderedPush {
        let parsed = try SNSMessage.parse(message: message, structure: structure, requireDefault: false)
        let attributes = try MobilePushAttributes.parse([PayloadNamespace.attributeName: namespace().attributeValue()])
        let now = Date()
        let result = PushRenderer.render(parsed, attributes: attributes, platform: platform, settings: RenderSettings(),
                                         publishedAt: now, now: now)
        return try #require(result.push)
    }

    static func expectNamespace(_ value: JSONObject?, messageID: String, deliveryID: String) {
        #expect(value?["type"] == .string("campaign"))
        #expect(value?["message_id"] == .string(messageID))
        #expect(value?["delivery_id"] == .string(deliveryID))
        #expect(value?["deep_link"] == .string("acme://sale"))
        #expect(value?["discount"] == .string("20%"))
        #expect(value?.count == 5)
        #expect(value?.members.allSatisfy { $0.value.stringValue != nil } == true)
    }

    @Test("each platform carries the namespace in its own shape; title and body stay in the platform's fields")
    func renderingShapes() throws {
        let message = #"""
            {"default":"hi","APNS":"{\"aps\":{\"alert\":{\"title\":\"Sale\",\"body\":\"20% off\"}}}",
             "GCM":"{\"fcmV1Message\":{\"message\":{\"notification\":{\"title\":\"Sale\",\"body\":\"20% off\"},\"data\":{\"k\":\"v\"}}}}",
             "ADM":"{\"data\":{\"title\":\"Sale\",\"body\":\"20% off\"}}"}
            """#
        let messageID = Self.namespace().messageID
        // APNs: a dictionary at the root beside aps.
        let apns = try Self.render(.apns, message: message, structure: .json)
        let apnsBody = try #require(jsonObject(apns.body(token: "tok", deliveryID: Self.deliveryID)))
        #expect(apnsBody.keys == ["aps", "acme"])
        #expect(apnsBody["aps"]?["alert"]?["title"] == .string("Sale"))
        Self.expectNamespace(apnsBody["acme"]?.objectValue, messageID: messageID, deliveryID: Self.deliveryID)
        // FCM: a JSON-encoded string in message.data["acme"]; notification untouched; other data kept.
        let fcm = try Self.render(.gcm, message: message, structure: .json)
        let fcmBody = try #require(jsonObject(fcm.body(token: "tok", deliveryID: Self.deliveryID)))
        let fcmMessage = try #require(fcmBody["message"]?.objectValue)
        #expect(fcmMessage["notification"]?["body"] == .string("20% off"))
        #expect(fcmMessage["data"]?["k"] == .string("v"))
        let fcmText = try #require(fcmMessage["data"]?["acme"]?.stringValue)
        Self.expectNamespace(jsonObject(Array(fcmText.utf8)), messageID: messageID, deliveryID: Self.deliveryID)
        #expect(fcmMessage["token"] == .string("tok"))
        // ADM: likewise in data.
        let adm = try Self.render(.adm, message: message, structure: .json)
        let admBody = try #require(jsonObject(adm.body(token: "tok", deliveryID: Self.deliveryID)))
        let admText = try #require(admBody["data"]?["acme"]?.stringValue)
        Self.expectNamespace(jsonObject(Array(admText.utf8)), messageID: messageID, deliveryID: Self.deliveryID)
        #expect(admBody["data"]?["title"] == .string("Sale"))
        // Rendered once: the delivery id is a slot, filled per delivery without re-encoding.
        #expect(fcm.body.slots.filter { $0 == .deliveryID }.count == 1)
        let other = try #require(jsonObject(fcm.body(token: "t2", deliveryID: "B" + Self.deliveryID.dropFirst())))
        let otherText = try #require(other["message"]?["data"]?["acme"]?.stringValue)
        #expect(jsonObject(Array(otherText.utf8))?["delivery_id"] == .string("B" + Self.deliveryID.dropFirst()))
    }

    @Test("an ordinary push may carry the namespace with type message; a plain text message gets platform defaults")
    func ordinaryMessage() throws {
        let namespace = PayloadNamespace.message(key: "acme", messageID: UUID())
        let attributes = try MobilePushAttributes.parse([PayloadNamespace.attributeName: namespace.attributeValue()])
        let now = Date()
        let result = PushRenderer.render(try SNSMessage.parse(message: "hello", structure: nil, requireDefault: false),
                                         attributes: attributes, platform: .apns, settings: RenderSettings(), publishedAt: now, now: now)
        let push = try #require(result.push)
        let body = try #require(jsonObject(push.body(token: "t", deliveryID: Self.deliveryID)))
        #expect(body["aps"]?["alert"] == .string("hello"))
        #expect(body["acme"]?["type"] == .string("message"))
        #expect(body["acme"]?["message_id"] == .string(namespace.messageID))
        #expect(body["acme"]?.objectValue?.count == 3)
    }

    @Test("campaign data must be flat strings: a 400 names the field; reserved and content keys are refused")
    func campaignValidation() throws {
        func parse(_ text: String) throws(JSONAPIError) -> CampaignPublish? {
            try CampaignPublish.parse(try? JSONValue.parse(text))
        }
        let ok = try parse(#"{"name":"Spring","namespace":"acme","deep_link":"acme://x","data":{"a":"1"}}"#)
        #expect(ok?.data == [PayloadNamespace.Field(key: "a", value: "1")])
        #expect(throws: JSONAPIError.invalidField("campaign.data.discount", "Campaign data values must be strings; 'campaign.data.discount' is not.")) {
            try parse(#"{"name":"Spring","namespace":"acme","data":{"discount":20}}"#)
        }
        for bad in [#"{"name":"S","namespace":"acme","data":{"delivery_id":"x"}}"#,
                    #"{"name":"S","namespace":"acme","data":{"title":"x"}}"#,
                    #"{"name":"S","namespace":"aps"}"#, #"{"name":"S","namespace":"google.x"}"#,
                    #"{"namespace":"acme"}"#, #"{"name":"S","namespace":"acme","data":{"n":{"x":"y"}}}"#] {
            #expect(throws: JSONAPIError.self) { try parse(bad) }
        }
        // A stored attribute with a non-string value is refused at parse (the dispatcher then fails the message).
        #expect(throws: MessageValidationError.self) {
            try MobilePushAttributes.parse([PayloadNamespace.attributeName: .string(#"{"key":"acme","type":"campaign","message_id":"m","data":{"n":1}}"#)])
        }
    }

    @Test("a publish asks for a campaign or a plain namespace, not both; the reserved attribute is Clarion's alone")
    func publishNamespaceRequest() async throws {
        func body(_ text: String) throws -> JSONObject { try #require(try JSONValue.parse(text).objectValue) }
        let plain = try PublishNamespaceRequest.parse(try body(#"{"namespace":"acme"}"#))
        #expect(plain == .message(key: "acme"))
        let resolved = try await #require(plain).resolve(accountKey: 1, campaigns: CampaignRepository(pool: PGPool(conninfo: "", size: 1)))
        let id = UUID()
        let namespace = try PayloadNamespace.parse(attribute: resolved.attribute(messageID: id))
        #expect(namespace.kind == .message && namespace.key == "acme" && namespace.messageID == id.uuidString.lowercased())
        #expect(try PublishNamespaceRequest.parse(try body(#"{"message":"x"}"#)) == nil)
        let both = try body(#"{"namespace":"acme","campaign":{"name":"S","namespace":"acme"}}"#)
        #expect(throws: JSONAPIError.self) { try PublishNamespaceRequest.parse(both) }
        #expect(throws: JSONAPIError.self) {
            try PublishNamespaceRequest.parse(JSONObject(), attributes: [PayloadNamespace.attributeName: .string("{}")])
        }
        #expect(throws: JSONAPIError.self) { try PublishNamespaceRequest.parse(try body(#"{"namespace":"gcm.x"}"#)) }
    }

    @Test("delivery ids verify under the derived secret; a tampered or foreign-key id does not")
    func deliveryIDs() throws {
        let key = AESGCMKey.generate()
        let codec = DeliveryIDSecret.codec(masterKey: key)
        let id = codec.encode(DeliveryID(messageKey: 42, endpointKey: 7))
        #expect(try codec.decode(id) == DeliveryID(messageKey: 42, endpointKey: 7))
        var bytes = Array(id.utf8)
        bytes[3] = bytes[3] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        #expect(throws: DeliveryIDError.self) { try codec.decode(String(decoding: bytes, as: UTF8.self)) }
        #expect(throws: DeliveryIDError.self) { try DeliveryIDSecret.codec(masterKey: AESGCMKey.generate()).decode(id) }
    }

    @Test("the client address comes from Forwarded / X-Forwarded-For only through a trusted proxy (RFC 7239)")
    func trustedProxies() throws {
        let proxies = try #require(TrustedProxies(list: "10.0.0.0/8, ::1/128"))
        func client(_ peer: String, _ fields: [(String, String)]) -> String {
            var headers = HTTPHeaders()
            for (name, value) in fields { headers.add(name, value) }
            return proxies.clientAddress(peer: peer, headers: headers)
        }
        // Anyone else's forwarding headers are their own words: ignored.
        #expect(client("198.51.100.1", [("X-Forwarded-For", "192.0.2.9")]) == "198.51.100.1")
        // Read from the nearest hop back, skipping trusted proxies.
        #expect(client("10.0.0.1", [("X-Forwarded-For", "192.0.2.9, 198.51.100.7, 10.0.0.2")]) == "198.51.100.7")
        #expect(client("10.0.0.1", [("X-Forwarded-For", "192.0.2.9"), ("X-Forwarded-For", "10.1.1.1")]) == "192.0.2.9")
        // Forwarded wins over X-Forwarded-For; quoted IPv6 with a port, and the port of an IPv4 node, are dropped.
        #expect(client("::1", [("Forwarded", #"for="[2001:db8:cafe::17]:4711";proto=https, for=10.0.0.3"#),
                               ("X-Forwarded-For", "192.0.2.1")]) == "2001:db8:cafe::17")
        #expect(client("::1", [("Forwarded", "for=192.0.2.60:8080;by=10.0.0.1")]) == "192.0.2.60")
        // Only trusted hops: the first one; no header: the peer.
        #expect(client("10.0.0.1", [("X-Forwarded-For", "10.0.0.7, 10.0.0.8")]) == "10.0.0.7")
        #expect(client("10.0.0.1", []) == "10.0.0.1")
        // Empty hops (found by the native-api fuzz target) are skipped: never an empty address.
        #expect(client("10.0.0.1", [("Forwarded", #"for="""#), ("X-Forwarded-For", ":80, ,")]) == "10.0.0.1")
        #expect(TrustedProxies(list: "10.0.0.0/8,not-an-address") == nil)
        #expect(TrustedProxies().clientAddress(peer: "10.0.0.1", headers: ["X-Forwarded-For": "192.0.2.9"]) == "10.0.0.1")
    }

    @Test("the limiter holds one source to its burst, keeps others counting, and stays bounded")
    func limiter() {
        var state = BeaconRateLimiterState(settings: .init(burst: 3, perSecond: 1, maxSources: 10))
        #expect((0..<3).map { _ in state.admit("a", now: 0) } == [.admit, .admit, .admit])
        #expect(state.admit("a", now: 0) == .limited(retryAfter: 1))
        #expect(state.admit("b", now: 0) == .admit)
        #expect(state.admit("a", now: 1) == .admit)
        for i in 0..<1_000 { _ = state.admit("s\(i)", now: 2) }
        #expect(state.trackedSources <= 10)
        #expect(BeaconLimiter.sourceKey("2001:db8:1:2:3:4:5:6") == BeaconLimiter.sourceKey("2001:db8:1:2:ffff::1"))
        #expect(BeaconLimiter.sourceKey("::ffff:198.51.100.7") == "198.51.100.7")
    }

    @Test("end to end: dispatch records the namespace per platform; half opened is 50%; repeats, forgeries and storms")
    func endToEnd() async throws {
        var fixture = try CampaignFixture()
        let tokens = ["ios": (1...4).map { "ios-\($0)" }, "android": (1...4).map { "and-\($0)" } + ["and-bad"],
                      "kindle": (1...4).map { "adm-\($0)" }]
        try fixture.addApplication("ios", platform: "APNS", tokens: tokens["ios"]!)
        try fixture.addApplication("android", platform: "GCM", tokens: tokens["android"]!)
        try fixture.addApplication("kindle", platform: "ADM", tokens: tokens["kindle"]!)
        let context = fixture.context(limiter: BeaconLimiter(settings: .init(burst: 5, perSecond: 0.001), clock: { 0 }))
        var router = Router.api()
        registerCampaignAPI(on: &router, context: context)

        // The publish side: what the native publish handler does with a "campaign" field.
        let field = try JSONValue.parse(
            #"{"id":"spring-sale","name":"Spring sale","namespace":"acme","deep_link":"acme://sale","data":{"discount":"20%"}}"#)
        let parsedSpec = try CampaignPublish.parse(field)
        let spec = try #require(parsedSpec)
        let prepared = try await spec.resolve(accountKey: fixture.account, campaigns: context.campaigns)
        let messageID = UUID()
        let attributes = NativePublishAttributes.stored([PayloadNamespace.attributeName: prepared.attribute(messageID: messageID)])
        let text = #"""
            {"default":"Spring sale","APNS":"{\"aps\":{\"alert\":{\"title\":\"Sale\",\"body\":\"20% off\"}}}",
             "GCM":"{\"fcmV1Message\":{\"message\":{\"notification\":{\"title\":\"Sale\",\"body\":\"20% off\"}}}}"}
            """#
        let batcher = PublishBatcher(pool: fixture.pool)
        let stored = try await batcher.publish(NewMessage(
            externalID: messageID, accountKey: fixture.account, target: .topic(key: fixture.topic, arn: "arn:aws:sns:us-east-1:123456789012:promos"),
            message: text, structure: "json", attributesJSON: attributes))
        batcher.shutdown()

        let transports = ["ios": CampaignRecordingTransport(),
                          "android": CampaignRecordingTransport { $0 == "and-bad" ? .rejected(reason: "InvalidArgument") : .accepted(providerID: nil) },
                          "kindle": CampaignRecordingTransport()]
        let dispatcher = Dispatcher(pool: fixture.pool, directory: CampaignDirectory(transports: transports),
                                    configuration: DispatcherConfiguration(owner: "camp-test", shardWorkers: 1, maxPollInterval: 0.2,
                                                                           deliveryIDs: context.deliveryIDs))
        let task = Task { await dispatcher.run() }
        let status = try await fixture.waitForFinal(stored.key)
        dispatcher.shutdown()
        await task.value
        #expect(status.state == .completed)
        #expect(status.counters.accepted == 12)

        // Every platform's recorded body has the namespace in its exact shape, with its own delivery id.
        var deliveryIDs: [String] = []
        for (name, transport) in transports {
            let sent = transport.all
            #expect(sent.count == tokens[name]!.count)
            for push in sent {
                let id = try #require(push.deliveryID)
                let body = try #require(jsonObject(push.body))
                let namespace: JSONObject?
                switch name {
                case "ios":
                    #expect(body["aps"]?["alert"]?["title"] == .string("Sale"))
                    namespace = body["acme"]?.objectValue
                case "android":
                    #expect(body["message"]?["notification"]?["title"] == .string("Sale"))
                    namespace = body["message"]?["data"]?["acme"]?.stringValue.flatMap { jsonObject(Array($0.utf8)) }
                default:
                    #expect(body["data"]?["message"] == .string("Spring sale"))
                    namespace = body["data"]?["acme"]?.stringValue.flatMap { jsonObject(Array($0.utf8)) }
                }
                #expect(namespace?["type"] == .string("campaign"))
                #expect(namespace?["message_id"] == .string(messageID.uuidString.lowercased()))
                #expect(namespace?["delivery_id"] == .string(id))
                #expect(namespace?["deep_link"] == .string("acme://sale"))
                #expect(namespace?["discount"] == .string("20%"))
                #expect(namespace?["title"] == nil && namespace?["body"] == nil)
                let decoded = try context.deliveryIDs.decode(id)
                #expect(decoded.messageKey == stored.key)
                if push.token != "and-bad" { deliveryIDs.append(id) }
            }
        }
        #expect(Set(deliveryIDs).count == 12)

        // Opens for half the accepted deliveries, each from its own address; one repeated.
        for (i, id) in deliveryIDs.prefix(6).enumerated() {
            let response = await call(router, .post, "/v1/beacons/open", body: #"{"delivery_id":"\#(id)"}"#, from: "10.0.0.\(i)")
            #expect(response.status == 204)
            #expect(response.headers["Access-Control-Allow-Origin"] == "*")
        }
        #expect(await call(router, .post, "/v1/beacons/open", body: #"{"delivery_id":"\#(deliveryIDs[0])"}"#, from: "10.0.1.1").status == 204)
        let preflight = await call(router, .options, "/v1/beacons/open")
        #expect(preflight.status == 204)
        #expect(preflight.headers["Access-Control-Allow-Methods"]?.contains("POST") == true)

        // Over a real socket, as a browser does it: the preflight, then a text/plain body (navigator.sendBeacon).
        try await withServer(router) { server in
            let base = "http://127.0.0.1:\(server.port)/v1/beacons/open"
            let preflight = try await curl(base, method: "OPTIONS", headers: [
                "Origin": "https://app.example", "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "content-type"])
            #expect(preflight.status == 204)
            #expect(preflight.headers["access-control-allow-origin"] == "*")
            #expect(preflight.headers["access-control-allow-headers"]?.lowercased().contains("content-type") == true)
            let beacon = try await curl(base, method: "POST", headers: ["Origin": "https://app.example", "Content-Type": "text/plain;charset=UTF-8"],
                                        body: Array(#"{"delivery_id":"\#(deliveryIDs[2])"}"#.utf8))
            #expect(beacon.status == 204)
            #expect(beacon.headers["access-control-allow-origin"] == "*")
        }

        // Forged, tampered, malformed and unknown ids: 400, nothing stored.
        var tampered = Array(deliveryIDs[7].utf8)
        tampered[20] = tampered[20] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        let forged = DeliveryIDSecret.codec(masterKey: AESGCMKey.generate()).encode(DeliveryID(messageKey: stored.key, endpointKey: 1))
        let unknown = context.deliveryIDs.encode(DeliveryID(messageKey: stored.key + 1000, endpointKey: 1))
        for bad in [String(decoding: tampered, as: UTF8.self), forged, unknown, "short"] {
            let response = await call(router, .post, "/v1/beacons/open", body: #"{"delivery_id":"\#(bad)"}"#, from: "10.0.2.1")
            #expect(response.status == 400)
            #expect(response.headers["Access-Control-Allow-Origin"] == "*")
        }
        #expect(await call(router, .post, "/v1/beacons/open", body: "not json", from: "10.0.2.2").status == 400)

        // Many devices behind one address (carrier-grade NAT, a load balancer): every open that verifies counts, however
        // many arrive (the defect: 20 opens from one address within seconds lost 2 to 429). The 50 repeats of one
        // delivery are one open.
        var statuses: [Int] = []
        for _ in 0..<50 {
            statuses.append(await call(router, .post, "/v1/beacons/open", body: #"{"delivery_id":"\#(deliveryIDs[1])"}"#,
                                       from: "203.0.113.9").status)
        }
        #expect(statuses.allSatisfy { $0 == 204 })
        // Forged ids from one address: the burst (5) is answered 400, then 429 with Retry-After; a valid id from the
        // same address right after is still recorded.
        statuses = []
        for index in 0..<20 {
            let fake = DeliveryIDSecret.codec(masterKey: AESGCMKey.generate()).encode(DeliveryID(messageKey: stored.key, endpointKey: Int64(index)))
            statuses.append(await call(router, .post, "/v1/beacons/open", body: #"{"delivery_id":"\#(fake)"}"#, from: "203.0.113.66").status)
        }
        #expect(statuses.filter { $0 == 400 }.count == 5 && statuses.filter { $0 == 429 }.count == 15)
        #expect(await call(router, .post, "/v1/beacons/open", body: #"{"delivery_id":"\#(deliveryIDs[3])"}"#,
                           from: "203.0.113.66").status == 204)
        let opensBefore = try fixture.connection().query("SELECT count(*) FROM opens").first!.int64(0)
        #expect(opensBefore == 6)

        // A batch beacon (a backend relaying opens): valid ids recorded, the others named by index, in one answer.
        let batch = await call(router, .post, "/v1/beacons/open", body: """
            {"delivery_ids":["\(deliveryIDs[4])","\(forged)","\(unknown)","\(deliveryIDs[4])"]}
            """, from: "203.0.113.66")
        #expect(batch.status == 200)
        let counts = try #require(jsonObject(batch.body))
        #expect(counts["recorded"] == .number(JSONNumber(2)))
        #expect(counts["invalid"] == .array([.number(JSONNumber(1))]))
        #expect(counts["unknown"] == .array([.number(JSONNumber(2))]))
        // Both copies in the batch count as beacons (one upsert): 1 open before, 3 beacons now.
        let four = try context.deliveryIDs.decode(deliveryIDs[4])
        #expect(try fixture.connection().query("SELECT count FROM opens WHERE message = $1 AND endpoint = $2",
                                               [four.messageKey, four.endpointKey]).first?.int64(0) == 3)
        let tooMany = "[" + Array(repeating: "\"x\"", count: 501).joined(separator: ",") + "]"
        #expect(await call(router, .post, "/v1/beacons/open", body: #"{"delivery_ids":\#(tooMany)}"#).status == 400)
        #expect(await call(router, .post, "/v1/beacons/open", body: #"{"delivery_ids":[]}"#).status == 400)
        #expect(await call(router, .post, "/v1/beacons/open",
                           body: #"{"delivery_id":"\#(deliveryIDs[4])","delivery_ids":["\#(deliveryIDs[4])"]}"#).status == 400)

        // The report: 12 accepted, 1 failed by reason, 6 unique opens = 50%.
        let response = await call(router, .get, "/v1/campaigns/spring-sale/report",
                                  headers: ["Authorization": "Bearer test-key"])
        #expect(response.status == 200)
        let report = try #require(jsonObject(response.body))
        #expect(report["campaign"]?["id"] == .string("spring-sale"))
        #expect(report["messages"] == .number(JSONNumber(1)))
        #expect(report["deliveries"]?["targeted"] == .number(JSONNumber(13)))
        #expect(report["deliveries"]?["accepted"] == .number(JSONNumber(12)))
        #expect(report["deliveries"]?["failed"] == .number(JSONNumber(1)))
        #expect(report["failures_by_reason"]?["InvalidArgument"] == .number(JSONNumber(1)))
        #expect(report["opens"]?["unique"] == .number(JSONNumber(6)))
        #expect(report["opens"]?["rate"] == .number(JSONNumber(literal: "0.5000")!))
        #expect(report["time_to_open_seconds"]?["p50"] != nil)
        #expect(report["opens_per_hour"]?.arrayValue?.count == 1)

        let messageReport = await call(router, .get, "/v1/messages/\(messageID.uuidString)/report",
                                       headers: ["Authorization": "Bearer test-key"])
        #expect(jsonObject(messageReport.body)?["opens"]?["unique"] == .number(JSONNumber(6)))
        #expect(await call(router, .get, "/v1/campaigns/spring-sale/report").status == 401)
        #expect(await call(router, .get, "/v1/campaigns/nope/report", headers: ["Authorization": "Bearer test-key"]).status == 404)

        // The CLI's view of the same report.
        let cli = try #require(try await context.campaigns.report(id: "spring-sale"))
        #expect(cli.table.split(separator: "\n").contains { $0.hasPrefix("Open rate ") && $0.hasSuffix(" 50.0%") })
        #expect(cli.openRate == 0.5)
        let printed = try #require(try JSONValue.parse(cli.rendered(json: true)).objectValue)
        #expect(printed["opens"]?["rate"] == .number(JSONNumber(literal: "0.5000")!))
    }
}

/// The stored attribute form the native publish writes (`{"Name": {"DataType": ..., "StringValue": ...}}`).
enum NativePublishAttributes {
    static func stored(_ attributes: [String: MessageAttributeValue]) -> String {
        var out = JSONObject()
        for name in attributes.keys.sorted() {
            let value = attributes[name]!
            var entry = JSONObject([("DataType", .string(value.dataType))])
            if let text = value.stringValue { entry["StringValue"] = .string(text) }
            out[name] = .object(entry)
        }
        return JSONValue.object(out).jsonText
    }
}
