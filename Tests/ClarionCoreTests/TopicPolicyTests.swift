import ClarionCore
import Testing

/// `TopicPolicy`: the subset of SNS topic access policies Clarion evaluates (Amazon SNS developer guide, "Using
/// identity-based policies with Amazon SNS" / "Example cases for Amazon SNS access control"; IAM policy evaluation
/// logic: an explicit Deny overrides any Allow, and without an Allow the request is denied).
@Suite struct TopicPolicyTests {
    static let arn = "arn:aws:sns:us-east-1:111111111111:orders"
    static let owner = "111111111111"
    static let other = "222222222222"

    @Test("SNS's default policy grants other accounts nothing: its AWS:SourceOwner condition names the owner")
    func defaultPolicy() throws {
        let policy = try TopicPolicy.parse(TopicPolicy.defaultPolicy(topicARN: Self.arn, owner: Self.owner), topicARN: Self.arn)
        for action in ["Publish", "Subscribe", "GetTopicAttributes"] {
            #expect(!policy.allows(account: Self.other, action: action))
            #expect(policy.allows(account: Self.owner, action: action))
        }
    }

    @Test("AddPermission (SNS API reference): a statement labelled Label allowing arn:aws:iam::<AWSAccountId>:root the SNS:<ActionName>s")
    func addAndRemovePermission() throws {
        let base = TopicPolicy.defaultPolicy(topicARN: Self.arn, owner: Self.owner)
        let added = try TopicPolicy.adding(to: base, topicARN: Self.arn, label: "let-b-publish", accounts: [Self.other], actions: ["Publish"])
        #expect(added.contains(#""Principal":{"AWS":"arn:aws:iam::222222222222:root"}"#))
        #expect(added.contains(#""Action":"SNS:Publish""#))
        let policy = try TopicPolicy.parse(added, topicARN: Self.arn)
        #expect(policy.statements.count == 2)
        #expect(policy.allows(account: Self.other, action: "Publish"))
        #expect(!policy.allows(account: Self.other, action: "Subscribe"), "only the actions named")
        #expect(!policy.allows(account: "333333333333", action: "Publish"), "only the accounts named")
        // The label is the statement's Sid and must be unique within the policy.
        #expect(throws: TopicPolicyError("Statement already exists")) {
            try TopicPolicy.adding(to: added, topicARN: Self.arn, label: "let-b-publish", accounts: [Self.other], actions: ["Subscribe"])
        }
        let removed = try #require(TopicPolicy.removing(from: added, label: "let-b-publish"))
        #expect(!(try TopicPolicy.parse(removed, topicARN: Self.arn)).allows(account: Self.other, action: "Publish"))
        #expect(TopicPolicy.removing(from: removed, label: "let-b-publish") == nil, "no such label")
    }

    @Test("Principal \"*\" and account ids in every spelling; SNS:*, * and case-insensitive action names")
    func principalsAndActions() throws {
        let everyone = #"{"Statement":{"Effect":"Allow","Principal":"*","Action":"sns:publish","Resource":"*"}}"#
        #expect(try TopicPolicy.parse(everyone, topicARN: Self.arn).allows(account: Self.other, action: "Publish"))
        let list = #"{"Statement":[{"Effect":"Allow","Principal":{"AWS":["222222222222","arn:aws:iam::333333333333:root"]},"Action":"SNS:*","Resource":"\#(Self.arn)"}]}"#
        let policy = try TopicPolicy.parse(list, topicARN: Self.arn)
        #expect(policy.allows(account: "222222222222", action: "Subscribe"))
        #expect(policy.allows(account: "333333333333", action: "GetTopicAttributes"))
        #expect(!policy.allows(account: "444444444444", action: "Publish"))
    }

    @Test("a topic in cn-north-1 or us-gov-west-1: AddPermission writes the root principal of its partition, and any partition's parses")
    func partitions() throws {
        for (region, partition) in [("cn-north-1", "aws-cn"), ("us-gov-west-1", "aws-us-gov")] {
            let arn = "arn:\(partition):sns:\(region):111111111111:orders"
            let added = try TopicPolicy.adding(to: TopicPolicy.defaultPolicy(topicARN: arn, owner: Self.owner), topicARN: arn,
                                               label: "let-b", accounts: [Self.other], actions: ["Publish"])
            #expect(added.contains(#""Principal":{"AWS":"arn:\#(partition):iam::222222222222:root"}"#), "\(added)")
            #expect(try TopicPolicy.parse(added, topicARN: arn).allows(account: Self.other, action: "Publish"))
        }
        let text = #"{"Statement":{"Effect":"Allow","Principal":{"AWS":["arn:aws-cn:iam::222222222222:root","arn:aws-us-gov:iam::333333333333:root"]},"Action":"SNS:Publish","Resource":"*"}}"#
        let policy = try TopicPolicy.parse(text, topicARN: Self.arn)
        #expect(policy.allows(account: "222222222222", action: "Publish") && policy.allows(account: "333333333333", action: "Publish"))
        #expect(throws: TopicPolicyError.self) {
            try TopicPolicy.parse(#"{"Statement":{"Effect":"Allow","Principal":{"AWS":"arn:aws-mars:iam::222222222222:root"},"Action":"*","Resource":"*"}}"#,
                                  topicARN: Self.arn)
        }
    }

    @Test("IAM evaluation: an explicit Deny overrides an Allow")
    func denyWins() throws {
        let text = #"{"Statement":[{"Effect":"Allow","Principal":"*","Action":"*","Resource":"*"},{"Sid":"no-b","Effect":"Deny","Principal":{"AWS":"222222222222"},"Action":"SNS:Publish","Resource":"*"}]}"#
        let policy = try TopicPolicy.parse(text, topicARN: Self.arn)
        #expect(!policy.allows(account: "222222222222", action: "Publish"))
        #expect(policy.allows(account: "222222222222", action: "Subscribe"))
        #expect(policy.allows(account: "333333333333", action: "Publish"))
    }

    @Test("What Clarion does not evaluate is refused, naming it", arguments: [
        (#"[]"#, "the policy must be a JSON object"),
        (#"{"Statement":{"Effect":"Allow","NotPrincipal":"*","Action":"*","Resource":"*"}}"#, "unsupported statement element NotPrincipal"),
        (#"{"Statement":{"Effect":"Allow","Principal":{"Service":"s3.amazonaws.com"},"Action":"*","Resource":"*"}}"#, "unsupported principal type Service: name accounts under AWS"),
        (#"{"Statement":{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::222222222222:user/bob"},"Action":"*","Resource":"*"}}"#, "unsupported principal arn:aws:iam::222222222222:user/bob: name an account id or arn:<partition>:iam::<account id>:root (Clarion has no IAM users or roles)"),
        (#"{"Statement":{"Effect":"Allow","Principal":"*","Action":"sqs:SendMessage","Resource":"*"}}"#, "unsupported action sqs:SendMessage: name SNS:<topic action> (GetTopicAttributes, SetTopicAttributes, AddPermission, RemovePermission, DeleteTopic, Subscribe, ListSubscriptionsByTopic, Publish, Receive), SNS:* or *"),
        (#"{"Statement":{"Effect":"Allow","Principal":"*","Action":"*","Resource":"arn:aws:sns:us-east-1:111111111111:other"}}"#, "Resource must be this topic's ARN (arn:aws:sns:us-east-1:111111111111:orders), not arn:aws:sns:us-east-1:111111111111:other"),
        (#"{"Statement":{"Effect":"Allow","Principal":"*","Action":"*","Resource":"*","Condition":{"ArnLike":{"aws:SourceArn":"x"}}}}"#, "unsupported condition operator ArnLike: only StringEquals is evaluated"),
        (#"{"Statement":{"Effect":"Allow","Principal":"*","Action":"*","Resource":"*","Condition":{"StringEquals":{"aws:SourceVpc":"x"}}}}"#, "unsupported condition key aws:SourceVpc: only AWS:SourceOwner and AWS:SourceAccount are evaluated"),
        (#"{"Statement":{"Effect":"Maybe","Principal":"*","Action":"*","Resource":"*"}}"#, "Effect must be Allow or Deny"),
        (#"{"Version":"2020-01-01","Statement":[]}"#, "Version must be 2008-10-17 or 2012-10-17"),
        (#"{"Statement":[{"Sid":"a","Effect":"Allow","Principal":"*","Action":"*","Resource":"*"},{"Sid":"a","Effect":"Deny","Principal":"*","Action":"*","Resource":"*"}]}"#, "Statement ids (Sid) must be unique: a is repeated"),
    ])
    func refusals(text: String, message: String) {
        #expect(throws: TopicPolicyError(message)) { try TopicPolicy.parse(text, topicARN: Self.arn) }
    }
}
