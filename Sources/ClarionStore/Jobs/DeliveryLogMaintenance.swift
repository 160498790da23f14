import ClarionCore
import Foundation

extension FanOutJobs {
    /// What a maintenance round did.
    public struct DeliveryLogMaintenance: Sendable, Hashable {
        public var partitionsCreated: [String] = []
        public var partitionsDropped: [String] = []
        public var defaultRowsDeleted = 0
        /// Rows of `application_delivery_counts` (schema v23) older than the retention, deleted.
        public var countRowsDeleted = 0
    }

    /// Keeps the delivery log's daily partitions: creates `delivery_log_YYYYMMDD` for today and the next
    /// `daysAhead` days (UTC), drops day partitions older than `retentionDays`, and deletes rows older than that
    /// from the default partition (which only catches days whose partition did not exist yet). Safe to run from
    /// several nodes at once: creation is `IF NOT EXISTS`, and a day that already has rows in the default
    /// partition keeps them there (PostgreSQL refuses that partition) until they age out.
    @discardableResult
    public func maintainDeliveryLog(retentionDays: Int, daysAhead: Int = 2, now: Date = Date())
        async throws(StoreError) -> DeliveryLogMaintenance
    {
        let today = Int(floor(now.timeIntervalSince1970 / 86_400))
        return try await pool.withConnection { (c) throws(StoreError) -> DeliveryLogMaintenance in
            var done = DeliveryLogMaintenance()
            for day in today...(today + max(0, daysAhead)) {
                let name = "delivery_log_" + Self.compactDate(day)
                let exists = try c.query("SELECT to_regclass($1) IS NOT NULL", [name]).first?.bool(0) ?? false
                guard !exists else { continue }
                do throws(StoreError) {
                    try c.execute("""
                        CREATE TABLE IF NOT EXISTS \(name) PARTITION OF delivery_log
                        FOR VALUES FROM ('\(Self.isoDate(day))') TO ('\(Self.isoDate(day + 1))')
                        """)
                    done.partitionsCreated.append(name)
                } catch where error.code != .connectionLost {
                    // Rows of that day are already in the default partition, or another node made it just now.
                }
            }
            let cutoffDay = today - max(0, retentionDays)
            let partitions = try c.query("""
                SELECT c.relname FROM pg_inherits i
                JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent
                WHERE p.relname = 'delivery_log' AND c.relname ~ '^delivery_log_[0-9]{8}$'
                """)
            for row in partitions.rows {
                guard let name = row.string(0), let day = Self.day(fromCompact: String(name.suffix(8))), day < cutoffDay else { continue }
                try c.execute("DROP TABLE IF EXISTS \(name)")
                done.partitionsDropped.append(name)
            }
            done.defaultRowsDeleted = try c.query(
                "DELETE FROM delivery_log_default WHERE logged_at < $1",
                [Date(timeIntervalSince1970: Double(cutoffDay) * 86_400)]).affectedRows
            done.countRowsDeleted = try c.query(
                "DELETE FROM application_delivery_counts WHERE minute < $1",
                [Date(timeIntervalSince1970: Double(cutoffDay) * 86_400)]).affectedRows
            return done
        }
    }

    /// YYYYMMDD of a day number (days since 1970-01-01, UTC).
    static func compactDate(_ day: Int) -> String {
        isoDate(day).replacingOccurrences(of: "-", with: "")
    }

    static func isoDate(_ day: Int) -> String {
        var t = time_t(day * 86_400)
        var parts = tm()
        gmtime_r(&t, &parts)
        return String(format: "%04d-%02d-%02d", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday))
    }

    static func day(fromCompact text: String) -> Int? {
        guard text.count == 8, let value = Int(text) else { return nil }
        return Int(UTCTime.days(year: Int64(value / 10_000), month: Int64(value / 100 % 100), day: Int64(value % 100)))
    }
}
