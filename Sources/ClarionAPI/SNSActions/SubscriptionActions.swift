import ClarionCore
import ClarionCrypto
import ClarionStore
import Foundation

/// Subscribe (Protocol application, http, https), ConfirmSubscription, Unsubscribe, ListSubscriptions, ListSubscriptionsByTopic,
/// Get/SetSubscriptionAttributes.
enum SubscriptionActions {
    static let settable: Set<String> = ["FilterPolicy", "FilterPolicyScope", "RawMessageDelivery", "DeliveryPolicy",
                                        "RedrivePolicy", "SubscriptionRoleArn"]
    static let notFound = SNSError.notFound("Subscription does not exist")

    static func register(_ table: inout SNSActionTable, _ context: SNSActionContext) {
        table.register("Subscribe") { request throws(SNSError) in
            // The subscription belongs to the topic's account (another account's, when its policy allowed Subscribe).
            let (topic, _) = try await TopicActions.topic(request, context, action: "Subscribe")
            let proto = try request.parameters.required("Protocol")
            guard proto == "application" || proto == "http" || proto == "https" else {
                throw SNSError.invalidParameter("Protocol", reason: "Clarion delivers to platform endpoints (application) and HTTP/S URLs (http, https)")
            }
            guard let target = request.parameters["Endpoint"], !target.isEmpty else {
                throw SNSError.invalidParameter("Endpoint", reason: proto == "application"
                    ? "An application subscription needs an endpoint ARN" : "An \(proto) subscription needs a URL")
            }
            let attributes = try request.parameters.stringMap("Attributes")
            try SNSAttributes.requireKnown(attributes, settable)
            for (name, value) in attributes { try validate(name, value, protocol: proto) }
            var stored = attributes
            let policy = stored.removeValue(forKey: "FilterPolicy").flatMap { $0.isEmpty ? nil : $0 }
            if let policy {
                try compileFilterPolicy(policy, scope: attributes["FilterPolicyScope"], prefix: "Invalid parameter: Attributes Reason: ")
            }
            let id = context.makeID()
            if proto != "application" {
                try checkURL(target, protocol: proto)
                let token = HTTPSubscriptionToken.make()
                let (subscription, _) = try await store { () async throws(StoreError) in
                    try await context.subscriptions.subscribeHTTP(topicKey: topic.key, protocol: proto, url: target, externalID: id,
                                                                  token: token, filterPolicy: policy, attributes: stored)
                }
                // SNS answers "pending confirmation" until the endpoint confirms, unless the caller asks for the ARN.
                let returnARN = request.parameters["ReturnSubscriptionArn"]?.lowercased() == "true"
                let arn = subscription.pendingConfirmation && !returnARN ? "pending confirmation" : subscriptionARN(request, subscription)
                return XMLResponse { $0.element("SubscriptionArn", arn) }
            }
            let endpoint = try await EndpointActions.endpoint(request, context, parameter: "Endpoint", value: target)
            let (subscription, _) = try await store { () async throws(StoreError) in
                try await context.subscriptions.subscribe(topicKey: topic.key, endpointKey: endpoint.key, externalID: id,
                                                          filterPolicy: policy, attributes: stored)
            }
            let arn = subscriptionARN(request, subscription)
            return XMLResponse { $0.element("SubscriptionArn", arn) }
        }

        table.register("ConfirmSubscription") { request throws(SNSError) in
            let (topic, _) = try await TopicActions.topic(request, context)
            let token = try request.parameters.required("Token")
            let record = try await confirm(token: token, topicKey: topic.key, context)
            return XMLResponse { $0.element("SubscriptionArn", subscriptionARN(request, record)) }
        }

        table.register("Unsubscribe") { request throws(SNSError) in
            // The topic's owner, or the account whose endpoint another account's topic policy let subscribe.
            let arn = try request.arn("SubscriptionArn", value: try request.parameters.required("SubscriptionArn"), otherAccounts: true)
            guard case .subscription(_, let id) = arn.resource else {
                throw SNSError.noSuchResource(parameter: "SubscriptionArn")
            }
            if let record = try? await context.subscriptions.get(externalID: id), record.topicAccountID == arn.account,
               record.region == request.region {
                guard mayManage(record, request.caller.accountID) else {
                    throw SNSError.authorizationError("The caller is not authorized to access \(arn.text)")
                }
                _ = try await store { () async throws(StoreError) in try await context.subscriptions.unsubscribe(externalID: id) }
            }
            return .empty
        }

        table.register("GetSubscriptionAttributes") { request throws(SNSError) in
            let record = try await subscription(request, context)
            var attributes = record.attributes
            attributes["SubscriptionArn"] = subscriptionARN(request, record)
            attributes["TopicArn"] = SNSARN.topic(record.region, record.topicAccountID, name: record.topicName)
            attributes["Owner"] = record.endpointAccountID ?? record.topicAccountID
            attributes["Protocol"] = record.protocol
            attributes["Endpoint"] = endpointText(request, record)
            attributes["ConfirmationWasAuthenticated"] = record.protocol == "application" ? "true" : "false"
            attributes["PendingConfirmation"] = record.pendingConfirmation ? "true" : "false"
            if record.protocol != "application" {
                // SNS shows the policy in effect: the subscription's own, or the HTTP/S default.
                let policy = record.attributes["DeliveryPolicy"].flatMap { try? HTTPDeliveryPolicy.parse($0) } ?? .snsDefault
                attributes["EffectiveDeliveryPolicy"] = effectiveDeliveryPolicy(policy)
            }
            attributes["RawMessageDelivery"] = record.attributes["RawMessageDelivery"] ?? "false"
            if let policy = record.filterPolicy {
                attributes["FilterPolicy"] = policy
                attributes["FilterPolicyScope"] = record.attributes["FilterPolicyScope"] ?? "MessageAttributes"
            }
            return XMLResponse { $0.entries("Attributes", attributes) }
        }

        table.register("SetSubscriptionAttributes") { request throws(SNSError) in
            let record = try await subscription(request, context)
            let name = try request.parameters.required("AttributeName")
            guard settable.contains(name) else {
                throw SNSError.invalidParameter("AttributeName", reason: "Unknown attribute name: \(name)")
            }
            let value = request.parameters["AttributeValue"].flatMap { $0.isEmpty ? nil : $0 }
            if let value { try validate(name, value, protocol: record.protocol) }
            // The policy is checked against the scope it will be applied in: a new policy against the stored
            // scope, a new scope against the stored policy (a nested policy cannot become attribute-scoped).
            if name == "FilterPolicy", let value {
                try compileFilterPolicy(value, scope: record.attributes["FilterPolicyScope"], prefix: "Invalid parameter: ")
            } else if name == "FilterPolicyScope", let policy = record.filterPolicy {
                try compileFilterPolicy(policy, scope: value, prefix: "Invalid parameter: ")
            }
            _ = try await store(notFound: notFound) { () async throws(StoreError) in
                try await context.subscriptions.setAttribute(externalID: record.externalID, name: name, value: value)
            }
            return .empty
        }

        table.register("ListSubscriptions") { request throws(SNSError) in
            let account = try await context.accountKey(request.caller)
            let after = try request.nextToken()
            let page = try await store { () async throws(StoreError) in
                try await context.subscriptions.list(accountKey: account, region: request.region, after: after, limit: 100)
            }
            return XMLResponse { xml in
                members(&xml, request, page.items)
                xml.nextToken(page.next)
            }
        }

        table.register("ListSubscriptionsByTopic") { request throws(SNSError) in
            let (topic, _) = try await TopicActions.topic(request, context)
            let after = try request.nextToken()
            let page = try await store { () async throws(StoreError) in
                try await context.subscriptions.list(topicKey: topic.key, after: after, limit: 100)
            }
            return XMLResponse { xml in
                members(&xml, request, page.items)
                xml.nextToken(page.next)
            }
        }
    }

