import Foundation
import Testing
@testable import ClarionAPI
@testable import ClarionHTTP1

/// A tiny action table standing in for the real actions: enough to drive the protocol layer end to end.
enum TestActions {
    static func table() -> SNSActionTable {
        var actions = SNSActionTable()
        actions.register("ListTopics") { request throws(SNSError) in
            let all = ["arn:aws:sns:\(request.region):\(request.caller.accountID):alpha",
                       "arn:aws:sns:\(request.region):\(request.caller.accountID):beta"]
            let page = request.parameters["NextToken"] == "2" ? [all[1]] : [all[0]]
            return XMLResponse { xml in
                xml.members("Topics", page) { xml, arn in xml.element("TopicArn", arn) }
                xml.element("NextToken", ifPresent: request.parameters["NextToken"] == nil ? "2" : nil)
            }
        }
        actions.register("CreateTopic") { request throws(SNSError) in
            let name = try request.parameters.required("Name")
            let attributes = try request.parameters.stringMap("Attributes")
            let tags = try request.parameters.tags()
            guard attributes["DisplayName"] != "fail" else { throw .invalidParameter("Attributes", reason: "no") }
            _ = tags
            return XMLResponse { $0.element("TopicArn", "arn:aws:sns:\(request.region):\(request.caller.accountID):\(name)") }
        }
        actions.register("GetTopicAttributes") { request throws(SNSError) in
            let arn = try request.parameters.required("TopicArn")
            guard arn.hasSuffix(":alpha") else { throw .notFound("Topic does not exist") }
            return XMLResponse { $0.entries("Attributes", ["TopicArn": arn, "DisplayName": "Alpha & <Co>"]) }
        }
        actions.register("Publish", maxPayloadBytes: SNSActionTable.publishPayloadLimit) { request throws(SNSError) in
            let message = try request.parameters.required("Message")
            let attributes = try request.parameters.messageAttributes()
            let described = attributes.sorted { $0.key < $1.key }.map { name, value in
                "\(name):\(value.dataType):\(value.stringValue ?? value.binaryValue.map { $0.map(String.init).joined(separator: ",") } ?? "")"
            }
            let id = "len=\(message.utf8.count);first=\(message.prefix(12));attrs=\(described.joined(separator: "|"))"
            return XMLResponse { $0.element("MessageId", id) }
        }
        actions.register("PublishBatch", maxPayloadBytes: SNSActionTable.publishPayloadLimit) { request throws(SNSError) in
            let entries = try request.parameters.structList("PublishBatchRequestEntries")
            guard !entries.isEmpty else { throw .emptyBatchRequest() }
            var results: [(String, String)] = []
            for entry in entries {
                let id = try entry.required("Id")
                let message = try entry.required("Message")
                let attributes = try entry.messageAttributes()
                results.append((id, "\(message)/\(attributes.keys.sorted().joined(separator: ","))"))
            }
            return XMLResponse { xml in
                xml.members("Successful", results) { xml, result in
                    xml.element("Id", result.0)
                    xml.element("MessageId", result.1)
                }
                xml.members("Failed", [String]()) { _, _ in }
            }
        }
        actions.register("TagResource") { request throws(SNSError) in
            let tags = try request.parameters.tags()
            guard tags.count == 2, tags[0] == SNSTag(key: "team", value: "push"), tags[1] == SNSTag(key: "empty", value: "") else {
                throw .invalidParameter("Tags", reason: "unexpected \(tags)")
            }
            return .empty
        }
        actions.register("UntagResource") { request throws(SNSError) in
            guard try request.parameters.stringList("TagKeys") == ["team", "empty"] else {
                throw .invalidParameter("TagKeys")
            }
            return .empty
        }
        return actions
    }

    static let credentials = AccessKeyCredentials(accessKeyID: "AKIACLARIONTEST", secretAccessKey: "s3cr3t/with+chars",
                                                  accountID: "123456789012")

    static func router(authentication: SNSAuthentication) -> Router {
        var router = Router.api()
        SNSQueryService(region: "us-east-1", actions: table(), authentication: authentication).register(on: &router)
        return router
    }
}

