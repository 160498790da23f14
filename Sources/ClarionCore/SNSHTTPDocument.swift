import Foundation

/// The JSON document SNS POSTs to an HTTP/S subscription, and the string its signature covers
/// (docs/providers.md C.11.2, C.11.3). Pure: the caller signs `stringToSign` and sets
/// `signature`.
///
/// The string to sign is `name\nvalue\n` for each signed field in byte order of the names (SNS's documented
/// order): a Notification signs Message, MessageId, Subject (only when present), Timestamp, TopicArn, Type; a
/// SubscriptionConfirmation signs Message, MessageId, SubscribeURL, Timestamp, Token, TopicArn, Type.
public struct SNSHTTPDocument: Sendable, Equatable {
    /// Where a node serves what the documents link to, below its public base URL (the API's HTTP/S subscription
    /// routes answer them; the sender writes them into each document): the SubscribeURL, the UnsubscribeURL and the
    /// SigningCertURL.
    public static let confirmPath = "/sns/subscriptions/confirm"
    public static let unsubscribePath = "/sns/subscriptions/unsubscribe"
    public static let certificatePath = "/sns/signing-certificate.pem"

    public enum MessageType: String, Sendable {
        case notification = "Notification"
        case subscriptionConfirmation = "SubscriptionConfirmation"
    }

    public var type: MessageType
    public var messageID: String
    public var topicARN: String
    public var subject: String?
    public var message: String
    /// SNS's format: `2012-04-26T20:45:04.751Z`.
    public var timestamp: String
    /// "1" (SHA1withRSA) or "2" (SHA256withRSA).
    public var signatureVersion: String
    public var signature = ""
    public var signingCertURL: String
    /// Notification only.
    public var unsubscribeURL: String?
    /// Notification only: `{"name": {"Type": ..., "Value": ...}}`, omitted when empty.
    public var messageAttributes: [(name: String, type: String, value: String)] = []
    /// SubscriptionConfirmation only.
    public var token: String?
    public var subscribeURL: String?

    public init(type: MessageType, messageID: String, topicARN: String, subject: String?, message: String,
                timestamp: String, signatureVersion: String, signingCertURL: String) {
        self.type = type
        self.messageID = messageID
        self.topicARN = topicARN
        self.subject = subject
        self.message = message
        self.timestamp = timestamp
        self.signatureVersion = signatureVersion
        self.signingCertURL = signingCertURL
    }

    public static func == (a: SNSHTTPDocument, b: SNSHTTPDocument) -> Bool { a.jsonText == b.jsonText }

    /// The bytes the signature covers.
    public var stringToSign: String {
        var fields: [(String, String)] = [("Message", message), ("MessageId", messageID)]
        switch type {
        case .notification:
            if let subject { fields.append(("Subject", subject)) }
            fields += [("Timestamp", timestamp), ("TopicArn", topicARN), ("Type", type.rawValue)]
        case .subscriptionConfirmation:
            fields += [("SubscribeURL", subscribeURL ?? ""), ("Timestamp", timestamp), ("Token", token ?? ""),
                       ("TopicArn", topicARN), ("Type", type.rawValue)]
        }
        return fields.map { "\($0.0)\n\($0.1)\n" }.joined()
    }

    /// The body, members in the order SNS writes them.
    public var jsonText: String {
        var object = JSONObject([("Type", .string(type.rawValue)), ("MessageId", .string(messageID))])
        switch type {
        case .notification:
            object["TopicArn"] = .string(topicARN)
            if let subject { object["Subject"] = .string(subject) }
            object["Message"] = .string(message)
            object["Timestamp"] = .string(timestamp)
            object["SignatureVersion"] = .string(signatureVersion)
            object["Signature"] = .string(signature)
            object["SigningCertURL"] = .string(signingCertURL)
            object["UnsubscribeURL"] = .string(unsubscribeURL ?? "")
            if !messageAttributes.isEmpty {
                var attributes = JSONObject()
                for attribute in messageAttributes {
                    attributes[attribute.name] = .object(JSONObject([("Type", .string(attribute.type)),
                                                                     ("Value", .string(attribute.value))]))
                }
                object["MessageAttributes"] = .object(attributes)
            }
        case .subscriptionConfirmation:
            object["Token"] = .string(token ?? "")
            object["TopicArn"] = .string(topicARN)
            object["Message"] = .string(message)
            object["SubscribeURL"] = .string(subscribeURL ?? "")
            object["Timestamp"] = .string(timestamp)
            object["SignatureVersion"] = .string(signatureVersion)
            object["Signature"] = .string(signature)
            object["SigningCertURL"] = .string(signingCertURL)
        }
        return object.jsonText
    }

    /// SNS's timestamp: UTC, milliseconds, `Z`.
    public static func timestamp(_ date: Date) -> String {
        let milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        let (seconds, fraction) = (milliseconds >= 0 ? milliseconds / 1000 : (milliseconds - 999) / 1000,
                                   ((milliseconds % 1000) + 1000) % 1000)
        var out: [UInt8] = []
        UTCTime.appendRFC3339Milliseconds(seconds, milliseconds: Int(fraction), to: &out)
        return String(decoding: out, as: UTF8.self)
    }
}
