import ClarionStore
import Foundation

/// TagResource, UntagResource, ListTagsForResource. SNS tags topics; Clarion also accepts platform
/// applications and endpoints of the caller's account.
enum TagActions {
    static func register(_ table: inout SNSActionTable, _ context: SNSActionContext) {
        table.register("TagResource") { request throws(SNSError) in
            let (arn, account) = try await resource(request, context)
            let tags = try request.parameters.tags()
            try validate(tags)
            try await apply(tags, arn: arn, account: account, context: context)
            return .empty
        }

        table.register("UntagResource") { request throws(SNSError) in
            let (arn, account) = try await resource(request, context)
            let keys = try request.parameters.stringList("TagKeys")
            _ = try await store { () async throws(StoreError) in
                try await context.tags.untag(accountKey: account, resourceARN: arn, keys: keys)
            }
            return .empty
        }

        table.register("ListTagsForResource") { request throws(SNSError) in
            let (arn, account) = try await resource(request, context)
            let tags = try await store { () async throws(StoreError) in
                try await context.tags.list(accountKey: account, resourceARN: arn)
            }
            return XMLResponse { xml in
                xml.members("Tags", tags) { xml, tag in
                    xml.element("Key", tag.key)
                    xml.element("Value", tag.value)
                }
            }
        }
    }

    static func apply(_ tags: [SNSTag], arn: String, account: Int64, context: SNSActionContext) async throws(SNSError) {
        do {
            try await context.tags.tag(accountKey: account, resourceARN: arn, tags.map { TagRecord(key: $0.key, value: $0.value) })
        } catch {
            if error.constraint == "tags_per_resource_limit" {
                throw SNSError.tagLimitExceeded("Could not complete request: tag quota of per resource exceeded")
            }
            throw SNSError.internalError(cause: error.logText)
        }
    }

    static func validate(_ tags: [SNSTag]) throws(SNSError) {
        for tag in tags {
            guard (1...128).contains(tag.key.count) else {
                throw SNSError.invalidParameter("Tags", reason: "A tag key must be 1 to 128 characters")
            }
            guard tag.value.count <= 256 else {
                throw SNSError.invalidParameter("Tags", reason: "A tag value must be at most 256 characters")
            }
        }
    }

    /// The tagged resource, which must exist (ResourceNotFound otherwise).
    static func resource(_ request: SNSRequest, _ context: SNSActionContext) async throws(SNSError) -> (String, Int64) {
        let arn = try request.arn("ResourceArn")
        let account = try await context.accountKey(request.caller)
        let missing = SNSError.resourceNotFound("Resource does not exist")
        switch arn.resource {
        case .topic(let name):
            _ = try await store(notFound: missing) { () async throws(StoreError) in try await context.topics.get(accountKey: account, region: request.region, name: name) }
        case .application(let platform, let name):
            _ = try await store(notFound: missing) { () async throws(StoreError) in
                try await context.applications.get(accountKey: account, region: request.region, platform: platform, name: name)
            }
        case .endpoint(_, _, let id):
            let record = try await store(notFound: missing) { () async throws(StoreError) in try await context.endpoints.get(externalID: id) }
            guard record.accountKey == account, record.region == request.region else { throw missing }
        case .subscription:
            throw SNSError.invalidParameter("ResourceArn", reason: "Subscriptions cannot be tagged")
        }
        return (arn.text, account)
    }
}