@Suite("SNS Query API over HTTP")
struct SNSQueryServiceTests {
    static let unauthenticated = TestActions.router(authentication: .disabled(accountID: "111122223333"))
    static let form = ["Content-Type": "application/x-www-form-urlencoded; charset=utf-8"]

    func post(_ server: HTTPServer, _ body: String) async throws -> ClientResult {
        try await curl("http://127.0.0.1:\(server.port)/", method: "POST", headers: Self.form, body: Array(body.utf8))
    }

    func errorCode(_ result: ClientResult) -> String? {
        guard let start = result.text.range(of: "<Code>"), let end = result.text.range(of: "</Code>") else { return nil }
        return String(result.text[start.upperBound..<end.lowerBound])
    }

    @Test("POST form and GET query both reach the action; response in SNS's shape")
    func dispatch() async throws {
        try await withServer(Self.unauthenticated) { server in
            let created = try await post(server, "Action=CreateTopic&Version=2010-03-31&Name=t%C3%B3pico+1")
            #expect(created.status == 200)
            #expect(created.headers["content-type"] == "text/xml")
            let id = try #require(created.headers["x-amzn-requestid"])
            #expect(created.text == #"<CreateTopicResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/"><CreateTopicResult>"#
                + "<TopicArn>arn:aws:sns:us-east-1:111122223333:tópico 1</TopicArn></CreateTopicResult>"
                + "<ResponseMetadata><RequestId>\(id)</RequestId></ResponseMetadata></CreateTopicResponse>")

            let listed = try await curl("http://127.0.0.1:\(server.port)/?Action=ListTopics&Version=2010-03-31")
            #expect(listed.status == 200)
            #expect(listed.text.contains("<Topics><member><TopicArn>arn:aws:sns:us-east-1:111122223333:alpha</TopicArn></member></Topics><NextToken>2</NextToken>"))

            let attributes = try await post(server, "Action=GetTopicAttributes&TopicArn=arn%3Aaws%3Asns%3Aus-east-1%3A1%3Aalpha")
            #expect(attributes.text.contains("<entry><key>DisplayName</key><value>Alpha &amp; &lt;Co&gt;</value></entry>"))
        }
    }

    @Test("protocol errors: MissingAction, InvalidAction, wrong Version, ValidationError, repeated and malformed parameters")
    func protocolErrors() async throws {
        try await withServer(Self.unauthenticated) { server in
            let cases: [(String, String, Int)] = [
                ("Version=2010-03-31", "MissingAction", 400),
                ("Action=Frobnicate&Version=2010-03-31", "InvalidAction", 400),
                ("Action=ListTopics&Version=2012-11-05", "InvalidAction", 400),
                ("Action=CreateTopic&Version=2010-03-31", "ValidationError", 400),
                ("Action=CreateTopic&Name=a&Name=b", "InvalidParameter", 400),
                ("Action=CreateTopic&Name=%E2%98", "InvalidParameter", 400),
                ("Action=CreateTopic&Name=%zz", "InvalidParameter", 400),
                ("Action=GetTopicAttributes&TopicArn=arn%3Anope", "NotFound", 404),
                ("Action=CreateTopic&Name=x&Attributes.entry.1.key=DisplayName&Attributes.entry.1.value=fail", "InvalidParameter", 400),
            ]
            for (body, code, status) in cases {
                let result = try await post(server, body)
                #expect(result.status == status, "\(body)")
                #expect(errorCode(result) == code, "\(body): \(result.text)")
                #expect(result.text.contains("<RequestId>\(result.headers["x-amzn-requestid"] ?? "?")</RequestId>"))
            }
            let missing = try await post(server, "Action=CreateTopic")
            #expect(missing.text.contains("<Message>1 validation error detected: Value null at &apos;name&apos; failed to satisfy constraint: Member must not be null</Message>"))
        }
    }

    @Test("Publish limits apply to decoded bytes: a 200 KB message that percent-encodes to 600 KB passes, 257 KB is 413")
    func publishLimits() async throws {
        try await withServer(Self.unauthenticated) { server in
            let heavy = String(repeating: "%E2%98%83", count: 200_000 / 3)  // ☃ is 3 bytes, 9 on the wire
            let ok = try await post(server, "Action=Publish&TargetArn=arn&Message=\(heavy)")
            #expect(ok.status == 200)
            #expect(ok.text.contains("len=\(200_000 / 3 * 3)"))

            let tooLong = try await post(server, "Action=Publish&TargetArn=arn&Message=" + String(repeating: "a", count: 262_145))
            #expect(tooLong.status == 413)
            #expect(errorCode(tooLong) == "RequestEntityTooLarge")

            // Other actions are not held to the publish limit, only to the 1 MB body limit.
            let bigName = try await post(server, "Action=CreateTopic&Name=" + String(repeating: "n", count: 300_000))
            #expect(bigName.status == 200)
            let overBody = try await post(server, "Action=CreateTopic&Name=" + String(repeating: "n", count: 1 << 20))
            #expect(overBody.status == 413)
            #expect(overBody.headers["content-type"] == "text/xml")
            #expect(errorCode(overBody) == "RequestEntityTooLarge")
        }
    }

    @Test("SigV4 is enforced: unsigned requests are refused with MissingAuthenticationToken")
    func unsignedRefused() async throws {
        let router = TestActions.router(authentication: .sigV4(SigV4Verifier(
            region: "us-east-1", resolver: StaticAccessKeyResolver([TestActions.credentials]))))
        try await withServer(router) { server in
            let result = try await post(server, "Action=ListTopics&Version=2010-03-31")
            #expect(result.status == 403)
            #expect(errorCode(result) == "MissingAuthenticationToken")
        }
    }

    /// boto3 as a user would run it, pointed at the server.
    static let boto3Script = #"""
