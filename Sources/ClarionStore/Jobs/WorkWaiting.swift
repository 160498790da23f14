import Foundation

/// How much work waits in the database, for `/metrics` (`messages_scheduled`: scheduled publishes, its age how late
/// the earliest due one is, 0 while none is due, so a promotion backlog shows): one statement whose every part is served by a partial
/// or leading-column index (`messages_unplanned_idx`, `fanout_shards_claimable_idx`, `delivery_retries_due_idx`,
/// `registration_requests_pending_idx`, `webhook_outbox_pending_idx`), so its cost follows the backlog, not the
/// tables' size. Callers cache it for a few seconds: scrapes do not add load as their number grows.
public struct WorkWaiting: Sendable, Equatable {
    /// One queue: rows waiting and the age in seconds of the oldest (0 when empty).
    public struct Queue: Sendable, Equatable {
        public var name: String
        public var count: Int
        public var oldestSeconds: Double
    }

    public var queues: [Queue]

    /// Queue names as the metric's `queue` label shows them.
    public static let names = ["messages_unplanned", "messages_in_progress", "shards_ready", "shards_leased",
                               "retries_due", "retries_scheduled", "registrations_pending", "webhooks_pending",
                               "messages_scheduled"]

    static let sql = """
        SELECT
          (SELECT count(*) FROM messages WHERE NOT planned AND state = 'Enqueued'),
          (SELECT COALESCE(EXTRACT(EPOCH FROM now() - min(published_at)), 0)::float8 FROM messages
           WHERE NOT planned AND state = 'Enqueued'),
          (SELECT count(DISTINCT message) FROM fanout_shards WHERE state <> 'done'),
          (SELECT COALESCE(EXTRACT(EPOCH FROM now() - min(created_at)), 0)::float8 FROM fanout_shards WHERE state <> 'done'),
          (SELECT count(*) FROM fanout_shards WHERE state = 'ready'),
          (SELECT COALESCE(EXTRACT(EPOCH FROM now() - min(created_at)), 0)::float8 FROM fanout_shards WHERE state = 'ready'),
          (SELECT count(*) FROM fanout_shards WHERE state = 'leased'),
          (SELECT COALESCE(EXTRACT(EPOCH FROM now() - min(created_at)), 0)::float8 FROM fanout_shards WHERE state = 'leased'),
          (SELECT count(*) FROM delivery_retries WHERE not_before <= now()),
          (SELECT COALESCE(EXTRACT(EPOCH FROM now() - min(not_before)), 0)::float8 FROM delivery_retries WHERE not_before <= now()),
          (SELECT count(*) FROM delivery_retries),
          0::float8,
          (SELECT count(*) FROM registration_requests WHERE status = 'Pending'),
          (SELECT COALESCE(EXTRACT(EPOCH FROM now() - min(created_at)), 0)::float8 FROM registration_requests WHERE status = 'Pending'),
          (SELECT count(*) FROM webhook_outbox WHERE state = 'pending'),
          (SELECT COALESCE(EXTRACT(EPOCH FROM now() - min(created_at)), 0)::float8 FROM webhook_outbox WHERE state = 'pending'),
          (SELECT count(*) FROM messages WHERE state = 'Scheduled'),
          (SELECT COALESCE(EXTRACT(EPOCH FROM now() - min(send_at)), 0)::float8 FROM messages WHERE state = 'Scheduled')
        """

    /// Reads every queue in one statement.
    public static func read(_ connection: PGConnection) throws(StoreError) -> WorkWaiting {
        let result = try connection.query(sql)
        guard let row = result.first else { return WorkWaiting(queues: []) }
        var queues: [Queue] = []
        for (i, name) in names.enumerated() {
            queues.append(Queue(name: name, count: row.int(2 * i) ?? 0, oldestSeconds: max(0, row.double(2 * i + 1) ?? 0)))
        }
        return WorkWaiting(queues: queues)
    }
}
