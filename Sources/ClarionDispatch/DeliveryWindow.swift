import ClarionCore
import Foundation

/// The deliveries of a shard between its checkpoint and the stream's read position, in key order.
///
/// Deliveries complete out of order (many in flight on several connections); the checkpoint may only move to
/// the highest key below which every delivery has a final outcome. The window appends in key order and pops
/// the completed prefix; what pops is what the next checkpoint writes, so counters, retries and disables are
/// written exactly for the deliveries the checkpoint covers. A worker that dies re-sends only what is past the
/// checkpoint: at most `capacity` in flight plus what popped since the last checkpoint.
///
/// Entries are addressed by a sequence number (the transport tag), so a completion finds its entry in O(1).
/// Memory is bounded by the number in flight (the caller keeps `count` under its limit).
struct DeliveryWindow<Entry> {
    private struct Slot {
        var entry: Entry
        var outcome: DeliveryOutcome?
        var sent: Bool
        /// The provider's HTTP status with the outcome, when it answered.
        var providerStatus: Int?
    }

    private var slots: [Slot?] = []
    private var head = 0
    /// Sequence number of `slots[head]`.
    private(set) var firstSequence: UInt64 = 0
    private(set) var completedCount = 0

    init() {}

    /// Entries appended and not yet popped.
    var count: Int { slots.count - head }
    var isEmpty: Bool { count == 0 }
    /// Entries appended whose outcome is not known yet.
    var pendingCount: Int { count - completedCount }

    /// Appends an entry; returns its sequence number.
    mutating func append(_ entry: Entry) -> UInt64 {
        let sequence = firstSequence + UInt64(count)
        slots.append(Slot(entry: entry, outcome: nil, sent: false, providerStatus: nil))
        return sequence
    }

    func entry(_ sequence: UInt64) -> Entry? {
        guard sequence >= firstSequence else { return nil }
        let index = head + Int(sequence - firstSequence)
        guard index < slots.count else { return nil }
        return slots[index]?.entry
    }

    /// Records an outcome. `sent` says whether a provider got the push (it counts as a send); `providerStatus` is
    /// its HTTP status when it answered. A second outcome for the same entry, or one for an entry no longer in the
    /// window, is ignored and returns false.
    @discardableResult
    mutating func complete(_ sequence: UInt64, _ outcome: DeliveryOutcome, sent: Bool, providerStatus: Int? = nil) -> Bool {
        guard sequence >= firstSequence else { return false }
        let index = head + Int(sequence - firstSequence)
        guard index < slots.count, slots[index] != nil, slots[index]!.outcome == nil else { return false }
        slots[index]!.outcome = outcome
        slots[index]!.sent = sent
        slots[index]!.providerStatus = providerStatus
        completedCount += 1
        return true
    }

    /// Gives every entry still without an outcome `outcome` (as sent), except the sequences in `skipping`; returns
    /// how many. For deliveries whose outcome never came back within the delivery timeout.
    mutating func completeIncomplete(_ outcome: DeliveryOutcome, skipping: Set<UInt64>) -> Int {
        var count = 0
        for index in head..<slots.count where slots[index] != nil && slots[index]!.outcome == nil {
            let sequence = firstSequence + UInt64(index - head)
            guard !skipping.contains(sequence) else { continue }
            slots[index]!.outcome = outcome
            slots[index]!.sent = true
            completedCount += 1
            count += 1
        }
        return count
    }

    /// Removes and returns the completed prefix, in order: entry, outcome, sent, provider status.
    mutating func popCompleted(_ body: (Entry, DeliveryOutcome, Bool, Int?) -> Void) {
        while head < slots.count, let slot = slots[head], let outcome = slot.outcome {
            body(slot.entry, outcome, slot.sent, slot.providerStatus)
            slots[head] = nil
            head += 1
            firstSequence += 1
            completedCount -= 1
        }
        if head == slots.count {
            slots.removeAll(keepingCapacity: true)
            head = 0
        } else if head > 4096, head * 2 > slots.count {
            slots.removeFirst(head)
            head = 0
        }
    }
}
