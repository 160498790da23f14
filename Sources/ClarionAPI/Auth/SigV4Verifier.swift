import ClarionCore
import ClarionCrypto
import Foundation
import Synchronization
import ClarionHTTP1

/// Who signed a request that verified.
public struct SigV4Caller: Sendable, Equatable {
    public let accessKeyID: String
    public let accountID: String
    /// The region of the credential scope: the SNS region the request acts in (its resources, its ARNs).
    public let region: String
}

/// Why a request did not authenticate. `message` follows AWS's wording where clients or people know it.
public struct SigV4Error: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable {
        /// Neither an Authorization header nor X-Amz-* query parameters.
        case missingAuthentication
        /// Authorization present but malformed (missing Credential/SignedHeaders/Signature, no date).
        case incompleteSignature
        /// The access key id is not known.
        case unknownAccessKey
        /// Signature, scope (date/region/service) or time window wrong.
        case signatureMismatch
        /// The key lookup failed; not the client's fault.
        case resolverFailed
        /// The key lookup failed for a while only (the store is down or full): 503, not 500.
        case resolverUnavailable
    }

    public let code: Code
    public let message: String

    public var description: String { "\(code.rawValue): \(message)" }
}

/// Verifies AWS Signature Version 4 (`AWS4-HMAC-SHA256`), header form and query-string (presigned) form,
/// exactly as AWS canonicalises requests:
///
/// - canonical URI: the path as sent, dot segments and empty segments removed, then percent-encoded again
///   (so `%2F` signs as `%252F`), `/` kept;
/// - canonical query: every pair decoded and re-encoded with RFC 3986 unreserved characters kept and `%XX`
///   upper-case, sorted by name then value, `X-Amz-Signature` left out;
/// - canonical headers: the SignedHeaders in the given order, lower-case name, all values of the header
///   trimmed, inner whitespace runs collapsed, joined with `,`;
/// - payload hash: SHA-256 of the body; an `x-amz-content-sha256` header must equal it (no unsigned payloads:
///   for SNS the body carries the action and its parameters).
///
/// The credential scope must name the request's date, a region the node serves and the service, and the request
/// time must be within `allowedSkew` (AWS: 15 minutes) of the injected clock. A region the node does not serve gets
/// AWS's own answer for a scope naming a region the endpoint does not serve: 403 `SignatureDoesNotMatch`, "Credential
/// should be scoped to a valid region, not '<region>'. " (docs/api.md, "Regions").
public struct SigV4Verifier: Sendable {
    public let regions: ServedRegions
    public let service: String
    public let allowedSkew: Int64
    /// `serve --dev`: the account an access key the resolver does not know acts for. Such a request is parsed and
    /// held to its scope, time window and payload hash like any other, but its signature cannot be checked (there is
    /// no secret to check it with). Nil everywhere else: an unknown key is refused.
    public let unknownKeyAccount: String?
    private let resolver: any AccessKeyResolver
    private let now: @Sendable () -> Date
    private let signingKeys = SigningKeyCache()

    /// A verifier serving exactly one region.
    public init(region: String, service: String = "sns", resolver: any AccessKeyResolver,
                allowedSkewSeconds: Int = 15 * 60, unknownKeyAccount: String? = nil,
                clock: @escaping @Sendable () -> Date = { Date() }) {
        self.init(regions: .listed([region]), service: service, resolver: resolver, allowedSkewSeconds: allowedSkewSeconds,
                  unknownKeyAccount: unknownKeyAccount, clock: clock)
    }

    public init(regions: ServedRegions, service: String = "sns", resolver: any AccessKeyResolver,
                allowedSkewSeconds: Int = 15 * 60, unknownKeyAccount: String? = nil,
                clock: @escaping @Sendable () -> Date = { Date() }) {
        self.regions = regions
        self.service = service
        self.resolver = resolver
        self.allowedSkew = Int64(allowedSkewSeconds)
        self.unknownKeyAccount = unknownKeyAccount
        self.now = clock
    }

    public func verify(_ request: HTTPRequest) async throws(SigV4Error) -> SigV4Caller {
        let parsed = try parse(request)
        let secret: AccessKeyCredentials
        do {
            guard let found = try await resolver.credentials(forAccessKeyID: parsed.credential.accessKeyID) else {
                if let account = unknownKeyAccount { return try checkUnsigned(parsed, request: request, account: account) }
                throw SigV4Error(code: .unknownAccessKey, message: "The security token included in the request is invalid.")
            }
            secret = found
        } catch let error as SigV4Error {
            throw error
        } catch let error as any TemporaryFailure where error.isTemporary {
            throw SigV4Error(code: .resolverUnavailable, message: "The access key could not be looked up: \(error)")
        } catch {
            throw SigV4Error(code: .resolverFailed, message: "The access key could not be looked up: \(error)")
        }
        return try check(parsed, request: request, secret: secret)
    }

