import ClarionCore
@testable import ClarionDispatch
import ClarionStore
import ClarionTestSupport
import Foundation
import Synchronization
import Testing

/// Every message reaches a final state even when what it targets is deleted or disabled while it is being sent
/// (issue 22, finding 10): deleting a platform application with a retry pending left its message `Processing` for
/// good, because the retry row went with the endpoints and nothing else would finish the message.
@Suite("A message always finishes", .serialized)
struct VanishedTargetTests {
    /// First attempts get a 503 with a Retry-After long enough that the retry is still waiting when the test
    /// deletes or disables something; later attempts are accepted.
    static func retryOnce(after seconds: Double) -> @Sendable (String, Int) -> DeliveryOutcome {
        { _, attempt in attempt == 1 ? .retryable(reason: "Unavailable", retryAfter: seconds) : .accepted(providerID: nil) }
    }

    /// Waits until every shard of the message is done and `retries` retries wait: the state the finding started from.
    func waitForPendingRetries(_ fixture: FanOutFixture, _ message: Int64, retries: Int64) async throws -> MessageStatus {
        let deadline = Date().addingTimeInterval(20)
        while true {
            let status = try await fixture.status(message)
            if status.shards > 0, status.shardsDone == status.shards, status.pendingRetries == retries { return status }
            if Date() > deadline {
                Issue.record("retries never pending: \(status)")
                return status
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    func failureLogRows(_ fixture: FanOutFixture, _ message: Int64, response: String) throws -> Int64 {
        try fixture.connection().query(
            "SELECT count(*) FROM delivery_log WHERE message = $1 AND status = 'FAILURE' AND provider_response = $2",
            [message, response]).first!.int64(0)!
    }

    @Test("a platform application deleted while its deliveries wait for a retry: the messages fail with PlatformApplicationDeleted")
    func applicationDeletedWithRetryPending() async throws {
        var fixture = try FanOutFixture()
        try fixture.addApplication("android", platform: "GCM")
        try fixture.addEndpoints("android", prefix: "and-", count: 20)
        try fixture.addEndpoints("android", prefix: "solo-", count: 1, subscribe: false)
        let transport = RecordingTransport(rule: Self.retryOnce(after: 30))
        let dispatcher = RunningDispatcher(Dispatcher(
            pool: fixture.pool, directory: TestDirectory(transports: ["android": transport]),
            configuration: testConfiguration(owner: "node-a")))
        let topicMessage = try fixture.publishToTopic()
        let direct = try fixture.publishToEndpoint(token: "solo-1")
        _ = try await waitForPendingRetries(fixture, topicMessage, retries: 20)
        _ = try await waitForPendingRetries(fixture, direct, retries: 1)

        try fixture.connection().query("DELETE FROM platform_applications WHERE id = $1", [fixture.applications["android"]!])
        let statuses = try await fixture.waitForAllFinal([topicMessage, direct], timeout: 15)
        await dispatcher.stop()

        let (topic, one) = (statuses[0], statuses[1])
        #expect(topic.state == .failed)
        #expect(topic.counters.failed == 20)
        #expect(topic.counters.retried == 20)
        #expect(topic.failuresByReason == ["PlatformApplicationDeleted": 20])
        #expect(topic.pendingRetries == 0)
        #expect(one.state == .failed)
        #expect(one.failuresByReason == ["PlatformApplicationDeleted": 1])
        #expect(try failureLogRows(fixture, topicMessage, response: "rejected: PlatformApplicationDeleted") == 20)
        #expect(try failureLogRows(fixture, direct, response: "rejected: PlatformApplicationDeleted") == 1)
        #expect(transport.sendCount == 21)  // no second attempt went anywhere
    }

    @Test("an endpoint deleted while its delivery waits for a retry: the message finishes, that delivery failed with EndpointDeleted")
    func endpointDeletedWithRetryPending() async throws {
        var fixture = try FanOutFixture()
        try fixture.addApplication("android", platform: "GCM")
        try fixture.addEndpoints("android", prefix: "and-", count: 10)
        let transport = RecordingTransport { token, _ in
            token == "and-3" ? .retryable(reason: "Unavailable", retryAfter: 30) : .accepted(providerID: nil)
        }
        let dispatcher = RunningDispatcher(Dispatcher(
            pool: fixture.pool, directory: TestDirectory(transports: ["android": transport]),
            configuration: testConfiguration(owner: "node-a")))
        let message = try fixture.publishToTopic()
        _ = try await waitForPendingRetries(fixture, message, retries: 1)

        try fixture.connection().query("DELETE FROM endpoints WHERE token = 'and-3'")
        let status = try await fixture.waitForFinal(message, timeout: 15)
        await dispatcher.stop()

        #expect(status.state == .completed)
        #expect(status.counters.accepted == 9)
        #expect(status.counters.failed == 1)
        #expect(status.failuresByReason == ["EndpointDeleted": 1])
        #expect(status.pendingRetries == 0)
        #expect(try failureLogRows(fixture, message, response: "rejected: EndpointDeleted") == 1)
        #expect(transport.sendCount == 10)
    }

    @Test("an endpoint deleted between its send and the checkpoint that schedules its retry: the checkpoint holds, the message finishes")
    func endpointDeletedBeforeCheckpoint() async throws {
        var fixture = try FanOutFixture()
        try fixture.addApplication("android", platform: "GCM")
        try fixture.addEndpoints("android", prefix: "and-", count: 10)
        let url = fixture.url
        // The provider answers 503 for and-5, and the endpoint is deleted before that answer is checkpointed.
        let transport = RecordingTransport { token, _ in
            guard token == "and-5" else { return .accepted(providerID: nil) }
            _ = try? PGConnection(conninfo: url).query("DELETE FROM endpoints WHERE token = 'and-5'")
            return .retryable(reason: "Unavailable", retryAfter: nil)
        }
        var configuration = testConfiguration(owner: "node-a")
        let errors = Mutex<[String]>([])
        configuration.log = Log("test") { level, message, fields in
            if level == .error { errors.withLock { $0.append("\(message) \(fields)") } }
        }
        let dispatcher = RunningDispatcher(Dispatcher(
            pool: fixture.pool, directory: TestDirectory(transports: ["android": transport]), configuration: configuration))
        let message = try fixture.publishToTopic()
        let status = try await fixture.waitForFinal(message, timeout: 15)
        await dispatcher.stop()

        #expect(status.state == .completed)
        #expect(status.counters.accepted == 9)
        #expect(status.failuresByReason == ["EndpointDeleted": 1])
        #expect(transport.sendCount == 10)  // sent once: the checkpoint did not fail and resend the shard
        #expect(errors.withLock { $0 }.isEmpty, "\(errors.withLock { $0 })")
    }

    @Test("an endpoint deleted while its retry is being sent, and the answer is another 503: the message finishes at once, not after that backoff")
    func endpointDeletedDuringRetrySend() async throws {
        var fixture = try FanOutFixture()
        try fixture.addApplication("android", platform: "GCM")
        try fixture.addEndpoints("android", prefix: "and-", count: 10)
        let url = fixture.url
        let transport = RecordingTransport { token, attempt in
            guard token == "and-4" else { return .accepted(providerID: nil) }
            if attempt == 1 { return .retryable(reason: "Unavailable", retryAfter: 0.2) }
            _ = try? PGConnection(conninfo: url).query("DELETE FROM endpoints WHERE token = 'and-4'")
            return .retryable(reason: "Unavailable", retryAfter: 30)
        }
        let dispatcher = RunningDispatcher(Dispatcher(
            pool: fixture.pool, directory: TestDirectory(transports: ["android": transport]),
            configuration: testConfiguration(owner: "node-a")))
        let message = try fixture.publishToTopic()
        let status = try await fixture.waitForFinal(message, timeout: 10)
        await dispatcher.stop()

        #expect(status.state == .completed)
        #expect(status.counters.accepted == 9)
        #expect(status.failuresByReason == ["EndpointDeleted": 1])
        #expect(status.pendingRetries == 0)
        #expect(transport.sendCount == 11)
    }

    @Test("a platform application disabled while its deliveries wait for a retry: the messages fail with PlatformApplicationDisabled, nothing more is sent")
    func applicationDisabledWithRetryPending() async throws {
        var fixture = try FanOutFixture()
        try fixture.addApplication("android", platform: "GCM")
        try fixture.addEndpoints("android", prefix: "and-", count: 20)
        // 6 s: past the dispatcher's 5 s cache of an application's lane, so the retry reads the application again.
        let transport = RecordingTransport(rule: Self.retryOnce(after: 6))
        let dispatcher = RunningDispatcher(Dispatcher(
            pool: fixture.pool, directory: TestDirectory(transports: ["android": transport]),
            configuration: testConfiguration(owner: "node-a")))
        let message = try fixture.publishToTopic()
        _ = try await waitForPendingRetries(fixture, message, retries: 20)

        try fixture.connection().query("""
            UPDATE platform_applications SET enabled = false, disabled_reason = 'operator', disabled_at = now() WHERE id = $1
            """, [fixture.applications["android"]!])
        let status = try await fixture.waitForFinal(message, timeout: 20)
        await dispatcher.stop()

        #expect(status.state == .failed)
        #expect(status.failuresByReason == ["PlatformApplicationDisabled": 20])
        #expect(status.pendingRetries == 0)
        #expect(transport.sendCount == 20)
    }

    @Test("subscriptions deleted during a fan-out, and a topic deleted during another: both messages finish")
    func topicAndSubscriptionsDeletedDuringFanOut() async throws {
        var fixture = try FanOutFixture()
        try fixture.addApplication("android", platform: "GCM")
        try fixture.addEndpoints("android", prefix: "and-", count: 1_000)
        // Slow enough (20 in flight, answered after 50 ms: about 400 a second) and read in small pages, so the
        // deletes land mid-fan-out with most targets not read yet.
        let transport = RecordingTransport(latency: 0.05)
        var configuration = testConfiguration(owner: "node-a", inFlight: 20, shardSize: 1_000)
        configuration.pageSize = 50
        let dispatcher = RunningDispatcher(Dispatcher(
            pool: fixture.pool, directory: TestDirectory(transports: ["android": transport]), configuration: configuration))
        let c = try fixture.connection()

        let first = try fixture.publishToTopic()
        try await waitForSends(fixture, first, atLeast: 100)
        let removed = try c.query("DELETE FROM subscriptions WHERE endpoint % 2 = 0").affectedRows
        let afterSubscriptions = try await fixture.waitForFinal(first, timeout: 30)

        let second = try fixture.publishToTopic()
        try await waitForSends(fixture, second, atLeast: 100)
        try c.query("DELETE FROM topics WHERE id = $1", [fixture.topic])
        let afterTopic = try await fixture.waitForFinal(second, timeout: 30)
        await dispatcher.stop()

        #expect(removed == 500)
        #expect(afterSubscriptions.state == .completed)
        #expect(afterSubscriptions.shardsDone == afterSubscriptions.shards)
        #expect(afterSubscriptions.pendingRetries == 0)
        #expect(afterSubscriptions.counters.accepted >= 100)
        #expect(afterSubscriptions.counters.accepted < 900)  // subscriptions deleted before they were read were not sent
        #expect(afterTopic.state == .completed)
        #expect(afterTopic.shardsDone == afterTopic.shards)
        #expect(afterTopic.counters.accepted >= 100)
        #expect(afterTopic.counters.accepted < 400)  // of the 500 left
    }

    @Test("a direct message whose endpoint is deleted before any dispatcher takes it fails with EndpointDeleted; a topic message whose topic is deleted completes empty")
    func deletedBeforeClaim() async throws {
        var fixture = try FanOutFixture()
        try fixture.addApplication("android", platform: "GCM")
        try fixture.addEndpoints("android", prefix: "and-", count: 10)
        let direct = try fixture.publishToEndpoint(token: "and-3")
        let topicMessage = try fixture.publishToTopic()
        let c = try fixture.connection()
        try c.query("DELETE FROM endpoints WHERE token = 'and-3'")
        try c.query("DELETE FROM topics WHERE id = $1", [fixture.topic])
        let transport = RecordingTransport()
        let dispatcher = RunningDispatcher(Dispatcher(
            pool: fixture.pool, directory: TestDirectory(transports: ["android": transport]),
            configuration: testConfiguration(owner: "node-a")))
        let statuses = try await fixture.waitForAllFinal([direct, topicMessage], timeout: 10)
        await dispatcher.stop()

        let (one, topic) = (statuses[0], statuses[1])
        #expect(one.state == .failed)  // not a Completed message that says nothing
        #expect(one.counters.failed == 1)
        #expect(one.failuresByReason == ["EndpointDeleted": 1])
        #expect(try failureLogRows(fixture, direct, response: "rejected: EndpointDeleted") == 1)
        #expect(topic.state == .completed)  // as an empty topic: nothing was targeted
        #expect(topic.shards == 0)
        #expect(transport.sendCount == 0)
    }

    func waitForSends(_ fixture: FanOutFixture, _ message: Int64, atLeast: Int64) async throws {
        let deadline = Date().addingTimeInterval(20)
        while try await fixture.status(message).counters.sent < atLeast, Date() < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
    }
}
