import Testing
@testable import ClarionAPI

@Suite("SNS XML responses")
struct XMLWriterTests {
    @Test("text is escaped; characters XML cannot carry are replaced")
    func escaping() {
        #expect(XMLWriter.escape("a<b>&\"c'") == "a&lt;b&gt;&amp;&quot;c&apos;")
        #expect(XMLWriter.escape("line\nnext\r\ttab") == "line\nnext&#xD;\ttab")
        #expect(XMLWriter.escape("nul\u{0}bell\u{7}") == "nul\u{FFFD}bell\u{FFFD}")
        #expect(XMLWriter.escape("日本 😀") == "日本 😀")
    }

    @Test("an action's document: Response, Result, ResponseMetadata/RequestId, SNS namespace")
    func document() {
        let response = XMLResponse { xml in
            xml.members("Topics", ["arn:1", "arn:<2>"]) { xml, arn in xml.element("TopicArn", arn) }
            xml.element("NextToken", ifPresent: nil)
        }
        let text = String(decoding: response.document(action: "ListTopics", requestID: "rid-1"), as: UTF8.self)
        #expect(text == #"<ListTopicsResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/"><ListTopicsResult>"#
            + "<Topics><member><TopicArn>arn:1</TopicArn></member><member><TopicArn>arn:&lt;2&gt;</TopicArn></member></Topics>"
            + "</ListTopicsResult><ResponseMetadata><RequestId>rid-1</RequestId></ResponseMetadata></ListTopicsResponse>")
    }

    @Test("actions without a result, maps and string lists")
    func shapes() {
        let empty = String(decoding: XMLResponse.empty.document(action: "DeleteTopic", requestID: "r"), as: UTF8.self)
        #expect(empty == #"<DeleteTopicResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/"><ResponseMetadata><RequestId>r</RequestId></ResponseMetadata></DeleteTopicResponse>"#)
        let tagged = String(decoding: XMLResponse.empty.document(action: "TagResource", requestID: "r"), as: UTF8.self)
        #expect(tagged == #"<TagResourceResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/"><TagResourceResult></TagResourceResult><ResponseMetadata><RequestId>r</RequestId></ResponseMetadata></TagResourceResponse>"#)
        var xml = XMLWriter()
        xml.entries("Attributes", ["b": "2", "a": "1&"])
        xml.stringMembers("Keys", ["x", "y"])
        xml.element("Enabled", true)
        xml.element("Count", 3)
        #expect(String(decoding: xml.bytes, as: UTF8.self) == "<Attributes><entry><key>a</key><value>1&amp;</value></entry>"
            + "<entry><key>b</key><value>2</value></entry></Attributes><Keys><member>x</member><member>y</member></Keys>"
            + "<Enabled>true</Enabled><Count>3</Count>")
    }

    @Test("ErrorResponse shape, fault type and status per code")
    func errors() {
        let response = SNSError.notFound("Topic does not exist").response(requestID: "rid")
        #expect(response.status == 404)
        #expect(response.headers["Content-Type"] == "text/xml")
        #expect(String(decoding: response.body, as: UTF8.self)
            == #"<ErrorResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/"><Error><Type>Sender</Type><Code>NotFound</Code>"#
            + "<Message>Topic does not exist</Message></Error><RequestId>rid</RequestId></ErrorResponse>")
        let statuses: [(SNSError, String, Int, SNSError.Fault)] = [
            (.invalidParameter("Token"), "InvalidParameter", 400, .sender),
            (.endpointDisabled(), "EndpointDisabled", 400, .sender),
            (.platformApplicationDisabled(), "PlatformApplicationDisabled", 400, .sender),
            (.authorizationError("no"), "AuthorizationError", 403, .sender),
            (.invalidClientTokenId, "InvalidClientTokenId", 403, .sender),
            (.signatureDoesNotMatch(), "SignatureDoesNotMatch", 403, .sender),
            (.missingAuthenticationToken, "MissingAuthenticationToken", 403, .sender),
            (.throttled(), "Throttled", 429, .sender),
            (.throttling(), "Throttling", 400, .sender),
            (.internalError(), "InternalError", 500, .receiver),
            (.invalidAction("Nope"), "InvalidAction", 400, .sender),
            (.missingParameter("Name"), "ValidationError", 400, .sender),
        ]
        for (error, code, status, fault) in statuses {
            #expect(error.code == code)
            #expect(error.status == status)
            #expect(error.fault == fault)
            let body = String(decoding: error.response(requestID: "x").body, as: UTF8.self)
            #expect(body.contains("<Type>\(fault.rawValue)</Type><Code>\(code)</Code>"))
        }
        #expect(SNSError.invalidParameter("Token", reason: "iOS device tokens must be no more than 400 hexadecimal characters").message
            == "Invalid parameter: Token Reason: iOS device tokens must be no more than 400 hexadecimal characters")
    }
}
