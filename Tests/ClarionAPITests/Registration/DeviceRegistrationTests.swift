import ClarionProviders
import ClarionCore
import ClarionStore
import Foundation
import Testing
@testable import ClarionAPI
@testable import ClarionWorkers

@Suite("Device registration API over HTTP", .serialized)
struct DeviceRegistrationTests {
    @Test("A registration is accepted (202, empty or tracked), Pending until processed, then Success with its endpoint")
    func singleRegistration() async throws {
        try await RegistrationFixture.with { f in
            let untracked = try await f.post(f.devices, f.item(user: "u1", fcm: "fcm-token-1"))
            #expect(untracked.status == 202)
            #expect(untracked.body.isEmpty)
            let id = try await f.register(user: "u2", apns: String(repeating: "ab", count: 32))
            #expect(UUID(uuidString: id) != nil)
            #expect(try await f.states([id]).map(\.0) == ["Pending"])
            await f.processAll()
            let state = try await f.states([id])
            #expect(state[0].0 == "Success")
            #expect(state[0].1 == nil)
            #expect(try await f.endpoints(f.fcmApplication).map(\.token) == ["fcm-token-1"])
            #expect(try await f.endpoints(f.fcmApplication).map(\.user) == ["u1"])
            #expect(try await f.endpoints(f.apnsApplication).map(\.user) == ["u2"])
            #expect(f.validator.tokens.isEmpty, "no dry run unless the app asks for one")
        }
    }

    @Test("Malformed requests are 400 naming the field")
    func badRequests() async throws {
        try await RegistrationFixture.with { f in
            let app = jsonText(f.app.externalID.uuidString)
            let cases: [(String, String?)] = [
                ("{\"UserId\":\"u\",\"ApiToken\":\"t\",\"FcmDeviceToken\":\"x\"}", "MobileAppId"),
                ("{\"MobileAppId\":\(app),\"ApiToken\":\"t\",\"FcmDeviceToken\":\"x\"}", "UserId"),
                ("{\"MobileAppId\":\(app),\"UserId\":\"u\",\"FcmDeviceToken\":\"x\"}", "ApiToken"),
                ("{\"MobileAppId\":\(app),\"UserId\":\"u\",\"ApiToken\":\"t\"}", "ApnsDeviceToken"),
                ("{\"MobileAppId\":\"nope\",\"UserId\":\"u\",\"ApiToken\":\"t\",\"FcmDeviceToken\":\"x\"}", "MobileAppId"),
                ("{\"MobileAppId\":\(app),\"UserId\":7,\"ApiToken\":\"t\",\"FcmDeviceToken\":\"x\"}", "UserId"),
                ("{\"MobileAppId\":\(app),\"UserId\":\"u\",\"ApiToken\":\"t\",\"FcmDeviceToken\":\"x\",\"ApnsDeviceToken\":\"y\"}", "FcmDeviceToken"),
                ("{\"MobileAppId\":\(app),\"UserId\":\"\",\"ApiToken\":\"t\",\"FcmDeviceToken\":\"x\"}", "UserId"),
                ("[1,2]", nil),
                ("not json", nil),
            ]
            for (body, field) in cases {
                let result = try await f.post(f.devices, body)
                #expect(result.status == 400, "\(body): \(result.text)")
                let error = try #require((try JSONSerialization.jsonObject(with: Data(result.body)) as? [String: Any])?["error"] as? [String: Any])
                #expect(error["field"] as? String == field, "\(body): \(result.text)")
            }
            // Callback headers: a malformed URL or header map is refused, naming the header.
            let good = f.item(user: "u", fcm: "x")
            for (headers, field) in [
                (["x-ms-callback-url": "ftp://example.com/x"], "x-ms-callback-url"),
                (["x-ms-status-callback-url": "not a url"], "x-ms-status-callback-url"),
                (["x-ms-callback-url": "https://example.com/x", "x-ms-callback-url-headers": "[1]"], "x-ms-callback-url-headers"),
                (["x-ms-callback-url": "https://example.com/x", "x-ms-callback-url-headers": "{\"a\":1}"], "x-ms-callback-url-headers"),
                (["x-ms-callback-url": "https://example.com/x", "x-ms-callback-url-headers": "{"], "x-ms-callback-url-headers"),
            ] {
                let result = try await f.post(f.devices, good, headers: headers)
                #expect(result.status == 400, "\(headers): \(result.text)")
                #expect(result.text.contains("\"field\":\"\(field)\""), "\(headers): \(result.text)")
            }
            #expect(try await f.count("SELECT count(*) FROM registration_requests") == 0)
        }
    }

