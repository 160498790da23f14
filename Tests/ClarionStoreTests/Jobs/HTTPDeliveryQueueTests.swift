@testable import ClarionStore
import ClarionTestSupport
import Foundation
import Testing

/// The durable HTTP/S delivery queue on real PostgreSQL (schema v17): a subscription's confirmation is queued with
/// it, only confirmed subscriptions get a Notification row when a topic message is planned, retries wait for their
/// time, and a message finishes only when its HTTP deliveries have (docs/providers.md C.11, docs/architecture.md).
@Suite("HTTP/S delivery queue")
struct HTTPDeliveryQueueTests {
    struct Seed {
        let url: String
        let pool: PGPool
        let queue: HTTPDeliveryQueue
        let subscriptions: SubscriptionRepository
        let topic: Int64
        let account: Int64

        init() throws {
            url = try TestPostgres.migratedDatabase(prefix: "httpq")
            pool = PGPool(conninfo: url, size: 4)
            queue = HTTPDeliveryQueue(pool: pool)
            subscriptions = SubscriptionRepository(pool: pool)
            let c = try PGConnection(conninfo: url)
            account = try c.query("INSERT INTO accounts (account_id) VALUES ('123456789012') RETURNING id").first!.int64(0)!
            topic = try c.query("INSERT INTO topics (account, region, name) VALUES ($1, 'us-east-1', 'events') RETURNING id", [account]).first!.int64(0)!
        }

        func publish(_ text: String) throws -> Int64 {
            try PGConnection(conninfo: url).query("""
                INSERT INTO messages (external_id, account, target_kind, target_id, message, subject)
                VALUES (gen_random_uuid(), $1, 'topic', $2, $3, 'S') RETURNING id
                """, [account, topic, text]).first!.int64(0)!
        }

        func claim() throws -> [HTTPDeliveryClaim] { try queue.claimBlocking(limit: 10, leaseSeconds: 30) }
    }

    @Test("Subscribing queues the confirmation in the same transaction; subscribing again while pending queues another")
    func confirmationQueued() async throws {
        let seed = try Seed()
        defer { seed.pool.shutdown() }
        let (record, created) = try await seed.subscriptions.subscribeHTTP(
            topicKey: seed.topic, protocol: "https", url: "https://example.com/hook", externalID: UUID(), token: "t1",
            filterPolicy: nil, attributes: [:])
        #expect(created && record.pendingConfirmation && record.protocol == "https")
        let claimed = try seed.claim()
        #expect(claimed.map(\.kind) == [.subscriptionConfirmation])
        #expect(claimed.first?.token == "t1" && claimed.first?.topicName == "events" && claimed.first?.accountID == "123456789012")
        // Leased: a second claim does not take it again.
        #expect(try seed.claim().isEmpty)
        let (again, createdAgain) = try await seed.subscriptions.subscribeHTTP(
            topicKey: seed.topic, protocol: "https", url: "https://example.com/hook", externalID: UUID(), token: "t2",
            filterPolicy: nil, attributes: [:])
        #expect(!createdAgain && again.externalID == record.externalID)
        #expect(try seed.claim().map(\.kind) == [.subscriptionConfirmation])
    }

    @Test("Only confirmed subscriptions get a Notification row when a topic message is planned")
    func onlyConfirmedGetNotifications() async throws {
        let seed = try Seed()
        defer { seed.pool.shutdown() }
        for (index, token) in ["a", "b"].enumerated() {
            _ = try await seed.subscriptions.subscribeHTTP(
                topicKey: seed.topic, protocol: "http", url: "http://example.com/\(index)", externalID: UUID(), token: token,
                filterPolicy: nil, attributes: [:])
        }
        for c in try seed.claim() { try seed.queue.finishBlocking(id: c.id, messageKey: nil, result: .delivered(status: 200)) }
        let confirmed = try await seed.subscriptions.confirm(token: "a")
        #expect(!confirmed.pendingConfirmation)
        await #expect(throws: StoreError.self) { try await seed.subscriptions.confirm(token: "nope") }

        let message = try seed.publish("hello")
        try await FanOutJobs(pool: seed.pool).planPending()
        let claimed = try seed.claim()
        #expect(claimed.count == 1)
        let n = try #require(claimed.first)
        #expect(n.kind == .notification && n.messageKey == message && n.url == "http://example.com/0")
        #expect(n.message == "hello" && n.subject == "S" && n.subscriptionID == confirmed.externalID)
    }

