import ClarionCore
import ClarionStore
import Foundation

/// CreateTopic, DeleteTopic, ListTopics, Get/SetTopicAttributes.
enum TopicActions {
    static let settable: Set<String> = [
        "DisplayName", "Policy", "DeliveryPolicy", "KmsMasterKeyId", "TracingConfig", "SignatureVersion",
        "ApplicationSuccessFeedbackRoleArn", "ApplicationSuccessFeedbackSampleRate", "ApplicationFailureFeedbackRoleArn",
        "DataProtectionPolicy", "ArchivePolicy",
    ]
    static let notFound = SNSError.notFound("Topic does not exist")

    static func register(_ table: inout SNSActionTable, _ context: SNSActionContext) {
        table.register("CreateTopic") { request throws(SNSError) in
            let name = try request.parameters.required("Name")
            let attributes = try request.parameters.stringMap("Attributes")
            let tags = try request.parameters.tags()
            guard !name.isEmpty, name.utf8.count <= 256, name.utf8.allSatisfy(PlatformApplicationActions.isNameByte) else {
                if name.hasSuffix(".fifo") || attributes["FifoTopic"] != nil {
                    throw SNSError.invalidParameter("Attributes", reason: "FIFO topics are not supported")
                }
                throw SNSError.invalidParameter(message: "Invalid parameter: Topic Name")
            }
            if attributes["FifoTopic"]?.lowercased() == "true" {
                throw SNSError.invalidParameter("Attributes", reason: "FIFO topics are not supported")
            }
            var stored = attributes
            stored["FifoTopic"] = nil
            try SNSAttributes.requireKnown(stored, settable)
            let arn = SNSARN.topic(request.region, request.caller.accountID, name: name)
            try validate(stored, topicARN: arn)
            try TagActions.validate(tags)
            let account = try await context.accountKey(request.caller)
            let (topic, created) = try await store { () async throws(StoreError) in
                try await context.topics.create(accountKey: account, region: request.region, name: name, attributes: stored)
            }
            // Idempotent by name; SNS refuses a second create that names different attributes.
            if !created, stored.contains(where: { topic.attributes[$0.key] != $0.value }) {
                throw SNSError.invalidParameter("Attributes", reason: "Topic already exists with different attributes")
            }
            if !tags.isEmpty {
                try await TagActions.apply(tags, arn: arn, account: account, context: context)
            }
            return XMLResponse { $0.element("TopicArn", arn) }
        }

        table.register("GetTopicAttributes") { request throws(SNSError) in
            let (topic, arn) = try await self.topic(request, context, action: "GetTopicAttributes")
            let owner = SNSARN.parse(arn)?.account ?? request.caller.accountID
            let count = try await store { () async throws(StoreError) in try await context.topics.subscriptionCount(topicKey: topic.key) }
            var attributes = topic.attributes
            attributes["TopicArn"] = arn
            attributes["Owner"] = owner
            attributes["DisplayName"] = topic.attributes["DisplayName"] ?? ""
            attributes["Policy"] = topic.attributes["Policy"] ?? TopicPolicy.defaultPolicy(topicARN: arn, owner: owner)
            attributes["SubscriptionsConfirmed"] = String(count)
            attributes["SubscriptionsPending"] = "0"
            attributes["SubscriptionsDeleted"] = "0"
            attributes["EffectiveDeliveryPolicy"] = topic.attributes["DeliveryPolicy"] ?? defaultDeliveryPolicy
            return XMLResponse { $0.entries("Attributes", attributes) }
        }

        table.register("SetTopicAttributes") { request throws(SNSError) in
            let (topic, arn) = try await self.topic(request, context)
            let name = try request.parameters.required("AttributeName")
            guard settable.contains(name) else {
                throw SNSError.invalidParameter("AttributeName", reason: "Unknown attribute name: \(name)")
            }
            let value = request.parameters["AttributeValue"].flatMap { $0.isEmpty ? nil : $0 }
            if let value { try validate([name: value], topicARN: arn) }
            _ = try await store(notFound: notFound) { () async throws(StoreError) in
                try await context.topics.setAttributes(topicKey: topic.key, [name: value])
            }
            return .empty
        }

        // AddPermission and RemovePermission (SNS API reference): TopicArn, Label, AWSAccountId.member.N and
        // ActionName.member.N are required; the statement SNS writes allows arn:<partition>:iam::<id>:root the SNS:<action>s.
        table.register("AddPermission") { request throws(SNSError) in
            let (topic, arn) = try await self.topic(request, context)
            let label = try request.parameters.required("Label")
            guard isLabel(label) else {
                throw SNSError.invalidParameter("Label", reason: "must be 1 to 80 characters of A-Z, a-z, 0-9, - and _")
            }
            let accounts = try request.parameters.stringList("AWSAccountId")
            guard !accounts.isEmpty else { throw SNSError.missingParameter("AWSAccountId") }
            for account in accounts where !TopicPolicy.isAccountID(account) {
                throw SNSError.invalidParameter("AWSAccountId", reason: "\(account) is not a 12-digit account id")
            }
            let actions = try request.parameters.stringList("ActionName")
            guard !actions.isEmpty else { throw SNSError.missingParameter("ActionName") }
            for action in actions where !TopicPolicy.topicActions.contains(action) {
                throw SNSError.invalidParameter("ActionName", reason: "\(action) is not a topic action (\(TopicPolicy.topicActions.joined(separator: ", ")))")
            }
            let owner = request.caller.accountID
            // Read and written under the topic's row lock: two AddPermissions at once both land.
            let refusal: SNSError? = try await store(notFound: notFound) { () async throws(StoreError) in
                try await context.topics.updateAttribute(topicKey: topic.key, name: "Policy") {
                    (stored: String?) -> (newValue: String?, outcome: SNSError?) in
                    let current = stored ?? TopicPolicy.defaultPolicy(topicARN: arn, owner: owner)
                    do throws(TopicPolicyError) {
                        return (try TopicPolicy.adding(to: current, topicARN: arn, label: label, accounts: accounts, actions: actions), nil)
                    } catch {
                        return (nil, SNSError.invalidParameter("Label", reason: error.message))
                    }
                }
            }
            if let refusal { throw refusal }
            return .empty
        }

        table.register("RemovePermission") { request throws(SNSError) in
            let (topic, arn) = try await self.topic(request, context)
            let label = try request.parameters.required("Label")
            let owner = request.caller.accountID
            let removed = try await store(notFound: notFound) { () async throws(StoreError) in
                try await context.topics.updateAttribute(topicKey: topic.key, name: "Policy") {
                    (stored: String?) -> (newValue: String?, outcome: Bool) in
                    let updated = TopicPolicy.removing(from: stored ?? TopicPolicy.defaultPolicy(topicARN: arn, owner: owner), label: label)
                    return (updated, updated != nil)
                }
            }
            guard removed else { throw SNSError.invalidParameter("Label", reason: "no statement with the label \(label)") }
            return .empty
        }

        table.register("DeleteTopic") { request throws(SNSError) in
            let arn = try request.arn("TopicArn")
            guard case .topic(let name) = arn.resource else { throw SNSError.invalidParameter("TopicArn") }
            let account = try await context.accountKey(request.caller)
            // SNS: deleting a topic that does not exist is not an error.
            if let topic = try? await context.topics.get(accountKey: account, region: request.region, name: name) {
                _ = try await store { () async throws(StoreError) in try await context.topics.delete(topicKey: topic.key) }
                _ = try await store { () async throws(StoreError) in try await context.tags.removeAll(resourceARN: arn.text) }
            }
            return .empty
        }

        table.register("ListTopics") { request throws(SNSError) in
            let account = try await context.accountKey(request.caller)
            let after = try request.nextToken()
            let page = try await store { () async throws(StoreError) in
                try await context.topics.list(accountKey: account, region: request.region, after: after, limit: 100)
            }
            return XMLResponse { xml in
                xml.members("Topics", page.items) { xml, topic in
                    xml.element("TopicArn", SNSARN.topic(topic.region, request.caller.accountID, name: topic.name))
                }
                xml.nextToken(page.next)
            }
        }
    }

