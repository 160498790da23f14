import ClarionAPI
import ClarionCore
import ClarionCrypto
import Foundation
import FuzzSupport
import ClarionHTTP1

/// Request bodies of the native `/v1` API (publish, endpoints, applications, topics, paging, ids), of the device
/// registration API (single, batch, status, cleanup, callback headers), of mobile events, and delivery ids in open
/// beacons.
///
/// Input: fields separated by 0x1E: a kind (its first letter: p publish, e endpoint, a application, t topic,
/// r registration, b batch, s status, c cleanup, m mobile event, q paging query, i ids, d delivery id / beacon,
/// l bulk import lines; any
/// other byte runs them all), a body, and an extra field (a Content-Type or header lines, or the client address).
///
/// Invariants: a publish body that passes names 1 to 100 targets of one kind each, its message map is a JSON object
/// of strings SNS's parser accepts, and its stored attributes are a JSON object; paging stays within its bounds and
/// cursors round-trip; an accepted mobile event respects its documented limits; ids resolve only to valid names;
/// delivery ids have one spelling each and round-trip; bulk import lines cut the same whether the upload arrives whole
/// or in pieces, an accepted endpoint line keeps CreatePlatformEndpoint's limits, CSV fields re-quoted read back the
/// same, and attribute maps round-trip through their staging JSON.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzNativeAPI(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let fields = FuzzFields(data, size, limit: 3)
    let body = fields[1]
    let extra = fields.text(2)
    if let kind = fields[0].first.flatMap({ kinds[$0] }) {
        kind(body, extra)
    } else {
        for kind in kinds.values { kind(body, extra) }
    }
    return 0
}

private let kinds: [UInt8: @Sendable ([UInt8], String) -> Void] = [
    UInt8(ascii: "p"): publish, UInt8(ascii: "e"): endpoint, UInt8(ascii: "a"): application, UInt8(ascii: "t"): topic,
    UInt8(ascii: "r"): registration, UInt8(ascii: "b"): batch, UInt8(ascii: "s"): status, UInt8(ascii: "c"): cleanup,
    UInt8(ascii: "m"): mobileEvent, UInt8(ascii: "q"): paging, UInt8(ascii: "i"): ids, UInt8(ascii: "d"): beacon,
    UInt8(ascii: "f"): filterPolicy, UInt8(ascii: "l"): importLines,
]

/// A bulk upload (`extra` picks the format from its first byte: c CSV, p plain lines, else NDJSON), fed whole and
/// in pieces of 1-16 bytes cut where the body's own bytes say.
private func importLines(_ body: [UInt8], _ extra: String) {
    let format: ImportFormat = switch extra.utf8.first {
    case UInt8(ascii: "c"): .csv
    case UInt8(ascii: "p"): .plainLines
    default: .ndjson
    }
    func cut(_ pieces: [[UInt8]]) -> [(Int, [UInt8]?)] {
        var splitter = ImportLineSplitter()
        var lines: [(Int, [UInt8]?)] = []
        for piece in pieces { splitter.feed(piece) { lines.append(($0, $1.map { Array($0) })) } }
        splitter.finish { lines.append(($0, $1.map { Array($0) })) }
        require(splitter.lineNumber == lines.count, "line numbers skip")
        return lines
    }
    let whole = cut([body])
    var pieces: [[UInt8]] = []
    var i = 0
    while i < body.count {
        let size = 1 + Int(body[i] % 16)
        pieces.append(Array(body[i..<min(body.count, i + size)]))
        i += size
    }
    let pieced = cut(pieces)
    require(whole.count == pieced.count && zip(whole, pieced).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 },
            "lines differ when the upload arrives in pieces")
    for platform in applicationPlatforms {
        var decoder = EndpointLineDecoder(platform: platform, format: format)
        for (_, line) in whole {
            guard let line, let endpoint = try? decoder.decode(line[...]) else { continue }
            require(!endpoint.token.isEmpty && !endpoint.token.utf8.contains(0), "accepted token empty or with NUL")
            require((try? NativeRules.token(endpoint.token, platform: platform)) == endpoint.token, "token not normalised")
            require((endpoint.customUserData?.utf8.count ?? 0) <= 2048, "custom_user_data over 2048 bytes")
            require(endpoint.userID.map { (1...256).contains($0.utf8.count) } ?? true, "user_id out of 1-256 bytes")
            require(endpoint.attributes.keys.allSatisfy(EndpointLineDecoder.attributeNames.contains), "unknown attribute accepted")
            let json = EndpointLineDecoder.attributesJSON(endpoint.attributes)
            let back = (try? JSONValue.parse(json))?.objectValue
            require(back?.count == endpoint.attributes.count
                    && (back.map { $0.allSatisfy { endpoint.attributes[$0.key] == $0.value.stringValue } } ?? false),
                    "attributes do not round-trip through their staging JSON")
        }
    }
    let subscriptions = SubscriptionLineDecoder(format: format, caller: caller, tokenPlatform: extra.count > 1 ? "GCM" : nil)
    for (_, line) in whole {
        guard let line else { continue }
        _ = try? subscriptions.decode(line[...])
        if let fields = try? CSVLine.fields(line[...]) {
            let quoted = fields.map { "\"" + $0.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }.joined(separator: ",")
            require((try? CSVLine.fields(Array(quoted.utf8)[...])) == fields, "CSV fields do not read back after quoting")
        }
    }
}