    static func members(_ xml: inout XMLWriter, _ request: SNSRequest, _ items: [SubscriptionRecord]) {
        xml.members("Subscriptions", items) { xml, record in
            // SNS lists a subscription its endpoint has not confirmed as "PendingConfirmation", not by ARN.
            xml.element("SubscriptionArn", record.pendingConfirmation ? "PendingConfirmation" : subscriptionARN(request, record))
            xml.element("Owner", record.endpointAccountID ?? record.topicAccountID)
            xml.element("Protocol", record.protocol)
            xml.element("Endpoint", endpointText(request, record))
            xml.element("TopicArn", SNSARN.topic(record.region, record.topicAccountID, name: record.topicName))
        }
    }

    /// The subscription's ARN names the topic's account (another account's, for a subscription its policy allowed).
    static func subscriptionARN(_ request: SNSRequest, _ record: SubscriptionRecord) -> String {
        SNSARN.subscription(record.region, record.topicAccountID, topic: record.topicName, id: record.externalID)
    }

    /// Unsubscribe, Get/SetSubscriptionAttributes: the topic's owner, or the owner of the subscribed endpoint.
    static func mayManage(_ record: SubscriptionRecord, _ accountID: String) -> Bool {
        record.topicAccountID == accountID || record.endpointAccountID == accountID
    }

    static func endpointText(_ request: SNSRequest, _ record: SubscriptionRecord) -> String {
        if let id = record.endpointExternalID, let platform = record.endpointPlatform, let app = record.endpointApplicationName {
            return SNSARN.endpoint(record.region, record.endpointAccountID ?? request.caller.accountID, platform: platform,
                                   application: app, id: id)
        }
        return record.target ?? ""
    }