    /// The topic named by `TopicArn` (or `parameter`), or NotFound.
    /// - Parameter action: for the actions another account may be allowed by the topic's policy (`Publish`,
    ///   `Subscribe`, `GetTopicAttributes`): a topic of another account is then found and the policy asked. Nil:
    ///   another account's topic is AuthorizationError.
    static func topic(_ request: SNSRequest, _ context: SNSActionContext, parameter: String = "TopicArn",
                      value: String? = nil, action: String? = nil) async throws(SNSError) -> (TopicRecord, String) {
        let text: String
        if let value { text = value } else { text = try request.parameters.required(parameter) }
        let arn = try request.arn(parameter, value: text, otherAccounts: action != nil)
        guard case .topic(let name) = arn.resource else {
            throw SNSError.noSuchResource(parameter: parameter)
        }
        if let action, arn.account != request.caller.accountID {
            return (try await otherAccountsTopic(request, context, arn: arn, name: name, action: action), arn.text)
        }
        let account = try await context.accountKey(request.caller)
        let topic = try await store(notFound: notFound) { () async throws(StoreError) in
            try await context.topics.get(accountKey: account, region: request.region, name: name)
        }
        return (topic, arn.text)
    }

    /// A topic of another account, when its policy allows the caller `action`. A topic or owner that does not exist
    /// is the same AuthorizationError as a refusal, as in SNS: another account learns nothing about what exists.
    static func otherAccountsTopic(_ request: SNSRequest, _ context: SNSActionContext, arn: SNSARN, name: String,
                                   action: String) async throws(SNSError) -> TopicRecord {
        let caller = request.caller.accountID
        let denied = SNSError.authorizationError(
            "User: \(arn.partition.rootPrincipal(account: caller)) is not authorized to perform: SNS:\(action) on resource: \(arn.text)")
        let owner = try await store(notFound: denied) { () async throws(StoreError) in
            try await context.accounts.account(accountID: arn.account)
        }
        let topic = try await store(notFound: denied) { () async throws(StoreError) in
            try await context.topics.get(accountKey: owner.key, region: arn.region, name: name)
        }
        let text = topic.attributes["Policy"] ?? TopicPolicy.defaultPolicy(topicARN: arn.text, owner: arn.account)
        // Policies are checked when set; one stored before the check existed and outside the subset grants nothing.
        guard let policy = try? TopicPolicy.parse(text, topicARN: arn.text), policy.allows(account: caller, action: action) else {
            throw denied
        }
        return topic
    }