private let caller = NativeCaller(accountID: "123456789012", accountKey: 1, region: "us-east-1")
private let applicationPlatforms = ["APNS", "APNS_SANDBOX", "GCM", "ADM"]

/// A request with `body`; `extra` is its Content-Type when it has no line break, else header lines.
private func request(_ body: [UInt8], _ extra: String, method: HTTPMethod = .post, query: String = "") -> HTTPRequest {
    var headers = HTTPHeaders()
    if extra.contains("\n") {
        for line in extra.split(separator: "\n") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers.add(String(line[..<colon]), String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces))
        }
    } else if !extra.isEmpty {
        headers.add("Content-Type", extra)
    }
    return HTTPRequest(method: method, rawPath: "/", rawQuery: query, headers: headers, body: body, requestID: "fuzz")
}

private func publish(_ body: [UInt8], _ extra: String) {
    guard let parsed = try? NativePublishRoutes.PublishBody.parse(request(body, extra)) else { return }
    require((1...100).contains(parsed.targets.count), "\(parsed.targets.count) targets")
    for target in parsed.targets {
        require(target.object.count == 1, "a target names \(target.object.count) kinds")
        let topic = target.object["topic"] != nil
        _ = try? SNSMessage.parse(message: parsed.text, structure: parsed.structure, requireDefault: topic)
        if let id = try? target.string("endpoint") { _ = NativeID.endpoint(id, caller) }
        if let id = try? target.string("topic") { _ = NativeID.topic(id, caller) }
    }
    if parsed.structure == .json {
        guard let map = try? JSONValue.parse(parsed.text, duplicateKeys: .reject), let object = map.objectValue else {
            fatalError("fuzz invariant: the message map written for SNS is not a JSON object")
        }
        require(object.allSatisfy { $0.value.stringValue != nil }, "a message map value is not a string")
    } else {
        require(!parsed.text.isEmpty, "an empty message")
    }
    let stored = NativePublishRoutes.storedAttributes(parsed.attributes)
    require((try? JSONValue.parse(stored, duplicateKeys: .reject))?.objectValue?.count == parsed.attributes.count,
            "stored attributes are not one JSON member per attribute")
    // Local-time sends (`send_at_local`, `fallback_time_zone`, `frequency_cap`, `quiet_hours`): a local time never
    // with `send_at`, a fallback zone Foundation knows, and the `Clarion.Timing` the stored
    // messages carry reads back the same; its next occurrence is after the publish and within a day and an hour
    // (a DST gap moves it at most an hour).
    let timing = parsed.timing
    if let local = timing.local {
        require(parsed.sendAt == nil, "send_at_local with send_at")
        require(LocalClockTime(local.description) == local, "the local time does not read back")
        let now = Date(timeIntervalSince1970: Double(parsed.text.utf8.count) * 3_601)
        let next = local.next(after: now, in: TimeZoneName.zone(timing.effectiveZoneName(nil))!)
        require(next > now && next.timeIntervalSince(now) <= 90_000, "next local time \(next) after \(now)")
    }
    if let fallback = timing.fallback { require(TimeZoneName.zone(fallback) != nil, "fallback zone \(fallback)") }
    require(CampaignTiming.parse(timing.attributeValue()) == timing, "Clarion.Timing does not read back")
    require(parsed.attributes[CampaignTiming.attributeName] == nil, "a publisher set Clarion.Timing")
    if let variants = parsed.variants {
        // Campaign variants (A/B): the parser's bounds hold, and the split each stored message carries reads back
        // the same and always chooses one of its variants.
        require((1...VariantSplit.maximumVariants).contains(variants.variants.count), "\(variants.variants.count) variants")
        require(VariantSplit.holdoutRange.contains(variants.holdout), "holdout \(variants.holdout)")
        require(Set(variants.variants.map(\.name)).count == variants.variants.count, "repeated variant names")
        require(parsed.targets.allSatisfy { $0.object["topic"] != nil }, "variants with a non-topic target")
        for index in variants.variants.indices {
            let variant = variants.variants[index]
            require((1...VariantSplit.maximumWeight).contains(variant.weight), "weight \(variant.weight)")
            require(!variant.text.isEmpty, "an empty variant message")
            let split = variants.split(index: index, campaign: parsed.text)
            require(VariantSplit.parse(split.attributeValue()) == split, "the variant split does not read back")
            let choice = split.choose(endpointKey: Int64(parsed.text.utf8.count) &* 7919)
            require(variants.variants.indices.contains(choice.variant), "chose variant \(choice.variant)")
        }
    }
}

