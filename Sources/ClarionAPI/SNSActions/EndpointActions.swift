import ClarionCore
import ClarionStore
import Foundation

/// CreatePlatformEndpoint, Get/SetEndpointAttributes, DeleteEndpoint, ListEndpointsByPlatformApplication
/// (docs/providers.md C.8).
enum EndpointActions {
    static let attributeNames: Set<String> = ["Token", "Enabled", "CustomUserData", timeZoneAttribute]
    /// Clarion's own endpoint attribute (schema v22): the device's IANA time zone, for `send_at_local` and quiet hours.
    static let timeZoneAttribute = EndpointAttribute.timeZone

    static func checkedTimeZone(_ attributes: [String: String]) throws(SNSError) -> [String: String] {
        guard let zone = attributes[timeZoneAttribute] else { return [:] }
        guard TimeZoneName.zone(zone) != nil else {
            throw SNSError.invalidParameter("Attributes", reason: "TimeZone must be an IANA time zone name such as Europe/Berlin")
        }
        return [timeZoneAttribute: zone]
    }
    static let notFound = SNSError.notFound("Endpoint does not exist")
    static let customUserDataLimit = 2048

    static func register(_ table: inout SNSActionTable, _ context: SNSActionContext) {
        table.register("CreatePlatformEndpoint") { request throws(SNSError) in
            let (app, _) = try await PlatformApplicationActions.application(request, context)
            let attributes = try request.parameters.stringMap("Attributes")
            try SNSAttributes.requireKnown(attributes, attributeNames)
            let token = try normalizedToken(try request.parameters.required("Token"), platform: app.platform)
            var customUserData = request.parameters["CustomUserData"]
            if let fromAttributes = attributes["CustomUserData"] {
                if let given = customUserData, given != fromAttributes {
                    throw SNSError.invalidParameter("CustomUserData", reason: "differs from Attributes.CustomUserData")
                }
                customUserData = fromAttributes
            }
            try checkCustomUserData(customUserData)
            let enabled = try attributes["Enabled"].map { (value) throws(SNSError) -> Bool in try SNSAttributes.bool("Enabled", value) }
            // TimeZone is a device fact, not identity (as in the native API): written after SNS's same-token rule.
            let zone = try checkedTimeZone(attributes)
            let new = NewEndpoint(applicationKey: app.key, token: token, customUserData: customUserData, enabled: enabled)
            let id = context.makeID()
            let outcome = try await store { () async throws(StoreError) in try await context.endpoints.create(new, externalID: id) }
            let arn = endpointARN(request, outcome.record)
            if case .conflict = outcome {
                throw SNSError.invalidParameter("Token", reason: "Endpoint \(arn) already exists with the same Token, but different attributes.")
            }
            if !zone.isEmpty, outcome.record.attributes[timeZoneAttribute] != zone[timeZoneAttribute] {
                let external = outcome.record.externalID
                _ = try await store { () async throws(StoreError) in
                    try await context.endpoints.update(externalID: external, EndpointChanges(attributes: zone))
                }
            }
            return XMLResponse { $0.element("EndpointArn", arn) }
        }

        table.register("GetEndpointAttributes") { request throws(SNSError) in
            let record = try await endpoint(request, context)
            return XMLResponse { $0.entries("Attributes", visibleAttributes(record)) }
        }

        table.register("SetEndpointAttributes") { request throws(SNSError) in
            let record = try await endpoint(request, context)
            let attributes = try request.parameters.stringMap("Attributes")
            try SNSAttributes.requireKnown(attributes, attributeNames)
            var changes = EndpointChanges(attributes: try checkedTimeZone(attributes))
            if let token = attributes["Token"] { changes.token = try normalizedToken(token, platform: record.platform) }
            if let enabled = attributes["Enabled"] {
                changes.enabled = try SNSAttributes.bool("Enabled", enabled)
                if changes.enabled == false { changes.disabledReason = "set by the API" }
            }
            if let data = attributes["CustomUserData"] {
                try checkCustomUserData(data)
                changes.customUserData = .some(data.isEmpty ? nil : data)
            }
            do throws(StoreError) {
                _ = try await context.endpoints.update(externalID: record.externalID, changes)
            } catch {
                if error.code == .uniqueViolation, error.constraint == "endpoints_application_token_key", let token = changes.token {
                    let other = try? await context.endpoints.find(applicationKey: record.applicationKey, token: token)
                    let otherARN = other.map { endpointARN(request, $0) } ?? "in this application"
                    throw SNSError.invalidParameter("Token", reason: "Endpoint \(otherARN) already exists with the same Token")
                }
                if error.code == .notFound { throw notFound }
                throw SNSError.internalError(cause: error.logText)
            }
            return .empty
        }

        table.register("DeleteEndpoint") { request throws(SNSError) in
            let arn = try request.arn("EndpointArn")
            guard case .endpoint(_, _, let id) = arn.resource else {
                throw SNSError.noSuchResource(parameter: "EndpointArn")
            }
            // Idempotent: deleting an endpoint that does not exist succeeds.
            let account = try await context.accountKey(request.caller)
            if let record = try? await context.endpoints.get(externalID: id), record.accountKey == account, record.region == request.region {
                _ = try await store { () async throws(StoreError) in try await context.endpoints.delete(externalID: id) }
                _ = try await store { () async throws(StoreError) in try await context.tags.removeAll(resourceARN: arn.text) }
            }
            return .empty
        }

        table.register("ListEndpointsByPlatformApplication") { request throws(SNSError) in
            let (app, _) = try await PlatformApplicationActions.application(request, context)
            let after = try request.nextToken()
            let page = try await store { () async throws(StoreError) in
                try await context.endpoints.list(applicationKey: app.key, after: after, limit: 100)
            }
            return XMLResponse { xml in
                xml.members("Endpoints", page.items) { xml, endpoint in
                    xml.element("EndpointArn", endpointARN(request, endpoint))
                    xml.entries("Attributes", visibleAttributes(endpoint))
                }
                xml.nextToken(page.next)
            }
        }
    }

