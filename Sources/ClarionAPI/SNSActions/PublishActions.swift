import ClarionCore
import ClarionStore
import Foundation

/// Publish and PublishBatch (docs/providers.md C.2, C.4). A publish is validated completely, then stored through
/// the group-commit batcher; the MessageId is returned only after the commit.
package enum PublishActions {
    static let sizeLimit = SNSActionTable.publishPayloadLimit
    static let batchLimit = 10

    enum Target {
        /// A direct publish: the endpoint is checked (exists, enabled, application enabled) by the statement
        /// that stores the message, not by a lookup before it.
        case endpoint(id: UUID, platform: String, application: String, arn: String, account: Int64)
        case topic(TopicRecord, arn: String)

        /// The endpoint's platform for a direct publish; nil for a topic.
        var endpointPlatform: String? {
            if case .endpoint(_, let platform, _, _, _) = self { return platform }
            return nil
        }
    }

    static func register(_ table: inout SNSActionTable, _ context: SNSActionContext) {
        // No table-level size limit: a message over 256 KB is SNS's InvalidParameter "Message too long",
        // answered by the handler (the router's body limit still bounds what is read).
        table.registerCompleting("Publish") { request, reply in
            let target: Target
            do throws(SNSError) { target = try await resolveTarget(request, context) } catch {
                reply(.failure(error))
                return
            }
            let message: NewMessage
            do throws(SNSError) {
                message = try accept(request.parameters, target: target, request: request, context: context)
            } catch {
                reply(.failure(await endpointStateError(target, context) ?? error))
                return
            }
            // Answered from the batcher's writer thread, right after the commit that holds the message.
            context.batcher.submit(message) { result in
                switch result {
                case .success(let id): reply(.success(XMLResponse { $0.element("MessageId", id.externalID.lowercasedText) }))
                case .failure(let error): reply(.failure(snsError(for: error)))
                }
            }
        }

        table.register("PublishBatch") { request throws(SNSError) in
            let (topic, arn) = try await TopicActions.topic(request, context, action: "Publish")
            let entries = try request.parameters.structList("PublishBatchRequestEntries")
            guard !entries.isEmpty else { throw SNSError.emptyBatchRequest() }
            guard entries.count <= batchLimit else { throw SNSError.tooManyEntriesInBatchRequest() }
            var ids = Set<String>()
            for entry in entries {
                guard let id = entry["Id"], isBatchEntryID(id) else { throw SNSError.invalidBatchEntryId() }
                guard ids.insert(id).inserted else { throw SNSError.batchEntryIdsNotDistinct() }
            }
            guard entries.reduce(0, { $0 + $1.payloadBytes }) <= sizeLimit else { throw SNSError.batchRequestTooLong() }

            var failed: [(id: String, error: SNSError)] = []
            var accepted: [(id: String, message: NewMessage)] = []
            for entry in entries {
                let id = entry["Id"] ?? ""
                do throws(SNSError) {
                    accepted.append((id, try accept(entry, target: .topic(topic, arn: arn), request: request, context: context)))
                } catch {
                    failed.append((id, error))
                }
            }
            // Every accepted entry goes to the batcher at once, so they share a commit.
            let stored = await context.batcher.publish(accepted.map(\.message))
            var successful: [(id: String, messageID: String)] = []
            for ((id, _), result) in zip(accepted, stored) {
                switch result {
                case .success(let messageID): successful.append((id, messageID.externalID.lowercasedText))
                case .failure(let error): failed.append((id, snsError(for: error)))
                }
            }
            let order = Dictionary(uniqueKeysWithValues: entries.enumerated().map { ($0.element["Id"] ?? "", $0.offset) })
            failed.sort { (order[$0.id] ?? 0) < (order[$1.id] ?? 0) }
            return XMLResponse { xml in
                xml.members("Successful", successful) { xml, item in
                    xml.element("Id", item.id)
                    xml.element("MessageId", item.messageID)
                }
                xml.members("Failed", failed) { xml, item in
                    xml.element("Id", item.id)
                    xml.element("Code", item.error.code)
                    xml.element("Message", item.error.message)
                    xml.element("SenderFault", item.error.fault == .sender)
                }
            }
        }
    }

    static func isBatchEntryID(_ id: String) -> Bool {
        !id.isEmpty && id.utf8.count <= 80 && id.utf8AllSatisfy(PlatformApplicationActions.isNameByte)
    }

    /// SNS checks a direct publish's endpoint before its message: to a disabled endpoint, a message that would not
    /// parse is still EndpointDisabled ("Endpoint is disabled"). The store checks the endpoint only when it writes
    /// the message, so when validation refuses one this looks the endpoint up (on the error path only): its
    /// disabled state, a disabled application, or NotFound for a missing endpoint. Nil: the message's own error stands.
    static func endpointStateError(_ target: Target, _ context: SNSActionContext) async -> SNSError? {
        guard case .endpoint(let id, _, _, let arn, let account) = target else { return nil }
        let record: EndpointRecord
        do throws(StoreError) { record = try await context.endpoints.get(externalID: id) } catch {
            return error.code == .notFound ? snsError(for: error) : nil
        }
        guard record.accountKey == account, SNSARN.parse(arn)?.region == record.region else { return snsError(for: StoreError(.notFound, "no such endpoint")) }
        if !record.enabled { return SNSError.endpointDisabled() }
        if !record.applicationEnabled { return SNSError.platformApplicationDisabled() }
        return nil
    }

    /// What a failed store of a publish means to the caller, in SNS's terms.
    static func snsError(for error: StoreError) -> SNSError {
        switch (error.code, error.constraint) {
        case (.notFound, _):
            SNSError.notFound("Invalid parameter: TargetArn Reason: No endpoint found for the target arn specified")
        case (.checkViolation, "platform_applications_enabled"?): SNSError.platformApplicationDisabled()
        case (.checkViolation, "endpoints_enabled"?): SNSError.endpointDisabled()
        case (.busy, _): SNSError.throttled("Publish rate exceeded; try again")
        default: error.isTransient ? SNSError.serviceUnavailable(cause: error.logText) : SNSError.internalError(cause: error.logText)
        }
    }

    /// TopicArn, or TargetArn (an endpoint or a topic); one of them, not both; no SMS.
    static func resolveTarget(_ request: SNSRequest, _ context: SNSActionContext) async throws(SNSError) -> Target {
        let parameters = request.parameters
        if parameters["PhoneNumber"] != nil {
            throw SNSError.invalidParameter("PhoneNumber", reason: "SMS is not supported by this service")
        }
        let topicARN = parameters["TopicArn"].flatMap { $0.isEmpty ? nil : $0 }
        let targetARN = parameters["TargetArn"].flatMap { $0.isEmpty ? nil : $0 }
        switch (topicARN, targetARN) {
        case (nil, nil):
            throw SNSError.invalidParameter(message: "Invalid parameter: TopicArn or TargetArn Reason: no value for required parameter")
        case (.some, .some):
            throw SNSError.invalidParameter(message: "Invalid parameter: TopicArn or TargetArn Reason: Only one of TopicArn or TargetArn may be specified")
        case (let topic?, nil):
            let (record, arn) = try await TopicActions.topic(request, context, parameter: "TopicArn", value: topic, action: "Publish")
            return .topic(record, arn: arn)
        case (nil, let target?):
            // Another account's topic may be published to when its policy allows; another account's endpoint never.
            let arn = try request.arn("TargetArn", value: target, otherAccounts: true)
            if arn.account != request.caller.accountID, case .endpoint = arn.resource {
                throw SNSError.authorizationError("The caller is not authorized to access \(target)")
            }
            switch arn.resource {
            case .topic:
                let (record, text) = try await TopicActions.topic(request, context, parameter: "TargetArn", value: target, action: "Publish")
                return .topic(record, arn: text)
            case .endpoint(let platform, let application, let id):
                let account = try await context.accountKey(request.caller)
                return .endpoint(id: id, platform: platform, application: application, arn: arn.text, account: account)
            default:
                throw SNSError.noSuchResource(parameter: "TargetArn")
            }
        }
    }

    /// Validates one message (Publish's parameters or one PublishBatch entry) for its target and builds the row.
    static func accept(_ parameters: SNSParameters, target: Target, request: SNSRequest,
                       context: SNSActionContext) throws(SNSError) -> NewMessage {
        let (text, attributes, structure) = try validate(parameters, endpointPlatform: target.endpointPlatform)
        let messageTarget: MessageTarget
        let account: Int64
        switch target {
        case .topic(let topic, let arn):
            messageTarget = .topic(key: topic.key, arn: arn)
            account = topic.accountKey
        case .endpoint(let id, let platform, let application, let arn, let accountKey):
            messageTarget = .endpointReference(id: id, platform: platform, application: application, arn: arn)
            account = accountKey
        }
        return NewMessage(externalID: context.makeID(), accountKey: account, target: messageTarget, message: text,
                          structure: structure.flatMap { $0.isEmpty ? nil : $0 }, subject: parameters["Subject"],
                          attributesJSON: attributesJSON(attributes))
    }

    /// SNS's checks of one message before anything is stored, on the parameters alone: the message, its size with
    /// the attributes, Subject, no FIFO parameters, MessageStructure, the reserved mobile attributes and the message
    /// map (a topic publish needs "default"; a direct publish, an entry for the endpoint's platform).
    /// - Parameter endpointPlatform: the platform of the endpoint published to directly; nil for a topic.
    /// - Returns: the message, its attributes and the MessageStructure parameter as given.
    package static func validate(_ parameters: SNSParameters, endpointPlatform: String?)
        throws(SNSError) -> (text: String, attributes: [String: SNSMessageAttribute], structure: String?) {
        let text = try parameters.required("Message")
        guard !text.isEmpty else { throw SNSError.invalidParameter(message: "Invalid parameter: Empty message") }
        let attributes = try parameters.messageAttributes()
        var size = text.utf8.count
        for (name, value) in attributes {
            size += name.utf8.count + value.dataType.utf8.count + (value.stringValue?.utf8.count ?? 0) + (value.binaryValue?.count ?? 0)
        }
        guard size <= sizeLimit else { throw SNSError.invalidParameter(message: "Invalid parameter: Message too long") }
        if let subject = parameters["Subject"] {
            // SNS: ASCII text, no line breaks or control characters, under 100 characters.
            guard !subject.isEmpty, subject.unicodeScalars.count < 100,
                  subject.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value < 0x7f }) else {
                throw SNSError.invalidParameter("Subject", reason: "must be ASCII text without line breaks or control characters, less than 100 characters long")
            }
        }
        // Standard topics and endpoints only: FIFO parameters are refused as SNS refuses them there.
        for name in ["MessageGroupId", "MessageDeduplicationId"] where parameters[name] != nil {
            throw SNSError.invalidParameter(message: "Invalid parameter: The request includes \(name) parameter that is not valid for this topic type")
        }
        let structureText = parameters["MessageStructure"]
        do {
            let structure = try MessageStructure.parse(structureText)
            var values: [String: MessageAttributeValue] = [:]
            for (name, value) in attributes {
                values[name] = MessageAttributeValue(dataType: value.dataType, stringValue: value.stringValue, binaryValue: value.binaryValue)
            }
            _ = try MobilePushAttributes.parse(values)
            if let endpointPlatform {
                let parsed = try SNSMessage.parse(message: text, structure: structure, requireDefault: false)
                if let platform = Platform(rawValue: endpointPlatform) { try parsed.requireEntry(for: platform) }
            } else {
                _ = try SNSMessage.parse(message: text, structure: structure, requireDefault: true)
            }
        } catch {
            throw SNSError.invalidParameter(message: error.message)
        }
        return (text, attributes, structureText)
    }

    /// `{"Name": {"DataType": "String", "StringValue": "..."}}`, BinaryValue as base64.
    package static func attributesJSON(_ attributes: [String: SNSMessageAttribute]) -> String {
        guard !attributes.isEmpty else { return "{}" }
        var object: [String: [String: String]] = [:]
        for (name, value) in attributes {
            var entry = ["DataType": value.dataType]
            if let string = value.stringValue { entry["StringValue"] = string }
            if let binary = value.binaryValue { entry["BinaryValue"] = Data(binary).base64EncodedString() }
            object[name] = entry
        }
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }
}
