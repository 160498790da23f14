@testable import ClarionStore
import ClarionTestSupport
import Foundation
import Synchronization
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
                INSERT INTO platform_applications (account, region, name, platform) VALUES ($1, 'us-east-1', 'a', 'GCM') RETURNING id
                """, [account]).first!.int64(0)!
            topic = try c.query("INSERT INTO topics (account, region, name) VALUES ($1, 'us-east-1', 't') RETURNING id", [account]).first!.int64(0)!
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

        /// A direct publish through the publish path's statement.
        func publishDirect(_ endpoint: Int64) async throws -> Int64 {
            try await MessageRepository(pool: pool).store(NewMessage(
                externalID: UUID(), accountKey: account, target: .endpoint(key: endpoint, arn: "arn:e"), message: "d")).key
        }

        func endpoints() throws -> [Int64] {
            try PGConnection(conninfo: url).query("SELECT id FROM endpoints ORDER BY id").rows.map { $0.int64(0)! }
        }

        func shardCount(_ message: Int64) throws -> Int64 {
            try PGConnection(conninfo: url).query("SELECT count(*) FROM fanout_shards WHERE message = $1", [message])
                .first!.int64(0)!
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
        #expect(refused.result == .leaseLost && refused.report.isEmpty)
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
                                               lease: .finish).result == .applied(finishedMessage: nil))
        let endpoint = try PGConnection(conninfo: seed.url).query("SELECT min(id) FROM endpoints").first!.int64(0)!
        var second = OutcomeEffects()
        second.counters = DeliveryCounters(targeted: 10, sent: 10, accepted: 9, retried: 1)
        second.retries = [RetrySchedule(endpoint: endpoint, attempt: 1, notBefore: Date(), reason: "Unavailable")]
        #expect(try await seed.jobs.checkpoint(claims[1], message: message, checkpoint: claims[1].hi, effects: second,
                                               lease: .finish).result == .applied(finishedMessage: nil))
        #expect(try await seed.jobs.messageStatus(key: message)?.state == .processing)

        // Handed back unsent (over the send rate): due later, unleased, the same attempt, the message still open.
        let held = try await seed.jobs.claimDueRetries(owner: "r", limit: 10, leaseSeconds: 30)
        #expect(held.count == 1)
        let later = Date().addingTimeInterval(0.3)
        #expect(try await seed.jobs.completeRetries(
            message: message, owner: "r", finished: [], deferred: [.init(id: held[0].id, notBefore: later)],
            shardCounters: [:], shardFailures: [:], effects: OutcomeEffects()).state == nil, "not finished: the retry is pending")
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
            effects: OutcomeEffects()).state
        #expect(state == .completed)
        let status = try await seed.jobs.messageStatus(key: message)!
        #expect(status.counters == DeliveryCounters(targeted: 20, sent: 21, accepted: 20, retried: 1))
        #expect(status.pendingRetries == 0)
        #expect(status.completedAt != nil)
        #expect(status.progress == 1)
    }

    // Regression (issue 22, provider storm at 1M endpoints): every checkpoint that schedules a retry writes a
    // delivery_retries row, whose foreign key holds FOR KEY SHARE on the message row until commit; finishIfDone then
    // locked that row FOR UPDATE, which waits for every other such transaction. Two of them deadlocked (SQLSTATE
    // 40P01), and with every shard worker and the retry worker doing it the fan-out stopped for minutes.
    @Test("two transactions that each scheduled a retry for one message can both try to finish it: no deadlock, no wait")
    func finishingBesideRetriesDoesNotDeadlock() throws {
        let seed = try Seed(subscriptions: 2)
        let message = try seed.publish()
        let endpoints = try seed.endpoints()
        let url = seed.url
        let aInserted = DispatchSemaphore(value: 0), bInserted = DispatchSemaphore(value: 0), aDone = DispatchSemaphore(value: 0)
        let aResult = Mutex<String?>(nil)
        Thread.detachNewThread {
            do {
                let a = try Self.beginScheduling(url: url, message: message, endpoint: endpoints[0])
                aInserted.signal()
                bInserted.wait()
                _ = try FanOutJobs.finishIfDone(a, messages: [message])
                try a.execute("COMMIT")
                aResult.withLock { $0 = "ok" }
            } catch {
                aInserted.signal()
                aResult.withLock { $0 = "\(error)" }
            }
            aDone.signal()
        }
        aInserted.wait()
        let b = try Self.beginScheduling(url: url, message: message, endpoint: endpoints[1])
        bInserted.signal()
        let started = Date()
        var bResult = "ok"
        do {
            let finished = try FanOutJobs.finishIfDone(b, messages: [message])
            #expect(finished.states.isEmpty, "a retry is pending: the message stays open")
            try b.execute("COMMIT")
        } catch {
            bResult = "\(error)"
        }
        aDone.wait()
        #expect(aResult.withLock { $0 } == "ok")
        #expect(bResult == "ok")
        #expect(Date().timeIntervalSince(started) < 1, "finishing waited for a transaction that only references the message")
        #expect(try PGConnection(conninfo: url).query("SELECT count(*) FROM delivery_retries WHERE message = $1", [message])
            .first!.int64(0) == 2)
    }

    /// A transaction that has scheduled a retry for `endpoint` of `message` and is still open.
    static func beginScheduling(url: String, message: Int64, endpoint: Int64) throws -> PGConnection {
        let c = try PGConnection(conninfo: url)
        try c.execute("BEGIN")
        try c.execute("SET LOCAL lock_timeout = '5s'")  // a wait (the old lock) fails the test instead of hanging it
        try c.query("INSERT INTO delivery_retries (message, endpoint, attempt, not_before) VALUES ($1, $2, 1, now())",
                    [message, endpoint])
        return c
    }

    // Rule (no silent failure): a checkpoint reports what its own transaction disabled or gave up on, read back
    // from its UPDATEs: an endpoint or application already disabled is not reported again, a lost lease reports
    // nothing, and the report carries a token prefix, never the token.
    @Test("a checkpoint reports the endpoints and applications it disabled and the message it gave up on, once")
    func checkpointReportsWhatItDisabled() async throws {
        let seed = try Seed(subscriptions: 4)
        let message = try seed.publish()
        try await seed.jobs.planPending(shardSize: 2)
        let claims = try await seed.jobs.claim(owner: "a", limit: 2, leaseSeconds: 30).sorted { $0.lo < $1.lo }
        #expect(claims.count == 2)
        let endpoints = try seed.endpoints()
        let application = try PGConnection(conninfo: seed.url).query("SELECT id FROM platform_applications").first!.int64(0)!
        let at = Date(timeIntervalSince1970: 1_700_000_000)
        var effects = OutcomeEffects()
        effects.counters = DeliveryCounters(targeted: 2, sent: 2, failed: 2)
        effects.failures = ["Unregistered": 1, "THIRD_PARTY_AUTH_ERROR": 1]
        effects.disable = [EndpointDisable(endpoint: endpoints[0], token: "k1", reason: "Unregistered", at: at, providerStatus: 404)]
        effects.disableApplications = [ApplicationDisable(application: application, reason: "THIRD_PARTY_AUTH_ERROR", at: at,
                                                          providerStatus: 401)]
        let first = try await seed.jobs.checkpoint(claims[0], message: message, checkpoint: claims[0].hi, effects: effects, lease: .finish)
        #expect(first.result == .applied(finishedMessage: nil))
        let endpoint = try #require(first.report.endpoints.first)
        #expect(first.report.endpoints.count == 1)
        #expect(endpoint.endpoint == endpoints[0] && endpoint.accountID == "123456789012" && endpoint.applicationName == "a")
        #expect(endpoint.platform == "GCM" && endpoint.reason == "Unregistered" && endpoint.providerStatus == 404)
        #expect(endpoint.tokenPrefix == "k" && endpoint.disabledAt == at && endpoint.message == message)
        #expect(first.report.applications == [DisabledApplication(
            application: application, accountID: "123456789012", name: "a", platform: "GCM", reason: "THIRD_PARTY_AUTH_ERROR",
            providerStatus: 401, disabledAt: at, message: message)])
        #expect(first.report.messages.isEmpty, "the other shard is still open")

        // The same disables again (another worker saw the same refusals): already done, nothing reported.
        var again = effects
        again.counters = DeliveryCounters(targeted: 2, sent: 2, failed: 2)
        let second = try await seed.jobs.checkpoint(claims[1], message: message, checkpoint: claims[1].hi, effects: again, lease: .finish)
        #expect(second.result == .applied(finishedMessage: .failed))
        #expect(second.report.endpoints.isEmpty && second.report.applications.isEmpty)
        let given = try #require(second.report.messages.first)
        #expect(second.report.messages.count == 1)
        #expect(given.message == message && given.state == .failed && given.accountID == "123456789012" && given.targetKind == "topic")
        #expect(given.counters.failed == 4 && given.failuresByReason == ["Unregistered": 2, "THIRD_PARTY_AUTH_ERROR": 2])
        let events = try PGConnection(conninfo: seed.url).query("""
            SELECT count(*) FILTER (WHERE kind = 'EndpointDisabled'), count(*) FILTER (WHERE kind = 'PlatformApplicationDisabled'),
                max(detail->>'providerStatus') FILTER (WHERE kind = 'EndpointDisabled')
            FROM events
            """).first!
        #expect(events.int64(0) == 1 && events.int64(1) == 1 && events.string(2) == "404")
    }

    @Test("a direct publish has no shard and stays unplanned until claimed; the claim inserts its shard leased, as publish + claim used to leave it")
    func directClaimMakesShard() async throws {
        let seed = try Seed(subscriptions: 3)
        let endpoint = try seed.endpoints()[1]
        let message = try await seed.publishDirect(endpoint)
        #expect(try seed.shardCount(message) == 0)
        let before = try #require(try await seed.jobs.messageStatus(key: message))
        #expect(!before.planned && before.state == .enqueued && before.shards == 0 && before.plannedTargets == 1)
        #expect(try await seed.jobs.planPending() == 0, "direct messages are not the planner's")

        let claims = try await seed.jobs.claim(owner: "a", limit: 5, leaseSeconds: 30, maxPlannedTargets: 1)
        #expect(claims.count == 1)
        let claim = try #require(claims.first)
        #expect(claim.message == message && claim.lo == endpoint - 1 && claim.hi == endpoint)
        #expect(claim.checkpoint == endpoint - 1 && claim.claim == 1 && claim.owner == "a")
        #expect(claim.leaseExpiresAt > Date().addingTimeInterval(20))
        let row = try #require(try PGConnection(conninfo: seed.url).query("""
            SELECT id, lo, hi, checkpoint, planned_targets, state, lease_owner, claims, lease_expires_at > now() + interval '20 seconds',
                targeted + sent + accepted + failed + retried + skipped + expired
            FROM fanout_shards WHERE message = $1
            """, [message]).first)
        #expect(row.int64(0) == claim.shard && row.int64(1) == endpoint - 1 && row.int64(2) == endpoint)
        #expect(row.int64(3) == endpoint - 1 && row.int64(4) == 1 && row.string(5) == "leased" && row.string(6) == "a")
        #expect(row.int(7) == 1 && row.bool(8) == true && row.int64(9) == 0)
        let after = try #require(try await seed.jobs.messageStatus(key: message))
        #expect(after.planned && after.state == .processing && after.startedAt != nil)
        #expect(after.shards == 1 && after.plannedTargets == 1)
        #expect(try seed.shardCount(message) == 1)
        #expect(try await seed.jobs.claim(owner: "b", limit: 5, leaseSeconds: 30).isEmpty)

        // The shard is worked like any other: finishing it completes the message.
        var effects = OutcomeEffects()
        effects.counters = DeliveryCounters(targeted: 1, sent: 1, accepted: 1)
        #expect(try await seed.jobs.checkpoint(claim, message: message, checkpoint: claim.hi, effects: effects,
                                               lease: .finish).result == .applied(finishedMessage: .completed))
    }

    @Test("two claimers on their own connections never claim the same direct message, and together claim them all")
    func concurrentDirectClaims() async throws {
        let seed = try Seed(subscriptions: 20)
        var messages: [Int64] = []
        for endpoint in try seed.endpoints() {
            for _ in 0..<10 { messages.append(try await seed.publishDirect(endpoint)) }
        }
        func drain(_ owner: String) async throws -> [ShardClaim] {
            let jobs = FanOutJobs(pool: PGPool(conninfo: seed.url, size: 1))
            var out: [ShardClaim] = []
            while true {
                let claims = try await jobs.claim(owner: owner, limit: 7, leaseSeconds: 30)
                if claims.isEmpty { return out }
                out += claims
            }
        }
        async let a = drain("a")
        async let b = drain("b")
        let (fromA, fromB) = try await (a, b)
        #expect(Set(fromA.map(\.message)).isDisjoint(with: fromB.map(\.message)))
        #expect(fromA.count + fromB.count == messages.count)
        #expect(Set((fromA + fromB).map(\.message)) == Set(messages))
        let c = try PGConnection(conninfo: seed.url)
        #expect(try c.query("SELECT count(*) FROM fanout_shards").first?.int64(0) == Int64(messages.count))
        #expect(try c.query("SELECT count(DISTINCT message) FROM fanout_shards").first?.int64(0) == Int64(messages.count))
        #expect(try c.query("SELECT count(*) FROM messages WHERE NOT planned OR state <> 'Processing'").first?.int64(0) == 0)
    }

    @Test("claims take the oldest message first across topic shards and direct messages; small-shard claims skip the big shard")
    func oldestFirstAcrossSources() async throws {
        let seed = try Seed(subscriptions: 5)
        let endpoints = try seed.endpoints()
        let d0 = try await seed.publishDirect(endpoints[0])
        let topic = try seed.publish()
        let d1 = try await seed.publishDirect(endpoints[1])
        let d2 = try await seed.publishDirect(endpoints[2])
        #expect(try await seed.jobs.planPending(shardSize: 10) == 1)
        #expect(try await seed.jobs.claim(owner: "x", limit: 2, leaseSeconds: 30, maxPlannedTargets: 1).map(\.message) == [d0, d1])
        #expect(try await seed.jobs.claim(owner: "x", limit: 2, leaseSeconds: 30).map(\.message) == [topic, d2])
        #expect(try await seed.jobs.claim(owner: "x", limit: 2, leaseSeconds: 30).isEmpty)

        // The same order when the direct messages are older and newer than a ready topic shard, one claim.
        let seed2 = try Seed(subscriptions: 5)
        let e2 = try seed2.endpoints()
        let older = try await seed2.publishDirect(e2[0])
        let topic2 = try seed2.publish()
        let newer = try await seed2.publishDirect(e2[1])
        try await seed2.jobs.planPending(shardSize: 10)
        #expect(try await seed2.jobs.claim(owner: "y", limit: 2, leaseSeconds: 30).map(\.message) == [older, topic2])
        #expect(try await seed2.jobs.claim(owner: "y", limit: 2, leaseSeconds: 30).map(\.message) == [newer])
    }

    @Test("a direct message stored before schema v10 (planned, with a ready shard) is claimed once, through its shard")
    func directMessageFromV9() async throws {
        let seed = try Seed(subscriptions: 2)
        let endpoint = try seed.endpoints()[0]
        let c = try PGConnection(conninfo: seed.url)
        let message = try c.query("""
            INSERT INTO messages (external_id, account, target_kind, target_id, message, planned)
            VALUES (gen_random_uuid(), $1, 'endpoint', $2, 'old', true) RETURNING id
            """, [seed.account, endpoint]).first!.int64(0)!
        let shard = try c.query("""
            INSERT INTO fanout_shards (message, lo, hi, checkpoint, planned_targets) VALUES ($1, $2 - 1, $2, $2 - 1, 1) RETURNING id
            """, [message, endpoint]).first!.int64(0)!
        #expect(try await seed.jobs.planPending() == 0)
        let claims = try await seed.jobs.claim(owner: "a", limit: 5, leaseSeconds: 30, maxPlannedTargets: 1)
        #expect(claims.map(\.shard) == [shard])
        #expect(claims.first?.lo == endpoint - 1 && claims.first?.hi == endpoint && claims.first?.claim == 1)
        #expect(try await seed.jobs.claim(owner: "b", limit: 5, leaseSeconds: 30).isEmpty)
        #expect(try seed.shardCount(message) == 1)
        #expect(try await seed.jobs.messageStatus(key: message)?.state == .processing)
    }

    @Test("a claimed direct shard whose lease expired is claimed again through the shard, not made a second time")
    func expiredDirectLease() async throws {
        let seed = try Seed(subscriptions: 2)
        let message = try await seed.publishDirect(try seed.endpoints()[0])
        let first = try #require(try await seed.jobs.claim(owner: "a", limit: 5, leaseSeconds: 30).first)
        #expect(try await seed.jobs.claim(owner: "b", limit: 5, leaseSeconds: 30).isEmpty)
        try PGConnection(conninfo: seed.url).query(
            "UPDATE fanout_shards SET lease_expires_at = now() - interval '1 second' WHERE id = $1", [first.shard])
        let again = try await seed.jobs.claim(owner: "b", limit: 5, leaseSeconds: 30)
        #expect(again.map(\.shard) == [first.shard])
        #expect(again.first?.claim == 2 && again.first?.owner == "b" && again.first?.checkpoint == first.checkpoint)
        #expect(try seed.shardCount(message) == 1)
        #expect(try await seed.jobs.checkpoint(first, message: message, checkpoint: first.hi, effects: OutcomeEffects(),
                                               lease: .finish).result == .leaseLost)
    }

    @Test("a direct batch claim takes many direct messages oldest first with their message and endpoint; one batched checkpoint finishes them")
    func directBatchClaim() async throws {
        let seed = try Seed(subscriptions: 30)
        defer { seed.pool.shutdown() }
        let endpoints = try seed.endpoints()
        var messages: [Int64] = []
        for endpoint in endpoints { messages.append(try await seed.publishDirect(endpoint)) }
        let topic = try seed.publish()
        try await seed.jobs.planPending(shardSize: 100)
        // A v9-style direct message (planned, with a ready shard) and one whose endpoint is gone.
        let c = try PGConnection(conninfo: seed.url)
        let old = try c.query("""
            INSERT INTO messages (external_id, account, target_kind, target_id, message, planned)
            VALUES (gen_random_uuid(), $1, 'endpoint', $2, 'old', true) RETURNING id
            """, [seed.account, endpoints[0]]).first!.int64(0)!
        try c.query("""
            INSERT INTO fanout_shards (message, lo, hi, checkpoint, planned_targets) VALUES ($1, $2 - 1, $2, $2 - 1, 1)
            """, [old, endpoints[0]])
        let orphan = try await seed.publishDirect(endpoints[1])
        try c.query("DELETE FROM subscriptions WHERE endpoint = $1", [endpoints[1]])
        try c.query("DELETE FROM endpoints WHERE id = $1", [endpoints[1]])

        let first = try await seed.jobs.claimDirect(owner: "a", limit: 20, leaseSeconds: 30, staleBefore: nil)
        #expect(first.map(\.shard.message) == Array(messages.prefix(20)), "oldest first; the topic's shard is not taken")
        for claim in first {
            #expect(claim.shard.lo == claim.shard.hi - 1 && claim.shard.claim == 1 && claim.shard.owner == "a")
            #expect(claim.job.key == claim.shard.message && claim.job.message == "d" && claim.job.targetKind == .endpoint)
        }
        #expect(first[0].target?.endpoint == endpoints[0] && first[0].target?.token == "k1" && first[0].target?.enabled == true)
        #expect(first[1].target == nil, "the deleted endpoint has no target")
        let rest = try await seed.jobs.claimDirect(owner: "b", limit: 100, leaseSeconds: 30, staleBefore: nil)
        #expect(Set(rest.map(\.shard.message)) == Set(messages.dropFirst(20) + [old, orphan]))
        #expect(rest.first { $0.shard.message == orphan }?.target == nil)
        #expect(try await seed.jobs.claimDirect(owner: "c", limit: 100, leaseSeconds: 30, staleBefore: nil).isEmpty)
        #expect(try await seed.jobs.claim(owner: "c", limit: 10, leaseSeconds: 30).map(\.message) == [topic])

        // One checkpoint for the whole first batch: one member's lease was taken over meanwhile.
        let stolen = first[5].shard
        try c.query("UPDATE fanout_shards SET claims = claims + 1, lease_owner = 'thief' WHERE id = $1", [stolen.shard])
        var progress: [ShardProgress] = []
        for (i, claim) in first.enumerated() {
            var effects = OutcomeEffects()
            if claim.target != nil { effects.counters = DeliveryCounters(targeted: 1, sent: 1, accepted: 1) }
            if i == 2, let target = claim.target {
                effects.counters = DeliveryCounters(targeted: 1, sent: 1, failed: 1)
                effects.failures = ["BadDeviceToken": 1]
                effects.disable = [EndpointDisable(endpoint: target.endpoint, token: target.token, reason: "BadDeviceToken", at: Date())]
                effects.log = [DeliveryLogEntry(endpoint: target.endpoint, status: "FAILURE", attempts: 1, dwellMilliseconds: 3)]
            }
            if i == 3, let target = claim.target {
                effects.counters = DeliveryCounters(targeted: 1, sent: 1, retried: 1)
                effects.retries = [RetrySchedule(endpoint: target.endpoint, attempt: 1,
                                                 notBefore: Date().addingTimeInterval(60), reason: "Unavailable")]
            }
            let lease: LeaseDisposition = i == 4 ? .renew(seconds: 60) : .finish
            progress.append(ShardProgress(claim: claim.shard, checkpoint: claim.shard.checkpoint, effects: effects, lease: lease))
        }
        let results = try await seed.jobs.checkpoint(batch: progress).results
        #expect(results[stolen.shard] == .leaseLost)
        #expect(results[first[0].shard.shard] == .applied(finishedMessage: .completed))
        #expect(results[first[1].shard.shard] == .applied(finishedMessage: .completed), "nothing to send: Completed")
        #expect(results[first[2].shard.shard] == .applied(finishedMessage: .failed))
        #expect(results[first[3].shard.shard] == .applied(finishedMessage: nil), "a pending retry holds it open")
        #expect(results[first[4].shard.shard] == .applied(finishedMessage: nil))
        let states = try c.query("""
            SELECT count(*) FILTER (WHERE state = 'Completed'), count(*) FILTER (WHERE state = 'Failed'),
                count(*) FILTER (WHERE state = 'Processing')
            FROM messages WHERE id = ANY($1::bigint[])
            """, ["{" + first.map { String($0.shard.message) }.joined(separator: ",") + "}"]).first!
        // 16 finished and delivered (one with nothing to send), one failed; the retry, the renewal and the stolen
        // shard keep theirs Processing.
        #expect([states.int64(0), states.int64(1), states.int64(2)] == [16, 1, 3])
        let status = try #require(try await seed.jobs.messageStatus(key: first[2].shard.message))
        #expect(status.failuresByReason == ["BadDeviceToken": 1] && status.counters.failed == 1)
        #expect(try c.query("SELECT enabled, disabled_reason FROM endpoints WHERE id = $1", [first[2].target!.endpoint])
            .first.map { [$0.bool(0) == false, $0.string(1) == "BadDeviceToken"] } == [true, true])
        #expect(try c.query("SELECT count(*) FROM events WHERE kind = 'EndpointDisabled' AND (detail->>'message')::bigint = $1",
                            [first[2].shard.message]).first!.int64(0) == 1)
        #expect(try c.query("SELECT count(*) FROM delivery_retries WHERE message = $1 AND shard = $2",
                            [first[3].shard.message, first[3].shard.shard]).first!.int64(0) == 1)
        let renewed = try c.query("SELECT state, lease_owner, lease_expires_at > now() + interval '50 seconds' FROM fanout_shards WHERE id = $1",
                                  [first[4].shard.shard]).first!
        #expect(renewed.string(0) == "leased" && renewed.string(1) == "a" && renewed.bool(2) == true)
        let thief = try c.query("SELECT state, lease_owner, targeted FROM fanout_shards WHERE id = $1", [stolen.shard]).first!
        #expect(thief.string(0) == "leased" && thief.string(1) == "thief" && thief.int64(2) == 0)
    }

    @Test("two direct batch claimers on their own connections never claim the same message, and together claim them all")
    func concurrentDirectBatchClaims() async throws {
        let seed = try Seed(subscriptions: 40)
        defer { seed.pool.shutdown() }
        var messages: [Int64] = []
        for endpoint in try seed.endpoints() {
            for _ in 0..<8 { messages.append(try await seed.publishDirect(endpoint)) }
        }
        func drain(_ owner: String) async throws -> [DirectClaim] {
            let pool = PGPool(conninfo: seed.url, size: 1)
            defer { pool.shutdown() }
            let jobs = FanOutJobs(pool: pool)
            var out: [DirectClaim] = []
            while true {
                let claims = try await jobs.claimDirect(owner: owner, limit: 24, leaseSeconds: 30, staleBefore: nil)
                if claims.isEmpty { return out }
                out += claims
            }
        }
        async let a = drain("a")
        async let b = drain("b")
        let (fromA, fromB) = try await (a, b)
        #expect(Set(fromA.map(\.shard.message)).isDisjoint(with: fromB.map(\.shard.message)))
        #expect(fromA.count + fromB.count == messages.count)
        #expect(Set((fromA + fromB).map(\.shard.message)) == Set(messages))
        let c = try PGConnection(conninfo: seed.url)
        #expect(try c.query("SELECT count(*), count(DISTINCT message) FROM fanout_shards").first
            .map { [$0.int64(0), $0.int64(1)] } == [Int64(messages.count), Int64(messages.count)])
    }

    @Test("direct shards whose batch lease expired are claimed again by the next batch claim, with a new fencing token")
    func expiredDirectBatchLease() async throws {
        let seed = try Seed(subscriptions: 5)
        defer { seed.pool.shutdown() }
        var messages: [Int64] = []
        for endpoint in try seed.endpoints() { messages.append(try await seed.publishDirect(endpoint)) }
        #expect(try await seed.jobs.claim(owner: "z", limit: 10, leaseSeconds: 30, direct: false).isEmpty,
                "shard workers beside a direct lane leave unclaimed direct messages to it")
        let first = try await seed.jobs.claimDirect(owner: "a", limit: 10, leaseSeconds: 30, staleBefore: nil)
        #expect(first.count == 5)
        #expect(try await seed.jobs.claimDirect(owner: "b", limit: 10, leaseSeconds: 30, staleBefore: nil).isEmpty)
        try PGConnection(conninfo: seed.url).query("UPDATE fanout_shards SET lease_expires_at = now() - interval '1 second'")
        let again = try await seed.jobs.claimDirect(owner: "b", limit: 10, leaseSeconds: 30, staleBefore: nil)
        #expect(again.map(\.shard.shard) == first.map(\.shard.shard))
        #expect(again.allSatisfy { $0.shard.claim == 2 && $0.shard.owner == "b" && $0.target != nil })
        let stale = try await seed.jobs.checkpoint(batch: first.map {
            ShardProgress(claim: $0.shard, checkpoint: $0.shard.hi, effects: OutcomeEffects(), lease: .finish) }).results
        #expect(stale.values.allSatisfy { $0 == .leaseLost } && stale.count == 5)
        let done = try await seed.jobs.checkpoint(batch: again.map {
            var effects = OutcomeEffects()
            effects.counters = DeliveryCounters(targeted: 1, sent: 1, accepted: 1)
            return ShardProgress(claim: $0.shard, checkpoint: $0.shard.hi, effects: effects, lease: .finish) }).results
        #expect(done.values.allSatisfy { $0 == .applied(finishedMessage: .completed) } && done.count == 5)
        for message in messages { #expect(try await seed.jobs.messageStatus(key: message)?.counters.accepted == 1) }
    }

    @Test("maintenance deletes per-application counts (schema v23) older than the delivery log's retention, and only those")
    func applicationCountsRetention() async throws {
        let seed = try Seed(subscriptions: 1)
        let now = Date(timeIntervalSince1970: 1_800_000_000)  // 2027-01-15 08:00 UTC
        let c = try PGConnection(conninfo: seed.url)
        for daysAgo in [40.0, 31.0, 29.0, 0.0] {
            try c.query("INSERT INTO application_delivery_counts (application, minute, sent) VALUES (1, $1, 1)",
                        [now.addingTimeInterval(-daysAgo * 86_400)])
        }
        // The cutoff is the start of the day 30 days back (UTC), as for the log's partitions.
        #expect(try await seed.jobs.maintainDeliveryLog(retentionDays: 30, daysAhead: 0, now: now).countRowsDeleted == 2)
        #expect(try c.query("SELECT count(*), sum(sent) FROM application_delivery_counts").first.map { [$0.int64(0), $0.int64(1)] } == [2, 2])
        #expect(try await seed.jobs.maintainDeliveryLog(retentionDays: 30, daysAhead: 0, now: now).countRowsDeleted == 0)
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
