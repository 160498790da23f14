import ClarionCore
import Foundation

/// Frequency capping (schema v22; docs/architecture.md, "Local-time sends, frequency capping and quiet hours").
extension FanOutJobs {
    /// Of `endpoints` (a page of one message's targets of one application), those that may receive `message` under
    /// `cap` at `now`, recorded as having received it; the rest are over the cap. One statement for the page:
    /// each endpoint's history row is pruned to the window and appended to under the row lock `ON CONFLICT` takes,
    /// so concurrent campaigns on several nodes never both take an endpoint's last slot. An endpoint that already
    /// has `message` in its window is admitted again without a second entry (a shard resumed after a crash
    /// re-reads its page). A push admitted here counts against the cap whatever the provider answers: the cap
    /// bounds what Clarion sends, and an endpoint whose push failed is not owed another.
    public func admitCapped(message: Int64, endpoints: [Int64], cap: FrequencyCap, now: Date) async throws(StoreError) -> Set<Int64> {
        guard !endpoints.isEmpty else { return [] }
        let keys = PGArrayParameter(text: PGArrayLiteral.int64s(Array(Set(endpoints)).sorted()))
        let since = now.addingTimeInterval(-Double(cap.windowSeconds))
        return try await withDeadlockRetry { () throws(StoreError) -> Set<Int64> in
            try await pool.withConnection { (c) throws(StoreError) -> Set<Int64> in
                let result = try c.query("""
                    INSERT INTO frequency_history AS h (endpoint, messages, sent_at)
                    SELECT k, ARRAY[$2::bigint], ARRAY[$3::timestamptz] FROM unnest($1::bigint[]) AS k ORDER BY k
                    ON CONFLICT (endpoint) DO UPDATE SET
                        messages = ARRAY(SELECT m FROM unnest(h.messages, h.sent_at) WITH ORDINALITY AS x(m, t, i)
                                         WHERE t > $4 AND m <> $2 ORDER BY i) || $2,
                        sent_at = ARRAY(SELECT t FROM unnest(h.messages, h.sent_at) WITH ORDINALITY AS x(m, t, i)
                                        WHERE t > $4 AND m <> $2 ORDER BY i) || $3::timestamptz
                    WHERE $2 = ANY(h.messages)
                       OR (SELECT count(*) FROM unnest(h.messages, h.sent_at) AS x(m, t) WHERE t > $4 AND m <> $2) < $5
                    RETURNING endpoint
                    """, [keys, message, now, since, cap.max])
                var admitted = Set<Int64>()
                for row in result.rows { if let key = row.int64(0) { admitted.insert(key) } }
                return admitted
            }
        }
    }
}
