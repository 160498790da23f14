import ClarionCrypto
import ClarionStore
import ClarionTestSupport
import Foundation
import Testing

@Suite("Repositories: applications, endpoints, topics, subscriptions, tags")
struct ResourceRepositoryTests {
    struct World {
        let fixture: RepositoryFixture
        let account: AccountRecord
        var apps: PlatformApplicationRepository { PlatformApplicationRepository(pool: fixture.pool, masterKey: fixture.masterKey) }
        var endpoints: EndpointRepository { EndpointRepository(pool: fixture.pool) }
        var topics: TopicRepository { TopicRepository(pool: fixture.pool) }
        var subscriptions: SubscriptionRepository { SubscriptionRepository(pool: fixture.pool) }
        var tags: TagRepository { TagRepository(pool: fixture.pool) }

        static func make() async throws -> World {
            let fixture = try RepositoryFixture()
            return World(fixture: fixture, account: try await fixture.accounts.ensureAccount(accountID: "123456789012"))
        }

        func app(_ name: String = "app", platform: String = "GCM") async throws -> PlatformApplicationRecord {
            try await apps.createOrUpdate(accountKey: account.key, region: "us-east-1", name: name, platform: platform,
                                          credentials: PlatformCredentials(credential: "key-\(name)"), attributes: [:]).0
        }
    }

    @Test("platform credentials are sealed (raw column is ciphertext) and bound to their row; repeated create updates")
    func platformApplicationCredentials() async throws {
        let world = try await World.make()
        let secret = "AAAA-fcm-server-key-\(UUID())"
        let (app, created) = try await world.apps.createOrUpdate(
            accountKey: world.account.key, region: "us-east-1", name: "news", platform: "GCM",
            credentials: PlatformCredentials(credential: secret), attributes: ["SuccessFeedbackSampleRate": "50"])
        #expect(created)
        #expect(app.attributes == ["SuccessFeedbackSampleRate": "50"] && app.enabled)
        let raw = try #require(try world.fixture.raw("SELECT credentials_sealed, attributes::text FROM platform_applications WHERE id = $1", [app.key]))
        let sealed = try #require(raw.bytes(0))
        #expect(!String(decoding: sealed, as: UTF8.self).contains(secret))
        #expect(!(raw.string(1) ?? "").contains(secret))
        #expect(String(decoding: try world.fixture.masterKey.open(sealed, associatedData: Array("platform_application:\(app.key)".utf8)), as: UTF8.self).contains(secret))
        #expect(throws: CryptoError.self) { try world.fixture.masterKey.open(sealed, associatedData: Array("platform_application:\(app.key + 1)".utf8)) }
        #expect(throws: CryptoError.self) { try AESGCMKey.generate().open(sealed, associatedData: Array("platform_application:\(app.key)".utf8)) }
        #expect(try await world.apps.credentials(applicationKey: app.key) == PlatformCredentials(credential: secret))
        let otherKey = PlatformApplicationRepository(pool: world.fixture.pool, masterKey: AESGCMKey.generate())
        #expect(await storeError { _ = try await otherKey.credentials(applicationKey: app.key) }?.code == .invalidData)

        // Same name again: same row, attributes merged, credential replaced.
        let (again, createdAgain) = try await world.apps.createOrUpdate(
            accountKey: world.account.key, region: "us-east-1", name: "news", platform: "GCM",
            credentials: PlatformCredentials(credential: "new"), attributes: ["EventEndpointCreated": "arn:aws:sns:us-east-1:123456789012:events"])
        #expect(!createdAgain && again.key == app.key)
        #expect(again.attributes["SuccessFeedbackSampleRate"] == "50" && again.attributes["EventEndpointCreated"] != nil)
        #expect(try await world.apps.credentials(applicationKey: app.key).credential == "new")
    }

