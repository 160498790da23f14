// JSON parsing cost on the publish path and under hostile input (issue "Hardening", findings 1 and 12a).
//
//   jsonbench time            best-of-5 wall time per operation for every case below
//   jsonbench publish N       the publish-path case N times and nothing else (for callgrind's instruction count)
//   jsonbench case NAME N     one of the cases below N times (for callgrind); `jsonbench names` lists them
//
// Uses only API that exists before and after the hardening, so the same file measures both trees.
import ClarionCore
import Foundation

let apnsPayload = #"{"aps":{"alert":{"title":"Order shipped","body":"Your order #12345 is on its way"},"sound":"default","badge":1},"order_id":"12345"}"#
let gcmPayload = #"{"fcmV1Message":{"message":{"notification":{"title":"Order shipped","body":"Your order #12345 is on its way"},"data":{"order_id":"12345","kind":"shipping"}}}}"#
let messageMap = JSONValue.object(JSONObject([("default", "Your order #12345 is on its way"), ("APNS", .string(apnsPayload)),
                                              ("GCM", .string(gcmPayload))]))
/// A native `POST /v1/publish` body: one target, a message map, an attribute, a TTL (about 600 bytes).
let publishBody = Array(JSONValue.object(JSONObject([
    ("targets", [["endpoint": "arn:aws:sns:us-east-1:123456789012:endpoint/APNS/chat/0190b6a4-7c1e-7cc3-9a55-3f1b2c4d5e6f"]]),
    ("message", messageMap),
    ("attributes", ["AWS.SNS.MOBILE.APNS.PRIORITY": "10"]),
    ("ttl", 3600),
])).encoded())
let mapText = messageMap.jsonText

/// What the publish path does with JSON for one message to an APNs and an FCM endpoint: parse the body (duplicate keys
/// refused), parse the message map and its platform payloads, render both platforms.
func publishPath() -> Int {
    var work = 0
    guard let body = try? JSONValue.parse(bytes: publishBody, duplicateKeys: .reject), let map = body["message"] else { fatalError("body") }
    work += map.objectValue?.count ?? 0
    guard let message = try? SNSMessage.parse(message: mapText, structure: .json, requireDefault: false) else { fatalError("map") }
    for platform in [Platform.apns, .gcm] {
        if case .push(let push) = PushRenderer.render(message, attributes: MobilePushAttributes(), platform: platform,
                                                      settings: RenderSettings(apnsBundleID: "com.example.app"),
                                                      publishedAt: Date(timeIntervalSince1970: 1_735_689_600),
                                                      now: Date(timeIntervalSince1970: 1_735_689_600)) {
            work += push.body(token: "0123456789abcdef", deliveryID: nil).count
        } else {
            fatalError("render")
        }
    }
    return work
}

// MARK: hostile and worst-case documents

func objectText(keys: Int, keyPadding: Int = 0) -> [UInt8] {
    let pad = String(repeating: "k", count: keyPadding)
    var out = "{"
    for i in 0..<keys { out += (i == 0 ? "" : ",") + "\"\(pad)\(i)\":0" }
    return Array((out + "}").utf8)
}

func arrayText(values: Int, element: String) -> [UInt8] {
    Array(("[" + Array(repeating: element, count: values).joined(separator: ",") + "]").utf8)
}

func stringText(_ content: String, bytes: Int) -> [UInt8] {
    let count = max(1, bytes / content.utf8.count)
    return Array(("\"" + String(repeating: content, count: count) + "\"").utf8)
}