    @Test("An invalid ApiToken stores nothing and calls nothing; its id reads Pending")
    func invalidToken() async throws {
        let receiver = try WebhookReceiver()
        defer { receiver.stop() }
        try await RegistrationFixture.with(dryRun: true) { f in
            let hook = ["x-ms-callback-url": "http://127.0.0.1:\(receiver.port)/hook"]
            let id = try await f.register(user: "u1", fcm: "fcm-1", token: "cmt_not-a-token", headers: hook)
            let other = try await f.post(f.devices + "/batch", "[\(f.item(user: "u1", fcm: "fcm-2", token: "wrong"))]")
            #expect(other.status == 202)
            #expect(try await f.count("SELECT count(*) FROM registration_requests") == 0)
            await f.processAll()
            #expect(await f.sendWebhooks() == 0)
            #expect(try await f.count("SELECT count(*) FROM endpoints") == 0)
            #expect(f.validator.tokens.isEmpty)
            #expect(receiver.requests.isEmpty)
            #expect(try await f.states([id]).map(\.0) == ["Pending"])
            // An id that was never stored reads Pending too, and so does any id asked with a wrong token.
            #expect(try await f.states([UUID().uuidString]).map(\.0) == ["Pending"])
        }
    }

    @Test("Every failure reason, read back through the status route")
    func failureReasons() async throws {
        try await RegistrationFixture.with(dryRun: true) { f in
            // DuplicateExists: the token belongs to another user's device.
            let first = try await f.register(user: "alice", fcm: "shared-token")
            await f.processAll()
            let duplicate = try await f.register(user: "bob", fcm: "shared-token")
            let again = try await f.register(user: "alice", fcm: "shared-token")
            let tooLong = try await f.register(user: "u", apns: String(repeating: "a", count: 201))
            let longFCM = try await f.register(user: "u", fcm: String(repeating: "f", count: 4097))
            let dryRun = try await f.register(user: "u", fcm: "bad-token")
            // FailedToStoreDevice: an app with no APNs application, asked for an APNs token.
            let fcmOnly = try await f.context.admin.createApp(accountID: RegistrationFixture.accountID, name: "fcm-only",
                                                              fcmApplication: "GCM:android")
            let fcmOnlyToken = try await f.context.admin.createToken(accountID: RegistrationFixture.accountID, app: fcmOnly.externalID).token
            let storeFailure = try await f.post(f.devices, f.item(user: "u", apns: "abcd", token: fcmOnlyToken, app: fcmOnly.externalID),
                                                headers: ["x-ms-track-registration": "true"])
            let storeID = try #require((try JSONSerialization.jsonObject(with: Data(storeFailure.body)) as? [String: Any])?["RegistrationRequestId"] as? String)
            // ApiTokenNotValid: the token is revoked after the request was accepted.
            let revocable = try await f.context.admin.createToken(accountID: RegistrationFixture.accountID, app: f.app.externalID)
            let revoked = try await f.register(user: "u", fcm: "fcm-revoked", token: revocable.token)
            try await f.context.admin.revokeToken(accountID: RegistrationFixture.accountID, app: f.app.externalID, tokenID: revocable.id)
            await f.processAll()

            let states = try await f.states([first, duplicate, again, tooLong, longFCM, dryRun])
            #expect(states[0] == ("Success", nil))
            #expect(states[1] == ("Failed", "DuplicateExists"))
            #expect(states[2] == ("Success", nil))
            #expect(states[3] == ("Failed", "DeviceTokenTooLong"))
            #expect(states[4] == ("Failed", "DeviceTokenTooLong"))
            #expect(states[5] == ("Failed", "DryRunSendingFailed"))
            #expect(try await f.states([revoked], token: revocable.token)[0] == ("Failed", "ApiTokenNotValid"))
            let body = "{\"RegistrationRequestIds\":[\(jsonText(storeID))],\"MobileAppId\":\(jsonText(fcmOnly.externalID.uuidString)),\"ApiToken\":\(jsonText(fcmOnlyToken))}"
            #expect(try await f.post(f.devices + "/status", body).text == "[{\"Status\":\"Failed\",\"FailureReason\":\"FailedToStoreDevice\"}]")
            // The dry run ran for the new tokens within limits only; nothing failed was stored.
            #expect(Set(f.validator.tokens) == ["shared-token", "bad-token"])
            #expect(try await f.endpoints(f.fcmApplication).map(\.token) == ["shared-token"])
            #expect(try await f.count("SELECT count(*) FROM endpoints") == 1)
        }
    }