    @Test("platform application: disable with reason, enable clears it, list pages, delete cascades endpoints")
    func platformApplicationLifecycle() async throws {
        let world = try await World.make()
        let app = try await world.app()
        let disabled = try await world.apps.update(applicationKey: app.key, enabled: false, disabledReason: "credential rejected")
        #expect(!disabled.enabled && disabled.disabledReason == "credential rejected" && disabled.disabledAt != nil)
        let enabled = try await world.apps.update(applicationKey: app.key, enabled: true)
        #expect(enabled.enabled && enabled.disabledReason == nil && enabled.disabledAt == nil)
        #expect(try await world.apps.get(accountKey: world.account.key, region: "us-east-1", platform: "GCM", name: "app") == enabled)
        #expect(await storeError { _ = try await world.apps.get(accountKey: world.account.key, region: "us-east-1", platform: "ADM", name: "app") }?.code == .notFound)

        for n in 0..<3 { _ = try await world.app("more\(n)") }
        let first = try await world.apps.list(accountKey: world.account.key, region: "us-east-1", limit: 2)
        #expect(first.items.map(\.name) == ["app", "more0"] && first.next != nil)
        let second = try await world.apps.list(accountKey: world.account.key, region: "us-east-1", after: first.next, limit: 2)
        #expect(second.items.map(\.name) == ["more1", "more2"] && second.next == nil)

        let endpoint = try await world.endpoints.create(NewEndpoint(applicationKey: app.key, token: "tok"), externalID: UUID())
        #expect(try await world.apps.delete(applicationKey: app.key))
        #expect(await storeError { _ = try await world.endpoints.get(externalID: endpoint.record.externalID) }?.code == .notFound)
        #expect(try await world.apps.delete(applicationKey: app.key) == false)
    }

    @Test("SNS C.8: same token and attributes returns the endpoint; different attributes is a conflict; new token is new")
    func endpointIdempotency() async throws {
        let world = try await World.make()
        let app = try await world.app()
        let created = try await world.endpoints.create(NewEndpoint(applicationKey: app.key, token: "t1", customUserData: "alice"), externalID: UUID())
        guard case .created(let record) = created else { Issue.record("not created: \(created)"); return }
        #expect(record.enabled && record.customUserData == "alice" && record.platform == "GCM" && record.applicationName == "app")
        #expect(try await world.endpoints.create(NewEndpoint(applicationKey: app.key, token: "t1", customUserData: "alice"), externalID: UUID()) == .existing(record))
        #expect(try await world.endpoints.create(NewEndpoint(applicationKey: app.key, token: "t1"), externalID: UUID()) == .existing(record))
        #expect(try await world.endpoints.create(NewEndpoint(applicationKey: app.key, token: "t1", customUserData: "bob"), externalID: UUID()) == .conflict(record))
        #expect(try await world.endpoints.create(NewEndpoint(applicationKey: app.key, token: "t1", enabled: false), externalID: UUID()) == .conflict(record))
        guard case .created(let other) = try await world.endpoints.create(NewEndpoint(applicationKey: app.key, token: "t2"), externalID: UUID()) else {
            Issue.record("new token not created"); return
        }
        #expect(other.key != record.key)

        // A disabled endpoint stays disabled when created again without attributes (C.8).
        _ = try await world.endpoints.update(externalID: record.externalID, EndpointChanges(enabled: false, disabledReason: "Unregistered"))
        let again = try await world.endpoints.create(NewEndpoint(applicationKey: app.key, token: "t1"), externalID: UUID())
        #expect(again.record.enabled == false && again.record.disabledReason == "Unregistered")
    }

    @Test("endpoint update: token clash maps to endpoints_application_token_key; enable clears the reason; delete is idempotent")
    func endpointUpdates() async throws {
        let world = try await World.make()
        let app = try await world.app()
        let a = try await world.endpoints.create(NewEndpoint(applicationKey: app.key, token: "a", userID: "u1"), externalID: UUID()).record
        _ = try await world.endpoints.create(NewEndpoint(applicationKey: app.key, token: "b", userID: "u1"), externalID: UUID())
        let clash = await storeError { _ = try await world.endpoints.update(externalID: a.externalID, EndpointChanges(token: "b")) }
        #expect(clash?.code == .uniqueViolation && clash?.constraint == "endpoints_application_token_key")
        let changed = try await world.endpoints.update(externalID: a.externalID, EndpointChanges(token: "c", customUserData: .some("data")))
        #expect(changed.token == "c" && changed.customUserData == "data")
        let cleared = try await world.endpoints.update(externalID: a.externalID, EndpointChanges(customUserData: .some(nil)))
        #expect(cleared.customUserData == nil && cleared.token == "c")
        let off = try await world.endpoints.update(externalID: a.externalID, EndpointChanges(enabled: false, disabledReason: "BadDeviceToken"))
        #expect(!off.enabled && off.disabledReason == "BadDeviceToken")
        let on = try await world.endpoints.update(externalID: a.externalID, EndpointChanges(enabled: true))
        #expect(on.enabled && on.disabledReason == nil)
        let tooLong = await storeError { _ = try await world.endpoints.update(externalID: a.externalID, EndpointChanges(customUserData: .some(String(repeating: "x", count: 2049)))) }
        #expect(tooLong?.code == .checkViolation)
        #expect(try await world.endpoints.find(applicationKey: app.key, userID: "u1").count == 2)
        #expect(try await world.endpoints.find(applicationKey: app.key, token: "c")?.key == a.key)
        #expect(try await world.endpoints.delete(externalID: a.externalID))
        #expect(try await world.endpoints.delete(externalID: a.externalID) == false)
        #expect(await storeError { _ = try await world.endpoints.update(externalID: a.externalID, EndpointChanges(enabled: true)) }?.code == .notFound)
    }

