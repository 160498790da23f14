import Foundation
import Testing
@testable import ClarionCore

/// The documents SNS POSTs to HTTP/S subscribers and the string their signature covers (docs/providers.md C.11.2,
/// C.11.3; sources: "Parsing message formats", https://docs.aws.amazon.com/sns/latest/dg/sns-message-and-json-formats.html,
/// and "Verifying the signatures of Amazon SNS messages",
/// https://docs.aws.amazon.com/sns/latest/dg/sns-verify-signature-of-message.html).
@Suite("SNS HTTP/S documents")
struct SNSHTTPDocumentTests {
    func notification(subject: String?) -> SNSHTTPDocument {
        var d = SNSHTTPDocument(type: .notification, messageID: "22b80b92-fdea-4c2c-8f9d-bdfb0c7bf324",
                                topicARN: "arn:aws:sns:us-west-2:123456789012:MyTopic", subject: subject, message: "Hello\nworld",
                                timestamp: "2012-05-02T00:54:06.655Z", signatureVersion: "1", signingCertURL: "https://c/cert.pem")
        d.unsubscribeURL = "https://c/unsub"
        return d
    }

    @Test("A Notification signs Message, MessageId, Subject, Timestamp, TopicArn, Type as name\\nvalue\\n, in that order (C.11.3)")
    func notificationStringToSign() {
        #expect(notification(subject: "My First Message").stringToSign == """
            Message\nHello\nworld\nMessageId\n22b80b92-fdea-4c2c-8f9d-bdfb0c7bf324\nSubject\nMy First Message\n\
            Timestamp\n2012-05-02T00:54:06.655Z\nTopicArn\narn:aws:sns:us-west-2:123456789012:MyTopic\nType\nNotification\n
            """)
    }

    @Test("Subject is signed and written only when the publish had one (C.11.2, C.11.3)")
    func noSubject() throws {
        let document = notification(subject: nil)
        #expect(!document.stringToSign.contains("Subject"))
        let parsed = try JSONValue.parse(document.jsonText).objectValue!
        #expect(parsed.keys == ["Type", "MessageId", "TopicArn", "Message", "Timestamp", "SignatureVersion", "Signature",
                                "SigningCertURL", "UnsubscribeURL"])
        #expect(parsed["Message"]?.stringValue == "Hello\nworld")
    }

    @Test("A SubscriptionConfirmation signs Message, MessageId, SubscribeURL, Timestamp, Token, TopicArn, Type (C.11.3)")
    func confirmation() throws {
        var d = SNSHTTPDocument(type: .subscriptionConfirmation, messageID: "m", topicARN: "arn:t", subject: nil,
                                message: "You have chosen", timestamp: "2012-04-26T20:45:04.751Z", signatureVersion: "2",
                                signingCertURL: "https://c/cert.pem")
        d.token = "tok"
        d.subscribeURL = "https://c/confirm?Token=tok"
        #expect(d.stringToSign == "Message\nYou have chosen\nMessageId\nm\nSubscribeURL\nhttps://c/confirm?Token=tok\nTimestamp\n2012-04-26T20:45:04.751Z\nToken\ntok\nTopicArn\narn:t\nType\nSubscriptionConfirmation\n")
        let parsed = try JSONValue.parse(d.jsonText).objectValue!
        #expect(parsed.keys == ["Type", "MessageId", "Token", "TopicArn", "Message", "SubscribeURL", "Timestamp",
                                "SignatureVersion", "Signature", "SigningCertURL"])
    }

    @Test("Timestamps are UTC with milliseconds and Z, as SNS writes them (C.11.2)", arguments: [
        (0.0, "1970-01-01T00:00:00.000Z"), (1_335_991_246.625, "2012-05-02T20:40:46.625Z"),
        (951_782_400.5, "2000-02-29T00:00:00.500Z"), (4_102_444_799.75, "2099-12-31T23:59:59.750Z"),
    ])
    func timestamp(_ seconds: Double, _ expected: String) {
        #expect(SNSHTTPDocument.timestamp(Date(timeIntervalSince1970: seconds)) == expected)
    }
}