    @Test("A batch answers ids in request order; status answers in the order asked; more than 100 is 400")
    func batches() async throws {
        try await RegistrationFixture.with { f in
            let items = (0..<100).map { f.item(user: "user-\($0)", fcm: "batch-token-\($0)") }
            let result = try await f.post(f.devices + "/batch", "[\(items.joined(separator: ","))]",
                                          headers: ["x-ms-track-registration": "true"])
            #expect(result.status == 202)
            let ids = try #require(try JSONSerialization.jsonObject(with: Data(result.body)) as? [[String: String]]).compactMap { $0["RegistrationRequestId"] }
            #expect(ids.count == 100)
            #expect(Set(ids).count == 100)
            // The stored requests carry the users in the order of the ids.
            let users = try await f.pool.withConnection { (c) throws(StoreError) -> [String: String] in
                var out: [String: String] = [:]
                for row in try c.query("SELECT id::text, request->>'userId' FROM registration_requests").rows {
                    out[row.string(0) ?? ""] = row.string(1)
                }
                return out
            }
            #expect(ids.map { users[$0] } == (0..<100).map { "user-\($0)" })
            // Mixed states, asked in reverse order with an unknown id in the middle.
            try await f.pool.withConnection { (c) throws(StoreError) in
                _ = try c.query("UPDATE registration_requests SET status = 'Failed', failure_reason = 'DuplicateExists' WHERE id = $1::uuid", [ids[0]])
            }
            let unknown = UUID().uuidString.lowercased()
            let states = try await f.states([ids[1], unknown, ids[0]])
            #expect(states.map(\.0) == ["Pending", "Pending", "Failed"])
            #expect(states.map(\.1) == [nil, nil, "DuplicateExists"])
            await f.processAll()
            #expect(try await f.states([ids[99], ids[1]]).map(\.0) == ["Success", "Success"])

            let tooMany = (0..<101).map { f.item(user: "u", fcm: "t-\($0)") }
            let refused = try await f.post(f.devices + "/batch", "[\(tooMany.joined(separator: ","))]")
            #expect(refused.status == 400)
            #expect(refused.text.contains("too_many_items"))
            let untracked = try await f.post(f.devices + "/batch", "[\(f.item(user: "x", fcm: "y"))]")
            #expect(untracked.status == 202)
            #expect(untracked.body.isEmpty)
            let badItem = try await f.post(f.devices + "/batch", "[\(f.item(user: "x", fcm: "y")), {\"UserId\":\"u\"}]")
            #expect(badItem.status == 400)
            #expect(badItem.text.contains("\"field\":\"[1].MobileAppId\""))
            #expect(try await f.count("SELECT count(*) FROM registration_requests") == 101)
        }
    }