    @Test("endpoints list in keyset pages of the application only")
    func endpointPaging() async throws {
        let world = try await World.make()
        let app = try await world.app()
        let other = try await world.app("other")
        var keys: [Int64] = []
        for n in 0..<25 {
            keys.append(try await world.endpoints.create(NewEndpoint(applicationKey: app.key, token: "tok\(n)"), externalID: UUID()).record.key)
            _ = try await world.endpoints.create(NewEndpoint(applicationKey: other.key, token: "tok\(n)"), externalID: UUID())
        }
        var seen: [Int64] = []
        var after: Int64? = nil
        var pages = 0
        repeat {
            let page = try await world.endpoints.list(applicationKey: app.key, after: after, limit: 10)
            seen += page.items.map(\.key)
            after = page.next
            pages += 1
        } while after != nil
        #expect(seen == keys && pages == 3)
    }

    @Test("topics: create is idempotent by name, attributes set and removed, list pages, delete cascades subscriptions")
    func topics() async throws {
        let world = try await World.make()
        let (topic, created) = try await world.topics.create(accountKey: world.account.key, region: "us-east-1", name: "news", attributes: ["DisplayName": "News"])
        #expect(created && topic.attributes == ["DisplayName": "News"])
        let (again, createdAgain) = try await world.topics.create(accountKey: world.account.key, region: "us-east-1", name: "news", attributes: [:])
        #expect(!createdAgain && again == topic)
        let changed = try await world.topics.setAttributes(topicKey: topic.key, ["DisplayName": nil, "Policy": "{}"])
        #expect(changed.attributes == ["Policy": "{}"])
        let bad = await storeError { _ = try await world.topics.create(accountKey: world.account.key, region: "us-east-1", name: "no spaces", attributes: [:]) }
        #expect(bad?.code == .checkViolation)
        for n in 0..<4 { _ = try await world.topics.create(accountKey: world.account.key, region: "us-east-1", name: "t\(n)", attributes: [:]) }
        let page = try await world.topics.list(accountKey: world.account.key, region: "us-east-1", limit: 3)
        #expect(page.items.map(\.name) == ["news", "t0", "t1"])
        #expect(try await world.topics.list(accountKey: world.account.key, region: "us-east-1", after: page.next, limit: 3).items.map(\.name) == ["t2", "t3"])

        let app = try await world.app()
        let endpoint = try await world.endpoints.create(NewEndpoint(applicationKey: app.key, token: "x"), externalID: UUID()).record
        let (subscription, _) = try await world.subscriptions.subscribe(topicKey: topic.key, endpointKey: endpoint.key, externalID: UUID(),
                                                                        filterPolicy: nil, attributes: [:])
        #expect(try await world.topics.subscriptionCount(topicKey: topic.key) == 1)
        #expect(try await world.topics.delete(topicKey: topic.key))
        #expect(await storeError { _ = try await world.subscriptions.get(externalID: subscription.externalID) }?.code == .notFound)
        #expect(try await world.topics.delete(topicKey: topic.key) == false)
        #expect(await storeError { _ = try await world.topics.get(accountKey: world.account.key, region: "us-east-1", name: "news") }?.code == .notFound)
    }

