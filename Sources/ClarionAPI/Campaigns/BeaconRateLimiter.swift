import Foundation
import Synchronization

/// Per-source token buckets for the open beacon, in bounded memory.
///
/// The beacon is public, so one address must not be able to fill the opens table or the database's queue.
/// Each source gets `burst` beacons at once and `perSecond` after that. Memory is bounded by two generations
/// of at most `maxSources / 2` buckets each: when the current one is full it becomes the previous one and the
/// oldest generation is dropped. A source seen recently (a storm, by definition) is found in one of the two and
/// moved to the current generation, so it keeps its (empty) bucket; a dropped quiet source only starts again
/// with a full bucket, which it would nearly have had anyway. No per-request allocation beyond the key.
///
/// Pure: time comes in as seconds. `BeaconLimiter` is the locked wrapper the route uses.
public struct BeaconRateLimiterState: Sendable {
    public struct Settings: Sendable, Hashable {
        public var burst: Double
        public var perSecond: Double
        public var maxSources: Int

        public init(burst: Double = 20, perSecond: Double = 2, maxSources: Int = 100_000) {
            self.burst = max(1, burst)
            self.perSecond = max(0, perSecond)
            self.maxSources = max(2, maxSources)
        }
    }

    public enum Decision: Sendable, Hashable {
        case admit
        /// Refused; a token is back after this many seconds.
        case limited(retryAfter: Double)
    }

    struct Bucket: Sendable {
        var tokens: Double
        var updated: Double
    }

    public let settings: Settings
    private var current: [String: Bucket] = [:]
    private var previous: [String: Bucket] = [:]

    public init(settings: Settings = Settings()) { self.settings = settings }

    /// Sources remembered (at most `maxSources`).
    public var trackedSources: Int { current.count + previous.count }

    public mutating func admit(_ source: String, now: Double) -> Decision {
        var bucket = current[source] ?? previous.removeValue(forKey: source)
            ?? Bucket(tokens: settings.burst, updated: now)
        if now > bucket.updated {
            bucket.tokens = min(settings.burst, bucket.tokens + (now - bucket.updated) * settings.perSecond)
            bucket.updated = now
        }
        let decision: Decision
        if bucket.tokens >= 1 {
            bucket.tokens -= 1
            decision = .admit
        } else {
            let wait = settings.perSecond > 0 ? (1 - bucket.tokens) / settings.perSecond : 3600
            decision = .limited(retryAfter: wait)
        }
        if current[source] == nil && current.count >= settings.maxSources / 2 {
            previous = current
            current = [:]
            current.reserveCapacity(settings.maxSources / 2)
        }
        current[source] = bucket
        return decision
    }
}

/// `BeaconRateLimiterState` under a lock, with the clock injected.
public final class BeaconLimiter: Sendable {
    private let state: Mutex<BeaconRateLimiterState>
    private let clock: @Sendable () -> Double

    public init(settings: BeaconRateLimiterState.Settings = .init(),
                clock: @escaping @Sendable () -> Double = { Date().timeIntervalSinceReferenceDate }) {
        state = Mutex(BeaconRateLimiterState(settings: settings))
        self.clock = clock
    }

    public func admit(_ source: String) -> BeaconRateLimiterState.Decision {
        let now = clock()
        return state.withLock { $0.admit(source, now: now) }
    }

    public var trackedSources: Int { state.withLock { $0.trackedSources } }

    /// The bucket key of a peer: an IPv4 address as is, an IPv6 address by its /64 (one host usually holds a
    /// whole /64, so per-address buckets would not limit it), IPv4-mapped IPv6 as the IPv4 address.
    public static func sourceKey(_ address: String) -> String {
        var text = address
        if let percent = text.firstIndex(of: "%") { text = String(text[..<percent]) }
        guard text.contains(":") else { return text }
        var bytes = [UInt8](repeating: 0, count: 16)
        guard inet_pton(AF_INET6, text, &bytes) == 1 else { return text }
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF {
            return bytes[12..<16].map(String.init).joined(separator: ".")
        }
        return bytes[0..<8].map { String(format: "%02x", $0) }.joined() + "/64"
    }
}
