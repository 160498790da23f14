import ClarionCore
import ClarionStore
import Foundation
import ClarionHTTP1

/// Topics and their subscriptions under `/v1`.
enum NativeTopicRoutes {
    static func register(on routes: inout Router, context c: NativeAPIContext) {
        routes.add(.post, "/v1/topics", errorFormat: .json, .json { request throws(JSONAPIError) in
            let caller = try await c.caller(request)
            let body = try NativeFields.body(request)
            try body.allowOnly(["name", "attributes"])
            let name = try body.requiredString("name")
            guard NativeID.isTopicName(name) else {
                throw JSONAPIError.invalidField("name", "The field 'name' must be 1 to 256 of A-Z, a-z, 0-9, '_', '-'.")
            }
            let attributes = try body.stringMap("attributes")
            try NativeRules.topicAttributes(attributes ?? [:], topicARN: NativeID.topicARN(name, caller))
            let (record, created): (TopicRecord, Bool)
            do throws(StoreError) {
                (record, created) = try await c.topics.create(accountKey: caller.accountKey, region: caller.region, name: name, attributes: attributes ?? [:])
            } catch {
                throw JSONAPIError.store(error)
            }
            // SNS: creating an existing topic is idempotent unless the request's attributes differ.
            if !created, let attributes, attributes.contains(where: { record.attributes[$0.key] != $0.value }) {
                throw JSONAPIError.conflict("Topic '\(name)' already exists with different attributes.", field: "attributes")
            }
            return NativeResponse.json(render(record, caller), status: created ? 201 : 200)
        })

        routes.add(.get, "/v1/topics", errorFormat: .json, .json { request throws(JSONAPIError) in
            let caller = try await c.caller(request)
            let paging = try NativePaging.parse(request)
            do throws(StoreError) {
                let page = try await c.topics.list(accountKey: caller.accountKey, region: caller.region, after: paging.after, limit: paging.limit)
                return NativeResponse.page(page) { render($0, caller) }
            } catch {
                throw JSONAPIError.store(error)
            }
        })

        routes.add(.get, "/v1/topics/{id}", errorFormat: .json, .json { request throws(JSONAPIError) in
            let caller = try await c.caller(request)
            let record = try await c.topic(request.pathParameters["id"] ?? "", caller, field: "id")
            return NativeResponse.json(render(record, caller))
        })

        routes.add(.delete, "/v1/topics/{id}", errorFormat: .json, .json { request throws(JSONAPIError) in
            let caller = try await c.caller(request)
            let record: TopicRecord
            do throws(JSONAPIError) {
                record = try await c.topic(request.pathParameters["id"] ?? "", caller, field: "id")
            } catch where error.status == 404 {
                return NativeResponse.noContent
            }
            do throws(StoreError) {
                try await c.topics.delete(topicKey: record.key)
                try await c.tags.removeAll(resourceARN: NativeID.topicARN(record.name, caller))
            } catch {
                throw JSONAPIError.store(error)
            }
            return NativeResponse.noContent
        })

        routes.add(.post, "/v1/topics/{id}/subscriptions", errorFormat: .json, .json { request throws(JSONAPIError) in
            let caller = try await c.caller(request)
            let topic = try await c.topic(request.pathParameters["id"] ?? "", caller, field: "id")
            let body = try NativeFields.body(request)
            try body.allowOnly(["endpoint", "filter_policy", "filter_policy_scope"])
            let endpoint = try await c.endpoint(try body.requiredString("endpoint"), caller, field: "endpoint")
            // SNS subscribes an endpoint of the topic's own region only (docs/api.md, "Regions").
            guard endpoint.region == topic.region else {
                throw JSONAPIError.invalidField("endpoint", "The endpoint is in \(endpoint.region), the topic in \(topic.region)")
            }
            let policy = try body.object("filter_policy").map { JSONValue.object($0.object).jsonText }
            if let policy { try NativeFields.checkStorableJSON("filter_policy", policy) }
            var attributes: [String: String] = [:]
            if let scopeText = try body.string("filter_policy_scope") {
                guard FilterPolicyScope(rawValue: scopeText) != nil else {
                    throw JSONAPIError.invalidField("filter_policy_scope", "must be MessageAttributes or MessageBody")
                }
                attributes["FilterPolicyScope"] = scopeText
            }
            if let policy {
                // The same grammar and limits as SNS Subscribe (FilterPolicy, docs/api.md).
                do throws(FilterPolicyError) {
                    _ = try FilterPolicy.compile(
                        policy, scope: attributes["FilterPolicyScope"].flatMap(FilterPolicyScope.init(rawValue:)) ?? .messageAttributes)
                } catch {
                    throw JSONAPIError.invalidField("filter_policy", error.message)
                }
            }
            do throws(StoreError) {
                let (record, created) = try await c.subscriptions.subscribe(
                    topicKey: topic.key, endpointKey: endpoint.key, externalID: c.makeID(), filterPolicy: policy,
                    attributes: attributes)
                return NativeResponse.json(render(record, caller), status: created ? 201 : 200)
            } catch {
                throw JSONAPIError.store(error)
            }
        })

        routes.add(.get, "/v1/topics/{id}/subscriptions", errorFormat: .json, .json { request throws(JSONAPIError) in
            let caller = try await c.caller(request)
            let topic = try await c.topic(request.pathParameters["id"] ?? "", caller, field: "id")
            let paging = try NativePaging.parse(request)
            do throws(StoreError) {
                let page = try await c.subscriptions.list(topicKey: topic.key, after: paging.after, limit: paging.limit)
                return NativeResponse.page(page) { render($0, caller) }
            } catch {
                throw JSONAPIError.store(error)
            }
        })

        routes.add(.get, "/v1/subscriptions/{id}", errorFormat: .json, .json { request throws(JSONAPIError) in
            let caller = try await c.caller(request)
            let record = try await c.subscription(request.pathParameters["id"] ?? "", caller, field: "id")
            return NativeResponse.json(render(record, caller))
        })

        routes.add(.delete, "/v1/subscriptions/{id}", errorFormat: .json, .json { request throws(JSONAPIError) in
            let caller = try await c.caller(request)
            let record: SubscriptionRecord
            do throws(JSONAPIError) {
                record = try await c.subscription(request.pathParameters["id"] ?? "", caller, field: "id")
            } catch where error.status == 404 {
                return NativeResponse.noContent
            }
            do throws(StoreError) {
                try await c.subscriptions.unsubscribe(externalID: record.externalID)
            } catch {
                throw JSONAPIError.store(error)
            }
            return NativeResponse.noContent
        })
    }