    /// What a request presents, read and held against the credential scope: everything before the key lookup.
    package struct ParsedRequest {
        let query: [(name: String, value: String)]
        let presented: Presented
        package let credential: Credential
        let requestTime: Int64
        /// The request time as `YYYYMMDDTHHMMSSZ`.
        let amzDate: String
        let signedHeaders: [String]
    }

    /// Reads the signature, credential and time a request presents (header or presigned query) and checks the scope
    /// (date, region, service, terminator) and that `host` is signed. Pure: no lookup, no clock.
    package func parse(_ request: HTTPRequest) throws(SigV4Error) -> ParsedRequest {
        let query: [(name: String, value: String)]
        do {
            query = try Self.decodeQuery(request.rawQuery)
        } catch {
            throw SigV4Error(code: .incompleteSignature, message: "The query string is not valid percent-encoding.")
        }
        let presented = try Self.presentedSignature(request, query: query)
        let credential = try parseCredential(presented.credential)
        let requestTime = try requestTime(presented, request: request)

        // The scope must match the request's own date, a region we serve and our service.
        let amzDate = AWSTimestamp.formatBasic(requestTime)
        let day = String(amzDate.prefix(8))
        guard credential.date == day else {
            throw mismatch("Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: '\(credential.date)' != '\(day)', from '\(amzDate)'.")
        }
        guard regions.serves(credential.region) else {
            throw mismatch("Credential should be scoped to a valid region, not '\(credential.region)'. ")
        }
        guard credential.service == service else {
            throw mismatch("Credential should be scoped to correct service: '\(service)'. ")
        }
        guard credential.terminator == "aws4_request" else {
            throw mismatch("Credential should be scoped with a valid terminator: 'aws4_request', not '\(credential.terminator)'. ")
        }
        let signedHeaders = Substring(presented.signedHeaders).cut(at: UInt8(ascii: ";")).map(String.init)
        guard signedHeaders.contains("host") else {
            throw mismatch("'Host' must be a 'SignedHeader' in the AWS Authorization.")
        }
        return ParsedRequest(query: query, presented: presented, credential: credential, requestTime: requestTime,
                             amzDate: amzDate, signedHeaders: signedHeaders)
    }

    /// Checks a parsed request against its key's secret: the time window on the injected clock, the payload hash,
    /// then the signature over the canonical request.
    package func check(_ parsed: ParsedRequest, request: HTTPRequest, secret: AccessKeyCredentials) throws(SigV4Error) -> SigV4Caller {
        let (presented, credential) = (parsed.presented, parsed.credential)
        try checkTime(parsed.requestTime, presented: presented)

        let payloadHash = try payloadHash(request)
        let canonical = Self.canonicalRequestBytes(method: request.method.rawValue, rawPath: request.rawPath, query: parsed.query,
                                                   excludeSignature: presented.inQuery, headers: request.headers,
                                                   signedHeaders: parsed.signedHeaders, signedHeaderList: presented.signedHeaders,
                                                   payloadHash: payloadHash)
        // The string to sign, as bytes: "AWS4-HMAC-SHA256\n<amzDate>\n<date>/<region>/<service>/aws4_request\n<hex>".
        var stringToSign: [UInt8] = []
        stringToSign.reserveCapacity(192)
        stringToSign.append(contentsOf: "AWS4-HMAC-SHA256\n".utf8)
        stringToSign.append(contentsOf: parsed.amzDate.utf8)
        stringToSign.append(UInt8(ascii: "\n"))
        stringToSign.append(contentsOf: credential.date.utf8)
        stringToSign.append(UInt8(ascii: "/"))
        stringToSign.append(contentsOf: credential.region.utf8)
        stringToSign.append(UInt8(ascii: "/"))
        stringToSign.append(contentsOf: credential.service.utf8)
        stringToSign.append(UInt8(ascii: "/"))
        stringToSign.append(contentsOf: "aws4_request\n".utf8)
        Digest.sha256(canonical).appendHex(to: &stringToSign)
        let key = signingKeys.key(secret: secret.secretAccessKey, accessKeyID: secret.accessKeyID,
                                  date: credential.date, region: credential.region, service: credential.service)
        var expected: [UInt8] = []
        expected.reserveCapacity(64)
        Digest.hmacSHA256(key: key, data: stringToSign).appendHex(to: &expected)
        var signature = presented.signature
        let matches = signature.withUTF8 { presentedBytes in
            expected.withUnsafeBufferPointer { Digest.constantTimeEquals($0, presentedBytes) }
        }
        guard matches else {
            throw mismatch(SNSError.signatureMismatchMessage)
        }
        return SigV4Caller(accessKeyID: secret.accessKeyID, accountID: secret.accountID, region: parsed.credential.region)
    }

