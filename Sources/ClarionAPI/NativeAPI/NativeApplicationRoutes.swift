import ClarionCore
import ClarionStore
import Foundation
import ClarionHTTP1

/// Platform applications and their endpoints under `/v1`.
enum NativeApplicationRoutes {
    /// The reason recorded when a client disables an application or endpoint (the SNS actions' wording).
    static let disabledReason = "set by the API"

    static func register(on routes: inout Router, context c: NativeAPIContext) {
        routes.add(.post, "/v1/applications", errorFormat: .json, .json { request throws(JSONAPIError) in
            let caller = try await c.caller(request)
            let body = try NativeFields.body(request)
            try body.allowOnly(["name", "platform", "credential", "principal", "attributes", "enabled"])
            let name = try body.requiredString("name")
            guard NativeID.isApplicationName(name) else {
                throw JSONAPIError.invalidField("name", "The field 'name' must be 1 to 256 of A-Z, a-z, 0-9, '_', '-', '.'.")
            }
            let platform = try body.requiredString("platform")
            guard NativeID.platforms.contains(platform) else {
                throw JSONAPIError.invalidField("platform", "The field 'platform' must be one of \(NativeID.platforms.joined(separator: ", ")).")
            }
            var credentials = try NativeRules.credentials(body)
            var attributes = try NativeRules.applicationAttributes(try body.stringMap("attributes") ?? [:], caller, platform: platform,
                                                                   credential: credentials.credential, principal: credentials.principal)
            if platform == "WEBPUSH" {
                let existing = try? await c.applications.get(accountKey: caller.accountKey, region: caller.region, platform: platform, name: name)
                try NativeRules.webPushCredentials(&credentials, &attributes, existing: existing)
            }
            try NativeRules.requireCredentials(credentials, platform: platform)
            try await NativeRules.checkEventTopics(attributes, caller, c.topics)
            let expiresAt = try NativeRules.checkAPNsCertificate(credentials, platform: platform, c.settingsCheck)
            try NativeRules.checkConnection(platform: platform, attributes: attributes, credentials: credentials, c.settingsCheck)
            attributes.merge(PlatformApplicationActions.certificateExpiry(given: credentials, expiresAt: expiresAt, platform: platform)) { $1 }
            let enabled = try body.bool("enabled")
            do throws(StoreError) {
                var (record, created) = try await c.applications.createOrUpdate(
                    accountKey: caller.accountKey, region: caller.region, name: name, platform: platform, credentials: credentials,
                    attributes: attributes)
                if let enabled, enabled != record.enabled {
                    record = try await c.applications.update(applicationKey: record.key, enabled: enabled,
                                                             disabledReason: enabled ? nil : disabledReason)
                }
                return NativeResponse.json(render(record, caller), status: created ? 201 : 200)
            } catch {
                throw JSONAPIError.store(error)
            }
        })

        routes.add(.get, "/v1/applications", errorFormat: .json, .json { request throws(JSONAPIError) in
            let caller = try await c.caller(request)
            let paging = try NativePaging.parse(request)
            do throws(StoreError) {
                let page = try await c.applications.list(accountKey: caller.accountKey, region: caller.region, after: paging.after, limit: paging.limit)
                return NativeResponse.page(page) { render($0, caller) }
            } catch {
                throw JSONAPIError.store(error)
            }
        })

        routes.add(.get, "/v1/applications/{id}", errorFormat: .json, .json { request throws(JSONAPIError) in
            let caller = try await c.caller(request)
            let record = try await c.application(request.pathParameters["id"] ?? "", caller, field: "id")
            return NativeResponse.json(render(record, caller))
        })

        routes.add(.patch, "/v1/applications/{id}", errorFormat: .json, .json { request throws(JSONAPIError) in
            let caller = try await c.caller(request)
            let record = try await c.application(request.pathParameters["id"] ?? "", caller, field: "id")
            let body = try NativeFields.body(request)
            try body.allowOnly(["credential", "principal", "attributes", "enabled"])
            var credentials = try NativeRules.credentials(body)
            var attributes = try NativeRules.applicationAttributes(try body.stringMap("attributes") ?? [:], caller,
                                                                   platform: record.platform, credential: credentials.credential,
                                                                   principal: credentials.principal)
            try await NativeRules.checkEventTopics(attributes, caller, c.topics)
            if record.platform == "WEBPUSH" { try NativeRules.webPushCredentials(&credentials, &attributes, existing: record) }
            let completed: PlatformCredentials
            do throws(StoreError) {
                completed = try await PlatformApplicationActions.completed(credentials, record, c.applications)
            } catch {
                throw JSONAPIError.store(error, notFound: .notFound("No platform application '\(request.pathParameters["id"] ?? "")'.", field: "id"))
            }
            let expiresAt = try NativeRules.checkAPNsCertificate(completed, platform: record.platform, c.settingsCheck)
            attributes.merge(PlatformApplicationActions.certificateExpiry(given: credentials, expiresAt: expiresAt,
                                                                          platform: record.platform)) { $1 }
            let after: PlatformCredentials
            do throws(StoreError) {
                after = try await PlatformApplicationActions.merged(credentials, record, c.applications)
            } catch {
                throw JSONAPIError.store(error, notFound: .notFound("No platform application '\(request.pathParameters["id"] ?? "")'.", field: "id"))
            }
            try NativeRules.checkConnection(platform: record.platform, attributes: record.attributes.merging(attributes) { $1 },
                                            credentials: after, c.settingsCheck)
            let enabled = try body.bool("enabled")
            do throws(StoreError) {
                let updated = try await c.applications.update(
                    applicationKey: record.key, attributes: attributes, credentials: credentials, enabled: enabled,
                    disabledReason: enabled == false ? disabledReason : nil)
                return NativeResponse.json(render(updated, caller))
            } catch {
                throw JSONAPIError.store(error, notFound: .notFound("No platform application '\(request.pathParameters["id"] ?? "")'.", field: "id"))
            }
        })

        routes.add(.delete, "/v1/applications/{id}", errorFormat: .json, .json { request throws(JSONAPIError) in
            let caller = try await c.caller(request)
            let record: PlatformApplicationRecord
            do throws(JSONAPIError) {
                record = try await c.application(request.pathParameters["id"] ?? "", caller, field: "id")
            } catch where error.status == 404 {
                return NativeResponse.noContent
            }
            do throws(StoreError) {
                try await c.applications.delete(applicationKey: record.key)
                // Tags are keyed by ARN, not by a foreign key: drop the application's and its endpoints', as SNS does.
                try await c.tags.removeAll(resourceARN: NativeID.arn(record, caller))
                let endpointARN = SNSARN.endpoint(caller.region, caller.accountID, platform: record.platform,
                                                  application: record.name, id: UUID())
                try await c.tags.removeAll(resourceARNPrefix: String(endpointARN.dropLast(36)))
            } catch {
                throw JSONAPIError.store(error)
            }
            return NativeResponse.noContent
        })

        NativeEndpointRoutes.register(on: &routes, context: c)
    }