    @Test("A retry waits for its time; the message finishes only when its HTTP deliveries have, and counts them")
    func retriesAndFinishing() async throws {
        let seed = try Seed()
        defer { seed.pool.shutdown() }
        _ = try await seed.subscriptions.subscribeHTTP(
            topicKey: seed.topic, protocol: "http", url: "http://example.com/x", externalID: UUID(), token: "tok",
            filterPolicy: nil, attributes: [:])
        for c in try seed.claim() { try seed.queue.finishBlocking(id: c.id, messageKey: nil, result: .delivered(status: 200)) }
        _ = try await seed.subscriptions.confirm(token: "tok")
        let message = try seed.publish("m")
        let jobs = FanOutJobs(pool: seed.pool)
        try await jobs.planPending()
        // The shard spans the HTTP subscription, which no shard worker delivers: mark it done as a worker would.
        try PGConnection(conninfo: seed.url).query("UPDATE fanout_shards SET state = 'done' WHERE message = $1", [message])

        let first = try #require(try seed.claim().first)
        try seed.queue.finishBlocking(id: first.id, messageKey: message,
                                      result: .retry(at: Date().addingTimeInterval(3600), reason: "HTTP 500", status: 500))
        #expect(try seed.claim().isEmpty)  // not due
        var status = try #require(try await jobs.messageStatus(key: message))
        #expect(status.counters.targeted == 1 && status.counters.sent == 1 && status.pendingRetries == 1)
        // Finishing the shards does not finish the message while an HTTP delivery is pending.
        try await seed.pool.transaction { (c) throws(StoreError) in _ = try FanOutJobs.finishIfDone(c, messages: [message]) }
        #expect(try await jobs.messageStatus(key: message)?.state != .completed)

        try PGConnection(conninfo: seed.url).query("UPDATE http_deliveries SET not_before = now() WHERE message = $1", [message])
        let second = try #require(try seed.claim().first)
        #expect(second.attempts == 1)
        try seed.queue.finishBlocking(id: second.id, messageKey: message, result: .failed(reason: "HTTP 500", status: 500))
        status = try #require(try await jobs.messageStatus(key: message))
        #expect(status.state == .failed)
        #expect(status.counters.failed == 1 && status.counters.retried == 1 && status.counters.accepted == 0)
        #expect(status.failuresByReason == [FanOutJobs.httpFailureReason: 1])
    }

    @Test("Unsubscribing while a delivery waits for its retry finishes the message it held open")
    func unsubscribeFinishesHeldMessages() async throws {
        let seed = try Seed()
        defer { seed.pool.shutdown() }
        let (record, _) = try await seed.subscriptions.subscribeHTTP(
            topicKey: seed.topic, protocol: "http", url: "http://example.com/y", externalID: UUID(), token: "tk",
            filterPolicy: nil, attributes: [:])
        for c in try seed.claim() { try seed.queue.finishBlocking(id: c.id, messageKey: nil, result: .delivered(status: 200)) }
        _ = try await seed.subscriptions.confirm(token: "tk")
        let message = try seed.publish("m")
        let jobs = FanOutJobs(pool: seed.pool)
        try await jobs.planPending()
        try PGConnection(conninfo: seed.url).query("UPDATE fanout_shards SET state = 'done' WHERE message = $1", [message])
        let first = try #require(try seed.claim().first)
        try seed.queue.finishBlocking(id: first.id, messageKey: message,
                                      result: .retry(at: Date().addingTimeInterval(3600), reason: "HTTP 503", status: 503))
        #expect(try await jobs.messageStatus(key: message)?.state != .completed)
        #expect(try await seed.subscriptions.unsubscribe(externalID: record.externalID))
        #expect(try await jobs.messageStatus(key: message)?.state == .completed)
    }
}
