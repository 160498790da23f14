import ClarionCrypto
import ClarionCore
import ClarionStore
import Foundation

/// The `"campaign"` field of a native publish, and the `"namespace"` field of an ordinary one.
///
/// The publish handler calls, in order:
/// 1. `CampaignPublish.parse(body.object["campaign"])` while validating (a 400 names the field, e.g.
///    `campaign.data.discount` for a non-string value);
/// 2. `try await request.resolve(accountKey:campaigns:)` once the caller is known (creates or updates the campaign);
/// 3. for each message it stores, `prepared.attribute(messageID:)`, added to that message's attributes under
///    `PayloadNamespace.attributeName` before they are serialised. The stored message is linked to the campaign in
///    the INSERT (schema v7) and every delivery renders the namespace with its own delivery id.
public struct CampaignPublish: Sendable, Hashable {
    /// nil: generate one (a UUID).
    public var id: String?
    public var name: String
    public var namespace: String
    public var deepLink: String?
    public var data: [PayloadNamespace.Field]

    public static let idLimit = 128
    public static let nameLimit = 256

    /// Reads and checks the field; `field` is its path in the request ("campaign").
    public static func parse(_ value: JSONValue?, field: String = "campaign") throws(JSONAPIError) -> CampaignPublish? {
        guard let value, value != .null else { return nil }
        guard let object = value.objectValue else { throw JSONAPIError.invalidField(field, "The field '\(field)' must be an object.") }
        for key in object.keys where !["id", "name", "namespace", "deep_link", "data"].contains(key) {
            throw JSONAPIError.invalidField("\(field).\(key)", "Unknown field '\(field).\(key)'.")
        }
        func string(_ key: String, required: Bool, limit: Int) throws(JSONAPIError) -> String? {
            let path = "\(field).\(key)"
            guard let member = object[key], member != .null else {
                if required { throw JSONAPIError.missingField(path) }
                return nil
            }
            guard let text = member.stringValue else { throw JSONAPIError.invalidField(path, "The field '\(path)' must be a string.") }
            guard !text.isEmpty, text.utf8.count <= limit else {
                throw JSONAPIError.invalidField(path, "The field '\(path)' must be 1 to \(limit) bytes.")
            }
            return text
        }
        let id = try string("id", required: false, limit: idLimit)
        let name = try string("name", required: true, limit: nameLimit)!
        let namespace = try string("namespace", required: true, limit: PayloadNamespace.keyLimit)!
        if let problem = PayloadNamespace.problem(namespaceKey: namespace) {
            throw JSONAPIError.invalidField("\(field).namespace", "The namespace \(problem).")
        }
        let deepLink = try string("deep_link", required: false, limit: 2048)
        var data: [PayloadNamespace.Field] = []
        if let member = object["data"], member != .null {
            guard let map = member.objectValue else {
                throw JSONAPIError.invalidField("\(field).data", "The field '\(field).data' must be an object of strings.")
            }
            guard map.count <= PayloadNamespace.fieldLimit else {
                throw JSONAPIError.invalidField("\(field).data", "At most \(PayloadNamespace.fieldLimit) data keys.")
            }
            for entry in map {
                let path = "\(field).data.\(entry.key)"
                guard let text = entry.value.stringValue else {
                    throw JSONAPIError.invalidField(path, "Campaign data values must be strings; '\(path)' is not.")
                }
                if let problem = PayloadNamespace.problem(dataKey: entry.key) {
                    throw JSONAPIError.invalidField(path, "The data key \(problem).")
                }
                data.append(PayloadNamespace.Field(key: entry.key, value: text))
            }
        }
        return CampaignPublish(id: id, name: name, namespace: namespace, deepLink: deepLink, data: data)
    }

    /// Stores the campaign (creating it, or updating its name and namespace) for the account.
    public func resolve(accountKey: Int64, campaigns: CampaignRepository,
                        makeID: @Sendable () -> UUID = { UUID.timeOrdered() }) async throws(JSONAPIError) -> PreparedCampaign {
        let externalID = id ?? makeID().lowercasedText
        do throws(StoreError) {
            let record = try await campaigns.ensureCampaign(accountKey: accountKey, externalID: externalID, name: name,
                                                            namespace: namespace)
            return PreparedCampaign(record: record, deepLink: deepLink, data: data)
        } catch {
            throw error.isTransient ? JSONAPIError.serviceUnavailable("The store is unavailable; retry later.")
                : JSONAPIError.internalError(cause: error.logText)
        }
    }
}

/// A stored campaign, ready to mark the messages of a publish.
public struct PreparedCampaign: Sendable, Hashable {
    public let record: CampaignRecord
    public let deepLink: String?
    public let data: [PayloadNamespace.Field]

    public func namespace(messageID: UUID) -> PayloadNamespace {
        PayloadNamespace(key: record.namespace, kind: .campaign, messageID: messageID.lowercasedText,
                         deepLink: deepLink, fields: data, campaign: record.externalID)
    }

