import ClarionStore
import ClarionTestSupport
import Foundation
import Testing

/// The job-queue SQL on its own: planning, claims under fenced leases, checkpoints, finishing.
@Suite("Fan-out job queue")
struct FanOutJobsTests {
    struct Seed {
        let url: String
        let pool: PGPool
        let jobs: FanOutJobs
        let topic: Int64
        let account: Int64

        init(subscriptions: Int) throws {
            url = try TestPostgres.migratedDatabase(prefix: "jobs")
            pool = PGPool(conninfo: url, size: 4)
            jobs = FanOutJobs(pool: pool)
            let c = try PGConnection(conninfo: url)
            account = try c.query("INSERT INTO accounts (account_id) VALUES ('123456789012') RETURNING id").first!.int64(0)!
            let app = try c.query("""
                INSERT INTO platform_applications (account, name, platform) VALUES ($1, 'a', 'GCM') RETURNING id
                """, [account]).first!.int64(0)!
            topic = try c.query("INSERT INTO topics (account, name) VALUES ($1, 't') RETURNING id", [account]).first!.int64(0)!
            try c.query("""
                INSERT INTO endpoints (external_id, application, token) SELECT gen_random_uuid(), $1, 'k' || g
                FROM generate_series(1, $2) g
                """, [app, subscriptions])
            try c.query("""
                INSERT INTO subscriptions (external_id, topic, protocol, endpoint)
                SELECT gen_random_uuid(), $1, 'application', id FROM endpoints ORDER BY id
                """, [topic])
        }

        func publish() throws -> Int64 {
            try PGConnection(conninfo: url).query("""
                INSERT INTO messages (external_id, account, target_kind, target_id, message)
                VALUES (gen_random_uuid(), $1, 'topic', $2, 'x') RETURNING id
                """, [account, topic]).first!.int64(0)!
        }

        func shards(_ message: Int64) throws -> [(lo: Int64, hi: Int64, planned: Int64)] {
            try PGConnection(conninfo: url).query(
                "SELECT lo, hi, planned_targets FROM fanout_shards WHERE message = $1 ORDER BY lo", [message]).rows
                .map { ($0.int64(0)!, $0.int64(1)!, $0.int64(2)!) }
        }
    }

    @Test("planning walks the (topic, id) index into shards of the given size, once")
    func planning() async throws {
        let seed = try Seed(subscriptions: 25)
        let message = try seed.publish()
        #expect(try await seed.jobs.planPending(shardSize: 10) == 1)
        #expect(try await seed.jobs.planPending(shardSize: 10) == 0)
        let ids = try PGConnection(conninfo: seed.url).query("SELECT id FROM subscriptions ORDER BY id").rows.map { $0.int64(0)! }
        let shards = try seed.shards(message)
        #expect(shards.map(\.lo) == [0, ids[9], ids[19]])
        #expect(shards.map(\.hi) == [ids[9], ids[19], ids[24]])
        #expect(shards.map(\.planned) == [10, 10, 5])
    }

    @Test("concurrent claims get different shards; an expired lease is taken over and the old holder's checkpoint is refused")
    func claimsAndFencing() async throws {
        let seed = try Seed(subscriptions: 30)
        let message = try seed.publish()
        try await seed.jobs.planPending(shardSize: 10)
        async let a = seed.jobs.claim(owner: "a", limit: 2, leaseSeconds: 30)
        async let b = seed.jobs.claim(owner: "b", limit: 2, leaseSeconds: 30)
        let (fromA, fromB) = try await (a, b)
        #expect(fromA.count + fromB.count == 3)
        #expect(Set(fromA.map(\.shard)).isDisjoint(with: fromB.map(\.shard)))
        #expect(try await seed.jobs.claim(owner: "c", limit: 5, leaseSeconds: 30).isEmpty)

        // Let the first claim's lease expire; "c" takes it over.
        let old = (fromA + fromB)[0]
        try PGConnection(conninfo: seed.url).query(
            "UPDATE fanout_shards SET lease_expires_at = now() - interval '1 second' WHERE id = $1", [old.shard])
        let taken = try await seed.jobs.claim(owner: "c", limit: 5, leaseSeconds: 30)
        #expect(taken.map(\.shard) == [old.shard])
        #expect(taken[0].claim == old.claim + 1)

        var effects = OutcomeEffects()
        effects.counters.accepted = 5
        let refused = try await seed.jobs.checkpoint(old, message: message, checkpoint: old.lo + 5, effects: effects,
                                                     lease: .renew(seconds: 30))
        #expect(refused == .leaseLost)
        let row = try PGConnection(conninfo: seed.url).query(
            "SELECT accepted, checkpoint, lease_owner FROM fanout_shards WHERE id = $1", [old.shard]).first!
        #expect(row.int64(0) == 0)
        #expect(row.int64(1) == old.lo)
        #expect(row.string(2) == "c")
    }

