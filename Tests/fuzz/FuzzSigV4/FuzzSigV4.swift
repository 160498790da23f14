import ClarionAPI
import ClarionCore
import Foundation
import FuzzSupport
import ClarionHTTP1

/// AWS Signature Version 4 verification (`SigV4Verifier.parse` and `check`): the Authorization header, presigned query
/// parameters, the credential scope, `X-Amz-Date` / `Date`, canonicalisation, against one known key and a fixed
/// clock; and the SigV4 timestamp formats.
///
/// Input: fields separated by 0x1E: `METHOD target`, header lines (`Name: value`), body.
///
/// Invariants: a request that verifies names the known key's caller, and stops verifying when its body or method
/// changes; a SigV4 timestamp written from seconds parses back to them. Regions (CLARION_REGIONS unset, `.any`): a
/// scope the any-region verifier accepts names a valid region name, which has the documented shape, becomes the
/// caller's region, and is accepted by a verifier listing only that region; `AWSRegion.isValidName` on any text
/// accepts only that shape.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSigV4(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let fields = FuzzFields(data, size, limit: 3)
    let line = fields.text(0)
    let space = line.firstIndex(of: " ") ?? line.endIndex
    let method = String(line[..<space])
    let target = space < line.endIndex ? String(line[line.index(after: space)...]) : "/"
    let (path, query) = target.firstIndex(of: "?").map { (String(target[..<$0]), String(target[target.index(after: $0)...])) }
        ?? (target, "")
    var headers = HTTPHeaders()
    for headerLine in fields.text(1).split(separator: "\n") {
        guard let colon = headerLine.firstIndex(of: ":") else { continue }
        headers.add(String(headerLine[..<colon]), String(headerLine[headerLine.index(after: colon)...]).trimmingCharacters(in: .whitespaces))
    }
    let request = HTTPRequest(method: HTTPMethod(rawValue: method), rawPath: path, rawQuery: query, headers: headers,
                              body: fields[2], requestID: "fuzz")

    if let parsed = try? anyRegion.parse(request) {
        let region = parsed.credential.region
        require(AWSRegion.isValidName(region), "served the scope region '\(region)', which is not a region name")
        let listed = SigV4Verifier(regions: .listed([region]), service: "sns", resolver: StaticAccessKeyResolver([key]),
                                   clock: { Date(timeIntervalSince1970: 1_440_938_160) })
        require((try? listed.parse(request)) != nil, "'\(region)' served by .any but not by a list naming it")
        if parsed.credential.accessKeyID == key.accessKeyID, let caller = try? anyRegion.check(parsed, request: request, secret: key) {
            require(caller.region == region, "the caller's region \(caller.region) is not the scope's \(region)")
        }
    }
    for text in [String(decoding: fields[2].prefix(40), as: UTF8.self), fields.text(0)] where AWSRegion.isValidName(text) {
        let bytes = Array(text.utf8)
        require(bytes.count <= 32 && bytes.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2D }
                && bytes.last.map { $0 >= 0x30 && $0 <= 0x39 } == true && bytes[2] == 0x2D,
                "'\(text)' accepted as a region name")
    }

    if let caller = verify(request) {
        require(caller.accessKeyID == key.accessKeyID && caller.accountID == key.accountID, "verified as \(caller)")
        var changed = request
        changed.body.append(0x20)
        require(verify(changed) == nil, "the signature does not cover the body")
        changed = request
        changed.method = HTTPMethod(rawValue: method == "GET" ? "POST" : "GET")
        require(verify(changed) == nil, "the signature does not cover the method")
    }

    // Timestamps: any seconds from year 0 to 9999 written in SigV4's basic format read back the same.
    var seconds: Int64 = 0
    for byte in fields[2].prefix(8) { seconds = seconds << 8 | Int64(byte) }
    seconds = seconds.magnitude > 0 ? Int64(seconds.magnitude % 315_569_520_000) - 62_167_219_200 : 0
    let text = AWSTimestamp.formatBasic(seconds)
    require(AWSTimestamp.parseBasic(text) == seconds, "\(seconds) formats as \(text), which does not parse back")
    for value in [headers["X-Amz-Date"], headers["Date"]].compactMap({ $0 }) {
        _ = AWSTimestamp.parseBasic(value)
        _ = AWSTimestamp.parseHTTPDate(value)
    }
    return 0
}

/// The one key requests are signed with (the AWS documentation's example key).
private let key = AccessKeyCredentials(accessKeyID: "AKIDEXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
                                       accountID: "123456789012")

/// Now, for the verifier: 2015-08-30T12:36:00Z, the documentation's example time.
private let verifier = SigV4Verifier(region: "us-east-1", service: "sns", resolver: StaticAccessKeyResolver([key]),
                                     clock: { Date(timeIntervalSince1970: 1_440_938_160) })

/// Every region name served (CLARION_REGIONS unset).
private let anyRegion = SigV4Verifier(regions: .any, service: "sns", resolver: StaticAccessKeyResolver([key]),
                                      clock: { Date(timeIntervalSince1970: 1_440_938_160) })

/// `SigV4Verifier.verify` without its `async` key lookup (a hop to the cooperative pool per input): its two pure
/// halves around the one known key.
private func verify(_ request: HTTPRequest) -> SigV4Caller? {
    guard let parsed = try? verifier.parse(request), parsed.credential.accessKeyID == key.accessKeyID else { return nil }
    return try? verifier.check(parsed, request: request, secret: key)
}