    static func endpointARN(_ request: SNSRequest, _ record: EndpointRecord) -> String {
        SNSARN.endpoint(record.region, request.caller.accountID, platform: record.platform,
                        application: record.applicationName, id: record.externalID)
    }

    static func visibleAttributes(_ record: EndpointRecord) -> [String: String] {
        var out = ["Token": WebPushRules.shownToken(record.token, platform: record.platform), "Enabled": record.enabled ? "true" : "false"]
        if let data = record.customUserData { out["CustomUserData"] = data }
        if let zone = record.attributes[timeZoneAttribute] { out[timeZoneAttribute] = zone }
        out.merge(PlatformApplicationActions.disabledAttributes(enabled: record.enabled, reason: record.disabledReason,
                                                                at: record.disabledAt)) { $1 }
        return out
    }

    /// The endpoint named by `EndpointArn` (or `parameter`), in the caller's account, or NotFound.
    static func endpoint(_ request: SNSRequest, _ context: SNSActionContext, parameter: String = "EndpointArn",
                         value: String? = nil) async throws(SNSError) -> EndpointRecord {
        let arn: SNSARN
        if let value { arn = try request.arn(parameter, value: value) } else { arn = try request.arn(parameter) }
        guard case .endpoint(let platform, let application, let id) = arn.resource else {
            throw SNSError.noSuchResource(parameter: parameter)
        }
        let account = try await context.accountKey(request.caller)
        let record = try await store(notFound: notFound) { () async throws(StoreError) in try await context.endpoints.get(externalID: id) }
        guard record.platform == platform, record.applicationName == application, record.accountKey == account,
              record.region == request.region else { throw notFound }
        return record
    }

    /// SNS's token rules: present; APNs tokens are hexadecimal, at most 400 characters, stored lower-case.
    static func normalizedToken(_ token: String, platform: String) throws(SNSError) -> String {
        let trimmed = token.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty else { throw SNSError.invalidParameter("Token", reason: "Token is not specified") }
        if platform.hasPrefix("APNS") {
            guard trimmed.utf8.allSatisfy({ $0.isHexDigit }) else {
                throw SNSError.invalidParameter("Token", reason: "iOS device tokens must be hexadecimal characters")
            }
            guard trimmed.utf8.count <= 400 else {
                throw SNSError.invalidParameter("Token", reason: "iOS device tokens must be no more than 400 hexadecimal characters")
            }
            return trimmed.lowercased()
        }
        if platform == "WEBPUSH" {
            // The browser's PushSubscription JSON, checked and stored canonically (docs/providers.md W.3).
            do throws(WebPushRules.RuleError) {
                return try WebPushRules.canonicalToken(trimmed)
            } catch {
                throw SNSError.invalidParameter("Token", reason: error.reason)
            }
        }
        guard trimmed.utf8.count <= 4096 else {
            throw SNSError.invalidParameter("Token", reason: "Token must be at most 4096 bytes long")
        }
        return trimmed
    }

    static func checkCustomUserData(_ data: String?) throws(SNSError) {
        guard let data, data.utf8.count > customUserDataLimit else { return }
        throw SNSError.invalidParameter("CustomUserData", reason: "must be at most \(customUserDataLimit) bytes long in UTF-8 encoding")
    }
}

extension UInt8 {
    var isHexDigit: Bool {
        (self >= 0x30 && self <= 0x39) || (self >= 0x41 && self <= 0x46) || (self >= 0x61 && self <= 0x66)
    }
}
