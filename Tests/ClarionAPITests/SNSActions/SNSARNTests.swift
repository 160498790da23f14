import ClarionCore
import Foundation
import Testing
@testable import ClarionAPI

@Suite("SNS ARN forms and token rules")
struct SNSARNTests {
    let id = UUID(uuidString: "0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0")!

    @Test("the four ARN forms round-trip: app/<PLATFORM>/<name>, endpoint/<PLATFORM>/<app>/<uuid>, <topic>, <topic>:<uuid>")
    func roundTrip() {
        let forms = [
            SNSARN.application("us-east-1", "123456789012", platform: "GCM", name: "news.app_1"),
            SNSARN.endpoint("us-east-1", "123456789012", platform: "APNS", application: "ios", id: id),
            SNSARN.topic("eu-west-1", "123456789012", name: "breaking-news"),
            SNSARN.subscription("eu-west-1", "123456789012", topic: "breaking-news", id: id),
        ]
        #expect(forms == [
            "arn:aws:sns:us-east-1:123456789012:app/GCM/news.app_1",
            "arn:aws:sns:us-east-1:123456789012:endpoint/APNS/ios/0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0",
            "arn:aws:sns:eu-west-1:123456789012:breaking-news",
            "arn:aws:sns:eu-west-1:123456789012:breaking-news:0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0",
        ])
        for text in forms { #expect(SNSARN.parse(text)?.text == text) }
        #expect(SNSARN.parse(forms[1])?.resource == .endpoint(platform: "APNS", application: "ios", id: id))
        #expect(SNSARN.parse(forms[3])?.resource == .subscription(topic: "breaking-news", id: id))
        // Written byte by byte into one String: multi-byte text and long names keep their length.
        #expect(SNSARN.topic("us-east-1", "123456789012", name: "caf\u{e9}-\u{2603}") == "arn:aws:sns:us-east-1:123456789012:caf\u{e9}-\u{2603}")
        let long = String(repeating: "a", count: 256)
        #expect(SNSARN.application("us-east-1", "123456789012", platform: "APNS_SANDBOX", name: long)
                == "arn:aws:sns:us-east-1:123456789012:app/APNS_SANDBOX/" + long)
        #expect(id.lowercasedText == "0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0")
    }

    /// botocore `data/partitions.json`: `cn-*` is `aws-cn`, `us-gov-*` is `aws-us-gov`, the ISO regions their own.
    @Test("an ARN carries its region's partition: written so, and parsed only so")
    func partitions() throws {
        let cases: [(String, AWSPartition, String)] = [
            ("us-east-1", .aws, "aws"), ("eu-central-2", .aws, "aws"), ("cn-north-1", .china, "aws-cn"),
            ("cn-northwest-1", .china, "aws-cn"), ("us-gov-west-1", .govCloud, "aws-us-gov"),
            ("us-gov-east-1", .govCloud, "aws-us-gov"), ("us-iso-east-1", .iso, "aws-iso"), ("us-isob-east-1", .isoB, "aws-iso-b"),
            ("eu-isoe-west-1", .isoE, "aws-iso-e"), ("us-isof-south-1", .isoF, "aws-iso-f"),
        ]
        for (region, partition, name) in cases {
            #expect(AWSPartition(region: region) == partition && partition.rawValue == name, "\(region)")
            let forms = [
                SNSARN.application(region, "123456789012", platform: "GCM", name: "chat"),
                SNSARN.endpoint(region, "123456789012", platform: "GCM", application: "chat", id: id),
                SNSARN.topic(region, "123456789012", name: "news"),
                SNSARN.subscription(region, "123456789012", topic: "news", id: id),
            ]
            for text in forms {
                #expect(text.hasPrefix("arn:\(name):sns:\(region):123456789012:"), "\(text)")
                let parsed = try #require(SNSARN.parse(text))
                #expect(parsed.text == text && parsed.region == region && parsed.partition == partition)
            }
        }
        #expect(SNSARN.topic("cn-north-1", "123456789012", name: "news") == "arn:aws-cn:sns:cn-north-1:123456789012:news")
        #expect(AWSPartition.china.rootPrincipal(account: "123456789012") == "arn:aws-cn:iam::123456789012:root")
        // Another partition's name for the region is no ARN SNS writes; without the check it parses (for the error).
        for wrong in ["arn:aws:sns:cn-north-1:123456789012:news", "arn:aws-cn:sns:us-east-1:123456789012:news",
                      "arn:aws-us-gov:sns:cn-north-1:123456789012:news", "arn:aws-cn:sns:us-gov-west-1:123456789012:news"] {
            #expect(SNSARN.parse(wrong) == nil, "\(wrong)")
            #expect(SNSARN.parse(wrong, checkingPartition: false)?.resource == .topic(name: "news"), "\(wrong)")
        }
    }

    @Test("malformed ARNs are refused", arguments: [
        "", "arn:aws:sns:us-east-1:123456789012", "arn:aws:sqs:us-east-1:123456789012:q", "arn:aws:sns::123456789012:t",
        "arn:aws:sns:us-east-1:123456789012:app/GCM", "arn:aws:sns:us-east-1:123456789012:endpoint/GCM/app/not-a-uuid",
        "arn:aws:sns:us-east-1:123456789012:topic:not-a-uuid", "arn:aws:sns:us-east-1:123456789012:a/b",
        "arn:aws:sns:us-east-1:123456789012:t:0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0:extra",
    ])
    func malformed(_ text: String) {
        #expect(SNSARN.parse(text) == nil)
    }

    @Test("SNS C.8 tokens: APNs tokens are hex, at most 400 characters, returned lower-case; others up to 4096 bytes")
    func tokens() throws {
        #expect(try EndpointActions.normalizedToken("ABCDEF01", platform: "APNS") == "abcdef01")
        #expect(try EndpointActions.normalizedToken(" fcm:token-1 ", platform: "GCM") == "fcm:token-1")
        #expect(throws: SNSError.self) { try EndpointActions.normalizedToken("xyz", platform: "APNS_SANDBOX") }
        #expect(throws: SNSError.self) { try EndpointActions.normalizedToken(String(repeating: "a", count: 401), platform: "APNS") }
        #expect(throws: SNSError.self) { try EndpointActions.normalizedToken("", platform: "GCM") }
        #expect(throws: SNSError.self) { try EndpointActions.normalizedToken(String(repeating: "a", count: 4097), platform: "ADM") }
        #expect(throws: SNSError.self) { try EndpointActions.checkCustomUserData(String(repeating: "é", count: 1025)) }
        try EndpointActions.checkCustomUserData(String(repeating: "é", count: 1024))
    }

    @Test("message attributes are stored as JSON with BinaryValue in base64")
    func attributesJSON() {
        let json = PublishActions.attributesJSON(["b": SNSMessageAttribute(dataType: "Binary", binaryValue: [0, 1, 255]),
                                                  "s": SNSMessageAttribute(dataType: "String", stringValue: "v\"x")])
        #expect(json == #"{"b":{"BinaryValue":"AAH\/","DataType":"Binary"},"s":{"DataType":"String","StringValue":"v\"x"}}"#)
        #expect(PublishActions.attributesJSON([:]) == "{}")
    }
}
