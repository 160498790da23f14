import Foundation

/// Scheduled sends and cancel in the fan-out job queue (schema v16; docs/architecture.md, "Scheduled and cancelled
/// messages").
///
/// A scheduled message waits in `messages` with state `Scheduled` and its `send_at`; it is in neither queue of
/// unplanned messages. Every dispatcher's claim loop calls `promoteDue`, which moves the due ones to `Enqueued`
/// under `FOR UPDATE SKIP LOCKED` (two nodes never both take a row, a node that is down only leaves it to the
/// others) and notifies `clarion_work`; from there they are planned and claimed like any publish.
///
/// Cancel marks the message `Cancelled`, its open shards done and deletes its retries in one transaction, then
/// notifies `clarion_cancel` with the message key so every node's shard workers stop at once. A shard that is
/// leased stays `done` with its holder's name and fencing token, so the holder's next checkpoint still adds
/// what it counted (deliveries a provider accepted stay counted) and answers `.cancelled`; nobody claims it again.
extension FanOutJobs {
    /// The channel `cancel` notifies, with the message key as payload.
    public static let cancelChannel = "clarion_cancel"

    /// Moves up to `limit` scheduled messages due at `now` (the dispatcher's clock) to `Enqueued`, earliest
    /// first, and wakes every dispatcher; returns how many.
    @discardableResult
    public func promoteDue(now: Date, limit: Int = 500) async throws(StoreError) -> Int {
        try await pool.transaction { (c) throws(StoreError) -> Int in
            let promoted = try c.query("""
                WITH due AS (
                    SELECT id FROM messages WHERE state = 'Scheduled' AND send_at <= $1
                    ORDER BY send_at LIMIT $2 FOR UPDATE SKIP LOCKED)
                UPDATE messages m SET state = 'Enqueued' FROM due WHERE m.id = due.id AND m.state = 'Scheduled'
                """, [now, limit]).affectedRows
            if promoted > 0 { try c.notify(Self.workChannel) }
            return promoted
        }
    }

    /// The earliest `send_at` of the scheduled messages (through `messages_scheduled_idx`), so an idle claim loop
    /// wakes when the next one is due.
    public func nextScheduledDue() async throws(StoreError) -> Date? {
        try await pool.withConnection { (c) throws(StoreError) -> Date? in
            try c.query("SELECT min(send_at) FROM messages WHERE state = 'Scheduled'").first?.date(0)
        }
    }

    /// Cancels a message by its external id, optionally checked against the owning account; nil when there is no
    /// such message (for that account). Idempotent: a cancelled message answers `.alreadyCancelled`.
    ///
    /// Lock order is the checkpoints' (shard rows, then retries, then the message row), so a cancel and a
    /// checkpoint of the same message wait for each other rather than deadlock; a deadlock with a retry
    /// completion is retried. The message row is changed last, under `state IN (...)`: if it finished meanwhile,
    /// the whole transaction rolls back and the answer is `.finished`.
    public func cancel(externalID: UUID, account: Int64? = nil) async throws(StoreError) -> CancelOutcome? {
        let found = try await pool.withConnection { (c) throws(StoreError) -> (key: Int64, account: Int64)? in
            guard let row = try c.query("SELECT id, account FROM messages WHERE external_id = $1", [externalID]).first,
                  let key = row.int64(0), let owner = row.int64(1) else { return nil }
            return (key, owner)
        }
        guard let found, account == nil || found.account == account else { return nil }
        let key = found.key
        let changed = try await withDeadlockRetry { () throws(StoreError) -> Bool in
            do throws(StoreError) {
                return try await pool.transaction { (c) throws(StoreError) -> Bool in
                    let state = try c.query("SELECT state FROM messages WHERE id = $1", [key]).first?.string(0)
                    guard let state, let current = MessageState(rawValue: state), !current.isFinal else { return false }
                    try c.query("""
                        UPDATE fanout_shards SET state = 'done', updated_at = now() WHERE message = $1 AND state <> 'done'
                        """, [key])
                    try c.query("DELETE FROM delivery_retries WHERE message = $1", [key])
                    let cancelled = try c.query("""
                        UPDATE messages SET state = 'Cancelled', completed_at = now()
                        WHERE id = $1 AND state IN ('Scheduled', 'Enqueued', 'Processing')
                        """, [key]).affectedRows
                    // Finished between the read and here: undo the shard and retry changes (there were none to make).
                    guard cancelled == 1 else { throw StoreError(.notFound, Self.finishedMeanwhile) }
                    try c.notify(Self.cancelChannel, payload: String(key))
                    return true
                }
            } catch {
                guard error.code == .notFound && error.message == Self.finishedMeanwhile else { throw error }
                return false
            }
        }
        guard let status = try await messageStatus(key: key) else { return nil }
        if changed { return .cancelled(status) }
        return status.state == .cancelled ? .alreadyCancelled(status) : .finished(status)
    }

    static let finishedMeanwhile = "the message finished before it could be cancelled"
}

/// Pacing (schema v16; docs/architecture.md, "Scheduled and cancelled messages"): one budget per message for every
/// node, on the message row.
extension FanOutJobs {
    /// A share of a paced message's budget.
    public struct PaceGrant: Sendable, Hashable {
        /// Sends this worker may make now.
        public var granted: Int
        /// The rate in force (sends per second), for the worker's next ask.
        public var perSecond: Double
    }

    /// The rate of a pace: the given rate, or the planned targets over the window (at least one send per window);
    /// nil while the message is not planned (its targets are not counted yet).
    static func paceRate(_ pace: MessagePace, planned: Int64?) -> Double? {
        switch pace {
        case .perSecond(let rate): return rate
        case .overSeconds(let seconds):
            guard let planned else { return nil }
            return Double(max(1, planned)) / Double(max(1, seconds))
        }
    }

    /// Takes up to `want` sends from a paced message's budget, under its row lock, so all nodes together never
    /// exceed `rate * (now - started) + burst` (burst: a quarter second's worth, at least one send). The clock is
    /// the database's, the same for every node. Returns 0 granted when the budget is spent for now (or the message
    /// is not paced: then `perSecond` is 0 and the caller sends freely).
    public func takePaceBudget(message: Int64, want: Int) async throws(StoreError) -> PaceGrant {
        try await pool.transaction { (c) throws(StoreError) -> PaceGrant in
            guard let row = try c.query("""
                SELECT pace_per_second, pace_over_seconds, pace_granted,
                    extract(epoch FROM now() - coalesce(pace_started_at, now()))::float8,
                    (SELECT coalesce(sum(planned_targets), 0) FROM fanout_shards WHERE message = $1)
                FROM messages WHERE id = $1 FOR NO KEY UPDATE
                """, [message]).first else { return PaceGrant(granted: 0, perSecond: 0) }
            let pace: MessagePace? = if let rate = row.double(0) { .perSecond(rate) } else { row.int(1).map { .overSeconds($0) } }
            guard let pace, let rate = Self.paceRate(pace, planned: row.int64(4) ?? 0) else {
                return PaceGrant(granted: want, perSecond: 0)
            }
            let burst = max(1, rate * 0.25)
            let allowed = Int64((rate * max(0, row.double(3) ?? 0) + burst).rounded(.down)) - (row.int64(2) ?? 0)
            let granted = Int(max(0, min(Int64(want), allowed)))
            if granted > 0 {
                try c.query("""
                    UPDATE messages SET pace_started_at = coalesce(pace_started_at, now()), pace_granted = pace_granted + $2
                    WHERE id = $1
                    """, [message, granted])
            }
            return PaceGrant(granted: granted, perSecond: rate)
        }
    }
}