    static func render(_ record: PlatformApplicationRecord, _ caller: NativeCaller) -> JSONValue {
        [
            "id": .string(NativeID.applicationID(platform: record.platform, name: record.name)),
            "arn": .string(NativeID.arn(record, caller)),
            "name": .string(record.name),
            "platform": .string(record.platform),
            "enabled": .bool(record.enabled),
            "disabled_reason": NativeResponse.text(record.disabledReason),
            "disabled_at": NativeResponse.time(record.disabledAt),
            // SNS's visible attributes (never the credential pair; AuthenticationMethod for APNs); Enabled,
            // DisabledReason and DisabledAt are fields of their own.
            "attributes": NativeResponse.map(PlatformApplicationActions.visibleAttributes(record).filter {
                $0.key != "Enabled" && !PlatformApplicationActions.disabledAttributeNames.contains($0.key)
            }),
            "created_at": NativeResponse.time(record.createdAt),
            "updated_at": NativeResponse.time(record.updatedAt),
        ]
    }
}

/// Endpoints: created under their application (idempotently, SNS's rule), then addressed by their own id.
enum NativeEndpointRoutes {
    /// Device and app facts a client may keep on an endpoint. The repository has no columns for them yet, so
    /// they live in the endpoint's attribute map under these names (shared with SNS's GetEndpointAttributes).
    static let deviceFields: [(field: String, attribute: String)] = [
        ("app_version", "AppVersion"), ("language", "Language"), ("os_type", "OSType"), ("os_version", "OSVersion"),
        ("device_manufacturer", "DeviceManufacturer"), ("device_model", "DeviceModel"),
    ]
    static let userIDLimit = 256
    /// Every field a create or PATCH takes (the OpenAPI document's `EndpointCreate` lists exactly these).
    static let acceptedFields = Set(["token", "enabled", "custom_user_data", "user_id", "time_zone"] + deviceFields.map(\.field))