    /// The `Clarion.Namespace` attribute of the message with this external id.
    public func attribute(messageID: UUID) -> MessageAttributeValue {
        namespace(messageID: messageID).attributeValue()
    }
}

extension PayloadNamespace {
    /// An ordinary push that asks for the namespace (`"namespace": "<key>"` in the publish): type "message".
    public static func message(key: String, messageID: UUID) -> PayloadNamespace {
        PayloadNamespace(key: key, kind: .message, messageID: messageID.lowercasedText)
    }
}

/// The namespace a native publish asks for: `"campaign": {...}` (type "campaign"), or `"namespace": "<key>"` on an
/// ordinary push (type "message"). The publish handler's whole part is:
///
///     let namespaceRequest = try PublishNamespaceRequest.parse(body.object, attributes: attributes)   // validation
///     let namespace = try await namespaceRequest?.resolve(accountKey: caller.accountKey,
///                                                         campaigns: CampaignRepository(pool: c.accounts.pool))
///     // per stored message, with its external id `id`:
///     if let namespace { messageAttributes[PayloadNamespace.attributeName] = namespace.attribute(messageID: id) }
public enum PublishNamespaceRequest: Sendable, Hashable {
    case campaign(CampaignPublish)
    case message(key: String)

    /// Reads `campaign` and `namespace` of a publish body (at most one of them); refuses a publisher-supplied
    /// `Clarion.Namespace` attribute, which only Clarion writes.
    public static func parse(_ body: JSONObject, attributes: [String: MessageAttributeValue] = [:])
        throws(JSONAPIError) -> PublishNamespaceRequest?
    {
        if attributes[CampaignTiming.attributeName] != nil {
            let field = "attributes.\(CampaignTiming.attributeName)"
            throw JSONAPIError.invalidField(field, "The attribute '\(CampaignTiming.attributeName)' is reserved; use 'send_at_local', 'fallback_time_zone', 'frequency_cap' and 'quiet_hours'.")
        }
        if attributes[VariantSplit.attributeName] != nil {
            let field = "attributes.\(VariantSplit.attributeName)"
            throw JSONAPIError.invalidField(field, "The attribute '\(VariantSplit.attributeName)' is reserved; use 'variants' and 'holdout'.")
        }
        if attributes[PayloadNamespace.attributeName] != nil {
            let field = "attributes.\(PayloadNamespace.attributeName)"
            throw JSONAPIError.invalidField(field, "The attribute '\(PayloadNamespace.attributeName)' is reserved; use 'campaign' or 'namespace'.")
        }
        let campaign = try CampaignPublish.parse(body["campaign"])
        var key: String?
        if let value = body["namespace"], value != .null {
            guard let text = value.stringValue else { throw JSONAPIError.invalidField("namespace", "The field 'namespace' must be a string.") }
            if let problem = PayloadNamespace.problem(namespaceKey: text) {
                throw JSONAPIError.invalidField("namespace", "The namespace \(problem).")
            }
            key = text
        }
        switch (campaign, key) {
        case (let campaign?, nil): return .campaign(campaign)
        case (nil, let key?): return .message(key: key)
        case (nil, nil): return nil
        case (_?, _?):
            throw JSONAPIError.invalidField("namespace", "Give 'campaign.namespace' or 'namespace', not both.")
        }
    }

    /// Stores the campaign when there is one.
    public func resolve(accountKey: Int64, campaigns: CampaignRepository,
                        makeID: @Sendable () -> UUID = { UUID.timeOrdered() }) async throws(JSONAPIError) -> ResolvedNamespace {
        switch self {
        case .campaign(let campaign):
            return .campaign(try await campaign.resolve(accountKey: accountKey, campaigns: campaigns, makeID: makeID))
        case .message(let key):
            return .message(key: key)
        }
    }
}

/// A publish's namespace, ready to mark each of its messages.
public enum ResolvedNamespace: Sendable, Hashable {
    case campaign(PreparedCampaign)
    case message(key: String)

    /// The campaign's external id, for the publish answer.
    public var campaignID: String? {
        if case .campaign(let prepared) = self { return prepared.record.externalID }
        return nil
    }

    /// The `Clarion.Namespace` attribute of the message with this external id; a campaign variant's message also
    /// carries its variant's name (the data key `variant`), so the app can tell which it got.
    public func attribute(messageID: UUID, variant: String? = nil) -> MessageAttributeValue {
        switch self {
        case .campaign(let prepared):
            guard let variant else { return prepared.attribute(messageID: messageID) }
            var namespace = prepared.namespace(messageID: messageID)
            namespace.fields.removeAll { $0.key == "variant" }
            namespace.fields.append(PayloadNamespace.Field(key: "variant", value: variant))
            return namespace.attributeValue()
        case .message(let key):
            return PayloadNamespace.message(key: key, messageID: messageID).attributeValue()
        }
    }
}
