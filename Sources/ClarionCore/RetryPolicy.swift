import Foundation

/// What to do after a delivery attempt.
public enum RetryDecision: Sendable, Hashable {
    /// Send again, not before this time.
    case retry(at: Date)
    /// Do not send again.
    case stop(StopReason)

    public enum StopReason: Sendable, Hashable {
        /// The outcome is final (accepted, token invalid, message invalid, ...): nothing to retry.
        case finalOutcome
        /// The attempt budget is spent: record the last outcome as the delivery's failure.
        case attemptsExhausted
        /// The next attempt would fall at or after the message's expiry: count the delivery as expired.
        case expired
    }
}

/// When to retry a delivery: exponential backoff with jitter, Retry-After honoured, a bounded number of
/// attempts, never past the message's expiry. A pure function of its inputs; randomness is injected.
///
/// Backoff after `n` failed attempts (before jitter): `min(maxDelay, baseDelay * 2^(n-1))`; jitter then takes
/// up to `jitter` of it away, so retries of a burst of failures spread out instead of arriving together.
/// With the defaults (1 s base, 5 min cap, jitter 0.5):
///
/// | after attempt | 1 | 2 | 3 | 4 | 5 | ... | 10+ |
/// |---|---|---|---|---|---|---|---|
/// | delay (s) | 0.5–1 | 1–2 | 2–4 | 4–8 | 8–16 | | 150–300 |
///
/// Twelve attempts by default, spread over about 9 to 19 minutes: with independent transient faults on 15% of
/// requests a target then fails every attempt with probability 0.15^12 (about 1e-10), so even a million-target
/// fan-out on a bad day almost never gives one up (eight attempts would give one up about every fourth such fan-out:
/// docs/testing.md, "Provider storm"), and a provider outage of a few minutes does not exhaust every delivery in
/// flight. The TTL still bounds the whole.
///
/// A `Retry-After` from the provider is a floor: the delay is the larger of it and the backoff.
/// `authTokenExpired` is retried at once: the new token is the fix, and the sender waits for it anyway.
public struct RetryPolicy: Sendable, Hashable {
    /// Attempts in all, the first one included.
    public var maxAttempts: Int
    public var baseDelay: TimeInterval
    public var maxDelay: TimeInterval
    /// Fraction of the backoff that is random, 0...1.
    public var jitter: Double

    public init(maxAttempts: Int = 12, baseDelay: TimeInterval = 1, maxDelay: TimeInterval = 300, jitter: Double = 0.5) {
        precondition(maxAttempts >= 1 && baseDelay >= 0 && maxDelay >= baseDelay && (0...1).contains(jitter))
        self.maxAttempts = maxAttempts
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.jitter = jitter
    }

    public static let standard = RetryPolicy()

    /// The backoff after `attempt` failed attempts (1-based), with `unitRandom` in 0..<1 choosing the jitter.
    public func backoff(afterAttempt attempt: Int, unitRandom: Double) -> TimeInterval {
        let exponent = Double(max(0, attempt - 1))
        let full = min(maxDelay, baseDelay * pow(2, min(exponent, 62)))
        return full * (1 - jitter * min(max(unitRandom, 0), 1))
    }

    /// Decides after attempt number `attempt` (1 for the first send) ended with `outcome`.
    /// - Parameter expiresAt: the message's expiry (`RenderedPush.expiresAt`); nil for no bound.
    public func next(
        attempt: Int, outcome: DeliveryOutcome, now: Date, expiresAt: Date?,
        using random: inout some RandomNumberGenerator
    ) -> RetryDecision {
        next(attempt: attempt, outcome: outcome, now: now, expiresAt: expiresAt,
             unitRandom: Double.random(in: 0..<1, using: &random))
    }

    /// As above with the random number given (for tables of expected delays).
    public func next(
        attempt: Int, outcome: DeliveryOutcome, now: Date, expiresAt: Date?, unitRandom: Double
    ) -> RetryDecision {
        let delay: TimeInterval
        switch outcome {
        case .retryable(_, let retryAfter):
            delay = max(retryAfter ?? 0, backoff(afterAttempt: attempt, unitRandom: unitRandom))
        case .authTokenExpired:
            delay = 0
        default:
            return .stop(.finalOutcome)
        }
        if let expiresAt, now >= expiresAt { return .stop(.expired) }
        guard attempt < maxAttempts else { return .stop(.attemptsExhausted) }
        let at = now.addingTimeInterval(delay)
        if let expiresAt, at >= expiresAt { return .stop(.expired) }
        return .retry(at: at)
    }
}