import json, sys
import boto3, botocore
from botocore.config import Config
port, key, secret, mode = sys.argv[1:5]
config = Config(retries={'max_attempts': 1}, signature_version=botocore.UNSIGNED if mode == 'unsigned' else 'v4')
sns = boto3.client('sns', endpoint_url='http://127.0.0.1:%s' % port, region_name='us-east-1',
                   aws_access_key_id=key, aws_secret_access_key=secret, config=config)
def call(name, **kwargs):
    try:
        response = getattr(sns, name)(**kwargs)
        response.pop('ResponseMetadata', None)
        return {'ok': response}
    except botocore.exceptions.ClientError as e:
        return {'error': e.response['Error']['Code'], 'message': e.response['Error'].get('Message'),
                'status': e.response['ResponseMetadata']['HTTPStatusCode'],
                'exception': type(e).__name__}
out = {'list': call('list_topics')}
if mode == 'full':
    out['page2'] = call('list_topics', NextToken='2')
    out['create'] = call('create_topic', Name='tópico', Attributes={'DisplayName': 'x'}, Tags=[{'Key': 'k', 'Value': 'v'}])
    out['publish'] = call('publish', TopicArn='arn:aws:sns:us-east-1:123456789012:alpha', Message='héllo & <world>',
                          MessageAttributes={'AWS.SNS.MOBILE.APNS.PRIORITY': {'DataType': 'String', 'StringValue': '5'},
                                             'blob': {'DataType': 'Binary', 'BinaryValue': b'\x00\xff'}})
    out['batch'] = call('publish_batch', TopicArn='arn:aws:sns:us-east-1:123456789012:alpha', PublishBatchRequestEntries=[
        {'Id': 'one', 'Message': 'first', 'MessageAttributes': {'a': {'DataType': 'Number', 'StringValue': '1'}}},
        {'Id': 'two', 'Message': 'second'}])
    out['attributes'] = call('get_topic_attributes', TopicArn='arn:aws:sns:us-east-1:123456789012:alpha')
    out['missing'] = call('get_topic_attributes', TopicArn='arn:aws:sns:us-east-1:123456789012:nope')
    out['tag'] = call('tag_resource', ResourceArn='arn:x', Tags=[{'Key': 'team', 'Value': 'push'}, {'Key': 'empty', 'Value': ''}])
    out['untag'] = call('untag_resource', ResourceArn='arn:x', TagKeys=['team', 'empty'])
