import Foundation

/// The retry schedule of an HTTP/S subscription: SNS's `DeliveryPolicy` `healthyRetryPolicy` (docs/providers.md,
/// C.11.4). Pure: the caller supplies the attempt number and adds the delay to its clock.
///
/// SNS's phases, in order, after the first attempt fails:
///
///     immediate     numNoDelayRetries   retries with no delay
///     pre-backoff   numMinDelayRetries  retries minDelayTarget apart
///     backoff       the rest            from minDelayTarget to maxDelayTarget along backoffFunction
///     post-backoff  numMaxDelayRetries  retries maxDelayTarget apart
///
/// `numRetries` counts them all. Without a policy SNS makes 3 retries 20 s apart (numRetries 3, min = max = 20,
/// linear). SNS documents the backoff curves only as a graph; Clarion's are, for step i of n (f = i / n):
/// linear min + (max - min)·f, arithmetic min + (max - min)·f², geometric min·(max/min)^f and exponential
/// min + (max - min)·(2^(f·n) - 1) / (2^n - 1), each reaching maxDelayTarget on the last backoff retry.
public struct HTTPDeliveryPolicy: Sendable, Hashable {
    public enum Backoff: String, Sendable, Hashable, CaseIterable {
        case linear, arithmetic, geometric, exponential
    }

    public var numRetries: Int
    public var numNoDelayRetries: Int
    public var numMinDelayRetries: Int
    public var numMaxDelayRetries: Int
    public var minDelayTarget: Int
    public var maxDelayTarget: Int
    public var backoff: Backoff

    /// SNS's default for HTTP/S: 3 retries, 20 seconds apart.
    public static let snsDefault = HTTPDeliveryPolicy(numRetries: 3, numNoDelayRetries: 0, numMinDelayRetries: 0,
                                                      numMaxDelayRetries: 0, minDelayTarget: 20, maxDelayTarget: 20,
                                                      backoff: .linear)

    public init(numRetries: Int, numNoDelayRetries: Int, numMinDelayRetries: Int, numMaxDelayRetries: Int,
                minDelayTarget: Int, maxDelayTarget: Int, backoff: Backoff) {
        self.numRetries = numRetries
        self.numNoDelayRetries = numNoDelayRetries
        self.numMinDelayRetries = numMinDelayRetries
        self.numMaxDelayRetries = numMaxDelayRetries
        self.minDelayTarget = minDelayTarget
        self.maxDelayTarget = maxDelayTarget
        self.backoff = backoff
    }

    /// Parses a subscription's or topic's `DeliveryPolicy` JSON. A subscription policy has `healthyRetryPolicy`
    /// at the top; a topic policy has it under `"http"`. Absent keys take SNS's defaults. Refuses what SNS refuses
    /// (docs/providers.md C.11.4): numbers out of range, minDelayTarget > maxDelayTarget, an unknown backoffFunction,
    /// and a schedule whose retries would take longer than 3,600 seconds in all.
    public static func parse(_ text: String) throws(HTTPDeliveryPolicyError) -> HTTPDeliveryPolicy {
        let value: JSONValue
        do { value = try JSONValue.parse(text) } catch { throw HTTPDeliveryPolicyError("DeliveryPolicy: failed to parse JSON") }
        guard let object = value.objectValue else { throw HTTPDeliveryPolicyError("DeliveryPolicy: must be a JSON object") }
        let healthy = object["healthyRetryPolicy"] ?? object["http"]?["defaultHealthyRetryPolicy"]
            ?? object["http"]?["healthyRetryPolicy"]
        var policy = snsDefault
        guard let healthy else { return policy }
        guard let fields = healthy.objectValue else {
            throw HTTPDeliveryPolicyError("DeliveryPolicy: healthyRetryPolicy must be a JSON object")
        }
        func integer(_ key: String, _ range: ClosedRange<Int>) throws(HTTPDeliveryPolicyError) -> Int? {
            guard let value = fields[key] else { return nil }
            guard let number = value.intValue, range.contains(number) else {
                throw HTTPDeliveryPolicyError("DeliveryPolicy: \(key) must be an integer from \(range.lowerBound) to \(range.upperBound)")
            }
            return number
        }
        policy.numRetries = try integer("numRetries", 0...100) ?? policy.numRetries
        policy.numNoDelayRetries = try integer("numNoDelayRetries", 0...100) ?? 0
        policy.numMinDelayRetries = try integer("numMinDelayRetries", 0...100) ?? 0
        policy.numMaxDelayRetries = try integer("numMaxDelayRetries", 0...100) ?? 0
        policy.minDelayTarget = try integer("minDelayTarget", 1...3600) ?? policy.minDelayTarget
        policy.maxDelayTarget = try integer("maxDelayTarget", 1...3600) ?? max(policy.maxDelayTarget, policy.minDelayTarget)
        if let name = fields["backoffFunction"] {
            guard let text = name.stringValue, let backoff = Backoff(rawValue: text.lowercased()) else {
                throw HTTPDeliveryPolicyError("DeliveryPolicy: backoffFunction must be one of linear, arithmetic, geometric, exponential")
            }
            policy.backoff = backoff
        }
        guard policy.minDelayTarget <= policy.maxDelayTarget else {
            throw HTTPDeliveryPolicyError("DeliveryPolicy: minDelayTarget must not be greater than maxDelayTarget")
        }
        guard policy.numNoDelayRetries + policy.numMinDelayRetries + policy.numMaxDelayRetries <= policy.numRetries else {
            throw HTTPDeliveryPolicyError("DeliveryPolicy: numNoDelayRetries + numMinDelayRetries + numMaxDelayRetries must not exceed numRetries")
        }
        let total = (1...max(1, policy.numRetries)).reduce(0.0) { $0 + (policy.delay(beforeRetry: $1) ?? 0) }
        guard total <= 3600 else {
            throw HTTPDeliveryPolicyError("DeliveryPolicy: the retries would take longer than 3600 seconds")
        }
        return policy
    }

    /// Seconds to wait before retry `retry` (1 = the first retry, after the first attempt failed); nil when the
    /// policy has no such retry (the delivery has failed for good).
    public func delay(beforeRetry retry: Int) -> Double? {
        guard retry >= 1, retry <= numRetries else { return nil }
        var step = retry
        if step <= numNoDelayRetries { return 0 }
        step -= numNoDelayRetries
        if step <= numMinDelayRetries { return Double(minDelayTarget) }
        step -= numMinDelayRetries
        let backoffRetries = numRetries - numNoDelayRetries - numMinDelayRetries - numMaxDelayRetries
        if step > backoffRetries { return Double(maxDelayTarget) }
        let low = Double(minDelayTarget), high = Double(maxDelayTarget)
        let f = Double(step) / Double(max(1, backoffRetries))
        switch backoff {
        case .linear: return low + (high - low) * f
        case .arithmetic: return low + (high - low) * f * f
        case .geometric: return low * pow2(log2Ratio: log2(high / low) * f)
        case .exponential:
            let n = Double(max(1, backoffRetries))
            return low + (high - low) * (exp2(f * n) - 1) / (exp2(n) - 1)
        }
    }

    private func pow2(log2Ratio: Double) -> Double { exp2(log2Ratio) }
}

/// Why a DeliveryPolicy was refused, in SNS's words where SNS has them.
public struct HTTPDeliveryPolicyError: Error, Sendable, Hashable {
    public let message: String
    public init(_ message: String) { self.message = message }
}
