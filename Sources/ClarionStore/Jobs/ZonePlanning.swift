import ClarionCore
import Foundation

/// Local-time sends (`send_at_local`, schema v22; docs/architecture.md, "Local-time sends, frequency capping and
/// quiet hours"): the publish plans the fan-out per zone, not per endpoint.
extension FanOutJobs {
    /// The distinct zones of a topic's endpoints, each endpoint's own `TimeZone` attribute or `fallback` when it has
    /// none (or one the API would not have accepted), sorted. One aggregate over the topic's subscriptions (the
    /// `(topic, id)` index) and their endpoints: the publish stores one scheduled message per zone from it.
    public func endpointZones(topicKey: Int64, fallback: String) async throws(StoreError) -> [String] {
        let names = try await pool.withConnection { (c) throws(StoreError) -> [String?] in
            try c.query("""
                SELECT DISTINCT e.attributes->>'TimeZone'
                FROM subscriptions s JOIN endpoints e ON e.id = s.endpoint
                WHERE s.topic = $1 AND s.endpoint IS NOT NULL
                """, [topicKey]).rows.map { $0.string(0) }
        }
        var zones = Set<String>()
        for name in names { zones.insert(name.flatMap { TimeZoneName.zone($0) != nil ? $0 : nil } ?? fallback) }
        return zones.sorted()
    }
}
