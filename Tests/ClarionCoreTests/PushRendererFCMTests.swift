import Foundation
import Testing
@testable import ClarionCore

@Suite("Rendering for FCM HTTP v1")
struct PushRendererFCMTests {
    func gcm(_ value: String) throws -> SNSMessage {
        try SNSMessage.parse(message: structured([("GCM", value)]), structure: .json, requireDefault: false)
    }

    @Test("Issue 4: default becomes an FCM notification body, with the token spliced into message.token")
    func defaultNotification() throws {
        let push = try renderOrFail(SNSMessage(defaultText: "Hello"), .gcm)
        #expect(push.request == .fcm)
        #expect(push.body.slots == [.token])
        #expect(String(decoding: push.body(token: "fcm:tok-1_x"), as: UTF8.self)
            == #"{"message":{"notification":{"body":"Hello"},"token":"fcm:tok-1_x"}}"#)
    }

    @Test("SNS C.3: fcmV1Message passes through with the token set, validate_only kept, publisher targets removed")
    func v1PassThrough() throws {
        let v1 = #"""
        {"fcmV1Message":{"validate_only":true,"message":{"token":"someone-else","topic":"news",
         "notification":{"title":"T","body":"B"},"data":{"k":"v"},
         "android":{"priority":"high","notification":{"click_action":"open"}},
         "apns":{"payload":{"aps":{"sound":"default"}}},"webpush":{"headers":{"Urgency":"high"}}}}}
        """#
        let push = try renderOrFail(try gcm(v1), .gcm)
        #expect(String(decoding: push.body(token: "T0K"), as: UTF8.self) == #"{"message":{"notification":{"title":"T","body":"B"},"data":{"k":"v"},"android":{"priority":"high","notification":{"click_action":"open"}},"apns":{"payload":{"aps":{"sound":"default"}}},"webpush":{"headers":{"Urgency":"high"}},"token":"T0K"},"validate_only":true}"#)
    }

    @Test("FCM B.3: non-string data values are sent as strings (AWS's own example puts numbers in data)")
    func dataStringified() throws {
        let v1 = #"{"fcmV1Message":{"message":{"data":{"time_to_live":3600,"flag":true,"obj":{"a":1},"gone":null,"s":"x"},"android":{"data":{"n":1.5}}}}}"#
        let body = bodyJSON(try renderOrFail(try gcm(v1), .gcm))
        #expect(body["message"]?["data"] == json(#"{"time_to_live":"3600","flag":"true","obj":"{\"a\":1}","s":"x"}"#))
        #expect(body["message"]?["android"]?["data"] == json(#"{"n":"1.5"}"#))
    }

    struct Legacy: Sendable, CustomTestStringConvertible {
        let rule: String
        let legacy: String
        let message: String
        var testDescription: String { rule }
    }

    @Test("FCM B.8: legacy GCM payloads map onto v1 fields", arguments: [
        Legacy(rule: "FCM B.8: notification title/body/image stay in message.notification, Android keys go to android.notification",
               legacy: #"{"notification":{"title":"T","body":"B","image":"https://i","icon":"ic","color":"red","tag":"g","android_channel_id":"ch","unknown_key":"dropped"}}"#,
               message: #"{"notification":{"title":"T","body":"B","image":"https://i"},"android":{"notification":{"icon":"ic","color":"red","tag":"g","channel_id":"ch"}},"token":"tok"}"#),
        Legacy(rule: "FCM B.8: data is kept with string values",
               legacy: #"{"data":{"message":"Check out these awesome deals!","url":"www.amazon.com","n":5}}"#,
               message: #"{"data":{"message":"Check out these awesome deals!","url":"www.amazon.com","n":"5"},"token":"tok"}"#),
        Legacy(rule: "FCM B.8: collapse_key and priority map to android and apns headers",
               legacy: #"{"data":{},"collapse_key":"deals","priority":"high"}"#,
               message: #"{"data":{},"android":{"collapse_key":"deals","priority":"HIGH"},"apns":{"headers":{"apns-collapse-id":"deals","apns-priority":"10"}},"token":"tok"}"#),
        Legacy(rule: "FCM B.8: priority normal is NORMAL and apns-priority 5",
               legacy: #"{"priority":"normal"}"#,
               message: #"{"android":{"priority":"NORMAL"},"apns":{"headers":{"apns-priority":"5"}},"token":"tok"}"#),
        Legacy(rule: "FCM B.8: content_available is a background APNs push with priority 5; mutable_content maps too",
               legacy: #"{"priority":"high","content_available":true,"mutable_content":true}"#,
               message: #"{"android":{"priority":"HIGH"},"apns":{"headers":{"apns-priority":"5","apns-push-type":"background"},"payload":{"aps":{"content-available":1,"mutable-content":1}}},"token":"tok"}"#),
        Legacy(rule: "FCM B.8: sound, badge and click_action also reach iOS through apns.payload.aps",
               legacy: #"{"notification":{"sound":"ding","badge":"3","click_action":"OPEN"}}"#,
               message: #"{"android":{"notification":{"sound":"ding","click_action":"OPEN"}},"apns":{"payload":{"aps":{"sound":"ding","badge":3,"category":"OPEN"}}},"token":"tok"}"#),
        Legacy(rule: "FCM B.8: loc args given as a JSON string become an array of strings",
               legacy: #"{"notification":{"body_loc_key":"K","body_loc_args":"[\"a\",2]","title_loc_args":["t"]}}"#,
               message: #"{"android":{"notification":{"body_loc_key":"K","body_loc_args":["a","2"],"title_loc_args":["t"]}},"token":"tok"}"#),
        Legacy(rule: "FCM B.8: restricted_package_name moves into android; targets and delay_while_idle are dropped",
               legacy: #"{"to":"/topics/x","registration_ids":["a"],"delay_while_idle":true,"restricted_package_name":"com.x","data":{"a":"b"}}"#,
               message: #"{"data":{"a":"b"},"android":{"restricted_package_name":"com.x"},"token":"tok"}"#),
    ])
    func legacyMapping(_ c: Legacy) throws {
        let body = bodyJSON(try renderOrFail(try gcm(c.legacy), .gcm))
        #expect(body == .object(JSONObject([("message", json(c.message))])))
    }

    @Test("FCM B.8: dry_run becomes validate_only")
    func dryRun() throws {
        let body = bodyJSON(try renderOrFail(try gcm(#"{"data":{"a":"b"},"dry_run":true}"#), .gcm))
        #expect(body["validate_only"] == true)
    }

    struct InvalidCase: Sendable, CustomTestStringConvertible {
        let payload: String
        let reason: String
        var testDescription: String { payload }
    }

    @Test("Malformed GCM payloads fail their deliveries with a reason", arguments: [
        InvalidCase(payload: #"{"fcmV1Message":"x"}"#, reason: "GCM 'fcmV1Message' must be a JSON object"),
        InvalidCase(payload: #"{"fcmV1Message":{"validate_only":false}}"#, reason: "GCM 'fcmV1Message.message' must be a JSON object"),
        InvalidCase(payload: #"{"fcmV1Message":{"validate_only":"yes","message":{}}}"#, reason: "GCM 'fcmV1Message.validate_only' must be true or false"),
        InvalidCase(payload: #"{"fcmV1Message":{"message":{"data":[1]}}}"#, reason: "GCM 'message.data' must be a JSON object"),
        InvalidCase(payload: #"{"fcmV1Message":{"message":{"android":{"ttl":"an hour"}}}}"#, reason: "GCM 'message.android.ttl' must be a duration such as \"3600s\""),
        InvalidCase(payload: #"{"data":"text"}"#, reason: "GCM 'data' must be a JSON object"),
        InvalidCase(payload: #"{"notification":[]}"#, reason: "GCM 'notification' must be a JSON object"),
        InvalidCase(payload: #"{"time_to_live":-5}"#, reason: "GCM 'time_to_live' must be a whole number of seconds, 0 or more"),
        InvalidCase(payload: #"{"priority":"urgent"}"#, reason: "GCM 'priority' must be \"high\" or \"normal\""),
        InvalidCase(payload: #"{"notification":{"badge":"many"}}"#, reason: "GCM 'notification.badge' must be an integer"),
    ])
    func invalid(_ c: InvalidCase) throws {
        let result = PushRenderer.render(try gcm(c.payload), attributes: .init(), platform: .gcm, settings: .init(), publishedAt: t0, now: t0)
        #expect(result == .invalid(reason: c.reason))
    }

    @Test("FCM B.3: 4096 bytes of keys and values is accepted, 4097 refused")
    func sizeLimit() throws {
        // keys + values: "k" (1) + value; notification "body" (4) + text.
        func message(dataValue: Int, body: Int) throws -> SNSMessage {
            let data = String(repeating: "d", count: dataValue)
            let text = String(repeating: "b", count: body)
            return try gcm(#"{"fcmV1Message":{"message":{"data":{"k":""# + data + #""},"notification":{"body":""# + text + #""}}}}"#)
        }
        let atLimit = PushRenderer.render(try message(dataValue: 2000, body: 4096 - 1 - 2000 - 4), attributes: .init(),
                                          platform: .gcm, settings: .init(), publishedAt: t0, now: t0)
        #expect(atLimit.push != nil)
        let over = PushRenderer.render(try message(dataValue: 2000, body: 4096 - 1 - 2000 - 4 + 1), attributes: .init(),
                                       platform: .gcm, settings: .init(), publishedAt: t0, now: t0)
        #expect(over == .invalid(reason: "FCM payload is 4097 bytes of keys and values, larger than the 4096-byte limit"))
    }

    @Test("Delivery id slot goes into message.data next to the token slot")
    func deliveryID() throws {
        let push = try renderOrFail(try gcm(#"{"data":{"a":"b"}}"#), .gcm, settings: RenderSettings(deliveryIDKey: "cdid"))
        #expect(push.body.slots == [.deliveryID, .token])
        #expect(String(decoding: push.body(token: "T", deliveryID: "D"), as: UTF8.self)
            == #"{"message":{"data":{"a":"b","cdid":"D"},"token":"T"}}"#)
        let noData = try renderOrFail(SNSMessage(defaultText: "x"), .gcm, settings: RenderSettings(deliveryIDKey: "cdid"))
        #expect(String(decoding: noData.body(token: "T", deliveryID: "D"), as: UTF8.self)
            == #"{"message":{"notification":{"body":"x"},"data":{"cdid":"D"},"token":"T"}}"#)
    }

    @Test("Slot values that need JSON escaping are escaped")
    func escapedToken() throws {
        let push = try renderOrFail(SNSMessage(defaultText: "x"), .gcm)
        #expect(bodyJSON(push, token: "a\"b\\c")["message"]?["token"] == "a\"b\\c")
    }
}