    /// `unknownKeyAccount`'s check: everything `check` holds a request to but the signature itself.
    package func checkUnsigned(_ parsed: ParsedRequest, request: HTTPRequest, account: String) throws(SigV4Error) -> SigV4Caller {
        try checkTime(parsed.requestTime, presented: parsed.presented)
        _ = try payloadHash(request)
        return SigV4Caller(accessKeyID: parsed.credential.accessKeyID, accountID: account, region: parsed.credential.region)
    }

    // MARK: - Pieces

    struct Presented {
        var credential: String
        var signedHeaders: String
        var signature: String
        /// X-Amz-Date from the query (presigned) or nil.
        var queryDate: String?
        var expires: Int64?
        var inQuery: Bool
    }

    package struct Credential {
        package var accessKeyID: String
        var date: String
        package var region: String
        var service: String
        var terminator: String
    }

    private func mismatch(_ message: String) -> SigV4Error {
        SigV4Error(code: .signatureMismatch, message: message)
    }

    static func presentedSignature(_ request: HTTPRequest,
                                   query: [(name: String, value: String)]) throws(SigV4Error) -> Presented {
        if let authorization = request.headers["Authorization"] {
            return try parseAuthorization(authorization)
        }
        func parameter(_ name: String) -> String? { query.first { $0.name == name }?.value }
        guard let algorithm = parameter("X-Amz-Algorithm") else {
            throw SigV4Error(code: .missingAuthentication, message: "Request is missing Authentication Token")
        }
        guard algorithm == "AWS4-HMAC-SHA256" else {
            throw SigV4Error(code: .incompleteSignature, message: "Unsupported AWS 'algorithm': '\(algorithm)'.")
        }
        var missing: [String] = []
        for name in ["X-Amz-Credential", "X-Amz-SignedHeaders", "X-Amz-Signature", "X-Amz-Date"]
            where parameter(name) == nil {
            missing.append("AWS query-string parameters must include '\(name)'.")
        }
        guard missing.isEmpty else {
            throw SigV4Error(code: .incompleteSignature, message: missing.joined(separator: " ") + " Re-examine the query-string parameters.")
        }
        var expires: Int64?
        if let text = parameter("X-Amz-Expires") {
            guard let value = Int64(text), value >= 0, value <= 604_800 else {
                throw SigV4Error(code: .incompleteSignature, message: "X-Amz-Expires must be a number of seconds between 0 and 604800.")
            }
            expires = value
        }
        return Presented(credential: parameter("X-Amz-Credential")!, signedHeaders: parameter("X-Amz-SignedHeaders")!,
                         signature: parameter("X-Amz-Signature")!, queryDate: parameter("X-Amz-Date"),
                         expires: expires, inQuery: true)
    }