private func endpoint(_ body: [UInt8], _ extra: String) {
    guard let fields = try? NativeFields.body(request(body, extra)) else { return }
    _ = try? fields.allowOnly(["token", "enabled", "custom_user_data", "user_id", "app_version", "language"])
    if let token = try? fields.string("token") {
        for platform in applicationPlatforms {
            if let normalized = try? NativeRules.token(token, platform: platform) {
                require((try? NativeRules.token(normalized, platform: platform)) == normalized, "token normalisation is not idempotent")
            }
        }
    }
    if let data = try? fields.nullableString("custom_user_data") { _ = try? NativeRules.customUserData(data) }
    _ = try? fields.bool("enabled")
    _ = try? fields.nullableString("user_id", maxBytes: 256)
}

private func application(_ body: [UInt8], _ extra: String) {
    guard let fields = try? NativeFields.body(request(body, extra)) else { return }
    guard let credentials = try? NativeRules.credentials(fields) else { return }
    let attributes = (try? fields.stringMap("attributes")) ?? [:]
    for platform in applicationPlatforms {
        _ = try? NativeRules.requireCredentials(credentials, platform: platform)
        _ = try? NativeRules.applicationAttributes(attributes, caller, platform: platform, credential: credentials.credential,
                                                   principal: credentials.principal)
    }
}

private func topic(_ body: [UInt8], _ extra: String) {
    guard let fields = try? NativeFields.body(request(body, extra)) else { return }
    if let name = try? fields.string("name") { _ = NativeID.topic(name, caller) }
    if let attributes = try? fields.stringMap("attributes") { _ = try? NativeRules.topicAttributes(attributes, topicARN: "arn:aws:sns:us-east-1:123456789012:fuzz") }
}

