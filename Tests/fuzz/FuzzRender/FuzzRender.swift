import ClarionCore
import Foundation
import FuzzSupport

/// SNS message maps (`MessageStructure=json`), the reserved mobile attributes, and rendering for every platform, the
/// way a Publish and the dispatcher meet them.
///
/// Input: fields separated by 0x1E: MessageStructure, Message, attributes (a JSON object: name -> string (a String
/// attribute), number (Number) or {"DataType", "StringValue"}), and options {"bundle", "defaultTTL",
/// "deliveryIDKey", "dwell"} (the application's settings and the seconds between publish and hand-off).
///
/// Invariants for every rendered push: the body with a token and a delivery id filled in is one JSON object with no
/// repeated key; FCM bodies carry the token as `message.token` and only string values in `data` maps; the delivery
/// id sits where the settings put it; APNs and ADM bodies stay within the provider's limit; APNs headers hold a
/// priority APNs accepts and a collapse id of at most 64 bytes.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRender(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let fields = FuzzFields(data, size, limit: 4)
    guard fields.count >= 2 else { return 0 }
    let options = (try? JSONValue.parse(bytes: fields[3]))?.objectValue ?? JSONObject()

    let attributes: MobilePushAttributes
    do throws(MessageValidationError) {
        attributes = try MobilePushAttributes.parse(attributeValues(fields[2]))
    } catch {
        return 0
    }
    var settings = RenderSettings()
    settings.apnsBundleID = options["bundle"]?.stringValue
    settings.defaultTTL = options["defaultTTL"]?.intValue.flatMap { $0 >= 0 ? $0 : nil }
    settings.deliveryIDKey = options["deliveryIDKey"]?.stringValue
    let dwell = options["dwell"]?.numberValue?.doubleValue.flatMap { $0.isFinite && abs($0) < 1e10 ? $0 : nil } ?? 0
    let publishedAt = Date(timeIntervalSince1970: 1_750_000_000)
    let now = publishedAt.addingTimeInterval(dwell)

    for requireDefault in [true, false] {
        let message: SNSMessage
        do throws(MessageValidationError) {
            let structure = try MessageStructure.parse(fields.optionalText(0))
            message = try SNSMessage.parse(message: fields.text(1), structure: structure, requireDefault: requireDefault)
        } catch {
            continue
        }
        if requireDefault { require(message.defaultText != nil, "a topic publish parsed without a default") }
        for platform in Platform.allCases {
            let hasEntry = (try? message.requireEntry(for: platform)) != nil
            let result = PushRenderer.render(message, attributes: attributes, platform: platform, settings: settings,
                                             publishedAt: publishedAt, now: now)
            guard case .push(let push) = result else { continue }
            require(hasEntry, "\(platform) rendered without an entry for it")
            checkRendered(push, platform: platform, attributes: attributes, settings: settings)
        }
    }
    return 0
}

/// The attribute map of a Publish, from the attributes field.
private func attributeValues(_ field: [UInt8]) -> [String: MessageAttributeValue] {
    guard let object = (try? JSONValue.parse(bytes: field))?.objectValue else { return [:] }
    var out: [String: MessageAttributeValue] = [:]
    for member in object {
        switch member.value {
        case .string(let text): out[member.key] = .string(text)
        case .number(let number): out[member.key] = .number(number.literal)
        case .object(let entry):
            out[member.key] = MessageAttributeValue(dataType: entry["DataType"]?.stringValue ?? "String",
                                                    stringValue: entry["StringValue"]?.stringValue)
        default: continue
        }
    }
    return out
}

private let token = "fuzz\"token\\é"
private let deliveryID = String(repeating: "D", count: DeliveryIDCodec.encodedLength)

