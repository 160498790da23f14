import ClarionCore
import Foundation

/// Frequency capping (schema v22; docs/architecture.md, "Local-time sends, frequency capping and quiet hours").
extension FanOutJobs {
    /// Of `endpoints` (a page of one message's targets of one application), those that may receive `message` under
    /// `cap` at `now`, recorded as having received it; the rest are over the cap (`admitCapped(_:cap:now:)`).
    public func admitCapped(message: Int64, endpoints: [Int64], cap: FrequencyCap, now: Date) async throws(StoreError) -> Set<Int64> {
        try await admitCapped(Set(endpoints).map { CapRequest(endpoint: $0, message: message) }, cap: cap, now: now)
    }

    /// Of `requests` (pairs of an endpoint and the message that would go to it, each endpoint at most once: a page of
    /// a fan-out, or a batch of direct messages of one application), the endpoints that may receive their message
    /// under `cap` at `now`, recorded as having received it; the rest are over the cap. One statement for all of
    /// them: each endpoint's history row is pruned to the window and appended to under the row lock `ON CONFLICT`
    /// takes, so concurrent campaigns (or direct pushes) on several nodes never both take an endpoint's last slot.
    /// An endpoint that already has its message in its window is admitted again without a second entry (a shard
    /// resumed after a crash re-reads its page; a direct message claimed again after its lease expired). A push
    /// admitted here counts against the cap whatever the provider answers: the cap bounds what Clarion sends, and
    /// an endpoint whose push failed is not owed another.
    public func admitCapped(_ requests: [CapRequest], cap: FrequencyCap, now: Date) async throws(StoreError) -> Set<Int64> {
        guard !requests.isEmpty else { return [] }
        // PostgreSQL refuses to update one row twice in a statement: the caller gives each endpoint once.
        precondition(Set(requests.map(\.endpoint)).count == requests.count, "admitCapped: an endpoint given twice")
        let sorted = requests.sorted { $0.endpoint < $1.endpoint }
        let keys = PGArrayParameter(text: PGArrayLiteral.int64s(sorted.map(\.endpoint)))
        let messages = PGArrayParameter(text: PGArrayLiteral.int64s(sorted.map(\.message)))
        let since = now.addingTimeInterval(-Double(cap.windowSeconds))
        return try await withDeadlockRetry { () throws(StoreError) -> Set<Int64> in
            try await pool.withConnection { (c) throws(StoreError) -> Set<Int64> in
                // `excluded.messages[1]` is the message of the row's own request.
                let result = try c.query("""
                    INSERT INTO frequency_history AS h (endpoint, messages, sent_at)
                    SELECT k, ARRAY[q], ARRAY[$3::timestamptz] FROM unnest($1::bigint[], $2::bigint[]) AS r(k, q) ORDER BY k
                    ON CONFLICT (endpoint) DO UPDATE SET
                        messages = ARRAY(SELECT m FROM unnest(h.messages, h.sent_at) WITH ORDINALITY AS x(m, t, i)
                                         WHERE t > $4 AND m <> excluded.messages[1] ORDER BY i) || excluded.messages[1],
                        sent_at = ARRAY(SELECT t FROM unnest(h.messages, h.sent_at) WITH ORDINALITY AS x(m, t, i)
                                        WHERE t > $4 AND m <> excluded.messages[1] ORDER BY i) || $3::timestamptz
                    WHERE excluded.messages[1] = ANY(h.messages)
                       OR (SELECT count(*) FROM unnest(h.messages, h.sent_at) AS x(m, t)
                           WHERE t > $4 AND m <> excluded.messages[1]) < $5
                    RETURNING endpoint
                    """, [keys, messages, now, since, cap.max])
                var admitted = Set<Int64>()
                for row in result.rows { if let key = row.int64(0) { admitted.insert(key) } }
                return admitted
            }
        }
    }
}

/// One endpoint and the message a worker would send it, asked of the frequency cap (`FanOutJobs.admitCapped`).
public struct CapRequest: Sendable, Hashable {
    public let endpoint: Int64
    public let message: Int64

    public init(endpoint: Int64, message: Int64) {
        self.endpoint = endpoint
        self.message = message
    }
}
