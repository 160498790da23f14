import Foundation
import Testing
@testable import ClarionCore

@Suite("Rendering for ADM")
struct PushRendererADMTests {
    func adm(_ value: String) throws -> SNSMessage {
        try SNSMessage.parse(message: structured([("default", "d"), ("ADM", value)]), structure: .json, requireDefault: true)
    }

    @Test("Issue 4: default becomes ADM data.message; no token in the body")
    func defaultMessage() throws {
        let push = try renderOrFail(SNSMessage(defaultText: "Hello"), .adm)
        #expect(push.request == .adm)
        #expect(push.body.slots.isEmpty)
        #expect(String(decoding: push.body(token: "amzn1.adm-registration"), as: UTF8.self) == #"{"data":{"message":"Hello"}}"#)
    }

    @Test("ADM D.2: the ADM object is the body; data values made strings; consolidationKey kept")
    func passThrough() throws {
        let push = try renderOrFail(try adm(#"{"data":{"a":"b","n":3},"consolidationKey":"ck","notification":{"title":"T","body":"B"}}"#), .adm)
        #expect(String(decoding: push.body(token: "x"), as: UTF8.self)
            == #"{"data":{"a":"b","n":"3"},"consolidationKey":"ck","notification":{"title":"T","body":"B"}}"#)
    }

    @Test("ADM D.2: a body without data gets an empty data map")
    func emptyData() throws {
        let push = try renderOrFail(try adm(#"{"notification":{"title":"T","body":"B"}}"#), .adm)
        #expect(bodyJSON(push) == json(#"{"notification":{"title":"T","body":"B"},"data":{}}"#))
    }

    @Test("ADM D.2: 6 KB (6144 bytes) is accepted, one byte more refused")
    func sizeLimit() throws {
        let overhead = #"{"data":{"k":""}}"#.utf8.count
        let ok = try adm(#"{"data":{"k":""# + String(repeating: "v", count: 6144 - overhead) + #""}}"#)
        #expect(try renderOrFail(ok, .adm).body(token: "t").count == 6144)
        let big = try adm(#"{"data":{"k":""# + String(repeating: "v", count: 6145 - overhead) + #""}}"#)
        let result = PushRenderer.render(big, attributes: .init(), platform: .adm, settings: .init(), publishedAt: t0, now: t0)
        #expect(result == .invalid(reason: "ADM payload is 6145 bytes, larger than the 6144-byte limit"))
    }

    @Test("ADM: malformed data or expiresAfter fail the delivery")
    func invalid() throws {
        for (payload, reason) in [
            (#"{"data":"x"}"#, "ADM 'data' must be a JSON object"),
            (#"{"data":{},"expiresAfter":"later"}"#, "ADM 'expiresAfter' must be a whole number of seconds"),
        ] {
            let result = PushRenderer.render(try adm(payload), attributes: .init(), platform: .adm, settings: .init(), publishedAt: t0, now: t0)
            #expect(result == .invalid(reason: reason))
        }
    }

    @Test("Delivery id slot goes into ADM data")
    func deliveryID() throws {
        let push = try renderOrFail(SNSMessage(defaultText: "hi"), .adm, settings: RenderSettings(deliveryIDKey: "cdid"))
        #expect(String(decoding: push.body(token: "t", deliveryID: "D"), as: UTF8.self) == #"{"data":{"message":"hi","cdid":"D"}}"#)
    }
}