    static func render(_ record: TopicRecord, _ caller: NativeCaller) -> JSONValue {
        [
            "id": .string(record.name),
            "arn": .string(NativeID.topicARN(record.name, caller)),
            "name": .string(record.name),
            "attributes": NativeResponse.map(record.attributes),
            "created_at": NativeResponse.time(record.createdAt),
        ]
    }

    static func render(_ record: SubscriptionRecord, _ caller: NativeCaller) -> JSONValue {
        let policy = record.filterPolicy.flatMap { try? JSONValue.parse($0) } ?? .null
        let endpoint: JSONValue = record.endpointExternalID.map { .string(NativeID.uuidText($0)) } ?? .null
        var endpointARN: JSONValue = .null
        if let id = record.endpointExternalID, let platform = record.endpointPlatform, let app = record.endpointApplicationName {
            endpointARN = .string(SNSARN.endpoint(record.region.isEmpty ? caller.region : record.region, caller.accountID,
                                                  platform: platform, application: app, id: id))
        }
        return [
            "id": .string(NativeID.uuidText(record.externalID)),
            "arn": .string(NativeID.arn(record, caller)),
            "topic": .string(record.topicName),
            "topic_arn": .string(SNSARN.topic(record.region.isEmpty ? caller.region : record.region, record.topicAccountID.isEmpty
                                                  ? caller.accountID : record.topicAccountID, name: record.topicName)),
            "protocol": .string(record.protocol),
            "url": record.endpointKey == nil ? NativeResponse.text(record.target) : .null,
            "pending_confirmation": .bool(record.pendingConfirmation),
            "endpoint": endpoint,
            "endpoint_arn": endpointARN,
            "filter_policy": policy,
            "filter_policy_scope": record.filterPolicy == nil ? .null
                : .string(record.attributes["FilterPolicyScope"] ?? FilterPolicyScope.messageAttributes.rawValue),
            "created_at": NativeResponse.time(record.createdAt),
        ]
    }
}