    @Test("Cleanup removes the user's one device with DeviceToken, all of them without; a wrong token removes nothing")
    func cleanup() async throws {
        try await RegistrationFixture.with { f in
            for (user, token) in [("u1", "a1"), ("u1", "a2"), ("u1", "a3"), ("u2", "b1")] {
                _ = try await f.register(user: user, fcm: token)
            }
            _ = try await f.register(user: "u1", apns: "abcdef")
            await f.processAll()
            #expect(try await f.count("SELECT count(*) FROM endpoints") == 5)
            let app = jsonText(f.app.externalID.uuidString)
            let wrong = try await f.post(f.devices + "/cleanup", "{\"MobileAppId\":\(app),\"ApiToken\":\"nope\",\"UserId\":\"u1\"}")
            #expect(wrong.status == 202)
            #expect(try await f.count("SELECT count(*) FROM endpoints") == 5)
            let one = try await f.post(f.devices + "/cleanup",
                                       "{\"MobileAppId\":\(app),\"ApiToken\":\(jsonText(f.apiToken)),\"UserId\":\"u1\",\"DeviceToken\":\"a2\"}")
            #expect(one.status == 202)
            #expect(try await f.endpoints(f.fcmApplication).map(\.token) == ["a1", "a3", "b1"])
            let missing = try await f.post(f.devices + "/cleanup", "{\"MobileAppId\":\(app),\"ApiToken\":\(jsonText(f.apiToken))}")
            #expect(missing.status == 400)
            #expect(missing.text.contains("\"field\":\"UserId\""))
            let all = try await f.post(f.devices + "/cleanup/batch",
                                       "[{\"MobileAppId\":\(app),\"ApiToken\":\(jsonText(f.apiToken)),\"UserId\":\"u1\"}]")
            #expect(all.status == 202)
            #expect(try await f.endpoints(f.fcmApplication).map(\.token) == ["b1"])
            #expect(try await f.endpoints(f.apnsApplication).isEmpty)
        }
    }

    @Test("Processing is durable: a claim whose processor died is taken again after its lease")
    func durableProcessing() async throws {
        try await RegistrationFixture.with(leaseSeconds: 1) { f in
            let id = try await f.register(user: "u", fcm: "durable-token")
            // A processor claims it and dies before finishing.
            let claimed = try await f.context.registrations.claimPending(limit: 10, leaseSeconds: 1)
            #expect(claimed.count == 1)
            #expect(await f.processor.processPending() == 0, "leased to the dead processor")
            try await Task.sleep(for: .milliseconds(1200))
            #expect(await f.processor.processPending() == 1)
            #expect(try await f.states([id])[0] == ("Success", nil))
            #expect(try await f.count("SELECT attempts FROM registration_requests") == 2)
        }
    }

    @Test("run() processes in the background until shutdown()")
    func backgroundOwner() async throws {
        let receiver = try WebhookReceiver()
        defer { receiver.stop() }
        try await RegistrationFixture.with { f in
            let task = Task { await f.processor.run() }
            let id = try await f.register(user: "u", fcm: "background-token",
                                          headers: ["x-ms-callback-url": "http://127.0.0.1:\(receiver.port)/bg"])
            var done = false
            for _ in 0..<200 where !done {
                done = try await f.states([id])[0].0 == "Success" && receiver.requests.count == 1
                if !done { try await Task.sleep(for: .milliseconds(25)) }
            }
            #expect(done)
            f.processor.shutdown()
            await task.value
        }
    }
}