private func checkRendered(_ push: RenderedPush, platform: Platform, attributes: MobilePushAttributes, settings: RenderSettings) {
    let body = push.body(token: token, deliveryID: deliveryID)
    if case .webPush(let headers) = push.request {
        // Web Push delivers its entry verbatim (not necessarily JSON): check the limits and the headers (docs/providers.md W).
        require(platform == .webPush, "Web Push request for \(platform)")
        require(push.body(token: "", deliveryID: deliveryID).count <= PushProvider.webPush.payloadLimit, "Web Push body over 3993 bytes")
        require(headers.ttl >= 0, "negative Web Push TTL")
        if let topic = headers.topic { require(PushRenderer.isWebPushTopic(topic), "Web Push topic \(topic)") }
        return
    }
    let parsed: JSONValue
    do throws(JSONParseError) {
        parsed = try JSONValue.parse(bytes: body, duplicateKeys: .reject)
    } catch {
        fatalError("fuzz invariant: \(platform) body is not JSON without repeated keys (\(error)): \(String(decoding: body, as: UTF8.self))")
    }
    guard let root = parsed.objectValue else { fatalError("fuzz invariant: \(platform) body is not an object") }
    require(push.expiresAt.timeIntervalSince1970.isFinite, "expiresAt is not finite")
    // Where the delivery id must be found: the namespace takes the key when both want it.
    let idKey = settings.deliveryIDKey.flatMap { $0 == attributes.namespace?.key ? nil : $0 }

    switch push.request {
    case .apns(let headers):
        require(platform.provider == .apns, "APNs headers for \(platform)")
        let sized = push.body(token: "", deliveryID: deliveryID)
        require(sized.count <= headers.pushType.payloadLimit, "APNs body of \(sized.count) bytes passed the size check")
        require(APNsPriority.allCases.contains(headers.priority), "APNs priority")
        require((headers.collapseID?.utf8.count ?? 0) <= PushRenderer.apnsCollapseIDLimit, "APNs collapse id too long")
        require((headers.expiration ?? 0) >= 0, "negative apns-expiration")
        if let idKey { require(root[idKey] == .string(deliveryID), "APNs body lacks the delivery id under \(idKey)") }
    case .fcm:
        require(platform.provider == .fcm, "FCM request for \(platform)")
        guard let message = root["message"]?.objectValue else { fatalError("fuzz invariant: FCM body has no message object") }
        require(message["token"] == .string(token), "FCM message.token is not the endpoint's token")
        for target in ["topic", "condition", "fid"] { require(message[target] == nil, "FCM message keeps a publisher target \(target)") }
        if let data = message["data"] { requireStringMap(data, "FCM message.data") }
        if let android = message["android"]?.objectValue {
            if let data = android["data"] { requireStringMap(data, "FCM android.data") }
            if let ttl = android["ttl"] {
                let text = ttl.stringValue ?? ""
                require(text.hasSuffix("s") && Int(text.dropLast()).map { $0 >= 0 } == true, "FCM android.ttl \(ttl.jsonText)")
            }
        }
        if let idKey { require(message["data"]?[idKey] == .string(deliveryID), "FCM data lacks the delivery id under \(idKey)") }
    case .adm:
        require(platform.provider == .adm, "ADM request for \(platform)")
        let sized = push.body(token: "", deliveryID: deliveryID)
        require(sized.count <= PushProvider.adm.payloadLimit, "ADM body of \(sized.count) bytes passed the size check")
        guard let data = root["data"] else { fatalError("fuzz invariant: ADM body has no data map") }
        requireStringMap(data, "ADM data")
        if let expires = root["expiresAfter"] { require((expires.intValue ?? -1) >= 1, "ADM expiresAfter \(expires.jsonText)") }
        if let idKey { require(data[idKey] == .string(deliveryID), "ADM data lacks the delivery id under \(idKey)") }
    case .webPush:
        break  // checked above, before the body is read as JSON
    case .hms:
        // Push Kit v1 (docs/providers.md E.1): at most 4096 bytes without the tokens, `token` the endpoint's token as a
        // one-element list, `data` a string, collapse_key in -1...100, ttl a duration.
        require(platform.provider == .hms, "HMS request for \(platform)")
        let sized = push.body(token: "", deliveryID: deliveryID)
        require(sized.count - 2 <= PushProvider.hms.payloadLimit, "HMS body of \(sized.count) bytes passed the size check")
        guard let message = root["message"]?.objectValue else { fatalError("fuzz invariant: HMS body has no message") }
        require(message["token"] == .array([.string(token)]), "HMS message.token is not [the endpoint's token]")
        for target in ["topic", "condition"] { require(message[target] == nil, "HMS message keeps a publisher target \(target)") }
        if let data = message["data"] { require(data.stringValue != nil, "HMS data is not a string") }
        if let android = message["android"]?.objectValue {
            if let key = android["collapse_key"] { require((key.intValue).map { (-1...100).contains($0) } == true, "HMS collapse_key \(key.jsonText)") }
            if let ttl = android["ttl"] {
                let text = ttl.stringValue ?? ""
                require(text.hasSuffix("s") && Int(text.dropLast()).map { $0 >= 1 } == true, "HMS android.ttl \(ttl.jsonText)")
            }
            if android["notification"] != nil {
                require(android["notification"]?["click_action"]?["type"] != nil, "HMS android.notification without click_action")
            }
        }
        if let idKey {
            let data = (try? JSONValue.parse(message["data"]?.stringValue ?? ""))?.objectValue
            require(data?[idKey] == .string(deliveryID), "HMS data lacks the delivery id under \(idKey)")
        }
    }
}

private func requireStringMap(_ value: JSONValue, _ what: String) {
    guard let object = value.objectValue else { fatalError("fuzz invariant: \(what) is not an object") }
    for member in object { require(member.value.stringValue != nil, "\(what).\(member.key) is not a string") }
}
