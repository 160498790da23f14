import Foundation
import Testing
@testable import ClarionCore

/// A fixed clock reading for tests: 2025-01-01T00:00:00Z.
let t0 = Date(timeIntervalSince1970: 1_735_689_600)

func json(_ text: String) -> JSONValue {
    do { return try JSONValue.parse(text) } catch { fatalError("bad test JSON \(text): \(error)") }
}

func object(_ text: String) -> JSONObject {
    guard let o = json(text).objectValue else { fatalError("not an object: \(text)") }
    return o
}

/// A message map as a Publish carries it: each platform value is the JSON text of an object.
func structured(_ entries: [(String, String)]) -> String {
    JSONValue.object(JSONObject(entries.map { ($0.0, JSONValue.string($0.1)) })).jsonText
}

func renderOrFail(
    _ message: SNSMessage, _ platform: Platform, attributes: MobilePushAttributes = MobilePushAttributes(),
    settings: RenderSettings = RenderSettings(apnsBundleID: "com.example.app"),
    publishedAt: Date = t0, now: Date = t0, sourceLocation: SourceLocation = #_sourceLocation
) throws -> RenderedPush {
    let result = PushRenderer.render(
        message, attributes: attributes, platform: platform, settings: settings, publishedAt: publishedAt, now: now)
    return try #require(result.push, "expected a push, got \(result)", sourceLocation: sourceLocation)
}

/// The body filled with a token, parsed back.
func bodyJSON(_ push: RenderedPush, token: String = "tok", deliveryID: String? = nil) -> JSONValue {
    json(String(decoding: push.body(token: token, deliveryID: deliveryID), as: UTF8.self))
}

func apnsHeaders(_ push: RenderedPush, sourceLocation: SourceLocation = #_sourceLocation) throws -> APNsRequestHeaders {
    guard case .apns(let headers) = push.request else {
        Issue.record("not an APNs push: \(push.request)", sourceLocation: sourceLocation)
        throw CancellationError()
    }
    return headers
}

/// A deterministic generator for retry jitter.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