/// Nested `{"a":[{"a":[...]}]}` 128 levels of objects in arrays (256 deep), with a short member list at each level,
/// repeated to fill `bytes`.
func nestedText(bytes: Int) -> [UInt8] {
    var one = ""
    for _ in 0..<127 { one += #"{"x":1,"y":"z","a":["# }
    one += "0"
    for _ in 0..<127 { one += "]}" }
    let copies = max(1, bytes / one.utf8.count)
    return Array(("[" + Array(repeating: one, count: copies).joined(separator: ",") + "]").utf8)
}

struct Case {
    let name: String
    let input: [UInt8]
    let duplicateKeys: JSONValue.DuplicateKeyPolicy
}

/// Best of five runs, each repeating the operation for at least 50 ms; one run when it takes more than a second.
func measure(_ operation: () -> Int) -> (seconds: Double, outcome: Int) {
    var best = Double.infinity
    var outcome = 0
    let clock = ContinuousClock()
    for _ in 0..<5 where best < 1 || best == .infinity {
        var iterations = 0
        let start = clock.now
        var elapsed = Duration.zero
        repeat {
            outcome = operation()
            iterations += 1
            elapsed = clock.now - start
        } while elapsed < .milliseconds(50)
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        best = min(best, seconds / Double(iterations))
    }
    return (best, outcome)
}

func format(_ seconds: Double) -> String {
    seconds >= 1e-3 ? String(format: "%9.3f ms", seconds * 1e3) : String(format: "%9.2f us", seconds * 1e6)
}

nonisolated(unsafe) var lastOutcome = ""

func parseOutcome(_ input: [UInt8], _ policy: JSONValue.DuplicateKeyPolicy) -> Int {
    do {
        _ = try JSONValue.parse(bytes: input, duplicateKeys: policy)
        lastOutcome = "accepted"
        return 1
    } catch {
        lastOutcome = "refused: \(error)"
        return 0
    }
}

let oneMiB = 1 << 20, sixtyFourKiB = 64 * 1024, sixteenKiB = 16 * 1024
/// Hostile and worst-case documents: the finding, the limits, and the most work per byte a body can ask for.
let cases: [Case] = [
    Case(name: "object 1,000 keys", input: objectText(keys: 1000), duplicateKeys: .reject),
    Case(name: "object 10,000 keys", input: objectText(keys: 10_000), duplicateKeys: .reject),
    Case(name: "object 10,001 keys", input: objectText(keys: 10_001), duplicateKeys: .reject),
    Case(name: "object 40,000 keys (the finding)", input: objectText(keys: 40_000), duplicateKeys: .reject),
    Case(name: "object 40,000 keys, last wins", input: objectText(keys: 40_000), duplicateKeys: .lastWins),
    Case(name: "1 MiB: object 10,000 keys of 100 bytes", input: objectText(keys: 10_000, keyPadding: 96), duplicateKeys: .reject),
    Case(name: "1 MiB: array of 0 (refused at the cap)", input: arrayText(values: oneMiB / 2, element: "0"), duplicateKeys: .reject),
    Case(name: "array of 99,999 zeros", input: arrayText(values: 99_999, element: "0"), duplicateKeys: .reject),
    Case(name: "array of 99,999 empty objects", input: arrayText(values: 99_999, element: "{}"), duplicateKeys: .reject),
    Case(name: "1 MiB: array of 99,999 short strings", input: arrayText(values: 99_999, element: "\"abcdefgh\""), duplicateKeys: .reject),
    Case(name: "1 MiB: array of 99,999 8-digit numbers", input: arrayText(values: 99_999, element: "12345678"), duplicateKeys: .reject),
    Case(name: "1 MiB: one ASCII string", input: stringText("abcdefgh", bytes: oneMiB), duplicateKeys: .reject),
    Case(name: "1 MiB: one string of 2-4 byte UTF-8", input: stringText("é€😀", bytes: oneMiB), duplicateKeys: .reject),
    Case(name: "1 MiB: one string of \\u00e9 escapes", input: stringText("\\u00e9", bytes: oneMiB), duplicateKeys: .reject),
    Case(name: "1 MiB: one string of surrogate pairs", input: stringText("\\ud83d\\ude00", bytes: oneMiB), duplicateKeys: .reject),
    Case(name: "1 MiB: nested 256 deep, repeated", input: nestedText(bytes: oneMiB), duplicateKeys: .reject),
    Case(name: "64 KiB: object of 10-byte keys", input: objectText(keys: 6_000), duplicateKeys: .reject),
    Case(name: "64 KiB: array of 0", input: arrayText(values: sixtyFourKiB / 2, element: "0"), duplicateKeys: .reject),
    Case(name: "64 KiB: array of empty objects", input: arrayText(values: sixtyFourKiB / 3, element: "{}"), duplicateKeys: .reject),
    Case(name: "64 KiB: nested 256 deep, repeated", input: nestedText(bytes: sixtyFourKiB), duplicateKeys: .reject),
    Case(name: "16 KiB: object of 10-byte keys", input: objectText(keys: 1_500), duplicateKeys: .reject),
    Case(name: "16 KiB: array of 0", input: arrayText(values: sixteenKiB / 2, element: "0"), duplicateKeys: .reject),
    Case(name: "16 KiB: array of empty objects", input: arrayText(values: sixteenKiB / 3, element: "{}"), duplicateKeys: .reject),
    Case(name: "16 KiB: nested 256 deep, repeated", input: nestedText(bytes: sixteenKiB), duplicateKeys: .reject),
    Case(name: "16 KiB: one string of \\u00e9 escapes", input: stringText("\\u00e9", bytes: sixteenKiB), duplicateKeys: .reject),
]

let arguments = CommandLine.arguments
switch arguments.count > 1 ? arguments[1] : "time" {
case "publish":
    let n = arguments.count > 2 ? Int(arguments[2]) ?? 1000 : 1000
    var total = 0
    for _ in 0..<n { total &+= publishPath() }
    print("publish path x \(n): \(total)")
case "names":
    for c in cases { print(c.name) }
case "case":
    // One case, parsed `N` times, for callgrind: `jsonbench case "64 KiB: array of 0" 10`.
    let name = arguments[2], n = arguments.count > 3 ? Int(arguments[3]) ?? 1 : 1
    guard let c = cases.first(where: { $0.name == name }) else { fatalError("no case \(name)") }
    var accepted = 0
    for _ in 0..<n { accepted += parseOutcome(c.input, c.duplicateKeys) }
    print("\(name) x \(n): \(lastOutcome)")
case "time":
    let publish = measure(publishPath)
    print("case                                              bytes        time  outcome")
    print("publish path (body + map + 2 renders)     \(String(format: "%11d", publishBody.count)) \(format(publish.seconds))  ok")
    let body = measure { parseOutcome(publishBody, .reject) }
    print("publish body parse                        \(String(format: "%11d", publishBody.count)) \(format(body.seconds))  \(body.outcome == 1 ? "accepted" : "refused")")
    for c in cases {
        let result = measure { parseOutcome(c.input, c.duplicateKeys) }
        let name = c.name.padding(toLength: 40, withPad: " ", startingAt: 0)
        print("\(name) \(String(format: "%11d", c.input.count)) \(format(result.seconds))  \(lastOutcome)")
    }
default:
    print("usage: jsonbench [time | publish N]")
}