    static func register(on routes: inout Router, context c: NativeAPIContext) {
        routes.add(.post, "/v1/applications/{id}/endpoints", errorFormat: .json, .json { request throws(JSONAPIError) in
            let caller = try await c.caller(request)
            let application = try await c.application(request.pathParameters["id"] ?? "", caller, field: "id")
            let body = try NativeFields.body(request)
            try body.allowOnly(acceptedFields)
            let token = try NativeRules.token(try body.requiredString("token"), platform: application.platform)
            var new = NewEndpoint(applicationKey: application.key, token: token)
            new.customUserData = try body.string("custom_user_data")
            try NativeRules.customUserData(new.customUserData)
            new.enabled = try body.bool("enabled")
            new.userID = try checkedUserID(try body.string("user_id", maxBytes: userIDLimit))
            // Device facts are the latest report, not part of the endpoint's identity: they do not take part in
            // SNS's same-token rule (an app update re-registering with a new app_version is the same endpoint),
            // and are written after the create decided.
            var facts: [String: String] = [:]
            for (field, attribute) in deviceFields {
                if let value = try body.string(field, maxBytes: 256) { facts[attribute] = value }
            }
            if let zone = try timeZone(body) { facts[timeZoneAttribute] = zone }
            let creation: EndpointCreation
            do throws(StoreError) {
                creation = try await c.endpoints.create(new, externalID: c.makeID())
            } catch {
                throw JSONAPIError.store(error)
            }
            var (record, status): (EndpointRecord, Int)
            switch creation {
            case .created(let created): (record, status) = (created, 201)
            case .existing(let existing): (record, status) = (existing, 200)
            case .conflict(let existing):
                throw JSONAPIError.conflict(
                    "Endpoint \(NativeID.uuidText(existing.externalID)) already exists with the same token, but different attributes.",
                    field: "token")
            }
            if facts.contains(where: { record.attributes[$0.key] != $0.value }) {
                do throws(StoreError) {
                    record = try await c.endpoints.update(externalID: record.externalID, EndpointChanges(attributes: facts))
                } catch {
                    throw JSONAPIError.store(error)
                }
            }
            return NativeResponse.json(render(record, caller), status: status)
        })

        routes.add(.get, "/v1/applications/{id}/endpoints", errorFormat: .json, .json { request throws(JSONAPIError) in
            let caller = try await c.caller(request)
            let application = try await c.application(request.pathParameters["id"] ?? "", caller, field: "id")
            let paging = try NativePaging.parse(request)
            do throws(StoreError) {
                let page = try await c.endpoints.list(applicationKey: application.key, after: paging.after, limit: paging.limit)
                return NativeResponse.page(page) { render($0, caller) }
            } catch {
                throw JSONAPIError.store(error)
            }
        })

        routes.add(.get, "/v1/endpoints/{id}", errorFormat: .json, .json { request throws(JSONAPIError) in
            let caller = try await c.caller(request)
            let record = try await c.endpoint(request.pathParameters["id"] ?? "", caller, field: "id")
            return NativeResponse.json(render(record, caller))
        })

        routes.add(.patch, "/v1/endpoints/{id}", errorFormat: .json, .json { request throws(JSONAPIError) in
            let caller = try await c.caller(request)
            let record = try await c.endpoint(request.pathParameters["id"] ?? "", caller, field: "id")
            let body = try NativeFields.body(request)
            try body.allowOnly(acceptedFields)
            var changes = EndpointChanges()
            if let token = try body.string("token") { changes.token = try NativeRules.token(token, platform: record.platform) }
            changes.enabled = try body.bool("enabled")
            if changes.enabled == false { changes.disabledReason = NativeApplicationRoutes.disabledReason }
            changes.customUserData = try body.nullableString("custom_user_data")
            if case .some(let data) = changes.customUserData { try NativeRules.customUserData(data) }
            if let user = try body.nullableString("user_id", maxBytes: userIDLimit) {
                changes.userID = .some(try checkedUserID(user))
            }
            for (field, attribute) in deviceFields {
                if let value = try body.string(field, maxBytes: 256) { changes.attributes[attribute] = value }
            }
            if let zone = try timeZone(body) { changes.attributes[timeZoneAttribute] = zone }
            do throws(StoreError) {
                let updated = try await c.endpoints.update(externalID: record.externalID, changes)
                return NativeResponse.json(render(updated, caller))
            } catch {
                if error.code == .uniqueViolation {
                    throw JSONAPIError.conflict("Another endpoint of this application has this token.", field: "token")
                }
                throw JSONAPIError.store(error, notFound: .notFound("No endpoint '\(request.pathParameters["id"] ?? "")'.", field: "id"))
            }
        })

        routes.add(.delete, "/v1/endpoints/{id}", errorFormat: .json, .json { request throws(JSONAPIError) in
            let caller = try await c.caller(request)
            let record: EndpointRecord
            do throws(JSONAPIError) {
                record = try await c.endpoint(request.pathParameters["id"] ?? "", caller, field: "id")
            } catch where error.status == 404 {
                return NativeResponse.noContent
            }
            do throws(StoreError) {
                try await c.endpoints.delete(externalID: record.externalID)
                try await c.tags.removeAll(resourceARN: NativeID.arn(record, caller))
            } catch {
                throw JSONAPIError.store(error)
            }
            return NativeResponse.noContent
        })
    }