    /// `AWS4-HMAC-SHA256 Credential=AKID/20150830/us-east-1/sns/aws4_request, SignedHeaders=host;x-amz-date, Signature=abc`
    static func parseAuthorization(_ header: String) throws(SigV4Error) -> Presented {
        // One pass over the contiguous bytes: `AWS4-HMAC-SHA256 Name=value, Name=value, ...`. Substring slicing
        // and trimming through String indices would cost more than the rest of the header's parsing.
        var text = header
        let parsed = text.withUTF8 { bytes -> (credential: String?, signedHeaders: String?, signature: String?, algorithm: String?) in
            var start = 0, end = bytes.count
            while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start += 1 }
            while end > start, bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09 { end -= 1 }
            let prefix: StaticString = "AWS4-HMAC-SHA256 "
            let prefixBytes = UnsafeBufferPointer(start: prefix.utf8Start, count: prefix.utf8CodeUnitCount)
            guard end - start >= prefixBytes.count,
                  UnsafeBufferPointer(rebasing: bytes[start..<(start + prefixBytes.count)]).elementsEqual(prefixBytes) else {
                var stop = start
                while stop < end, bytes[stop] != 0x20 { stop += 1 }
                return (nil, nil, nil, String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<stop]), as: UTF8.self))
            }
            var credential: String?, signedHeaders: String?, signature: String?
            var position = start + prefixBytes.count
            while position < end {
                var stop = position
                while stop < end, bytes[stop] != UInt8(ascii: ",") { stop += 1 }
                var first = position, last = stop
                while first < last, bytes[first] == 0x20 || bytes[first] == 0x09 { first += 1 }
                while last > first, bytes[last - 1] == 0x20 || bytes[last - 1] == 0x09 { last -= 1 }
                var equals = first
                while equals < last, bytes[equals] != UInt8(ascii: "=") { equals += 1 }
                if equals < last {
                    let name = UnsafeBufferPointer(rebasing: bytes[first..<equals])
                    let value = String(decoding: UnsafeBufferPointer(rebasing: bytes[(equals + 1)..<last]), as: UTF8.self)
                    if name.elementsEqual("Credential".utf8) { credential = value }
                    else if name.elementsEqual("SignedHeaders".utf8) { signedHeaders = value }
                    else if name.elementsEqual("Signature".utf8) { signature = value }
                }
                position = stop + 1
            }
            return (credential, signedHeaders, signature, nil)
        }
        if let algorithm = parsed.algorithm {
            throw SigV4Error(code: .incompleteSignature, message: "Unsupported AWS 'algorithm': '\(algorithm)'.")
        }
        guard let credential = parsed.credential, let signedHeaders = parsed.signedHeaders, let signature = parsed.signature else {
            var missing: [String] = []
            if parsed.credential == nil { missing.append("Authorization header requires 'Credential' parameter.") }
            if parsed.signedHeaders == nil { missing.append("Authorization header requires 'SignedHeaders' parameter.") }
            if parsed.signature == nil { missing.append("Authorization header requires 'Signature' parameter.") }
            let trimmed = Substring(header).trimmingSpaces()
            throw SigV4Error(code: .incompleteSignature,
                             message: missing.joined(separator: " ") + " Authorization=\(String(trimmed.prefix(40)))...")
        }
        return Presented(credential: credential, signedHeaders: signedHeaders, signature: signature, queryDate: nil,
                         expires: nil, inQuery: false)
    }


    private func parseCredential(_ text: String) throws(SigV4Error) -> Credential {
        let parts = Substring(text).cut(at: UInt8(ascii: "/")).map(String.init)
        guard parts.count == 5, !parts[0].isEmpty else {
            throw SigV4Error(code: .incompleteSignature,
                             message: "Credential must have exactly 5 slash-delimited elements, e.g. keyid/date/region/service/term, got '\(text)'")
        }
        return Credential(accessKeyID: parts[0], date: parts[1], region: parts[2], service: parts[3], terminator: parts[4])
    }

    /// The request time in seconds since 1970: X-Amz-Date (query or header), else the Date header.
    private func requestTime(_ presented: Presented, request: HTTPRequest) throws(SigV4Error) -> Int64 {
        if let text = presented.queryDate ?? request.headers["X-Amz-Date"] {
            guard let seconds = AWSTimestamp.parseBasic(text) else {
                throw SigV4Error(code: .incompleteSignature,
                                 message: "Date must be in ISO-8601 'basic format'. Got '\(text)'. See http://en.wikipedia.org/wiki/ISO_8601")
            }
            return seconds
        }
        if let text = request.headers["Date"], let seconds = AWSTimestamp.parseHTTPDate(text) {
            return seconds
        }
        throw SigV4Error(code: .incompleteSignature,
                         message: "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header.")
    }

    private func checkTime(_ requestTime: Int64, presented: Presented) throws(SigV4Error) {
        let current = Int64(now().timeIntervalSince1970.rounded(.down))
        // The texts are built only for an error message (formatting three timestamps per request showed).
        func text(_ seconds: Int64) -> String { AWSTimestamp.formatBasic(seconds) }
        if requestTime > current + allowedSkew {
            throw mismatch("Signature not yet current: \(text(requestTime)) is still later than \(text(current + allowedSkew)) (\(text(current)) + 15 min.)")
        }
        if let expires = presented.expires {
            if current > requestTime + expires {
                throw mismatch("Signature expired: \(text(requestTime)) is now earlier than \(text(current - expires)) (\(text(current)) - \(expires) sec.)")
            }
        } else if requestTime < current - allowedSkew {
            throw mismatch("Signature expired: \(text(requestTime)) is now earlier than \(text(current - allowedSkew)) (\(text(current)) - 15 min.)")
        }
    }

    private func payloadHash(_ request: HTTPRequest) throws(SigV4Error) -> String {
        let computed = Digest.sha256(request.body).hexString
        if let claimed = request.headers["x-amz-content-sha256"], claimed != computed {
            throw mismatch("The provided 'x-amz-content-sha256' header does not match what was computed.")
        }
        return computed
    }

    // MARK: - Canonical request (internal for tests)

    static func decodeQuery(_ rawQuery: String) throws(FormDecodingError) -> [(name: String, value: String)] {
        try FormParameters(decoding: Array(rawQuery.utf8)).pairs
    }

    /// The canonical request as the UTF-8 bytes that are hashed (no String made on the request path).
    static func canonicalRequestBytes(method: String, rawPath: String, query: [(name: String, value: String)],
                                      excludeSignature: Bool, headers: HTTPHeaders, signedHeaders: [String],
                                      signedHeaderList: String, payloadHash: String) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(512)
        func line(_ text: String) {
            out.append(contentsOf: text.utf8)
            out.append(UInt8(ascii: "\n"))
        }
        line(method)
        line(canonicalURI(rawPath))
        line(canonicalQuery(query, excludeSignature: excludeSignature))
        for name in signedHeaders {
            out.append(contentsOf: name.utf8)
            out.append(UInt8(ascii: ":"))
            var first = true
            headers.forEachValue(name) { value in
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                out.append(contentsOf: trimAll(value).utf8)
            }
            out.append(UInt8(ascii: "\n"))
        }
        out.append(UInt8(ascii: "\n"))
        line(signedHeaderList)
        out.append(contentsOf: payloadHash.utf8)
        return out
    }

    static func canonicalURI(_ rawPath: String) -> String {
        guard !rawPath.isEmpty else { return "/" }
        var output: [Substring] = []
        for segment in rawPath.split(separator: "/", omittingEmptySubsequences: true) {
            switch segment {
            case ".": continue
            case "..": if !output.isEmpty { output.removeLast() }
            default: output.append(segment)
            }
        }
        let leading = rawPath.hasPrefix("/") ? "/" : ""
        let trailing = rawPath.hasSuffix("/") && !output.isEmpty ? "/" : ""
        return AWSPercentEncoding.encode(leading + output.joined(separator: "/") + trailing, keepSlash: true)
    }

    static func canonicalQuery(_ pairs: [(name: String, value: String)], excludeSignature: Bool) -> String {
        var encoded: [(String, String)] = []
        encoded.reserveCapacity(pairs.count)
        for pair in pairs where !(excludeSignature && pair.name == "X-Amz-Signature") {
            encoded.append((AWSPercentEncoding.encode(pair.name), AWSPercentEncoding.encode(pair.value)))
        }
        encoded.sort { $0.0 != $1.0 ? $0.0 < $1.0 : $0.1 < $1.1 }
        return encoded.map { "\($0.0)=\($0.1)" }.joined(separator: "&")
    }

    /// Trim, and turn every run of whitespace into one space (AWS's Trimall; botocore's `' '.join(v.split())`).
    static func trimAll(_ value: String) -> String {
        // Fast path: no tab, line break or other separator, no leading, trailing or doubled space (nearly every
        // header value): nothing to change.
        var previousSpace = true
        var plain = true
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: " "):
                if previousSpace { plain = false }
                previousSpace = true
            case 0x09, 0x0A, 0x0B, 0x0C, 0x0D:
                plain = false
            default:
                previousSpace = false
            }
            if !plain { break }
        }
        if plain && (!previousSpace || value.isEmpty) { return value }
        // On bytes, not Characters: "\r\n" is one Character and would not match either separator.
        let words = value.utf8.split(whereSeparator: { $0 == 0x20 || (0x09...0x0D).contains($0) })
        return words.map { String(decoding: $0, as: UTF8.self) }.joined(separator: " ")
    }
}

/// Derived signing keys per (access key, day, region, service): four HMACs saved per request. Bounded; the
/// secret is part of the entry so a rotated secret never reuses an old key.
final class SigningKeyCache: Sendable {
    private struct Entry {
        let secret: String
        let key: [UInt8]
    }

    private let entries = Mutex<[String: Entry]>([:])
    private let capacity = 4096

    func key(secret: String, accessKeyID: String, date: String, region: String, service: String) -> [UInt8] {
        let cacheKey = "\(accessKeyID)/\(date)/\(region)/\(service)"
        if let entry = entries.withLock({ $0[cacheKey] }), entry.secret == secret { return entry.key }
        let kDate = Digest.hmacSHA256(key: Array("AWS4\(secret)".utf8), string: date)
        let kRegion = Digest.hmacSHA256(key: kDate, string: region)
        let kService = Digest.hmacSHA256(key: kRegion, string: service)
        let kSigning = Digest.hmacSHA256(key: kService, string: "aws4_request")
        entries.withLock { entries in
            if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
            entries[cacheKey] = Entry(secret: secret, key: kSigning)
        }
        return kSigning
    }
}