    static func subscription(_ request: SNSRequest, _ context: SNSActionContext) async throws(SNSError) -> SubscriptionRecord {
        let arn = try request.arn("SubscriptionArn", value: try request.parameters.required("SubscriptionArn"), otherAccounts: true)
        guard case .subscription(let topic, let id) = arn.resource else {
            throw SNSError.noSuchResource(parameter: "SubscriptionArn")
        }
        let record = try await store(notFound: notFound) { () async throws(StoreError) in
            try await context.subscriptions.get(externalID: id)
        }
        guard record.topicAccountID == arn.account, record.topicName == topic, record.region == request.region else { throw notFound }
        guard mayManage(record, request.caller.accountID) else {
            throw SNSError.authorizationError("The caller is not authorized to access \(arn.text)")
        }
        return record
    }

    /// Compiles a FilterPolicy for its scope (nil: MessageAttributes), refusing it with SNS's message: Subscribe
    /// reports it under `Attributes`, SetSubscriptionAttributes directly (docs/providers.md).
    static func compileFilterPolicy(_ text: String, scope: String?, prefix: String) throws(SNSError) {
        let scope = scope.flatMap(FilterPolicyScope.init(rawValue:)) ?? .messageAttributes
        do {
            _ = try FilterPolicy.compile(text, scope: scope)
        } catch {
            throw SNSError.invalidParameter(message: prefix + error.message)
        }
    }

    /// Confirms the subscription that was sent `token`, which must be a subscription of `topicKey` when given (the
    /// ConfirmSubscription action names its topic; the SubscribeURL does too). SNS: "Invalid token".
    static func confirm(token: String, topicKey: Int64?, _ context: SNSActionContext) async throws(SNSError) -> SubscriptionRecord {
        let invalid = SNSError.invalidParameter(message: "Invalid token")
        guard let found = try await store({ () async throws(StoreError) in try await context.subscriptions.find(token: token) }),
              topicKey == nil || found.topicKey == topicKey else { throw invalid }
        return try await store(notFound: invalid) { () async throws(StoreError) in
            try await context.subscriptions.confirm(token: token)
        }
    }

    /// An http subscription needs an `http://` URL, an https one an `https://` URL, with a host (SNS: "Invalid
    /// parameter: Endpoint"). Where the URL may lead is the outbound policy's question, asked at each delivery.
    static func checkURL(_ url: String, protocol proto: String) throws(SNSError) {
        guard url.lowercased().hasPrefix(proto + "://"), let parsed = OutboundURL(url), parsed.scheme == proto else {
            throw SNSError.invalidParameter("Endpoint", reason: "An \(proto) subscription needs an \(proto):// URL with a host")
        }
    }

    static func effectiveDeliveryPolicy(_ p: HTTPDeliveryPolicy) -> String {
        let healthy = JSONObject([
            ("minDelayTarget", .number(JSONNumber(p.minDelayTarget))), ("maxDelayTarget", .number(JSONNumber(p.maxDelayTarget))),
            ("numRetries", .number(JSONNumber(p.numRetries))), ("numMaxDelayRetries", .number(JSONNumber(p.numMaxDelayRetries))),
            ("numNoDelayRetries", .number(JSONNumber(p.numNoDelayRetries))),
            ("numMinDelayRetries", .number(JSONNumber(p.numMinDelayRetries))),
            ("backoffFunction", .string(p.backoff.rawValue)),
        ])
        return JSONObject([("healthyRetryPolicy", .object(healthy)), ("sicklyRetryPolicy", .null), ("throttlePolicy", .null),
                           ("guaranteed", .bool(false))]).jsonText
    }

    static func validate(_ name: String, _ value: String, protocol proto: String) throws(SNSError) {
        if name == "DeliveryPolicy", proto != "application" {
            do { _ = try HTTPDeliveryPolicy.parse(value) } catch {
                throw SNSError.invalidParameter(message: "Invalid parameter: \(error.message)")
            }
            return
        }
        switch name {
        case "FilterPolicy":
            guard value.isEmpty || SNSAttributes.isJSONObject(value) else {
                throw SNSError.invalidParameter(message: "Invalid parameter: FilterPolicy: failed to parse JSON.")
            }
        case "FilterPolicyScope":
            guard value == "MessageAttributes" || value == "MessageBody" else {
                throw SNSError.invalidParameter(message: "Invalid parameter: FilterPolicyScope: Invalid value [\(value)]. Please use either MessageBody or MessageAttributes")
            }
        case "RawMessageDelivery":
            _ = try SNSAttributes.bool(name, value)
        case "DeliveryPolicy", "RedrivePolicy":
            guard SNSAttributes.isJSONObject(value) else {
                throw SNSError.invalidParameter("Attributes", reason: "\(name): failed to parse JSON")
            }
        default:
            break
        }
    }
}

/// The secret an HTTP/S subscription is confirmed with (its SubscriptionConfirmation's `Token`), which also
/// authorises its UnsubscribeURL: 32 random bytes in hex. SNS's tokens are opaque strings of similar length.
enum HTTPSubscriptionToken {
    static func make() -> String {
        SecureRandom.bytes(32).map { String(format: "%02x", $0) }.joined()
    }
}