    /// The endpoint's IANA time zone (`time_zone`; schema v22): the `TimeZone` entry of its attribute map, which
    /// the dispatcher reads for `send_at_local` and quiet hours and SNS's GetEndpointAttributes shows.
    static let timeZoneAttribute = EndpointAttribute.timeZone

    /// `time_zone`, checked with Foundation's `TimeZone(identifier:)` (ClarionCore `TimeZoneName`); nil when absent.
    static func timeZone(_ body: NativeFields) throws(JSONAPIError) -> String? {
        guard let name = try body.string("time_zone", maxBytes: TimeZoneName.maximumLength + 1) else { return nil }
        guard TimeZoneName.zone(name) != nil else { throw LocalTimingRequest.invalidZone("time_zone", name) }
        return name
    }

    static func checkedUserID(_ user: String?) throws(JSONAPIError) -> String? {
        if let user, user.isEmpty { throw JSONAPIError.invalidField("user_id", "The field 'user_id' must not be empty; use null to clear it.") }
        return user
    }

    static func render(_ record: EndpointRecord, _ caller: NativeCaller) -> JSONValue {
        var object = JSONObject([
            ("id", .string(NativeID.uuidText(record.externalID))),
            ("arn", .string(NativeID.arn(record, caller))),
            ("application", .string(NativeID.applicationID(platform: record.platform, name: record.applicationName))),
            ("token", .string(WebPushRules.shownToken(record.token, platform: record.platform))),
            ("enabled", .bool(record.enabled)),
            ("disabled_reason", NativeResponse.text(record.disabledReason)),
            ("disabled_at", NativeResponse.time(record.disabledAt)),
            ("custom_user_data", NativeResponse.text(record.customUserData)),
            ("user_id", NativeResponse.text(record.userID)),
        ])
        for (field, attribute) in deviceFields { object[field] = NativeResponse.text(record.attributes[attribute]) }
        object["time_zone"] = NativeResponse.text(record.attributes[timeZoneAttribute])
        object["created_at"] = NativeResponse.time(record.createdAt)
        object["updated_at"] = NativeResponse.time(record.updatedAt)
        return .object(object)
    }
}