print(json.dumps(out))
"""#

    func boto3(port: Int, key: String, secret: String, mode: String) async throws -> [String: Any] {
        let result = try await run("/usr/bin/env", ["python3", "-c", Self.boto3Script, String(port), key, secret, mode],
                                   environment: ["AWS_CONFIG_FILE": "/dev/null", "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
                                                 "AWS_EC2_METADATA_DISABLED": "true"])
        guard result.status == 0 else { throw ToolError(description: "boto3: \(result.stderr)") }
        return try #require(try JSONSerialization.jsonObject(with: Data(result.stdout)) as? [String: Any])
    }

    @Test("boto3 end to end: the right secret is accepted, a wrong one refused")
    func boto3EndToEnd() async throws {
        let router = TestActions.router(authentication: .sigV4(SigV4Verifier(
            region: "us-east-1", resolver: StaticAccessKeyResolver([TestActions.credentials]))))
        try await withServer(router) { server in
            let good = try await boto3(port: server.port, key: TestActions.credentials.accessKeyID,
                                       secret: TestActions.credentials.secretAccessKey, mode: "full")
            let list = try #require((good["list"] as? [String: Any])?["ok"] as? [String: Any])
            #expect((list["Topics"] as? [[String: String]]) == [["TopicArn": "arn:aws:sns:us-east-1:123456789012:alpha"]])
            #expect(list["NextToken"] as? String == "2")
            let page2 = try #require((good["page2"] as? [String: Any])?["ok"] as? [String: Any])
            #expect((page2["Topics"] as? [[String: String]]) == [["TopicArn": "arn:aws:sns:us-east-1:123456789012:beta"]])
            #expect(page2["NextToken"] == nil)
            let create = try #require((good["create"] as? [String: Any])?["ok"] as? [String: Any])
            #expect(create["TopicArn"] as? String == "arn:aws:sns:us-east-1:123456789012:tópico")
            let publish = try #require((good["publish"] as? [String: Any])?["ok"] as? [String: Any])
            #expect(publish["MessageId"] as? String
                == "len=16;first=héllo & <wor;attrs=AWS.SNS.MOBILE.APNS.PRIORITY:String:5|blob:Binary:0,255")
            let batch = try #require((good["batch"] as? [String: Any])?["ok"] as? [String: Any])
            #expect((batch["Successful"] as? [[String: String]]) == [["Id": "one", "MessageId": "first/a"],
                                                                      ["Id": "two", "MessageId": "second/"]])
            let attributes = try #require((good["attributes"] as? [String: Any])?["ok"] as? [String: Any])
            #expect((attributes["Attributes"] as? [String: String])?["DisplayName"] == "Alpha & <Co>")
            let missing = try #require(good["missing"] as? [String: Any])
            #expect(missing["error"] as? String == "NotFound")
            #expect(missing["exception"] as? String == "NotFoundException")
            #expect(missing["status"] as? Int == 404)
            #expect((good["tag"] as? [String: Any])?["ok"] != nil)
            #expect((good["untag"] as? [String: Any])?["ok"] != nil)

            let wrong = try await boto3(port: server.port, key: TestActions.credentials.accessKeyID,
                                        secret: "not-the-secret", mode: "list")
            let refused = try #require(wrong["list"] as? [String: Any])
            #expect(refused["error"] as? String == "SignatureDoesNotMatch")
            #expect(refused["status"] as? Int == 403)

            let unknown = try await boto3(port: server.port, key: "AKIAUNKNOWN", secret: "x", mode: "list")
            #expect((unknown["list"] as? [String: Any])?["error"] as? String == "InvalidClientTokenId")

            let unsigned = try await boto3(port: server.port, key: "x", secret: "x", mode: "unsigned")
            #expect((unsigned["list"] as? [String: Any])?["error"] as? String == "MissingAuthenticationToken")
        }
    }
}