    /// AddPermission's Label (Clarion's rule; it becomes the statement's Sid).
    static func isLabel(_ text: String) -> Bool {
        (1...80).contains(text.utf8.count) && text.utf8.allSatisfy { byte in
            (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
        }
    }

    static func validate(_ attributes: [String: String], topicARN: String) throws(SNSError) {
        for (name, value) in attributes {
            switch name {
            case "Policy":
                do throws(TopicPolicyError) { _ = try TopicPolicy.parse(value, topicARN: topicARN) } catch {
                    throw SNSError.invalidParameter("Policy", reason: error.message)
                }
            case "DeliveryPolicy", "DataProtectionPolicy", "ArchivePolicy":
                guard SNSAttributes.isJSONObject(value) else {
                    throw SNSError.invalidParameter("Attributes", reason: "\(name): failed to parse JSON")
                }
            case "DisplayName":
                guard value.count <= 100 else {
                    throw SNSError.invalidParameter("Attributes", reason: "DisplayName must be at most 100 characters")
                }
            case "SignatureVersion":
                // SNS signs HTTP/S deliveries with SHA1withRSA (1, the default) or SHA256withRSA (2).
                guard value == "1" || value == "2" else {
                    throw SNSError.invalidParameter("Attributes", reason: "SignatureVersion must be 1 or 2")
                }
            case "ApplicationSuccessFeedbackSampleRate":
                guard let rate = Int(value), (0...100).contains(rate) else {
                    throw SNSError.invalidParameter("Attributes", reason: "\(name) must be an integer from 0 to 100")
                }
            default:
                break
            }
        }
    }

    static let defaultDeliveryPolicy = #"{"http":{"defaultHealthyRetryPolicy":{"minDelayTarget":20,"maxDelayTarget":20,"numRetries":3,"numMaxDelayRetries":0,"numNoDelayRetries":0,"numMinDelayRetries":0,"backoffFunction":"linear"},"disableSubscriptionOverrides":false,"defaultRequestPolicy":{"headerContentType":"text/plain; charset=UTF-8"}}}"#
}
