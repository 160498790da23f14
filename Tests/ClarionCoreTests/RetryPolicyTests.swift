import Foundation
import Testing
@testable import ClarionCore

@Suite("Retry policy")
struct RetryPolicyTests {
    let policy = RetryPolicy(maxAttempts: 5, baseDelay: 1, maxDelay: 60, jitter: 0.5)
    let transient = DeliveryOutcome.retryable(reason: "503", retryAfter: nil)
    let farFuture = t0.addingTimeInterval(86_400)

    // Issue 22's provider storm (10% 503 + 5% 429 on independent requests): no endpoint of a 1M fan-out may be
    // given up. The default's attempt budget must make that a rare event (under one fan-out in a thousand), and its
    // backoff must span more than a short provider outage (5 minutes) before giving up.
    @Test("The default policy gives up on fewer than 0.001 targets of a 1M fan-out under 15% transient faults, and tries for over 5 minutes")
    func defaultBudgetOutlastsAStorm() {
        let standard = RetryPolicy.standard
        #expect(1_000_000 * pow(0.15, Double(standard.maxAttempts)) < 0.001)
        let shortestSpan = (1..<standard.maxAttempts).reduce(0.0) { $0 + standard.backoff(afterAttempt: $1, unitRandom: 1) }
        #expect(shortestSpan > 300)
    }

    @Test("Exponential backoff doubles per attempt, capped, with jitter taking up to half away", arguments: [
        (1, 0.0, 1.0), (1, 0.999_999, 0.500_000_5), (2, 0.0, 2.0), (3, 0.5, 3.0), (4, 0.0, 8.0),
        (6, 0.0, 32.0), (7, 0.0, 60.0), (40, 0.0, 60.0), (40, 1.0, 30.0),
    ])
    func backoff(_ attempt: Int, _ random: Double, _ expected: TimeInterval) {
        #expect(abs(policy.backoff(afterAttempt: attempt, unitRandom: random) - expected) < 1e-9)
    }

    struct Decision: Sendable, CustomTestStringConvertible {
        let rule: String
        let attempt: Int
        let outcome: DeliveryOutcome
        let expiresAt: Date?
        let expected: RetryDecision
        var testDescription: String { rule }
    }

    @Test("Retry decisions", arguments: [
        Decision(rule: "a transient failure is retried after the backoff", attempt: 1,
                 outcome: .retryable(reason: "x", retryAfter: nil), expiresAt: nil, expected: .retry(at: t0.addingTimeInterval(1))),
        Decision(rule: "Retry-After longer than the backoff is honoured", attempt: 1,
                 outcome: .retryable(reason: "x", retryAfter: 120), expiresAt: nil, expected: .retry(at: t0.addingTimeInterval(120))),
        Decision(rule: "Retry-After shorter than the backoff does not shorten it", attempt: 4,
                 outcome: .retryable(reason: "x", retryAfter: 2), expiresAt: nil, expected: .retry(at: t0.addingTimeInterval(8))),
        Decision(rule: "an expired auth token is retried at once", attempt: 1,
                 outcome: .authTokenExpired(reason: "ExpiredProviderToken"), expiresAt: nil, expected: .retry(at: t0)),
        Decision(rule: "attempts are bounded", attempt: 5,
                 outcome: .retryable(reason: "x", retryAfter: nil), expiresAt: nil, expected: .stop(.attemptsExhausted)),
        Decision(rule: "never past the message's expiry", attempt: 2,
                 outcome: .retryable(reason: "x", retryAfter: nil), expiresAt: t0.addingTimeInterval(2), expected: .stop(.expired)),
        Decision(rule: "a Retry-After beyond the expiry means expired", attempt: 1,
                 outcome: .retryable(reason: "x", retryAfter: 600), expiresAt: t0.addingTimeInterval(300), expected: .stop(.expired)),
        Decision(rule: "already expired: no retry even for an auth token", attempt: 1,
                 outcome: .authTokenExpired(reason: "x"), expiresAt: t0, expected: .stop(.expired)),
        Decision(rule: "a retry just before the expiry is allowed", attempt: 1,
                 outcome: .retryable(reason: "x", retryAfter: nil), expiresAt: t0.addingTimeInterval(1.5), expected: .retry(at: t0.addingTimeInterval(1))),
        Decision(rule: "accepted is final", attempt: 1, outcome: .accepted(providerID: nil), expiresAt: nil, expected: .stop(.finalOutcome)),
        Decision(rule: "a dead token is never retried", attempt: 1,
                 outcome: .tokenInvalid(reason: "Unregistered", invalidSince: nil), expiresAt: nil, expected: .stop(.finalOutcome)),
        Decision(rule: "a message error is never retried", attempt: 1, outcome: .messageInvalid(reason: "x"), expiresAt: nil, expected: .stop(.finalOutcome)),
        Decision(rule: "bad credentials are never retried", attempt: 1, outcome: .credentialsInvalid(reason: "x"), expiresAt: nil, expected: .stop(.finalOutcome)),
        Decision(rule: "a rejection is never retried", attempt: 1, outcome: .rejected(reason: "x"), expiresAt: nil, expected: .stop(.finalOutcome)),
    ])
    func decisions(_ c: Decision) {
        #expect(policy.next(attempt: c.attempt, outcome: c.outcome, now: t0, expiresAt: c.expiresAt, unitRandom: 0) == c.expected)
    }

    @Test("The injected generator decides the jitter: same seed, same schedule; delays stay in range")
    func injectedRandomness() {
        func schedule(seed: UInt64) -> [Date] {
            var rng = SplitMix64(state: seed)
            return (1...4).compactMap { attempt in
                if case .retry(let at) = policy.next(attempt: attempt, outcome: transient, now: t0, expiresAt: farFuture, using: &rng) {
                    return at
                }
                return nil
            }
        }
        let a = schedule(seed: 42)
        #expect(a == schedule(seed: 42))
        #expect(a != schedule(seed: 43))
        #expect(a.count == 4)
        for (i, at) in a.enumerated() {
            let full = pow(2, Double(i))
            let delay = at.timeIntervalSince(t0)
            #expect(delay >= full / 2 && delay <= full)
        }
    }
}