    @Test("subscriptions: one per topic and endpoint, keyset order by topic and by account, filter policy, unsubscribe")
    func subscriptions() async throws {
        let world = try await World.make()
        let app = try await world.app()
        let topic = try await world.topics.create(accountKey: world.account.key, region: "us-east-1", name: "news", attributes: [:]).0
        let other = try await world.topics.create(accountKey: world.account.key, region: "us-east-1", name: "sports", attributes: [:]).0
        var ids: [UUID] = []
        for n in 0..<5 {
            let endpoint = try await world.endpoints.create(NewEndpoint(applicationKey: app.key, token: "e\(n)"), externalID: UUID()).record
            let (s, created) = try await world.subscriptions.subscribe(topicKey: topic.key, endpointKey: endpoint.key, externalID: UUID(),
                                                                       filterPolicy: n == 0 ? #"{"kind":["a"]}"# : nil, attributes: [:])
            #expect(created && s.protocol == "application" && s.endpointExternalID == endpoint.externalID && s.topicName == "news")
            ids.append(s.externalID)
            let (same, createdAgain) = try await world.subscriptions.subscribe(topicKey: topic.key, endpointKey: endpoint.key, externalID: UUID(),
                                                                               filterPolicy: nil, attributes: [:])
            #expect(!createdAgain && same.externalID == s.externalID)
            _ = try await world.subscriptions.subscribe(topicKey: other.key, endpointKey: endpoint.key, externalID: UUID(), filterPolicy: nil, attributes: [:])
        }
        let first = try await world.subscriptions.list(topicKey: topic.key, limit: 3)
        let rest = try await world.subscriptions.list(topicKey: topic.key, after: first.next, limit: 3)
        #expect((first.items + rest.items).map(\.externalID) == ids && rest.next == nil)
        #expect(try await world.subscriptions.list(accountKey: world.account.key, region: "us-east-1", limit: 100).items.count == 10)
        let policy = try #require(first.items.first?.filterPolicy)
        #expect(policy.contains("\"kind\""))

        let set = try await world.subscriptions.setAttribute(externalID: ids[1], name: "FilterPolicy", value: #"{"x":["y"]}"#)
        #expect(set.filterPolicy?.contains("\"x\"") == true)
        let raw = try await world.subscriptions.setAttribute(externalID: ids[1], name: "RawMessageDelivery", value: "true")
        #expect(raw.attributes["RawMessageDelivery"] == "true")
        let cleared = try await world.subscriptions.setAttribute(externalID: ids[1], name: "FilterPolicy", value: "")
        #expect(cleared.filterPolicy == nil)
        #expect(try await world.subscriptions.unsubscribe(externalID: ids[0]))
        #expect(try await world.subscriptions.unsubscribe(externalID: ids[0]) == false)
        #expect(await storeError { _ = try await world.subscriptions.setAttribute(externalID: ids[0], name: "X", value: "y") }?.code == .notFound)
    }

    @Test("tags: upsert, untag, list sorted, more than 50 refused with tags_per_resource_limit and nothing changes")
    func tags() async throws {
        let world = try await World.make()
        let arn = "arn:aws:sns:us-east-1:123456789012:news"
        try await world.tags.tag(accountKey: world.account.key, resourceARN: arn, [TagRecord(key: "team", value: "push"), TagRecord(key: "env", value: "dev")])
        try await world.tags.tag(accountKey: world.account.key, resourceARN: arn, [TagRecord(key: "env", value: "prod")])
        #expect(try await world.tags.list(accountKey: world.account.key, resourceARN: arn) == [TagRecord(key: "env", value: "prod"), TagRecord(key: "team", value: "push")])
        try await world.tags.untag(accountKey: world.account.key, resourceARN: arn, keys: ["team", "absent"])
        #expect(try await world.tags.list(accountKey: world.account.key, resourceARN: arn).map(\.key) == ["env"])
        let many = (0..<50).map { TagRecord(key: "k\($0)", value: "v") }
        let error = await storeError { try await world.tags.tag(accountKey: world.account.key, resourceARN: arn, many) }
        #expect(error?.code == .checkViolation && error?.constraint == "tags_per_resource_limit")
        #expect(try await world.tags.list(accountKey: world.account.key, resourceARN: arn).count == 1)
        try await world.tags.removeAll(resourceARN: arn)
        #expect(try await world.tags.list(accountKey: world.account.key, resourceARN: arn).isEmpty)

        // By prefix (an application's endpoints); '_' in the prefix is a character, not a LIKE wildcard.
        let mine = "arn:aws:sns:us-east-1:123456789012:endpoint/GCM/my_app/1", other = "arn:aws:sns:us-east-1:123456789012:endpoint/GCM/myXapp/2"
        try await world.tags.tag(accountKey: world.account.key, resourceARN: mine, [TagRecord(key: "k", value: "v")])
        try await world.tags.tag(accountKey: world.account.key, resourceARN: other, [TagRecord(key: "k", value: "v")])
        try await world.tags.removeAll(resourceARNPrefix: "arn:aws:sns:us-east-1:123456789012:endpoint/GCM/my_app/")
        #expect(try await world.tags.list(accountKey: world.account.key, resourceARN: mine).isEmpty)
        #expect(try await world.tags.list(accountKey: world.account.key, resourceARN: other).count == 1)
    }
}