private func registrationItem(_ value: JSONValue, path: String, extra: String) {
    guard let item = try? RegistrationFields.object(value, path: path) else { return }
    let callback = try? DeviceRegistrationRoutes.callback(request([], extra))
    _ = try? DeviceRegistrationRoutes.registration(item, callback: callback, makeID: { UUID() })
    _ = try? DeviceRegistrationRoutes.cleanupItem(item)
}

private func registration(_ body: [UInt8], _ extra: String) {
    _ = try? DeviceRegistrationRoutes.callback(request(body, extra))
    guard let document = try? RegistrationFields.document(request(body, "")) else { return }
    registrationItem(document, path: "", extra: extra)
}

private func batch(_ body: [UInt8], _ extra: String) {
    guard let document = try? RegistrationFields.document(request(body, "")),
          let items = try? RegistrationFields.items(document, limit: DeviceRegistrationRoutes.batchLimit) else { return }
    require((1...DeviceRegistrationRoutes.batchLimit).contains(items.count), "a batch of \(items.count)")
    for (index, item) in items.enumerated() { registrationItem(item, path: "[\(index)]", extra: extra) }
}

private func status(_ body: [UInt8], _ extra: String) {
    guard let document = try? RegistrationFields.document(request(body, "")),
          let fields = try? RegistrationFields.object(document, path: ""),
          let query = try? DeviceRegistrationRoutes.statusQuery(fields) else { return }
    require(query.ids.count <= DeviceRegistrationRoutes.batchLimit, "\(query.ids.count) ids in a status query")
}

private func cleanup(_ body: [UInt8], _ extra: String) {
    guard let document = try? RegistrationFields.document(request(body, "")) else { return }
    if let item = try? RegistrationFields.object(document, path: "") { _ = try? DeviceRegistrationRoutes.cleanupItem(item) }
    for (index, value) in ((try? RegistrationFields.items(document, limit: 100)) ?? []).enumerated() {
        if let item = try? RegistrationFields.object(value, path: "[\(index)]") { _ = try? DeviceRegistrationRoutes.cleanupItem(item) }
    }
}

private func mobileEvent(_ body: [UInt8], _ extra: String) {
    guard let event = try? MobileEvent.parse(body) else { return }
    require(event.registrationToken.utf8.count <= 4096 && !event.registrationToken.isEmpty, "registration token length")
    require(MobileEvent.osTypes.contains(event.osType), "os.type \(event.osType)")
    if let language = event.language {
        require(language.utf8.count == 2 && language == language.lowercased(), "language \(language)")
    }
    require(!event.userID.isEmpty && event.userID.utf8.count <= 1024, "user_id length")
    require(!event.firebaseProjectID.isEmpty, "empty project id")
    if let zone = event.timeZone { require(TimeZoneName.zone(zone) != nil, "app.time_zone \(zone)") }
}

private func paging(_ body: [UInt8], _ extra: String) {
    let query = String(decoding: body, as: UTF8.self)
    if let page = try? NativePaging.parse(request([], "", method: .get, query: query)) {
        require((1...100).contains(page.limit), "limit \(page.limit)")
        require((page.after ?? 0) >= 0, "negative cursor key")
    }
    _ = NativePaging.decodeCursor(extra)
    var key: Int64 = 0
    for byte in body.prefix(8) { key = key << 8 | Int64(byte) }
    key = Int64(key.magnitude % UInt64(Int64.max))
    require(NativePaging.decodeCursor(NativePaging.cursor(key)) == key, "cursor of \(key) does not round-trip")
}

private func ids(_ body: [UInt8], _ extra: String) {
    let text = String(decoding: body, as: UTF8.self)
    if let application = NativeID.application(text, caller) {
        require(applicationPlatforms.contains(application.platform) && !application.name.isEmpty && application.name.utf8.count <= 256,
                "application id \(text)")
    }
    if let name = NativeID.topic(text, caller) { require(!name.isEmpty && name.utf8.count <= 256, "topic id \(text)") }
    _ = NativeID.endpoint(text, caller)
    _ = NativeID.subscription(text, caller)
    _ = UUID(text: text)
}

