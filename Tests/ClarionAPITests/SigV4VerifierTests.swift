import Foundation
import Synchronization
import Testing
@testable import ClarionAPI
import ClarionCore
import ClarionHTTP1

/// Requests signed by botocore itself (SigV4Auth / SigV4QueryAuth with the clock pinned), then verified here.
@Suite("SigV4 verification against botocore")
struct SigV4VerifierTests {
    static let signedAt = "20260102T030405Z"
    static let secret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
    static let credentials = AccessKeyCredentials(accessKeyID: "AKIDEXAMPLE", secretAccessKey: secret, accountID: "123456789012")

    /// The Python side: sign a few request shapes and print them as JSON.
    static let signer = #"""
import base64, datetime, json, sys
from unittest import mock
import botocore.auth, botocore.awsrequest, botocore.credentials
creds = botocore.credentials.Credentials(sys.argv[1], sys.argv[2])
when = datetime.datetime.strptime(sys.argv[3], '%Y%m%dT%H%M%SZ')
base = 'http://127.0.0.1:8080'
form = 'Action=Publish&Version=2010-03-31&TopicArn=arn%3Aaws%3Asns%3Aus-east-1%3A123456789012%3At&Message=caf%C3%A9+%E2%98%83+%26+more'
cases = [
    ('post-form', 'POST', base + '/', {'Content-Type': 'application/x-www-form-urlencoded; charset=utf-8'}, form.encode()),
    ('get-query', 'GET', base + '/?Action=ListTopics&Version=2010-03-31&NextToken=a%20b%2Bc%2F%3D&Empty=', {}, b''),
    ('odd-path', 'GET', base + '/v1/a%20b/c~d/%2F/x.y', {}, b''),
    ('spaces-in-header', 'POST', base + '/', {'X-Amz-Meta-Spaces': '  a    b  ', 'Content-Type': 'text/plain'}, b'body'),
    ('content-sha', 'POST', base + '/', {'X-Amz-Content-SHA256': __import__('hashlib').sha256(b'{}').hexdigest()}, b'{}'),
    ('presigned', 'GET', base + '/?Action=ListTopics&Version=2010-03-31', {}, b''),
]
out = []
with mock.patch('botocore.auth.get_current_datetime', return_value=when):
    for name, method, url, headers, body in cases:
        request = botocore.awsrequest.AWSRequest(method=method, url=url, headers=headers, data=body)
        if name == 'presigned':
            botocore.auth.SigV4QueryAuth(creds, 'sns', 'us-east-1', expires=300).add_auth(request)
        else:
            botocore.auth.SigV4Auth(creds, 'sns', 'us-east-1').add_auth(request)
        out.append({'name': name, 'method': method, 'url': request.url,
                    'headers': [[k, v] for k, v in request.headers.items()],
                    'body': base64.b64encode(body).decode()})
print(json.dumps(out))
"""#

    struct Signed {
        let name: String
        let request: HTTPRequest
    }

    static func botocoreRequests() async throws -> [Signed] {
        let result = try await run("/usr/bin/env", ["python3", "-c", signer, credentials.accessKeyID, secret, signedAt])
        guard result.status == 0 else { throw ToolError(description: "python: \(result.stderr)") }
        let cases = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout)) as? [[String: Any]])
        return try cases.map { item in
            let url = try #require(item["url"] as? String)
            let afterScheme = url.dropFirst("http://".count)
            let slash = try #require(afterScheme.firstIndex(of: "/"))
            let host = String(afterScheme[..<slash])
            let target = String(afterScheme[slash...])
            let path = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
            var headers = HTTPHeaders([("Host", host)])
            for pair in try #require(item["headers"] as? [[String]]) { headers.add(pair[0], pair[1]) }
            let encodedBody = try #require(item["body"] as? String)
            let body = try #require(Data(base64Encoded: encodedBody))
            let method = try #require(item["method"] as? String)
            let request = HTTPRequest(method: HTTPMethod(rawValue: method),
                                      rawPath: String(path[0]), rawQuery: path.count > 1 ? String(path[1]) : "",
                                      headers: headers, body: [UInt8](body), requestID: "test")
            return Signed(name: try #require(item["name"] as? String), request: request)
        }
    }

    static func verifier(offsetSeconds: Int = 0, region: String = "us-east-1", service: String = "sns",
                         resolver: any AccessKeyResolver = StaticAccessKeyResolver([credentials]),
                         unknownKeyAccount: String? = nil) -> SigV4Verifier {
        let base = Double(AWSTimestamp.parseBasic(signedAt)!)
        return SigV4Verifier(region: region, service: service, resolver: resolver, unknownKeyAccount: unknownKeyAccount,
                             clock: { Date(timeIntervalSince1970: base + Double(offsetSeconds)) })
    }

    func expectFailure(_ verifier: SigV4Verifier, _ request: HTTPRequest, _ code: SigV4Error.Code,
                       message: String? = nil, sourceLocation: SourceLocation = #_sourceLocation) async {
        do {
            _ = try await verifier.verify(request)
            Issue.record("verified, expected \(code)", sourceLocation: sourceLocation)
        } catch {
            #expect(error.code == code, sourceLocation: sourceLocation)
            if let message { #expect(error.message == message, sourceLocation: sourceLocation) }
        }
    }

    @Test("every botocore-signed shape verifies (header form and presigned query form)")
    func botocoreSignaturesVerify() async throws {
        let signed = try await Self.botocoreRequests()
        #expect(signed.count == 6)
        for item in signed {
            do {
                let caller = try await Self.verifier().verify(item.request)
                #expect(caller == SigV4Caller(accessKeyID: "AKIDEXAMPLE", accountID: "123456789012", region: "us-east-1"), "\(item.name)")
            } catch {
                Issue.record("\(item.name): \(error)")
            }
        }
    }

    @Test("any change to a signed part fails with SignatureDoesNotMatch")
    func alteredRequestsFail() async throws {
        let signed = try await Self.botocoreRequests()
        let verifier = Self.verifier()
        let mismatch = SNSError.signatureMismatchMessage
        for item in signed {
            var body = item.request
            body.body.append(UInt8(ascii: "x"))
            let expected = item.name == "content-sha"
                ? "The provided 'x-amz-content-sha256' header does not match what was computed." : mismatch
            await expectFailure(verifier, body, .signatureMismatch, message: expected)

            var method = item.request
            method.method = method.method == .get ? .post : .get
            await expectFailure(verifier, method, .signatureMismatch)

            var path = item.request
            path.rawPath += "x"
            await expectFailure(verifier, path, .signatureMismatch)

            var query = item.request
            query.rawQuery += query.rawQuery.isEmpty ? "extra=1" : "&extra=1"
            await expectFailure(verifier, query, .signatureMismatch)

            var host = item.request
            host.headers.set("Host", "127.0.0.1:8081")
            await expectFailure(verifier, host, .signatureMismatch)
        }
        let form = try #require(signed.first { $0.name == "post-form" }).request
        var contentType = form
        contentType.headers.set("Content-Type", "application/x-www-form-urlencoded")
        await expectFailure(verifier, contentType, .signatureMismatch)

        let wrongSecret = AccessKeyCredentials(accessKeyID: "AKIDEXAMPLE", secretAccessKey: "not-the-secret", accountID: "123456789012")
        await expectFailure(Self.verifier(resolver: StaticAccessKeyResolver([wrongSecret])), form, .signatureMismatch)
    }

    @Test("unsigned headers may change; signed header whitespace is canonicalised")
    func canonicalisationTolerances() async throws {
        let signed = try await Self.botocoreRequests()
        var unsigned = try #require(signed.first { $0.name == "post-form" }).request
        unsigned.headers.add("User-Agent", "changed-by-a-proxy")
        unsigned.headers.add("X-Forwarded-For", "10.0.0.1")
        _ = try await Self.verifier().verify(unsigned)

        var spaces = try #require(signed.first { $0.name == "spaces-in-header" }).request
        spaces.headers.set("X-Amz-Meta-Spaces", "a b")
        _ = try await Self.verifier().verify(spaces)
        spaces.headers.set("X-Amz-Meta-Spaces", "a  b c")
        await expectFailure(Self.verifier(), spaces, .signatureMismatch)
    }

    @Test("the 15-minute window, with AWS's messages")
    func clockSkew() async throws {
        let request = try #require(try await Self.botocoreRequests().first { $0.name == "post-form" }).request
        _ = try await Self.verifier(offsetSeconds: 14 * 60).verify(request)
        _ = try await Self.verifier(offsetSeconds: -14 * 60).verify(request)
        await expectFailure(Self.verifier(offsetSeconds: 16 * 60), request, .signatureMismatch,
                            message: "Signature expired: 20260102T030405Z is now earlier than 20260102T030505Z (20260102T032005Z - 15 min.)")
        await expectFailure(Self.verifier(offsetSeconds: -16 * 60), request, .signatureMismatch,
                            message: "Signature not yet current: 20260102T030405Z is still later than 20260102T030305Z (20260102T024805Z + 15 min.)")
        #expect(SNSQueryService.snsError(for: SigV4Error(code: .signatureMismatch, message: "Signature expired: x")).code
            == "SignatureDoesNotMatch")
    }

    @Test("presigned URLs expire after X-Amz-Expires")
    func presignedExpiry() async throws {
        let request = try #require(try await Self.botocoreRequests().first { $0.name == "presigned" }).request
        #expect(request.headers["Authorization"] == nil)
        #expect(request.rawQuery.contains("X-Amz-Signature="))
        _ = try await Self.verifier(offsetSeconds: 299).verify(request)
        await expectFailure(Self.verifier(offsetSeconds: 301), request, .signatureMismatch)
        var stripped = request
        stripped.rawQuery = request.rawQuery.replacingOccurrences(of: "X-Amz-Signature=", with: "X-Amz-Signaturf=")
        await expectFailure(Self.verifier(), stripped, .incompleteSignature)
    }

    @Test("serve --dev: an unknown key acts for the default account unverified; scope, time window and payload hash still hold")
    func unknownKeyInDevMode() async throws {
        let signed = try await Self.botocoreRequests()
        let request = try #require(signed.first { $0.name == "post-form" }).request
        let dev = Self.verifier(resolver: StaticAccessKeyResolver([]), unknownKeyAccount: "000000000000")
        let caller = try await dev.verify(request)
        #expect(caller == SigV4Caller(accessKeyID: "AKIDEXAMPLE", accountID: "000000000000", region: "us-east-1"))
        // The signature is not checked (there is no secret to check it with)...
        var forged = request
        let authorization = try #require(forged.headers["Authorization"])
        forged.headers.set("Authorization", String(authorization.dropLast(4)) + "0000")
        #expect(try await dev.verify(forged).accountID == "000000000000")
        // ...but everything else is: the region in the scope, the 15-minute window, the payload hash, the header form.
        await expectFailure(Self.verifier(region: "eu-west-1", resolver: StaticAccessKeyResolver([]), unknownKeyAccount: "000000000000"),
                            request, .signatureMismatch)
        await expectFailure(Self.verifier(offsetSeconds: 16 * 60, resolver: StaticAccessKeyResolver([]), unknownKeyAccount: "000000000000"),
                            request, .signatureMismatch)
        var badHash = try #require(signed.first { $0.name == "content-sha" }).request
        badHash.headers.set("X-Amz-Content-SHA256", "UNSIGNED-PAYLOAD")
        await expectFailure(dev, badHash, .signatureMismatch)
        var malformed = request
        malformed.headers.set("Authorization", "AWS AKIDEXAMPLE:abc")
        await expectFailure(dev, malformed, .incompleteSignature)
        // A key the store knows is still verified and acts for its own account.
        let known = Self.verifier(unknownKeyAccount: "000000000000")
        #expect(try await known.verify(request).accountID == "123456789012")
        await expectFailure(known, forged, .signatureMismatch)
    }

    /// CLARION_REGIONS (docs/api.md, "Regions"): unset, any region name a scope names is served and becomes the
    /// caller's region; set, a region outside the list gets AWS's answer for a scope naming a region the endpoint does
    /// not serve, 403 SignatureDoesNotMatch "Credential should be scoped to a valid region, not '<region>'. " (the
    /// Query services' wording: STS's in cognitect-labs/aws-api#27, SQS's in aws/aws-sdk-ruby#508).
    @Test("served regions: any region name, or only the listed ones")
    func servedRegions() async throws {
        let request = try #require(try await Self.botocoreRequests().first { $0.name == "post-form" }).request
        let base = Double(AWSTimestamp.parseBasic(Self.signedAt)!)
        func verifier(_ regions: ServedRegions) -> SigV4Verifier {
            SigV4Verifier(regions: regions, resolver: StaticAccessKeyResolver([Self.credentials]),
                          clock: { Date(timeIntervalSince1970: base) })
        }
        #expect(try await verifier(.any).verify(request).region == "us-east-1")
        #expect(try await verifier(.listed(["eu-west-1", "us-east-1"])).verify(request).region == "us-east-1")
        await expectFailure(verifier(.listed(["eu-west-1", "ap-southeast-4"])), request, .signatureMismatch,
                            message: "Credential should be scoped to a valid region, not 'us-east-1'. ")
        #expect(SNSQueryService.snsError(for: SigV4Error(code: .signatureMismatch, message: "m")).status == 403)
    }

    @Test("scope checks: region, service; unknown key; missing and malformed authorization")
    func scopeAndKeys() async throws {
        let request = try #require(try await Self.botocoreRequests().first { $0.name == "post-form" }).request
        await expectFailure(Self.verifier(region: "eu-west-1"), request, .signatureMismatch,
                            message: "Credential should be scoped to a valid region, not 'us-east-1'. ")
        await expectFailure(Self.verifier(service: "sqs"), request, .signatureMismatch,
                            message: "Credential should be scoped to correct service: 'sqs'. ")
        await expectFailure(Self.verifier(resolver: StaticAccessKeyResolver([])), request, .unknownAccessKey,
                            message: "The security token included in the request is invalid.")

        var missing = request
        missing.headers.remove("Authorization")
        await expectFailure(Self.verifier(), missing, .missingAuthentication)
        #expect(SNSQueryService.snsError(for: SigV4Error(code: .missingAuthentication, message: "")) == .missingAuthenticationToken)

        var malformed = request
        malformed.headers.set("Authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20260102/us-east-1/sns/aws4_request")
        await expectFailure(Self.verifier(), malformed, .incompleteSignature)
        malformed.headers.set("Authorization", "AWS AKIDEXAMPLE:abc")
        await expectFailure(Self.verifier(), malformed, .incompleteSignature)
        malformed.headers.set("Authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/us-east-1/sns/aws4_request, SignedHeaders=host, Signature=00")
        await expectFailure(Self.verifier(), malformed, .incompleteSignature)

        var noDate = request
        noDate.headers.remove("X-Amz-Date")
        await expectFailure(Self.verifier(), noDate, .incompleteSignature)

        var badHash = try #require(try await Self.botocoreRequests().first { $0.name == "content-sha" }).request
        badHash.headers.set("X-Amz-Content-SHA256", "UNSIGNED-PAYLOAD")
        await expectFailure(Self.verifier(), badHash, .signatureMismatch)

        struct Failing: AccessKeyResolver {
            struct Down: Error {}
            func credentials(forAccessKeyID accessKeyID: String) async throws -> AccessKeyCredentials? { throw Down() }
        }
        await expectFailure(Self.verifier(resolver: Failing()), request, .resolverFailed)
    }

    /// Found by the sigv4 fuzz target (Tests/fuzz/corpus/sigv4/crash-date-year-overflow): the day count of a `Date`
    /// header's year overflowed `Int64` and trapped, before any key lookup, so one unsigned request stopped the server.
    @Test("a Date header with a year beyond four digits is refused, not a crash")
    func hugeYearInDateHeader() async {
        let date = "Sun, 30 Aug 288888888888888015 12:36:00 GMT"
        #expect(AWSTimestamp.parseHTTPDate(date) == nil)
        #expect(AWSTimestamp.parseHTTPDate("Fri, 31 Dec 9999 23:59:59 GMT") == AWSTimestamp.parseBasic("99991231T235959Z"))
        let request = HTTPRequest(method: .get, rawPath: "/", headers: HTTPHeaders([
            ("Host", "localhost"), ("Date", date),
            ("Authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/sns/aws4_request, SignedHeaders=host, Signature=00"),
        ]), requestID: "t")
        await expectFailure(Self.verifier(), request, .incompleteSignature,
                            message: "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header.")
    }

    @Test("AWS's published get-vanilla vector")
    func awsTestSuiteVector() async throws {
        let credentials = AccessKeyCredentials(accessKeyID: "AKIDEXAMPLE", secretAccessKey: Self.secret, accountID: "1")
        let request = HTTPRequest(method: .get, rawPath: "/", headers: HTTPHeaders([
            ("Host", "example.amazonaws.com"), ("X-Amz-Date", "20150830T123600Z"),
            ("Authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"),
        ]), requestID: "t")
        let verifier = SigV4Verifier(region: "us-east-1", service: "service", resolver: StaticAccessKeyResolver([credentials]),
                                     clock: { Date(timeIntervalSince1970: Double(AWSTimestamp.parseBasic("20150830T123600Z")!)) })
        _ = try await verifier.verify(request)
    }

    @Test("canonical URI and query follow AWS's rules")
    func canonicalPieces() throws {
        #expect(SigV4Verifier.canonicalURI("/") == "/")
        #expect(SigV4Verifier.canonicalURI("") == "/")
        #expect(SigV4Verifier.canonicalURI("/a/./b/../c//d/") == "/a/c/d/")
        #expect(SigV4Verifier.canonicalURI("/a%20b/%2F") == "/a%2520b/%252F")
        let query = try SigV4Verifier.decodeQuery("b=2&a=2&a=1&c=x+y&d=%7e&X-Amz-Signature=s")
        #expect(SigV4Verifier.canonicalQuery(query, excludeSignature: true) == "a=1&a=2&b=2&c=x%20y&d=~")
        #expect(SigV4Verifier.trimAll("  a \t  b  ") == "a b")
        // AWS's Trimall, as botocore computes it (' '.join(v.split())), on the fast path's edges.
        for (value, expected) in [("", ""), ("a", "a"), ("a b", "a b"), (" a", "a"), ("a ", "a"), ("a  b", "a b"),
                                  ("a\tb", "a b"), ("a\nb", "a b"), ("a\r\n b", "a b"), (" ", ""), ("application/x-www-form-urlencoded; charset=utf-8", "application/x-www-form-urlencoded; charset=utf-8")] {
            #expect(SigV4Verifier.trimAll(value) == expected, "\(value.debugDescription)")
        }
    }

    @Test("timestamps round-trip", arguments: ["19700101T000000Z", "20000229T235959Z", "20260102T030405Z", "21001231T120000Z"])
    func timestamps(_ text: String) throws {
        let seconds = try #require(AWSTimestamp.parseBasic(text))
        #expect(AWSTimestamp.formatBasic(seconds) == text)
        #expect(AWSTimestamp.parseBasic("20260102T030405") == nil)
        #expect(AWSTimestamp.parseHTTPDate("Fri, 02 Jan 2026 03:04:05 GMT") == AWSTimestamp.parseBasic("20260102T030405Z"))
    }

    @Test("Authorization header: components in any order, spaces and tabs around them, unknown ones ignored")
    func authorizationHeaderParts() throws {
        let parsed = try SigV4Verifier.parseAuthorization(
            " \tAWS4-HMAC-SHA256 Signature=abc ,\tSignedHeaders=host;x-amz-date,, Extra=1, NoEquals,Credential=AK/20260102/us-east-1/sns/aws4_request\t ")
        #expect(parsed.credential == "AK/20260102/us-east-1/sns/aws4_request")
        #expect(parsed.signedHeaders == "host;x-amz-date")
        #expect(parsed.signature == "abc")
        #expect(parsed.inQuery == false)
        // A value may itself contain '=' (only the first one splits).
        #expect(try SigV4Verifier.parseAuthorization("AWS4-HMAC-SHA256 Credential=a=b, SignedHeaders=host, Signature=s").credential == "a=b")

        func message(_ header: String) -> String? {
            do { _ = try SigV4Verifier.parseAuthorization(header); return nil } catch { return error.code == .incompleteSignature ? error.message : "wrong code" }
        }
        #expect(message("AWS AKIDEXAMPLE:abc") == "Unsupported AWS 'algorithm': 'AWS'.")
        #expect(message("AWS4-HMAC-SHA256") == "Unsupported AWS 'algorithm': 'AWS4-HMAC-SHA256'.")
        #expect(message("") == "Unsupported AWS 'algorithm': ''.")
        #expect(message("AWS4-HMAC-SHA256 Credential=x, Signature=s")
                == "Authorization header requires 'SignedHeaders' parameter. Authorization=AWS4-HMAC-SHA256 Credential=x, Signature...")
        #expect(message("AWS4-HMAC-SHA256 SignedHeaders=host")?.hasPrefix(
            "Authorization header requires 'Credential' parameter. Authorization header requires 'Signature' parameter.") == true)
    }
}
