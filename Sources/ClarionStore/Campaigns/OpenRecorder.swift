import ClarionCore
import Foundation

/// One open beacon of a verified delivery id, at the time it arrived.
public struct OpenRecord: Sendable, Hashable {
    public let delivery: DeliveryID
    public let at: Date

    public init(delivery: DeliveryID, at: Date) {
        self.delivery = delivery
        self.at = at
    }
}

/// Open beacons written by group commit: concurrent beacons (and the ids of a batch beacon) share one upsert and one
/// commit, so the durable intake keeps up with the publish rate. A beacon is answered only after the commit that
/// holds it. Past `maxQueued` waiting opens a beacon is refused with `.busy` (the API's 503 with `Retry-After`), so
/// a storm of valid beacons bounds its own memory.
public final class OpenRecorder: Sendable {
    private let group: GroupCommit<OpenRecord, Bool>

    public init(pool: PGPool, writers: Int = 1, maxQueued: Int = 20_000) {
        group = GroupCommit(pool: pool, name: "opens", items: "open beacons", maxBatch: 512, writers: writers,
                            maxQueued: maxQueued, write: { opens, connection in CampaignRepository.writeOpens(opens, on: connection) })
    }

    /// Stores the opens; one result per open, in order: true when stored, false when its message or endpoint no
    /// longer exists.
    public func record(_ opens: [OpenRecord]) async -> [Result<Bool, StoreError>] {
        await group.commit(opens)
    }

    public var maxQueued: Int { group.maxQueued }

    public func shutdown() { group.shutdown() }
}