@Suite("Registration webhooks", .serialized)
struct RegistrationWebhookTests {
    @Test("One POST per finished registration with Status, Signature (checked with Python's hmac), FailureReason and the extra headers")
    func webhookBodyHeadersAndSignature() async throws {
        let receiver = try WebhookReceiver()
        defer { receiver.stop() }
        try await RegistrationFixture.with(dryRun: true) { f in
            let url = "http://127.0.0.1:\(receiver.port)/hooks/reg?tenant=7"
            let headers = ["x-ms-callback-url": url, "x-ms-callback-url-headers": "{\"X-Tenant\":\"seven\",\"Authorization\":\"Bearer abc\"}"]
            _ = try await f.register(user: "u1", fcm: "good-token", headers: headers)
            _ = try await f.register(user: "u1", fcm: "bad-token",
                                     headers: ["x-ms-status-callback-url": "http://127.0.0.1:\(receiver.port)/other"])
            #expect(receiver.requests.isEmpty, "nothing is sent from the request path")
            await f.processAll()
            #expect(receiver.requests.isEmpty, "webhooks go through the queue")
            #expect(await f.sendWebhooks() == 2)
            #expect(await f.sendWebhooks() == 0, "one attempt each")
            let requests = receiver.requests
            #expect(requests.count == 2)
            let success = try #require(requests.first { $0["path"] as? String == "/hooks/reg?tenant=7" })
            let failure = try #require(requests.first { $0["path"] as? String == "/other" })
            let successHeaders = try #require(success["headers"] as? [String: String])
            #expect(successHeaders["x-tenant"] == "seven")
            #expect(successHeaders["authorization"] == "Bearer abc")
            #expect(successHeaders["content-type"] == "application/json")
            let body = try #require(try JSONSerialization.jsonObject(with: Data((success["body"] as? String ?? "").utf8)) as? [String: Any])
            #expect(body["Status"] as? String == "Success")
            #expect(body["FailureReason"] is NSNull)
            #expect(Set(body.keys) == ["Status", "Signature", "FailureReason"])
            let expected = try await pythonSignature(key: f.apiToken, message: url)
            #expect(!expected.isEmpty)
            #expect(body["Signature"] as? String == expected)
            let failed = try #require(try JSONSerialization.jsonObject(with: Data((failure["body"] as? String ?? "").utf8)) as? [String: Any])
            #expect(failed["Status"] as? String == "Failed")
            #expect(failed["FailureReason"] as? String == "DryRunSendingFailed")
            #expect(failed["Signature"] as? String == (try await pythonSignature(key: f.apiToken, message: "http://127.0.0.1:\(receiver.port)/other")))
            #expect(try await WebhookOutbox(pool: f.pool).all().map(\.state) == ["sent", "sent"])
        }
    }

    @Test("By default loopback and private targets are refused (SSRF); the attempt is recorded as failed")
    func ssrfRefused() async throws {
        let receiver = try WebhookReceiver()
        defer { receiver.stop() }
        try await RegistrationFixture.with(policy: .publicOnly) { f in
            _ = try await f.register(user: "u", fcm: "t1", headers: ["x-ms-callback-url": "http://127.0.0.1:\(receiver.port)/x"])
            _ = try await f.register(user: "u", fcm: "t2", headers: ["x-ms-callback-url": "http://localhost:\(receiver.port)/y"])
            await f.processAll()
            #expect(await f.sendWebhooks() == 2)
            #expect(receiver.requests.isEmpty)
            let rows = try await WebhookOutbox(pool: f.pool).all()
            #expect(rows.map(\.state) == ["failed", "failed"])
            #expect(rows.allSatisfy { $0.lastError?.contains("outbound policy") == true })
        }
    }

    @Test("The address policy's ranges")
    func addressRanges() {
        for address in ["127.0.0.1", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254", "100.64.0.1",
                        "0.0.0.0", "224.0.0.1", "255.255.255.255", "::1", "::", "fe80::1", "fc00::1", "fd12::1", "::ffff:127.0.0.1",
                        "::ffff:10.0.0.1", "64:ff9b::a00:1", "ff02::1", "not-an-ip"] {
            #expect(!OutboundAddressPolicy.isPublic(address), "\(address)")
            #expect(!OutboundAddressPolicy.publicOnly.allows(address: address), "\(address)")
        }
        for address in ["8.8.8.8", "1.1.1.1", "172.32.0.1", "192.169.0.1", "100.128.0.1", "2606:4700::1111", "::ffff:8.8.8.8"] {
            #expect(OutboundAddressPolicy.isPublic(address), "\(address)")
        }
        #expect(OutboundAddressPolicy(allowPrivateNetworks: true).allows(address: "127.0.0.1"))
        let named = OutboundAddressPolicy(allowedHosts: ["hooks.internal"])
        #expect(named.allowsHost("HOOKS.internal"))
        #expect(OutboundURL("https://[::1]:8443/x")?.host == "::1")
        #expect(OutboundURL("https://user:pw@example.com/x") == nil)
    }
}
