import ClarionAPI
import ClarionCore
import FuzzSupport
import ClarionHTTP1

/// The SNS Query API's inputs: the query string and form body (`FormParameters`), the flattened parameters
/// (`SNSParameters`: maps, message attributes, tags, lists, structure lists), ARNs, and Publish / PublishBatch
/// validation for a topic and for an endpoint of every platform.
///
/// Input: the query string, 0x1E, the form body.
///
/// Invariants: no more pairs than `&`-separated parts; pairs re-encoded with AWS's percent-encoding decode to the
/// same pairs; scoped parameters never count more payload than their parent; a parsed ARN writes text that parses
/// back to it; a Publish valid for a topic has a "default" (so it is valid for an endpoint of any platform too).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSNSQuery(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let fields = FuzzFields(data, size, limit: 2)
    var form: FormParameters
    do {
        form = try FormParameters(decoding: fields[0])
        form.append(contentsOf: try FormParameters(decoding: fields[1]))
    } catch {
        return 0
    }
    let parts = fields[0].split(separator: UInt8(ascii: "&")).count + fields[1].split(separator: UInt8(ascii: "&")).count
    require(form.count <= parts, "\(form.count) pairs from \(parts) parts")
    let reencoded = form.pairs.map { AWSPercentEncoding.encode($0.name) + "=" + AWSPercentEncoding.encode($0.value) }
        .joined(separator: "&")
    let again = try? FormParameters(decoding: Array(reencoded.utf8))
    require(again.map { $0.pairs.elementsEqual(form.pairs) { $0.name == $1.name && $0.value == $1.value } } == true,
            "re-encoded pairs do not decode to themselves")

    guard let parameters = try? SNSParameters(form) else { return 0 }
    let total = parameters.payloadBytes
    require(total >= 0, "negative payload bytes")

    // Every structured accessor, on every prefix the input names (`X.entry.N...`, `X.member.N...`).
    var prefixes: Set<String> = ["Attributes", "MessageAttributes", "Tags", "PublishBatchRequestEntries", "AttributeNames"]
    for name in parameters.names {
        for marker in [".entry.", ".member."] {
            if let range = name.range(of: marker) { prefixes.insert(String(name[..<range.lowerBound])) }
        }
        if name.hasPrefix("arn:") || (parameters[name]?.hasPrefix("arn:") ?? false) {
            for text in [name, parameters[name] ?? ""] { checkARN(text) }
        }
    }
    for prefix in prefixes.sorted() {
        _ = try? parameters.stringMap(prefix)
        _ = try? parameters.messageAttributes(prefix)
        _ = try? parameters.tags(prefix)
        _ = try? parameters.stringList(prefix)
        for entry in (try? parameters.structList(prefix)) ?? [] {
            require(entry.payloadBytes <= total, "an entry counts more payload than the request")
            checkPublish(entry)
        }
    }
    for key in ["TopicArn", "TargetArn", "EndpointArn", "PlatformApplicationArn", "SubscriptionArn", "ResourceArn"] {
        if let text = parameters[key] { checkARN(text) }
    }
    _ = try? parameters.bool("Enabled")
    _ = try? parameters.int("MaxItems")
    checkPublish(parameters)
    return 0
}

private func checkPublish(_ parameters: SNSParameters) {
    let topic = try? PublishActions.validate(parameters, endpointPlatform: nil)
    for platform in Platform.allCases {
        let direct = try? PublishActions.validate(parameters, endpointPlatform: platform.rawValue)
        if topic != nil { require(direct != nil, "valid for a topic but not for a \(platform) endpoint") }
        if let direct { _ = PublishActions.attributesJSON(direct.attributes) }
    }
    _ = try? PublishActions.validate(parameters, endpointPlatform: "SMS")
}

private func checkARN(_ text: String) {
    if let arn = SNSARN.parse(text) {
        require(SNSARN.parse(arn.text) == arn, "ARN \(text) writes \(arn.text), which does not parse back")
    }
    // Any partition (issue 16): what it writes carries the region's partition, and parses with the check.
    guard let loose = SNSARN.parse(text, checkingPartition: false) else { return }
    require(loose.text.hasPrefix("arn:" + loose.partition.rawValue + ":sns:"), "ARN \(text) writes \(loose.text) outside its partition")
    require(SNSARN.parse(loose.text) == loose, "ARN \(text) in any partition writes \(loose.text), which does not parse back")
}
