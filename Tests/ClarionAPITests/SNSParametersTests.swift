import Foundation
import Testing
@testable import ClarionAPI
@testable import ClarionHTTP1

/// Bodies as botocore 1.43 serialises them for SNS (checked with botocore.serialize on this machine).
@Suite("SNS structured parameters")
struct SNSParametersTests {
    func parameters(_ body: String) throws -> SNSParameters {
        try SNSParameters(FormParameters(decoding: Array(body.utf8)))
    }

    @Test("Attributes.entry.N.key/value")
    func stringMap() throws {
        let p = try parameters("Action=CreatePlatformEndpoint&Version=2010-03-31&PlatformApplicationArn=x&Token=t"
            + "&Attributes.entry.1.key=CustomUserData&Attributes.entry.1.value=u%26%3C%3E&Attributes.entry.2.key=Enabled"
            + "&Attributes.entry.2.value=true")
        #expect(try p.stringMap("Attributes") == ["CustomUserData": "u&<>", "Enabled": "true"])
        #expect(try p.stringMap("Tags") == [:])
    }

    @Test("map entries: gaps are fine, order by N, a missing value or repeated key is InvalidParameter")
    func stringMapEdges() throws {
        let gaps = try parameters("Attributes.entry.10.key=b&Attributes.entry.10.value=2&Attributes.entry.2.key=a&Attributes.entry.2.value=1")
        #expect(try gaps.stringMap("Attributes") == ["a": "1", "b": "2"])
        let noValue = try parameters("Attributes.entry.1.key=a")
        #expect(throws: SNSError.invalidParameter("Attributes", reason: "The entry for 'a' has no value.")) {
            try noValue.stringMap("Attributes")
        }
        let repeated = try parameters("Attributes.entry.1.key=a&Attributes.entry.1.value=1&Attributes.entry.2.key=a&Attributes.entry.2.value=2")
        #expect(throws: SNSError.self) { try repeated.stringMap("Attributes") }
        for bad in ["Attributes.entry.0.key=a", "Attributes.entry.x.key=a", "Attributes.entry.01.key=a", "Attributes.entry.1=a"] {
            let p = try parameters(bad)
            #expect(throws: SNSError.self, "\(bad)") { try p.stringMap("Attributes") }
        }
    }

    @Test("MessageAttributes: String, Number, Binary (base64), custom type suffix")
    func messageAttributes() throws {
        let p = try parameters("MessageAttributes.entry.1.Name=AWS.SNS.MOBILE.APNS.PUSH_TYPE"
            + "&MessageAttributes.entry.1.Value.DataType=String&MessageAttributes.entry.1.Value.StringValue=background"
            + "&MessageAttributes.entry.2.Name=n&MessageAttributes.entry.2.Value.DataType=Number.int"
            + "&MessageAttributes.entry.2.Value.StringValue=5"
            + "&MessageAttributes.entry.3.Name=b&MessageAttributes.entry.3.Value.DataType=Binary"
            + "&MessageAttributes.entry.3.Value.BinaryValue=AAH%2F")
        let attributes = try p.messageAttributes()
        #expect(attributes["AWS.SNS.MOBILE.APNS.PUSH_TYPE"] == SNSMessageAttribute(dataType: "String", stringValue: "background"))
        #expect(attributes["n"] == SNSMessageAttribute(dataType: "Number.int", stringValue: "5"))
        #expect(attributes["b"] == SNSMessageAttribute(dataType: "Binary", binaryValue: [0x00, 0x01, 0xff]))
    }

    @Test("MessageAttributes errors are ParameterValueInvalid with SNS's wording")
    func messageAttributeErrors() throws {
        let noType = try parameters("MessageAttributes.entry.1.Name=a&MessageAttributes.entry.1.Value.StringValue=x")
        #expect(throws: SNSError.parameterValueInvalid("The message attribute 'a' must contain non-empty message attribute type.")) {
            try noType.messageAttributes()
        }
        let noValue = try parameters("MessageAttributes.entry.1.Name=a&MessageAttributes.entry.1.Value.DataType=String")
        #expect(throws: SNSError.parameterValueInvalid("The message attribute 'a' must contain non-empty message attribute value for message attribute type 'String'.")) {
            try noValue.messageAttributes()
        }
        for body in [
            "MessageAttributes.entry.1.Name=a&MessageAttributes.entry.1.Value.DataType=Blob&MessageAttributes.entry.1.Value.StringValue=x",
            "MessageAttributes.entry.1.Name=a&MessageAttributes.entry.1.Value.DataType=Binary&MessageAttributes.entry.1.Value.BinaryValue=%21%21",
            "MessageAttributes.entry.1.Name=.a&MessageAttributes.entry.1.Value.DataType=String&MessageAttributes.entry.1.Value.StringValue=x",
            "MessageAttributes.entry.1.Name=a..b&MessageAttributes.entry.1.Value.DataType=String&MessageAttributes.entry.1.Value.StringValue=x",
            "MessageAttributes.entry.1.Name=a%20b&MessageAttributes.entry.1.Value.DataType=String&MessageAttributes.entry.1.Value.StringValue=x",
            "MessageAttributes.entry.1.Name=a&MessageAttributes.entry.1.Value.DataType=String&MessageAttributes.entry.1.Value.StringValue=x"
                + "&MessageAttributes.entry.2.Name=a&MessageAttributes.entry.2.Value.DataType=String&MessageAttributes.entry.2.Value.StringValue=y",
        ] {
            let p = try parameters(body)
            do {
                _ = try p.messageAttributes()
                Issue.record("accepted \(body)")
            } catch {
                #expect(error.code == "ParameterValueInvalid")
                #expect(error.status == 400)
            }
        }
    }

    @Test("SNS message attribute rules: Number is a number of <= 38 digits in 10^-128...10^126, String.Array a JSON array of scalars, AWS./Amazon. names reserved, at most 100 attributes")
    func messageAttributeValueRules() throws {
        func attribute(_ name: String, _ type: String, _ value: String) -> String {
            "MessageAttributes.entry.1.Name=\(name)&MessageAttributes.entry.1.Value.DataType=\(type)"
                + "&MessageAttributes.entry.1.Value.StringValue=\(value)"
        }
        for accepted in [attribute("n", "Number", "-12.5e3"), attribute("n", "Number", "0"),
                         attribute("n", "Number.float", "1e126"), attribute("n", "Number", "1e-128"),
                         attribute("n", "Number", String(repeating: "9", count: 38) + "000"),
                         attribute("a", "String.Array", "%5B%22x%22%2C1%2Ctrue%2Cnull%5D"),
                         attribute("AWS.SNS.MOBILE.APNS.PRIORITY", "String", "10")] {
            _ = try parameters(accepted).messageAttributes()
        }
        for refused in [attribute("n", "Number", "twelve"), attribute("n", "Number", "1e127"),
                        attribute("n", "Number", "1e-129"), attribute("n", "Number", "1.2.3"),
                        attribute("n", "Number", String(repeating: "1", count: 39)),
                        attribute("a", "String.Array", "x"), attribute("a", "String.Array", "%5B%5B1%5D%5D"),
                        attribute("a", "String.Array", "%7B%7D"),
                        attribute("AWS.custom", "String", "x"), attribute("amazon.custom", "String", "x")] {
            #expect(throws: SNSError.self, "accepted \(refused)") { _ = try parameters(refused).messageAttributes() }
        }
        // The number of attributes: SNS's 256 KiB is the only documented bound; Clarion caps at 100 per message.
        let many = (1...101).map { "MessageAttributes.entry.\($0).Name=a\($0)&MessageAttributes.entry.\($0).Value.DataType=String"
            + "&MessageAttributes.entry.\($0).Value.StringValue=x" }
        #expect(throws: SNSError.parameterValueInvalid("Number of message attributes [101] exceeds the allowed maximum [100].")) {
            _ = try parameters(many.joined(separator: "&")).messageAttributes()
        }
        _ = try parameters(many.dropLast().joined(separator: "&")).messageAttributes()
    }

    @Test("a NUL byte in any parameter is InvalidParameter naming it (C strings and PostgreSQL text end at NUL)")
    func nulRefused() throws {
        for body in ["Token=tok%00nul", "Action=Publish&Message=a%00b", "Attributes.entry.1.value=x%00"] {
            do {
                _ = try parameters(body)
                Issue.record("accepted \(body)")
            } catch let error as SNSError {
                #expect(error.code == "InvalidParameter")
                #expect(error.message.contains("NUL"), "\(error.message)")
            }
        }
        #expect(throws: SNSError.self) { _ = try parameters("a%00b=x") }
    }

    @Test("Tags.member.N.Key/Value (empty value allowed), TagKeys.member.N")
    func tagsAndLists() throws {
        let p = try parameters("ResourceArn=x&Tags.member.2.Key=b&Tags.member.2.Value=&Tags.member.1.Key=a&Tags.member.1.Value=1"
            + "&TagKeys.member.1=k1&TagKeys.member.3=k3&TagKeys.member.2=k2")
        #expect(try p.tags() == [SNSTag(key: "a", value: "1"), SNSTag(key: "b", value: "")])
        #expect(try p.stringList("TagKeys") == ["k1", "k2", "k3"])
        let noValue = try parameters("Tags.member.1.Key=a")
        #expect(throws: SNSError.self) { try noValue.tags() }
        let badIndex = try parameters("TagKeys.member.one=k")
        #expect(throws: SNSError.self) { try badIndex.stringList("TagKeys") }
    }

    @Test("PublishBatchRequestEntries.member.N.* as scoped entries")
    func structList() throws {
        let p = try parameters("Action=PublishBatch&TopicArn=arn&PublishBatchRequestEntries.member.1.Id=a"
            + "&PublishBatchRequestEntries.member.1.Message=hi"
            + "&PublishBatchRequestEntries.member.1.MessageAttributes.entry.1.Name=k"
            + "&PublishBatchRequestEntries.member.1.MessageAttributes.entry.1.Value.DataType=Binary"
            + "&PublishBatchRequestEntries.member.1.MessageAttributes.entry.1.Value.BinaryValue=AAE%3D"
            + "&PublishBatchRequestEntries.member.2.Id=b&PublishBatchRequestEntries.member.2.Message=yo+there")
        let entries = try p.structList("PublishBatchRequestEntries")
        #expect(entries.count == 2)
        #expect(entries[0]["Id"] == "a")
        #expect(entries[0]["Message"] == "hi")
        #expect(try entries[0].messageAttributes()["k"] == SNSMessageAttribute(dataType: "Binary", binaryValue: [0, 1]))
        #expect(entries[1]["Id"] == "b")
        #expect(try entries[1].required("Message") == "yo there")
        #expect(try entries[1].messageAttributes().isEmpty)
        #expect(entries[0]["TopicArn"] == nil)
        #expect(entries[1].names == ["Id", "Message"])
        #expect(p.payloadBytes == "PublishBatch".utf8.count + 3 + 1 + 2 + 1 + 6 + 4 + 1 + 8)
    }

    @Test("a name given twice is InvalidParameter; a missing required one is ValidationError")
    func duplicatesAndRequired() throws {
        #expect(throws: SNSError.invalidParameter("Name", reason: "The parameter is specified more than once.")) {
            try parameters("Name=a&Name=b")
        }
        let p = try parameters("Action=CreateTopic")
        #expect(throws: SNSError(code: "ValidationError",
                                 message: "1 validation error detected: Value null at 'topicArn' failed to satisfy constraint: Member must not be null",
                                 status: 400)) {
            try p.required("TopicArn")
        }
        let flags = try parameters("a=TRUE&b=false&c=yes&n=12&m=x")
        #expect(try flags.bool("a") == true)
        #expect(try flags.bool("b") == false)
        #expect(throws: SNSError.self) { try flags.bool("c") }
        #expect(try flags.bool("zz") == nil)
        #expect(try flags.int("n") == 12)
        #expect(throws: SNSError.self) { try flags.int("m") }
    }

    @Test("base64 decoding", arguments: [("", [UInt8]()), ("AA==", [0]), ("AAE=", [0, 1]), ("AAH/", [0, 1, 255]), ("aGVsbG8=", Array("hello".utf8))])
    func base64(_ text: String, _ bytes: [UInt8]) {
        #expect(Base64.decode(text) == bytes)
    }

    @Test("invalid base64", arguments: ["A", "AA=", "A=AA", "AA==A", "AA!A"])
    func invalidBase64(_ text: String) {
        #expect(Base64.decode(text) == nil)
    }
}
