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
            try validate(stored)
            try TagActions.validate(tags)
            let account = try await context.accountKey(request.caller)
            let (topic, created) = try await store { () async throws(StoreError) in
                try await context.topics.create(accountKey: account, name: name, attributes: stored)
            }
            // Idempotent by name; SNS refuses a second create that names different attributes.
            if !created, stored.contains(where: { topic.attributes[$0.key] != $0.value }) {
                throw SNSError.invalidParameter("Attributes", reason: "Topic already exists with different attributes")
            }
            let arn = SNSARN.topic(request.region, request.caller.accountID, name: name)
            if !tags.isEmpty {
                try await TagActions.apply(tags, arn: arn, account: account, context: context)
            }
            return XMLResponse { $0.element("TopicArn", arn) }
        }

        table.register("GetTopicAttributes") { request throws(SNSError) in
            let (topic, arn) = try await self.topic(request, context)
            let count = try await store { () async throws(StoreError) in try await context.topics.subscriptionCount(topicKey: topic.key) }
            var attributes = topic.attributes
            attributes["TopicArn"] = arn
            attributes["Owner"] = request.caller.accountID
            attributes["DisplayName"] = topic.attributes["DisplayName"] ?? ""
            attributes["Policy"] = topic.attributes["Policy"] ?? defaultPolicy(arn: arn, account: request.caller.accountID)
            attributes["SubscriptionsConfirmed"] = String(count)
            attributes["SubscriptionsPending"] = "0"
            attributes["SubscriptionsDeleted"] = "0"
            attributes["EffectiveDeliveryPolicy"] = topic.attributes["DeliveryPolicy"] ?? defaultDeliveryPolicy
            return XMLResponse { $0.entries("Attributes", attributes) }
        }

        table.register("SetTopicAttributes") { request throws(SNSError) in
            let (topic, _) = try await self.topic(request, context)
            let name = try request.parameters.required("AttributeName")
            guard settable.contains(name) else {
                throw SNSError.invalidParameter("AttributeName", reason: "Unknown attribute name: \(name)")
            }
            let value = request.parameters["AttributeValue"].flatMap { $0.isEmpty ? nil : $0 }
            if let value { try validate([name: value]) }
            _ = try await store(notFound: notFound) { () async throws(StoreError) in
                try await context.topics.setAttributes(topicKey: topic.key, [name: value])
            }
            return .empty
        }

        table.register("DeleteTopic") { request throws(SNSError) in
            let arn = try request.arn("TopicArn")
            guard case .topic(let name) = arn.resource else { throw SNSError.invalidParameter("TopicArn") }
            let account = try await context.accountKey(request.caller)
            // SNS: deleting a topic that does not exist is not an error.
            if let topic = try? await context.topics.get(accountKey: account, name: name) {
                _ = try await store { () async throws(StoreError) in try await context.topics.delete(topicKey: topic.key) }
                _ = try await store { () async throws(StoreError) in try await context.tags.removeAll(resourceARN: arn.text) }
            }
            return .empty
        }

        table.register("ListTopics") { request throws(SNSError) in
            let account = try await context.accountKey(request.caller)
            let after = try request.nextToken()
            let page = try await store { () async throws(StoreError) in
                try await context.topics.list(accountKey: account, after: after, limit: 100)
            }
            return XMLResponse { xml in
                xml.members("Topics", page.items) { xml, topic in
                    xml.element("TopicArn", SNSARN.topic(request.region, request.caller.accountID, name: topic.name))
                }
                xml.nextToken(page.next)
            }
        }
    }

    /// The topic named by `TopicArn` (or `parameter`), or NotFound.
    static func topic(_ request: SNSRequest, _ context: SNSActionContext, parameter: String = "TopicArn",
                      value: String? = nil) async throws(SNSError) -> (TopicRecord, String) {
        let arn: SNSARN
        if let value { arn = try request.arn(parameter, value: value) } else { arn = try request.arn(parameter) }
        guard case .topic(let name) = arn.resource else {
            throw SNSError.noSuchResource(parameter: parameter)
        }
        let account = try await context.accountKey(request.caller)
        let topic = try await store(notFound: notFound) { () async throws(StoreError) in
            try await context.topics.get(accountKey: account, name: name)
        }
        return (topic, arn.text)
    }

    static func validate(_ attributes: [String: String]) throws(SNSError) {
        for (name, value) in attributes {
            switch name {
            case "Policy", "DeliveryPolicy", "DataProtectionPolicy", "ArchivePolicy":
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

    static func defaultPolicy(arn: String, account: String) -> String {
        #"{"Version":"2008-10-17","Id":"__default_policy_ID","Statement":[{"Sid":"__default_statement_ID","Effect":"Allow","Principal":{"AWS":"*"},"Action":["SNS:GetTopicAttributes","SNS:SetTopicAttributes","SNS:AddPermission","SNS:RemovePermission","SNS:DeleteTopic","SNS:Subscribe","SNS:ListSubscriptionsByTopic","SNS:Publish"],"Resource":"\#(arn)","Condition":{"StringEquals":{"AWS:SourceOwner":"\#(account)"}}}]}"#
    }

    static let defaultDeliveryPolicy = #"{"http":{"defaultHealthyRetryPolicy":{"minDelayTarget":20,"maxDelayTarget":20,"numRetries":3,"numMaxDelayRetries":0,"numNoDelayRetries":0,"numMinDelayRetries":0,"backoffFunction":"linear"},"disableSubscriptionOverrides":false,"defaultRequestPolicy":{"headerContentType":"text/plain; charset=UTF-8"}}}"#
}
