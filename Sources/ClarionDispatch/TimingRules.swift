import ClarionCore
import ClarionStore
import Foundation

/// A delivery's fate under its message's `Clarion.Timing` and its app's cap and quiet hours (schema v22).
enum TimingDecision: Equatable {
    /// A `send_at_local` message of another zone: that zone's message counts and sends it (uncounted here).
    case otherZone
    /// Over the app's frequency cap: counted `capped`, not sent.
    case capped
    /// In quiet hours, `skip`: counted `quiet_skipped`, not sent.
    case quietSkipped
    /// In quiet hours, `defer` (or a direct `send_at_local` message whose endpoint moved to a zone where the local
    /// time is still ahead): counted `deferred`, sent by the retry queue at `until` (`reason`: the retry's reason).
    case deferred(until: Date, reason: String)
}

/// The frequency cap and quiet hours of a delivery, decided in one place for both ways a push leaves Clarion: a
/// page of a topic's or audience's fan-out (`ShardWorker`, one message, many endpoints) and a batch of direct
/// messages (`DirectBatchWorker`, many messages, one endpoint each). Why one place: the rules (quiet hours first,
/// `skip` before the cap so a dropped push does not use a slot; the cap asked in one statement per application,
/// never per endpoint; admitted deliveries in quiet hours deferred) are the product's promise, and two copies would
/// drift.
///
/// The caller decides what is a candidate at all (an endpoint of another zone, variant or filter, or one that is
/// disabled, stale or of an unsendable application is never one, so it never uses up its cap).
enum TimingRules {
    struct Candidate {
        /// The caller's key for the delivery (a target key in a page, a member index in a direct batch).
        let key: Int64
        let message: Int64
        let endpoint: Int64
        /// The endpoint's own `TimeZone` (nil or unknown: the message's fallback, the app's quiet zone, then UTC).
        let endpointZone: String?
        let application: DispatchApplication
        let timing: CampaignTiming
        /// Not to be sent before this (a direct `send_at_local` message whose endpoint moved zone:
        /// `localTimeInMovedZone`); quiet hours are read at this instant, not now.
        var notBefore: Date? = nil
    }

    /// The reason of a retry that holds a delivery for the end of quiet hours.
    static let quietHoursReason = "QuietHours"
    /// The reason of a retry that holds a direct `send_at_local` delivery for its endpoint's new zone's local time.
    static let localTimeReason = "LocalTime"

    /// A direct `send_at_local` message (one endpoint, due at the local time of the zone its endpoint had when it
    /// was published, `timing.zone`) released while its endpoint is in another zone: the zone is read again here,
    /// at release. Returns when it should go in the new zone: today's (in the new zone's calendar) local time when
    /// that is still ahead; nil when it has passed (send now: a few hours late beats a day late, and a campaign's
    /// day is today) or when the zone did not change. A topic's or audience's zone units are not re-planned this
    /// way (docs/api.md, "Local-time sends, frequency capping and quiet hours").
    static func localTimeInMovedZone(_ timing: CampaignTiming, endpointZone: String?, now: Date) -> Date? {
        guard let local = timing.local, let planned = timing.zone else { return nil }
        let current = timing.effectiveZoneName(endpointZone)
        guard current != planned, let zone = TimeZoneName.zone(current) else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let today = local.next(after: calendar.startOfDay(for: now).addingTimeInterval(-1), in: zone)
        return today > now ? today : nil
    }

    /// The zone quiet hours are read in: the endpoint's own, else the message's fallback, else the app's quiet-hours
    /// zone, else UTC.
    static func quietZone(endpointZone: String?, timing: CampaignTiming, application: DispatchApplication) -> TimeZone {
        TimeZoneName.zone(endpointZone ?? "")
            ?? timing.fallback.flatMap(TimeZoneName.zone)
            ?? application.quietTimeZone.flatMap(TimeZoneName.zone)
            ?? TimeZone(identifier: "UTC")!
    }

    /// Decisions by candidate key; a candidate without one is sent now.
    static func decide(_ candidates: [Candidate], now: Date, jobs: FanOutJobs) async throws(StoreError) -> [Int64: TimingDecision] {
        var decisions: [Int64: TimingDecision] = [:]
        var capCandidates: [Int64: [Candidate]] = [:]
        var quietUntil: [Int64: Date] = [:]
        var reasons: [Int64: String] = [:]
        for candidate in candidates {
            let application = candidate.application
            var at = now
            if let notBefore = candidate.notBefore, notBefore > now {
                at = notBefore
                quietUntil[candidate.key] = notBefore
                reasons[candidate.key] = localTimeReason
            }
            if let mode = candidate.timing.quiet, let quiet = application.quietHours {
                let zone = quietZone(endpointZone: candidate.endpointZone, timing: candidate.timing, application: application)
                if let until = quiet.release(at: at, in: zone) {
                    if mode == .skip {
                        decisions[candidate.key] = .quietSkipped
                        continue
                    }
                    quietUntil[candidate.key] = until
                    reasons[candidate.key] = quietHoursReason
                }
            }
            if candidate.timing.cap, application.frequencyCap != nil {
                capCandidates[application.key, default: []].append(candidate)
            } else if let until = quietUntil[candidate.key] {
                decisions[candidate.key] = .deferred(until: until, reason: reasons[candidate.key] ?? quietHoursReason)
            }
        }
        for (_, group) in capCandidates.sorted(by: { $0.key < $1.key }) {
            guard let cap = group.first?.application.frequencyCap else { continue }
            // Each endpoint once per statement: a second delivery to an endpoint (two direct messages in one batch)
            // is asked in a later round, after the first has taken its slot.
            var rest = group
            while !rest.isEmpty {
                var round: [Candidate] = []
                var seen = Set<Int64>()
                var later: [Candidate] = []
                for candidate in rest {
                    if seen.insert(candidate.endpoint).inserted { round.append(candidate) } else { later.append(candidate) }
                }
                let admitted = try await jobs.admitCapped(
                    round.map { CapRequest(endpoint: $0.endpoint, message: $0.message) }, cap: cap, now: now)
                for candidate in round {
                    if !admitted.contains(candidate.endpoint) {
                        decisions[candidate.key] = .capped
                    } else if let until = quietUntil[candidate.key] {
                        decisions[candidate.key] = .deferred(until: until, reason: reasons[candidate.key] ?? quietHoursReason)
                    }
                }
                rest = later
            }
        }
        return decisions
    }
}
