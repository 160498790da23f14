import Foundation
import Testing
@testable import ClarionCore

/// SNS's HTTP/S delivery policy (docs/providers.md C.11.4, source: "Amazon SNS message delivery retries",
/// https://docs.aws.amazon.com/sns/latest/dg/sns-message-delivery-retries.html).
@Suite("HTTP/S delivery policy")
struct HTTPDeliveryPolicyTests {
    @Test("Without a policy SNS makes 3 retries 20 seconds apart (C.11.4, SendMessageToHttp.retry)")
    func snsDefault() throws {
        let policy = try HTTPDeliveryPolicy.parse("{}")
        #expect(policy == .snsDefault)
        #expect((1...3).map { policy.delay(beforeRetry: $0) } == [20, 20, 20])
        #expect(policy.delay(beforeRetry: 4) == nil)
    }

    @Test("Phases in order: immediate, pre-backoff at min, backoff from min to max, post-backoff at max (C.11.4)")
    func phases() throws {
        let policy = try HTTPDeliveryPolicy.parse("""
            {"healthyRetryPolicy": {"numRetries": 8, "numNoDelayRetries": 1, "numMinDelayRetries": 2,
             "numMaxDelayRetries": 1, "minDelayTarget": 2, "maxDelayTarget": 10, "backoffFunction": "linear"}}
            """)
        let delays = (1...8).map { policy.delay(beforeRetry: $0)! }
        #expect(delays == [0, 2, 2, 4, 6, 8, 10, 10])
        #expect(policy.delay(beforeRetry: 9) == nil)
    }

    @Test("Every backoff function starts above min and ends at max, never decreasing", arguments: HTTPDeliveryPolicy.Backoff.allCases)
    func backoffCurves(_ backoff: HTTPDeliveryPolicy.Backoff) throws {
        let policy = try HTTPDeliveryPolicy.parse("""
            {"healthyRetryPolicy": {"numRetries": 5, "minDelayTarget": 1, "maxDelayTarget": 100, "backoffFunction": "\(backoff.rawValue)"}}
            """)
        let delays = (1...5).map { policy.delay(beforeRetry: $0)! }
        #expect(delays.first! >= 1 && abs(delays.last! - 100) < 1e-9)
        #expect(zip(delays, delays.dropFirst()).allSatisfy { $0 <= $1 })
    }

    @Test("A topic policy's http part is read too")
    func topicPolicy() throws {
        let policy = try HTTPDeliveryPolicy.parse("""
            {"http": {"defaultHealthyRetryPolicy": {"numRetries": 1, "minDelayTarget": 5, "maxDelayTarget": 5}}}
            """)
        #expect(policy.numRetries == 1 && policy.delay(beforeRetry: 1) == 5)
    }

    @Test("SNS's limits refuse a policy (C.11.4)", arguments: [
        #"{"healthyRetryPolicy": {"minDelayTarget": 30, "maxDelayTarget": 10}}"#,
        #"{"healthyRetryPolicy": {"numRetries": 101}}"#,
        #"{"healthyRetryPolicy": {"minDelayTarget": 0}}"#,
        #"{"healthyRetryPolicy": {"maxDelayTarget": 3601}}"#,
        #"{"healthyRetryPolicy": {"backoffFunction": "cubic"}}"#,
        #"{"healthyRetryPolicy": {"numRetries": 2, "numNoDelayRetries": 2, "numMaxDelayRetries": 1}}"#,
        #"{"healthyRetryPolicy": {"numRetries": 100, "minDelayTarget": 3600, "maxDelayTarget": 3600}}"#,
        #"{"healthyRetryPolicy": 3}"#,
        "not json",
    ])
    func refused(_ text: String) {
        #expect(throws: HTTPDeliveryPolicyError.self) { try HTTPDeliveryPolicy.parse(text) }
    }
}
