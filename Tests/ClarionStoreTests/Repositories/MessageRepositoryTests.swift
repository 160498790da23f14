import ClarionStore
import ClarionTestSupport
import Foundation
import Synchronization
import Testing

@Suite("Repositories: messages and group commit")
struct MessageRepositoryTests {
    static func setUp() async throws -> (RepositoryFixture, AccountRecord, EndpointRecord, TopicRecord) {
        let fixture = try RepositoryFixture()
        let account = try await fixture.accounts.ensureAccount(accountID: "123456789012")
        let app = try await PlatformApplicationRepository(pool: fixture.pool, masterKey: fixture.masterKey)
            .createOrUpdate(accountKey: account.key, region: "us-east-1", name: "app", platform: "GCM", credentials: PlatformCredentials(credential: "k"), attributes: [:]).0
        let endpoint = try await EndpointRepository(pool: fixture.pool).create(NewEndpoint(applicationKey: app.key, token: "tok"), externalID: UUID()).record
        let topic = try await TopicRepository(pool: fixture.pool).create(accountKey: account.key, region: "us-east-1", name: "news", attributes: [:]).0
        return (fixture, account, endpoint, topic)
    }

    @Test("a direct publish stores the message unplanned and without a shard (the claim makes it, schema v10); so does a topic publish")
    func storeMessages() async throws {
        let (fixture, account, endpoint, topic) = try await Self.setUp()
        let messages = MessageRepository(pool: fixture.pool)
        let direct = try await messages.store(NewMessage(externalID: UUID(), accountKey: account.key,
                                                         target: .endpoint(key: endpoint.key, arn: "arn:endpoint"), message: #"{"default":"hi"}"#,
                                                         structure: "json", subject: "s", attributesJSON: #"{"a":{"DataType":"String","StringValue":"b"}}"#))
        let stored = try await messages.get(externalID: direct.externalID)
        #expect(stored.id == direct && stored.targetKind == "endpoint" && stored.targetKey == endpoint.key && stored.targetARN == "arn:endpoint")
        #expect(!stored.planned && stored.state == "Enqueued" && stored.structure == "json" && stored.subject == "s")
        #expect(stored.attributesJSON.contains("StringValue"))
        #expect(try await messages.shards(messageKey: direct.key).isEmpty)

        let toTopic = try await messages.store(NewMessage(externalID: UUID(), accountKey: account.key, target: .topic(key: topic.key, arn: "arn:topic"), message: "hello"))
        let topicMessage = try await messages.get(externalID: toTopic.externalID)
        #expect(!topicMessage.planned && topicMessage.targetKind == "topic")
        #expect(try await messages.shards(messageKey: toTopic.key).isEmpty)
        #expect(await storeError { _ = try await messages.get(externalID: UUID()) }?.code == .notFound)
    }

    @Test("the batcher commits concurrent publishes in fewer batches than messages, answers each with its own id, and notifies clarion_work")
    func batcher() async throws {
        let (fixture, account, endpoint, _) = try await Self.setUp()
        let listener = try PGConnection(conninfo: fixture.url)
        try listener.listen(MessageRepository.workChannel)
        let batcher = PublishBatcher(pool: fixture.pool, window: .milliseconds(5))
        let count = 200
        let ids = try await withThrowingTaskGroup(of: (UUID, MessageID).self) { group in
            for _ in 0..<count {
                group.addTask {
                    let id = UUID()
                    let stored = try await batcher.publish(NewMessage(externalID: id, accountKey: account.key,
                                                                      target: .endpoint(key: endpoint.key, arn: "arn"), message: "m"))
                    return (id, stored)
                }
            }
            var out: [(UUID, MessageID)] = []
            for try await pair in group { out.append(pair) }
            return out
        }
        #expect(ids.count == count)
        #expect(ids.allSatisfy { $0.0 == $0.1.externalID })
        #expect(Set(ids.map(\.1.key)).count == count)
        #expect(batcher.batchesWritten < count)
        let check = try PGConnection(conninfo: fixture.url)
        #expect(try check.query("SELECT count(*) FROM messages").first?.int(0) == count)
        #expect(try check.query("SELECT count(*) FROM messages WHERE NOT planned").first?.int(0) == count)
        #expect(try check.query("SELECT count(*) FROM fanout_shards").first?.int(0) == 0)
        let notes = try listener.waitForNotifications(timeout: 2)
        #expect(notes.contains { $0.channel == MessageRepository.workChannel })
        batcher.shutdown()
        let refused = await storeError { _ = try await batcher.publish(NewMessage(externalID: UUID(), accountKey: account.key, target: .endpoint(key: endpoint.key, arn: "a"), message: "m")) }
        #expect(refused?.code == .shutDown)
    }

    @Test("one bad message in a batch fails alone; the others commit")
    func batchIsolation() async throws {
        let (fixture, account, endpoint, _) = try await Self.setUp()
        let batcher = PublishBatcher(pool: fixture.pool, window: .milliseconds(20))
        let taken = try await MessageRepository(pool: fixture.pool)
            .store(NewMessage(externalID: UUID(), accountKey: account.key, target: .endpoint(key: endpoint.key, arn: "arn"), message: "m"))
        let results = await withTaskGroup(of: Bool.self) { group in
            for n in 0..<10 {
                group.addTask {
                    // An external id already stored: a unique violation fails the batch's statement, then this
                    // message alone when each is written on its own.
                    let message = NewMessage(externalID: n == 3 ? taken.externalID : UUID(), accountKey: account.key,
                                             target: .endpoint(key: endpoint.key, arn: "arn"), message: "m")
                    return (try? await batcher.publish(message)) != nil
                }
            }
            var out: [Bool] = []
            for await ok in group { out.append(ok) }
            return out
        }
        #expect(results.filter { $0 }.count == 9)
        #expect(try PGConnection(conninfo: fixture.url).query("SELECT count(*) FROM messages").first?.int(0) == 10)
        batcher.shutdown()
    }

    @Test("several messages at once: results in the caller's order, the bad one fails alone; refused whole after shutdown")
    func publishSeveral() async throws {
        let (fixture, account, endpoint, _) = try await Self.setUp()
        let batcher = PublishBatcher(pool: fixture.pool, window: .milliseconds(5))
        let messages = (0..<5).map { n in
            // Account 0 does not exist: the storing statement refuses that message only (there is no foreign key).
            NewMessage(externalID: UUID(), accountKey: n == 2 ? 0 : account.key, target: .endpoint(key: endpoint.key, arn: "arn"),
                       message: "m\(n)")
        }
        let results = await batcher.publish(messages)
        #expect(results.count == 5)
        for (n, (message, result)) in zip(messages, results).enumerated() {
            switch result {
            case .success(let id):
                #expect(n != 2)
                #expect(id.externalID == message.externalID)
            case .failure(let error):
                #expect(n == 2)
                #expect(error.code == .foreignKeyViolation)
            }
        }
        #expect(try PGConnection(conninfo: fixture.url).query("SELECT count(*) FROM messages").first?.int(0) == 4)
        #expect(await batcher.publish([]).isEmpty)
        batcher.shutdown()
        let refused = await batcher.publish(Array(messages.prefix(2)))
        #expect(refused.count == 2)
        for result in refused {
            guard case .failure(let error) = result else { Issue.record("expected a refusal"); continue }
            #expect(error.code == .shutDown)
        }
    }

    @Test("an endpoint reference is checked by the storing statement: SNS EndpointDisabled / PlatformApplicationDisabled / NotFound come back as typed errors")
    func endpointReference() async throws {
        let (fixture, account, endpoint, _) = try await Self.setUp()
        let batcher = PublishBatcher(pool: fixture.pool)
        defer { batcher.shutdown() }
        func publish(_ id: UUID, platform: String = "GCM", application: String = "app", account accountKey: Int64? = nil) async throws -> MessageID {
            try await batcher.publish(NewMessage(externalID: UUID(), accountKey: accountKey ?? account.key,
                                                 target: .endpointReference(id: id, platform: platform, application: application, arn: "arn:aws:sns:us-east-1:123456789012:endpoint/\(platform)/\(application)/\(id)"),
                                                 message: "m"))
        }
        let stored = try await publish(endpoint.externalID)
        let messages = MessageRepository(pool: fixture.pool)
        let row = try await messages.get(externalID: stored.externalID)
        #expect(row.targetKind == "endpoint" && row.targetKey == endpoint.key && !row.planned)
        #expect(try await messages.shards(messageKey: stored.key).isEmpty)
        let claimed = try await FanOutJobs(pool: fixture.pool).claim(owner: "d", limit: 5, leaseSeconds: 30)
        #expect(claimed.map(\.message) == [stored.key])
        #expect(try await messages.shards(messageKey: stored.key) == [ShardRecord(lo: endpoint.key - 1, hi: endpoint.key, checkpoint: endpoint.key - 1, state: "leased")])

        #expect(await storeError { _ = try await publish(UUID()) }?.code == .notFound)
        #expect(await storeError { _ = try await publish(endpoint.externalID, platform: "ADM") }?.code == .notFound)
        #expect(await storeError { _ = try await publish(endpoint.externalID, application: "other") }?.code == .notFound)
        let stranger = try await fixture.accounts.ensureAccount(accountID: "210987654321")
        #expect(await storeError { _ = try await publish(endpoint.externalID, account: stranger.key) }?.code == .notFound)

        _ = try await EndpointRepository(pool: fixture.pool).update(externalID: endpoint.externalID, EndpointChanges(enabled: false, disabledReason: "x"))
        #expect(await storeError { _ = try await publish(endpoint.externalID) }?.constraint == "endpoints_enabled")
        _ = try await PlatformApplicationRepository(pool: fixture.pool, masterKey: fixture.masterKey)
            .update(applicationKey: endpoint.applicationKey, enabled: false, disabledReason: "y")
        #expect(await storeError { _ = try await publish(endpoint.externalID) }?.constraint == "platform_applications_enabled")
        #expect(try PGConnection(conninfo: fixture.url).query("SELECT count(*) FROM messages").first?.int(0) == 1)
    }

    @Test("schema v9: messages and shards carry no foreign-key checks, yet deleting an account removes its messages and deleting a message its shards")
    func deletesCascadeWithoutForeignKeys() async throws {
        let (fixture, account, endpoint, _) = try await Self.setUp()
        let messages = MessageRepository(pool: fixture.pool)
        func publish(_ accountKey: Int64) async throws -> MessageID {
            try await messages.store(NewMessage(externalID: UUID(), accountKey: accountKey,
                                                target: .endpoint(key: endpoint.key, arn: "arn"), message: "m"))
        }
        let first = try await publish(account.key), second = try await publish(account.key)
        let other = try await fixture.accounts.ensureAccount(accountID: "210987654321")
        let kept = try await publish(other.key)
        // Their shards exist once a dispatcher claimed them (schema v10).
        #expect(try await FanOutJobs(pool: fixture.pool).claim(owner: "d", limit: 5, leaseSeconds: 30).count == 3)
        #expect(try fixture.raw("""
            SELECT count(*) FROM pg_constraint WHERE contype = 'f' AND conrelid IN ('messages'::regclass, 'fanout_shards'::regclass)
              AND confrelid IN ('accounts'::regclass, 'messages'::regclass)
            """)?.int(0) == 0)

        _ = try fixture.raw("DELETE FROM messages WHERE id = $1", [first.key])
        #expect(try await messages.shards(messageKey: first.key).isEmpty)
        #expect(try await messages.shards(messageKey: second.key).count == 1)

        _ = try fixture.raw("DELETE FROM accounts WHERE id = $1", [account.key])
        #expect(try fixture.raw("SELECT count(*) FROM messages WHERE account = $1", [account.key])?.int(0) == 0)
        #expect(try await messages.shards(messageKey: second.key).isEmpty)
        #expect(try await messages.get(externalID: kept.externalID).accountKey == other.key)
        #expect(try await messages.shards(messageKey: kept.key).count == 1)
    }
}