private let proxies = TrustedProxies(list: "10.0.0.0/8,::1/128")!

private let codec = DeliveryIDCodec { Digest.hmacSHA256(key: Array("fuzz delivery-id secret".utf8), data: $0) }

/// Whether `needle`'s UTF-8 occurs in `haystack`'s. Foundation's `String.contains` trapped here ("String index is out
/// of bounds" in its UTF-16 index conversion) on inputs with U+0000 and U+FFFD, in the harness, not the code it checks.
private func containsUTF8(_ haystack: String, _ needle: String) -> Bool {
    let h = Array(haystack.utf8), n = Array(needle.utf8)
    guard !n.isEmpty else { return true }
    guard n.count <= h.count else { return false }
    for i in 0...(h.count - n.count) where h[i..<(i + n.count)].elementsEqual(n) { return true }
    return false
}

private func beacon(_ body: [UInt8], _ extra: String) {
    _ = BeaconLimiter.sourceKey(extra)
    // The beacon's client address from forwarding headers a client wrote: whatever they say, the answer is the peer
    // or one of the hops they name.
    let headers: HTTPHeaders = ["Forwarded": extra, "X-Forwarded-For": String(decoding: body.prefix(200), as: UTF8.self)]
    let client = proxies.clientAddress(peer: "10.1.2.3", headers: headers)
    require(!client.isEmpty, "an empty client address")
    require(client == "10.1.2.3" || containsUTF8(extra, client)
            || containsUTF8(String(decoding: body.prefix(200), as: UTF8.self), client),
            "client address \(client) is neither the peer nor a forwarded hop")
    _ = try? CampaignRoutes.parseBody(body)
    let text = ((try? JSONValue.parse(bytes: body))?["delivery_id"]?.stringValue) ?? String(decoding: body, as: UTF8.self)
    if let id = try? codec.decode(text) { require(codec.encode(id) == text, "delivery id \(text) has another spelling") }
    if body.count >= 16 {
        var keys: [Int64] = [0, 0]
        for i in 0..<16 { keys[i / 8] = keys[i / 8] << 8 | Int64(body[i]) }
        let id = DeliveryID(messageKey: keys[0], endpointKey: keys[1])
        let encoded = codec.encode(id)
        require(encoded.utf8.count == DeliveryIDCodec.encodedLength, "encoded delivery id of \(encoded.utf8.count) characters")
        require((try? codec.decode(encoded)) == id, "delivery id \(id) does not round-trip")
    }
}

/// A subscription's FilterPolicy (a tenant writes it) compiled in either scope and matched against a message built
/// from `extra` (its body, and its attributes when it is a JSON object of strings, numbers or arrays): compiling is
/// deterministic, and a policy that compiled matches any message without trapping.
private func filterPolicy(_ body: [UInt8], _ extra: String) {
    let text = String(decoding: body, as: UTF8.self)
    var attributes: [String: [FilterValue]] = [:]
    if let object = (try? JSONValue.parse(extra))?.objectValue {
        for member in object {
            switch member.value {
            case .string(let value): attributes[member.key] = [.string(value)]
            case .number(let number): attributes[member.key] = [.number(number.doubleValue ?? 0)]
            case .array(let values): attributes[member.key] = values.compactMap { $0.stringValue.map(FilterValue.string) }
            default: continue
            }
        }
    }
    let message = FilterMessage(attributes: attributes, body: try? JSONValue.parse(extra))
    for scope in [FilterPolicyScope.messageAttributes, .messageBody] {
        guard let policy = try? FilterPolicy.compile(text, scope: scope) else { continue }
        require((try? FilterPolicy.compile(text, scope: scope)) == policy, "compiling \(text) twice differs")
        _ = policy.matches(message)
    }
    _ = CIDRBlock(extra)?.contains(text)
}
