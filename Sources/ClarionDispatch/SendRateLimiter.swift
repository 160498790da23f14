import Foundation
import Synchronization

/// Per-application send-rate limits of one process (`ClarionSendRate`, deliveries per second, a platform
/// application attribute): a token bucket per application, shared by every shard worker of the process.
///
/// A worker asks for as many tokens as it has deliveries ready, sends what it is granted, keeps the rest pending
/// and sleeps in its completion inbox until the next token is due (`retryIn`): nothing spins. The bucket holds
/// at most a tenth of a second's worth (at least one), so a burst after idling stays small. The limit is per
/// process: N gateway nodes send up to N times the rate.
final class SendRateLimiter: Sendable {
    struct Grant {
        var granted: Int
        /// Seconds until the rest (up to a bucketful) is available (0 when everything asked for was granted).
        var retryIn: Double
    }

    private struct Bucket {
        var rate: Double
        var tokens: Double
        var last: ContinuousClock.Instant
    }

    private let buckets = Mutex<[Int64: Bucket]>([:])

    /// The attribute's value as a rate: a positive finite number of deliveries per second; nil means no limit.
    static func rate(attribute: String?) -> Double? {
        guard let attribute, let rate = Double(attribute.trimmingCharacters(in: .whitespaces)), rate.isFinite, rate > 0
        else { return nil }
        return rate
    }

    static func burst(_ rate: Double) -> Double { max(1, rate / 10) }

    func take(_ application: Int64, rate: Double, want: Int, now: ContinuousClock.Instant = .now) -> Grant {
        guard want > 0 else { return Grant(granted: 0, retryIn: 0) }
        return buckets.withLock { buckets in
            var bucket = buckets[application] ?? Bucket(rate: rate, tokens: Self.burst(rate), last: now)
            let elapsed = bucket.last.duration(to: now)
            let seconds = max(0, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
            bucket.rate = rate  // the attribute may have changed: the new rate applies from now
            bucket.tokens = min(Self.burst(rate), bucket.tokens + seconds * rate)
            bucket.last = now
            let granted = min(want, Int(bucket.tokens.rounded(.down)))
            bucket.tokens -= Double(granted)
            buckets[application] = bucket
            // Wake when a useful batch is due (what is still wanted, up to the bucket's size), not per token.
            let next = min(Double(want - granted), Self.burst(rate))
            let retryIn = granted == want ? 0 : max(0.001, (next - bucket.tokens) / rate)
            return Grant(granted: granted, retryIn: retryIn)
        }
    }

    /// Gives back tokens taken for deliveries the transport did not admit.
    func refund(_ application: Int64, _ count: Int) {
        guard count > 0 else { return }
        buckets.withLock { buckets in
            guard var bucket = buckets[application] else { return }
            bucket.tokens = min(Self.burst(bucket.rate), bucket.tokens + Double(count))
            buckets[application] = bucket
        }
    }
}
