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

    /// The distinct zones of an audience's endpoints (`POST /v1/publish/audience` with `send_at_local`): of the
    /// audience's applications, narrowed by its user id when it has one, as `planAudience` cuts them (the device
    /// filters are applied when the units stream, so a zone whose devices all fail them gets a unit that sends
    /// nothing). Zones as in `endpointZones`.
    public func audienceZones(_ filter: AudienceFilter, fallback: String) async throws(StoreError) -> [String] {
        let applications = PGArrayParameter(text: PGArrayLiteral.int64s(filter.applications))
        let names = try await pool.withConnection { (c) throws(StoreError) -> [String?] in
            try c.query("""
                SELECT DISTINCT e.attributes->>'TimeZone' FROM endpoints e
                WHERE e.application = ANY($1::bigint[]) AND ($2::text IS NULL OR e.user_id = $2)
                """, [applications, filter.userID]).rows.map { $0.string(0) }
        }
        var zones = Set<String>()
        for name in names { zones.insert(name.flatMap { TimeZoneName.zone($0) != nil ? $0 : nil } ?? fallback) }
        return zones.sorted()
    }
}