    @Test("the last shard to finish completes the message with the summed counters; a pending retry holds it open")
    func finishing() async throws {
        let seed = try Seed(subscriptions: 20)
        let message = try seed.publish()
        try await seed.jobs.planPending(shardSize: 10)
        let claims = try await seed.jobs.claim(owner: "a", limit: 2, leaseSeconds: 30)
        #expect(claims.count == 2)
        var first = OutcomeEffects()
        first.counters = DeliveryCounters(targeted: 10, sent: 10, accepted: 10)
        #expect(try await seed.jobs.checkpoint(claims[0], message: message, checkpoint: claims[0].hi, effects: first,
                                               lease: .finish) == .applied(finishedMessage: nil))
        let endpoint = try PGConnection(conninfo: seed.url).query("SELECT min(id) FROM endpoints").first!.int64(0)!
        var second = OutcomeEffects()
        second.counters = DeliveryCounters(targeted: 10, sent: 10, accepted: 9, retried: 1)
        second.retries = [RetrySchedule(endpoint: endpoint, attempt: 1, notBefore: Date(), reason: "Unavailable")]
        #expect(try await seed.jobs.checkpoint(claims[1], message: message, checkpoint: claims[1].hi, effects: second,
                                               lease: .finish) == .applied(finishedMessage: nil))
        #expect(try await seed.jobs.messageStatus(key: message)?.state == .processing)

        // Handed back unsent (over the send rate): due later, unleased, the same attempt, the message still open.
        let held = try await seed.jobs.claimDueRetries(owner: "r", limit: 10, leaseSeconds: 30)
        #expect(held.count == 1)
        let later = Date().addingTimeInterval(0.3)
        #expect(try await seed.jobs.completeRetries(
            message: message, owner: "r", finished: [], deferred: [.init(id: held[0].id, notBefore: later)],
            shardCounters: [:], shardFailures: [:], effects: OutcomeEffects()) == nil, "not finished: the retry is pending")
        #expect(try await seed.jobs.claimDueRetries(owner: "r", limit: 10, leaseSeconds: 30).isEmpty)
        let row = try PGConnection(conninfo: seed.url).query(
            "SELECT attempt, lease_owner IS NULL, abs(extract(epoch FROM not_before) - $2) < 0.01 FROM delivery_retries WHERE id = $1",
            [held[0].id, later.timeIntervalSince1970]).first!
        #expect(row.int(0) == 1 && row.bool(1) == true && row.bool(2) == true)
        try await Task.sleep(for: .milliseconds(400))

        let due = try await seed.jobs.claimDueRetries(owner: "r", limit: 10, leaseSeconds: 30)
        #expect(due.count == 1)
        #expect(due[0].shard == claims[1].shard)
        let state = try await seed.jobs.completeRetries(
            message: message, owner: "r", finished: [due[0].id],
            shardCounters: [claims[1].shard: DeliveryCounters(sent: 1, accepted: 1)], shardFailures: [:],
            effects: OutcomeEffects())
        #expect(state == .completed)
        let status = try await seed.jobs.messageStatus(key: message)!
        #expect(status.counters == DeliveryCounters(targeted: 20, sent: 21, accepted: 20, retried: 1))
        #expect(status.pendingRetries == 0)
        #expect(status.completedAt != nil)
        #expect(status.progress == 1)
    }

    @Test("delivery-log maintenance makes the coming days' partitions and drops the expired ones")
    func deliveryLogPartitions() async throws {
        let seed = try Seed(subscriptions: 1)
        let now = Date(timeIntervalSince1970: 1_800_000_000)  // 2027-01-15 08:00 UTC
        let c = try PGConnection(conninfo: seed.url)
        try c.execute("""
            CREATE TABLE delivery_log_20261201 PARTITION OF delivery_log FOR VALUES FROM ('2026-12-01') TO ('2026-12-02')
            """)
        try c.query("INSERT INTO delivery_log (logged_at, message, endpoint, status) VALUES ($1, 1, 1, 'FAILURE')",
                    [now.addingTimeInterval(-40 * 86_400)])
        try c.query("INSERT INTO delivery_log (logged_at, message, endpoint, status) VALUES ($1, 1, 1, 'FAILURE')",
                    [now.addingTimeInterval(-2 * 86_400)])
        let first = try await seed.jobs.maintainDeliveryLog(retentionDays: 30, daysAhead: 2, now: now)
        #expect(first.partitionsCreated == ["delivery_log_20270115", "delivery_log_20270116", "delivery_log_20270117"])
        #expect(first.partitionsDropped == ["delivery_log_20261201"])
        #expect(first.defaultRowsDeleted == 1)
        let again = try await seed.jobs.maintainDeliveryLog(retentionDays: 30, daysAhead: 2, now: now)
        #expect(again.partitionsCreated.isEmpty && again.partitionsDropped.isEmpty && again.defaultRowsDeleted == 0)
        try c.query("INSERT INTO delivery_log (logged_at, message, endpoint, status) VALUES ($1, 1, 1, 'SUCCESS')", [now])
        #expect(try c.query("SELECT count(*) FROM delivery_log_20270115").first?.int64(0) == 1)
        #expect(try c.query("SELECT count(*) FROM delivery_log").first?.int64(0) == 2)
    }
}
