import Foundation
import Testing
@testable import ClarionCore

/// Huawei Push Kit v1 rendering and result codes (docs/providers.md E.1, E.1a).
@Suite("Huawei Push Kit")
struct HMSTests {
    func hms(_ value: String) throws -> SNSMessage {
        try SNSMessage.parse(message: structured([("default", "d"), ("HMS", value)]), structure: .json, requireDefault: true)
    }

    func text(_ push: RenderedPush, token: String = "tok", deliveryID: String? = nil) -> String {
        String(decoding: push.body(token: token, deliveryID: deliveryID), as: UTF8.self)
    }

    // MARK: Rendering

    @Test("E.1: default text becomes notification.body with android.notification.click_action type 3; token is a list")
    func defaultText() throws {
        let push = try renderOrFail(SNSMessage(defaultText: "Hello"), .hms)
        #expect(push.request == .hms)
        #expect(text(push, token: "IQAAAA")
            == #"{"message":{"notification":{"body":"Hello"},"android":{"notification":{"click_action":{"type":3}}},"token":["IQAAAA"]}}"#)
    }

    @Test("E.1: the HMS key's object is the message; a given click_action is kept; targets are Clarion's")
    func objectPayload() throws {
        let push = try renderOrFail(try hms(#"{"data":"{\"k\":1}","android":{"notification":{"title":"T","body":"B","click_action":{"type":1,"intent":"x"}}},"topic":"no"}"#), .hms)
        #expect(bodyJSON(push, token: "t1") == json(
            #"{"message":{"data":"{\"k\":1}","android":{"notification":{"title":"T","body":"B","click_action":{"type":1,"intent":"x"}}},"token":["t1"]}}"#))
    }

    @Test("HMS key as plain text (not a JSON object) is the notification body")
    func plainTextKey() throws {
        let message = try SNSMessage.parse(message: #"{"default":"d","HMS":"just words"}"#, structure: .json, requireDefault: true)
        let push = try renderOrFail(message, .hms)
        #expect(bodyJSON(push)["message"]?["notification"]?["body"]?.stringValue == "just words")
    }

    @Test("E.1: data given as an object is sent as its JSON text (Push Kit's data is a string)")
    func dataObject() throws {
        let push = try renderOrFail(try hms(#"{"data":{"a":"b"}}"#), .hms)
        #expect(text(push) == #"{"message":{"data":"{\"a\":\"b\"}","token":["tok"]}}"#)
    }

    @Test("E.1: TTL attribute -> android.ttl \"Ns\", capped at 15 days; APNs priority 10 -> urgency HIGH, 5 -> NORMAL")
    func ttlAndUrgency() throws {
        var attributes = MobilePushAttributes(ttl: [.hms: 600])
        attributes.apnsPriority = 10
        let push = try renderOrFail(SNSMessage(defaultText: "x"), .hms, attributes: attributes)
        let android = bodyJSON(push)["message"]?["android"]
        #expect(android?["ttl"]?.stringValue == "600s")
        #expect(android?["urgency"]?.stringValue == "HIGH")
        #expect(push.expiresAt == t0.addingTimeInterval(600))

        var long = MobilePushAttributes(ttl: [.hms: 2_000_000])
        long.apnsPriority = 5
        let capped = bodyJSON(try renderOrFail(SNSMessage(defaultText: "x"), .hms, attributes: long))["message"]?["android"]
        #expect(capped?["ttl"]?.stringValue == "1296000s")
        #expect(capped?["urgency"]?.stringValue == "NORMAL")
        // The attribute name the platform reads.
        #expect(Platform.hms.ttlAttributeNames == ["AWS.SNS.MOBILE.HMS.TTL"])
    }

    @Test("E.1: collapse_key must be -1...100; urgency HIGH or NORMAL; ttl a duration")
    func invalidFields() throws {
        for (payload, reason) in [
            (#"{"android":{"collapse_key":101}}"#, "HMS 'android.collapse_key' must be an integer from -1 to 100"),
            (#"{"android":{"collapse_key":-2}}"#, "HMS 'android.collapse_key' must be an integer from -1 to 100"),
            (#"{"android":{"urgency":"LOW"}}"#, "HMS 'android.urgency' must be \"HIGH\" or \"NORMAL\""),
            (#"{"android":{"ttl":"soon"}}"#, "HMS 'android.ttl' must be a duration such as \"86400s\""),
            (#"{"data":5}"#, "HMS 'data' must be a string (JSON text) or a JSON object"),
        ] {
            let result = PushRenderer.render(try hms(payload), attributes: .init(), platform: .hms, settings: .init(), publishedAt: t0, now: t0)
            #expect(result == .invalid(reason: reason))
        }
        for key in [-1, 0, 100] {
            _ = try renderOrFail(try hms(#"{"data":"x","android":{"collapse_key":\#(key)}}"#), .hms)
        }
    }

    @Test("E.1: 4096 bytes of body without the tokens pass, one more byte is refused; tokens do not count")
    func sizeLimit() throws {
        let overhead = #"{"message":{"data":"","token":[""]}}"#.utf8.count
        let ok = try renderOrFail(try hms(#"{"data":""# + String(repeating: "v", count: 4096 - overhead) + #""}"#), .hms)
        #expect(ok.body.fixedByteCount == 4096)
        #expect(ok.body(token: String(repeating: "t", count: 200)).count == 4296)
        let big = try hms(#"{"data":""# + String(repeating: "v", count: 4097 - overhead) + #""}"#)
        let result = PushRenderer.render(big, attributes: .init(), platform: .hms, settings: .init(), publishedAt: t0, now: t0)
        #expect(result == .invalid(reason: "HMS payload is 4097 bytes without its tokens, larger than the 4096-byte limit"))
    }

    @Test("Delivery ids go inside the data JSON text")
    func deliveryID() throws {
        let push = try renderOrFail(SNSMessage(defaultText: "hi"), .hms, settings: RenderSettings(deliveryIDKey: "cdid"))
        let data = try #require(bodyJSON(push, deliveryID: "D1")["message"]?["data"]?.stringValue)
        #expect(json(data) == json(#"{"cdid":"D1"}"#))
    }

    @Test("E.1: many tokens share one body: fill(tokens:) writes the token list")
    func tokenList() throws {
        let push = try renderOrFail(SNSMessage(defaultText: "Hello"), .hms)
        let body = String(decoding: push.body.fill(tokens: ["a", "b\"c", "d"]), as: UTF8.self)
        #expect(json(body)["message"]?["token"] == json(#"["a","b\"c","d"]"#))
    }

    // MARK: Result codes

    func response(_ status: Int, _ body: String, retryAfter: String? = nil) -> ProviderResponse {
        ProviderResponse(status: status, headers: retryAfter.map { [("retry-after", $0)] } ?? [], body: body)
    }

    @Test("E.1: 80000000 accepts every token, requestId is the provider id")
    func success() {
        let outcomes = HMSResponseClassifier.classify(response(200, #"{"code":"80000000","msg":"Success","requestId":"r1"}"#),
                                                      tokens: ["a", "b"], now: t0)
        #expect(outcomes == [.accepted(providerID: "r1"), .accepted(providerID: "r1")])
    }

    @Test("E.1: 80100000 partial success: tokens listed in msg's illegal_tokens are invalid, the others accepted")
    func partial() {
        let msg = #"{\"success\":1,\"failure\":1,\"illegal_tokens\":[\"bad\"]}"#
        let outcomes = HMSResponseClassifier.classify(response(200, #"{"code":"80100000","msg":"\#(msg)","requestId":"r2"}"#),
                                                      tokens: ["good", "bad"], now: t0)
        #expect(outcomes[0] == .accepted(providerID: "r2"))
        #expect(outcomes[1].label == "token_invalid")
        #expect(outcomes[1].endpointAction == .disable(reason: "Push Kit 80100000: the token is not valid (illegal_tokens)", at: nil))
    }

    @Test("E.1a: illegal tokens nested by reason (illegalTokens, as v3 answers are seen) are read too")
    func partialNested() {
        let msg = #"{\"illegalTokens\":{\"noRight\":[\"b\"]},\"failure\":1}"#
        let outcomes = HMSResponseClassifier.classify(response(200, #"{"code":"80100000","msg":"\#(msg)","requestId":"r3"}"#),
                                                      tokens: ["a", "b"], now: t0)
        #expect(outcomes.map(\.label) == ["accepted", "token_invalid"])
    }

    @Test("E.1: 80300007 all invalid, 80300008 too large, 80100003 bad structure, 80300010 token count, 80300002 not permitted")
    func codes() {
        func one(_ status: Int, _ code: String) -> DeliveryOutcome {
            HMSResponseClassifier.classify(response(status, #"{"code":"\#(code)","msg":"m","requestId":"r"}"#), token: "t", now: t0)
        }
        #expect(one(400, "80300007") == .tokenInvalid(reason: "Push Kit 80300007: the token is not valid", invalidSince: nil))
        #expect(one(400, "80300008") == .messageInvalid(reason: "Push Kit 80300008: the message body is larger than 4 KB"))
        #expect(one(400, "80100003") == .messageInvalid(reason: "Push Kit 80100003: m"))
        #expect(one(400, "80300010") == .rejected(reason: "Push Kit 80300010: token count out of range"))
        #expect(one(403, "80300002").disablesApplication)
        #expect(one(401, "80200003") == .authTokenExpired(reason: "Push Kit 80200003: OAuth access token expired"))
        #expect(one(401, "80200001") == .authTokenExpired(reason: "Push Kit 80200001: OAuth authentication failed"))
    }

    @Test("E.1a: a msg that is JSON (it can list tokens) is never quoted in a reason")
    func noTokensInReasons() {
        let msg = #"{\"illegalTokens\":{\"noRight\":[\"IQAAAAsecrettoken\"]},\"failure\":1}"#
        for code in ["80300007", "80100003", "80999999"] {
            let outcome = HMSResponseClassifier.classify(response(400, #"{"code":"\#(code)","msg":"\#(msg)"}"#), token: "t", now: t0)
            #expect(outcome.reason?.contains("IQAAAAsecrettoken") == false, "\(outcome)")
        }
    }

    @Test("E.1: HTTP 503 flow control, 429 and 5xx are retried after Retry-After; unreadable bodies are classified by status")
    func retryable() {
        #expect(HMSResponseClassifier.classify(response(503, #"{"msg":"flow control"}"#, retryAfter: "7"), token: "t", now: t0)
            == .retryable(reason: "Push Kit answered 503 (flow control)", retryAfter: 7))
        #expect(HMSResponseClassifier.classify(response(429, "", retryAfter: "2"), token: "t", now: t0).label == "retryable")
        #expect(HMSResponseClassifier.classify(response(500, "<html>"), token: "t", now: t0).label == "retryable")
        #expect(HMSResponseClassifier.classify(response(401, ""), token: "t", now: t0).label == "auth_token_expired")
        #expect(HMSResponseClassifier.classify(response(200, "{}"), token: "t", now: t0).label == "rejected")
    }
}
