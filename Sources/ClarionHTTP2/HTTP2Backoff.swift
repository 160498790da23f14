import ClarionTransport
/// Reconnect delays: exponential from `initial` to `maximum`, each spread by ±`jitter` (a fraction) so many
/// clients that lost the same server do not come back in step. `random` returns a value in [0, 1); tests inject
/// a constant.
public struct HTTP2Backoff: Sendable {
    public var initial: Duration
    public var maximum: Duration
    public var multiplier: Double
    public var jitter: Double
    public var random: @Sendable () -> Double

    public init(initial: Duration = .seconds(1), maximum: Duration = .seconds(60), multiplier: Double = 2,
                jitter: Double = 0.2, random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }) {
        self.initial = initial
        self.maximum = maximum
        self.multiplier = multiplier
        self.jitter = jitter
        self.random = random
    }

    /// The delay before attempt number `failures + 1`, after `failures` consecutive failures (>= 1).
    public func delay(afterFailures failures: Int) -> Duration {
        .nanoseconds(Int64(delayNanoseconds(afterFailures: failures)))
    }

    func delayNanoseconds(afterFailures failures: Int) -> UInt64 {
        let initialNS = Double(initial.nanoseconds)
        let maximumNS = Double(maximum.nanoseconds)
        let exponent = Double(max(0, failures - 1))
        let base = min(maximumNS, initialNS * pow(multiplier, exponent))
        let spread = 1 - jitter + 2 * jitter * random()
        // Jitter never takes the delay outside [initial, maximum].
        return UInt64(max(initialNS, min(maximumNS, base * spread)))
    }
}

@inline(__always)
private func pow(_ base: Double, _ exponent: Double) -> Double {
    var result = 1.0
    var i = 0.0
    while i < exponent && result < 1e12 {
        result *= base
        i += 1
    }
    return result
}
