import ClarionCore
import Foundation
import FuzzSupport

/// Provider answers as the dispatcher reads them: APNs, FCM, ADM and Huawei Push Kit responses (status, `Retry-After` in seconds or
/// as an HTTP date, JSON error bodies, APNs' 410 `timestamp`), OAuth token-exchange refusals and APNs GOAWAY debug
/// data, classified into outcomes and then fed to the retry policy. A provider (or whatever answers at a configured
/// `ProviderEndpoint`) is not trusted to send sane values.
///
/// Input: fields separated by 0x1E: the status (decimal), header lines (`name: value`), body.
///
/// Invariants: a `Retry-After` read is finite and not negative; an APNs 200 is accepted; Push Kit gives exactly one
/// outcome per token sent, and only a token it was sent can be called invalid by a partial success; a retry is
/// scheduled no earlier than now and before the message expires.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzProviderResponses(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let fields = FuzzFields(data, size, limit: 3)
    guard let status = Int(fields.text(0).trimmingCharacters(in: .whitespaces)), (100...999).contains(status) else { return 0 }
    var headers: [(String, String)] = []
    for line in fields.text(1).split(separator: "\n") {
        guard let colon = line.firstIndex(of: ":") else { continue }
        headers.append((String(line[..<colon]), String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces)))
    }
    let response = ProviderResponse(status: status, headers: headers, body: fields[2])
    let now = Date(timeIntervalSince1970: 1_750_000_000)
    if let delay = response.retryAfter(now: now) {
        require(delay.isFinite && delay >= 0, "Retry-After read as \(delay)")
    }
    let apns = APNsResponseClassifier.classify(response, tokenUpdatedAt: now.addingTimeInterval(-60), now: now)
    if status == 200 { require(apns == .accepted(providerID: response[header: "apns-id"]), "APNs 200 read as \(apns)") }
    // Push Kit (E.1a): three tokens, one of which a partial success's msg may name.
    let hmsTokens = ["IQAAAAfuzz1", "IQAAAAfuzz2", "IQAAAAfuzz3"]
    let hms = HMSResponseClassifier.classify(response, tokens: hmsTokens, now: now)
    require(hms.count == hmsTokens.count, "Push Kit gave \(hms.count) outcomes for \(hmsTokens.count) tokens")
    let answer = HMSResponseClassifier.read(fields[2])
    if answer.code == HMSResponseClassifier.partialSuccess {
        for (token, outcome) in zip(hmsTokens, hms) where outcome.label == "token_invalid" {
            require(answer.illegalTokens.contains(token), "a partial success disabled \(token), which it did not name")
        }
    }
    let outcomes = hms + [
        apns,
        FCMResponseClassifier.classify(response, now: now),
        ADMResponseClassifier.classify(response, sentToken: "amzn1.adm-registration.v3.fuzz", now: now),
        TokenExchangeClassifier.classify(response, now: now),
        TransportFailureClassifier.classify(.goAway(errorCode: UInt32(status), debugData: fields[2])),
    ]
    let expiresAt = now.addingTimeInterval(TimeInterval(TimeToLive.snsDefaultSeconds))
    for outcome in outcomes {
        _ = outcome.endpointAction
        for attempt in 1...RetryPolicy.standard.maxAttempts {
            if case .retry(let at) = RetryPolicy.standard.next(attempt: attempt, outcome: outcome, now: now, expiresAt: expiresAt,
                                                                unitRandom: 0.5) {
                require(at >= now && at < expiresAt, "a retry scheduled at \(at)")
            }
        }
    }
    return 0
}
