import ClarionCore
import ClarionCrypto
import ClarionHTTP1
import ClarionStore
import Foundation

/// Why a mobile-app operation was refused, for the API and `clarion apps` alike.
public struct MobileAppAdminError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable {
        case invalidField, notFound, conflict, unavailable, internalError
    }

    public let code: Code
    public let message: String
    /// The input at fault (`fcm_application`).
    public let field: String?
    /// Why an internal error happened, for the log.
    public var cause: String?

    public init(_ code: Code, _ message: String, field: String? = nil) {
        self.code = code
        self.message = message
        self.field = field
    }

    public var description: String { message }

    static func store(_ error: StoreError, notFound: MobileAppAdminError) -> MobileAppAdminError {
        switch error.code {
        case .notFound: return notFound
        case .uniqueViolation: return MobileAppAdminError(.conflict, "A mobile app with this name exists.", field: "name")
        case _ where error.isTransient:
            return MobileAppAdminError(.unavailable, "The store is unavailable; retry later.")
        default:
            var failure = MobileAppAdminError(.internalError, "The store could not complete the operation.")
            failure.cause = error.logText
            return failure
        }
    }

    var apiError: JSONAPIError {
        switch code {
        case .invalidField: JSONAPIError.invalidField(field ?? "", message)
        case .notFound: JSONAPIError.notFound(message, field: field)
        case .conflict: JSONAPIError.conflict(message, field: field)
        case .unavailable: JSONAPIError.serviceUnavailable(message)
        case .internalError: JSONAPIError.internalError(cause: cause ?? message)
        }
    }
}

/// Mobile apps and their registration API tokens: what `POST /v1/mobile-apps` and `clarion apps` both call.
/// Platform applications are named as in the native API (`APNS:chat`, `GCM:chat`, `ADM:chat`).
public struct MobileAppAdmin: Sendable {
    public let apps: MobileAppRepository
    public let accounts: AccountRepository
    public let applications: PlatformApplicationRepository
    /// The region of the platform applications a mobile app names: the node's configured region, as in the native API.
    public let region: String

    public init(pool: PGPool, masterKey: AESGCMKey, region: String = "us-east-1") {
        self.region = region
        self.apps = MobileAppRepository(pool: pool, masterKey: masterKey)
        self.accounts = AccountRepository(pool: pool, masterKey: masterKey)
        self.applications = PlatformApplicationRepository(pool: pool, masterKey: masterKey)
    }

    /// Creates a mobile app in the account (created when missing, as the CLI's other commands do).
    /// `eventsRequireAPIToken` (off by default) and `eventsRequireAPITokenForUserChange` (on by default) are the
    /// event collector's settings (docs/security.md).
    public func createApp(accountID: String, name: String, apnsApplication: String? = nil, fcmApplication: String? = nil,
                          admApplication: String? = nil, firebaseProjectID: String? = nil,
                          dryRunValidation: Bool = false, eventsRequireAPIToken: Bool = false,
                          eventsRequireAPITokenForUserChange: Bool = true,
                          webPushApplication: String? = nil) async throws(MobileAppAdminError) -> MobileAppRecord {
        guard !name.isEmpty, name.utf8.count <= 256 else {
            throw MobileAppAdminError(.invalidField, "The name must be 1 to 256 bytes.", field: "name")
        }
        let account: AccountRecord
        do { account = try await accounts.ensureAccount(accountID: accountID) } catch {
            throw .store(error, notFound: MobileAppAdminError(.notFound, "No account \(accountID)."))
        }
        let apns = try await application(apnsApplication, platforms: ["APNS", "APNS_SANDBOX"], field: "apns_application", account: account.key)
        let fcm = try await application(fcmApplication, platforms: ["GCM"], field: "fcm_application", account: account.key)
        let adm = try await application(admApplication, platforms: ["ADM"], field: "adm_application", account: account.key)
        let webPush = try await application(webPushApplication, platforms: ["WEBPUSH"], field: "webpush_application", account: account.key)
        do {
            return try await apps.create(accountKey: account.key, NewMobileApp(
                name: name, apnsApplication: apns, fcmApplication: fcm, admApplication: adm,
                firebaseProjectID: firebaseProjectID, dryRunValidation: dryRunValidation,
                eventsRequireAPIToken: eventsRequireAPIToken, eventsRequireAPITokenForUserChange: eventsRequireAPITokenForUserChange,
                webPushApplication: webPush))
        } catch {
            throw .store(error, notFound: MobileAppAdminError(.notFound, "A platform application does not exist."))
        }
    }

    /// The account's mobile apps and platform applications with their state (`MobileAppRepository.listing`).
    public func listing(accountID: String) async throws(MobileAppAdminError) -> [MobileAppListingRow] {
        do {
            let account = try await accounts.ensureAccount(accountID: accountID)
            return try await apps.listing(accountKey: account.key)
        } catch {
            throw .store(error, notFound: MobileAppAdminError(.notFound, "No account \(accountID)."))
        }
    }

    /// The account's app.
    public func app(accountID: String, app: UUID) async throws(MobileAppAdminError) -> MobileAppRecord {
        do {
            let account = try await accounts.account(accountID: accountID)
            return try await apps.get(externalID: app, accountKey: account.key)
        } catch {
            throw .store(error, notFound: MobileAppAdminError(.notFound, "No mobile app \(app.lowercasedText).", field: "id"))
        }
    }

    /// Changes the app's settings (nil ones stay) and returns it.
    public func updateApp(accountID: String, app: UUID, _ changes: MobileAppChanges) async throws(MobileAppAdminError) -> MobileAppRecord {
        do {
            let account = try await accounts.account(accountID: accountID)
            return try await apps.update(externalID: app, accountKey: account.key, changes)
        } catch {
            throw .store(error, notFound: MobileAppAdminError(.notFound, "No mobile app \(app.lowercasedText).", field: "id"))
        }
    }

    /// A new API token for the app; the plaintext is in the result only.
    public func createToken(accountID: String, app: UUID) async throws(MobileAppAdminError) -> NewMobileAppToken {
        let notFound = MobileAppAdminError(.notFound, "No mobile app \(app.lowercasedText).", field: "id")
        do {
            let account = try await accounts.account(accountID: accountID)
            let record = try await apps.get(externalID: app, accountKey: account.key)
            return try await apps.createToken(appKey: record.key)
        } catch {
            throw .store(error, notFound: notFound)
        }
    }

    /// Revokes a token: registrations presenting it are refused from then on (ApiTokenNotValid for pending ones).
    public func revokeToken(accountID: String, app: UUID, tokenID: Int64) async throws(MobileAppAdminError) {
        do {
            let account = try await accounts.account(accountID: accountID)
            let record = try await apps.get(externalID: app, accountKey: account.key)
            try await apps.revokeToken(id: tokenID, appKey: record.key)
        } catch {
            throw .store(error, notFound: MobileAppAdminError(.notFound, "No such mobile app or token.", field: "id"))
        }
    }

    private func application(_ id: String?, platforms: Set<String>, field: String, account: Int64) async throws(MobileAppAdminError) -> Int64? {
        guard let id else { return nil }
        guard let colon = id.firstIndex(of: ":"), platforms.contains(String(id[..<colon])) else {
            throw MobileAppAdminError(.invalidField,
                                      "'\(field)' names a platform application as PLATFORM:name with PLATFORM one of \(platforms.sorted().joined(separator: ", ")).",
                                      field: field)
        }
        let platform = String(id[..<colon]), name = String(id[id.index(after: colon)...])
        do {
            return try await applications.get(accountKey: account, region: region, platform: platform, name: name).key
        } catch {
            throw .store(error, notFound: MobileAppAdminError(.notFound, "No platform application '\(id)'.", field: field))
        }
    }

    static func json(_ app: MobileAppRecord) -> JSONObject {
        JSONObject([("id", .string(app.externalID.lowercasedText)), ("name", .string(app.name)),
                    ("firebase_project_id", app.firebaseProjectID.map(JSONValue.string) ?? .null),
                    ("dry_run_validation", .bool(app.dryRunValidation)),
                    ("events_require_api_token", .bool(app.eventsRequireAPIToken)),
                    ("events_require_api_token_for_user_change", .bool(app.eventsRequireAPITokenForUserChange)),
                    ("frequency_cap", app.frequencyCap.map { cap in
                        .object(JSONObject([("max", .number(JSONNumber(cap.max))), ("window_seconds", .number(JSONNumber(cap.windowSeconds)))]))
                    } ?? .null),
                    ("quiet_hours", app.quietHours.map { quiet in
                        .object(JSONObject([("start", .string(quiet.start.description)), ("end", .string(quiet.end.description)),
                                            ("time_zone", app.quietTimeZone.map(JSONValue.string) ?? .null)]))
                    } ?? .null)])
    }
}

/// `POST /v1/mobile-apps`, `GET` and `PATCH /v1/mobile-apps/{id}`, `POST /v1/mobile-apps/{id}/tokens`,
/// `DELETE /v1/mobile-apps/{id}/tokens/{token}`, `POST /v1/publish/audience`: bearer-authenticated
/// with the account's API key, like the native API.
enum MobileAppRoutes {
    /// What `PATCH /v1/mobile-apps/{id}` changes. Unknown members are refused, so a misspelt security setting is
    /// an error rather than silently ignored.
    static let settable: Set<String> = ["dry_run_validation", "events_require_api_token", "events_require_api_token_for_user_change",
                                        "frequency_cap", "quiet_hours"]

    /// `frequency_cap` (`{"max": 1-1000, "window_seconds": 60-2592000}`) and `quiet_hours` (`{"start": "HH:MM",
    /// "end": "HH:MM", "time_zone"?: IANA name}`, start and end different) of a create or update, into `changes`;
    /// `null` removes one (schema v22; docs/api.md, "Local-time sends, frequency capping and quiet hours").
    static func timingChanges(_ body: JSONObject, into changes: inout MobileAppChanges) throws(JSONAPIError) {
        if let value = body["frequency_cap"] {
            let shape = "The field 'frequency_cap' must be null or {\"max\": 1 to 1000, \"window_seconds\": 60 to 2592000}."
            if value == .null {
                changes.frequencyCap = .some(nil)
            } else {
                guard let object = value.objectValue, object.count == 2, let max = object["max"]?.intValue,
                      let window = object["window_seconds"]?.intValue, let cap = FrequencyCap(max: max, windowSeconds: window) else {
                    throw JSONAPIError.invalidField("frequency_cap", shape)
                }
                changes.frequencyCap = .some(cap)
            }
        }
        if let value = body["quiet_hours"] {
            let shape = "The field 'quiet_hours' must be null or {\"start\": \"HH:MM\", \"end\": \"HH:MM\", \"time_zone\": an IANA name (optional)} with start and end different."
            if value == .null {
                changes.quietHours = .some(nil)
            } else {
                guard let object = value.objectValue, object.allSatisfy({ ["start", "end", "time_zone"].contains($0.key) }),
                      let start = object["start"]?.stringValue.flatMap(LocalClockTime.init),
                      let end = object["end"]?.stringValue.flatMap(LocalClockTime.init),
                      let quiet = QuietHours(start: start, end: end) else {
                    throw JSONAPIError.invalidField("quiet_hours", shape)
                }
                var zone: String?
                if let zoneValue = object["time_zone"], zoneValue != .null {
                    guard let name = zoneValue.stringValue, TimeZoneName.zone(name) != nil else {
                        throw LocalTimingRequest.invalidZone("quiet_hours.time_zone", zoneValue.stringValue ?? zoneValue.jsonText)
                    }
                    zone = name
                }
                changes.quietHours = .some((quiet, zone))
            }
        }
    }

    static func register(on router: inout Router, context c: RegistrationContext) {
        router.add(.post, "/v1/mobile-apps", maxBodyBytes: 64 * 1024, errorFormat: .json, .json { request throws(JSONAPIError) in
            let principal = try await c.authenticator.authenticate(request)
            let body = try RegistrationFields.object(try RegistrationFields.document(request), path: "")
            let name = try body.requiredString("name", maxLength: 256)
            let apns = try body.string("apns_application"), fcm = try body.string("fcm_application")
            let adm = try body.string("adm_application"), project = try body.string("firebase_project_id", maxLength: 256)
            let webPush = try body.string("webpush_application")
            let dryRun = try body.bool("dry_run_validation") ?? false
            let requireToken = try body.bool("events_require_api_token") ?? false
            let requireTokenForUserChange = try body.bool("events_require_api_token_for_user_change") ?? true
            var timing = MobileAppChanges()
            try timingChanges(body.object, into: &timing)
            do throws(MobileAppAdminError) {
                let app = try await c.admin.createApp(
                    accountID: principal.accountID, name: name, apnsApplication: apns, fcmApplication: fcm, admApplication: adm,
                    firebaseProjectID: project, dryRunValidation: dryRun, eventsRequireAPIToken: requireToken,
                    eventsRequireAPITokenForUserChange: requireTokenForUserChange, webPushApplication: webPush)
                if timing.frequencyCap != nil || timing.quietHours != nil {
                    return .json(MobileAppAdmin.json(try await c.admin.updateApp(accountID: principal.accountID, app: app.externalID, timing)).encoded(),
                                 status: 201)
                }
                return .json(MobileAppAdmin.json(app).encoded(), status: 201)
            } catch {
                throw error.apiError
            }
        })
        router.add(.get, "/v1/mobile-apps/{id}", maxBodyBytes: 0, errorFormat: .json, .json { request throws(JSONAPIError) in
            let principal = try await c.authenticator.authenticate(request)
            let id = try appID(request)
            do throws(MobileAppAdminError) {
                return .json(MobileAppAdmin.json(try await c.admin.app(accountID: principal.accountID, app: id)).encoded(), status: 200)
            } catch {
                throw error.apiError
            }
        })
        router.add(.patch, "/v1/mobile-apps/{id}", maxBodyBytes: 64 * 1024, errorFormat: .json, .json { request throws(JSONAPIError) in
            let principal = try await c.authenticator.authenticate(request)
            let id = try appID(request)
            let body = try RegistrationFields.object(try RegistrationFields.document(request), path: "")
            for member in body.object where !settable.contains(member.key) {
                throw JSONAPIError.invalidField(member.key, "Unknown field '\(member.key)'; settable: \(settable.sorted().joined(separator: ", ")).")
            }
            var changes = MobileAppChanges(dryRunValidation: try body.bool("dry_run_validation"),
                                           eventsRequireAPIToken: try body.bool("events_require_api_token"),
                                           eventsRequireAPITokenForUserChange: try body.bool("events_require_api_token_for_user_change"))
            try timingChanges(body.object, into: &changes)
            do throws(MobileAppAdminError) {
                let app = try await c.admin.updateApp(accountID: principal.accountID, app: id, changes)
                return .json(MobileAppAdmin.json(app).encoded(), status: 200)
            } catch {
                throw error.apiError
            }
        })
        router.add(.post, "/v1/mobile-apps/{id}/tokens", maxBodyBytes: 1024, errorFormat: .json, .json { request throws(JSONAPIError) in
            let principal = try await c.authenticator.authenticate(request)
            guard let id = UUID(text: request.pathParameters["id"] ?? "") else {
                throw JSONAPIError.notFound("No mobile app '\(request.pathParameters["id"] ?? "")'.", field: "id")
            }
            do throws(MobileAppAdminError) {
                let token = try await c.admin.createToken(accountID: principal.accountID, app: id)
                let body = JSONObject([("id", .string(String(token.id))), ("token", .string(token.token))])
                return .json(body.encoded(), status: 201)
            } catch {
                throw error.apiError
            }
        })
        router.add(.delete, "/v1/mobile-apps/{id}/tokens/{token}", maxBodyBytes: 0, errorFormat: .json, .json { request throws(JSONAPIError) in
            let principal = try await c.authenticator.authenticate(request)
            guard let id = UUID(text: request.pathParameters["id"] ?? ""),
                  let token = Int64(request.pathParameters["token"] ?? "") else {
                throw JSONAPIError.notFound("No such mobile app or token.", field: "id")
            }
            do throws(MobileAppAdminError) {
                try await c.admin.revokeToken(accountID: principal.accountID, app: id, tokenID: token)
                return HTTPResponse(status: 204)
            } catch {
                throw error.apiError
            }
        })
        router.add(.post, "/v1/publish/audience", maxBodyBytes: 256 * 1024, errorFormat: .json, .json { request throws(JSONAPIError) in
            let accountKey = try await c.accountKey(request)
            let body = try RegistrationFields.object(try RegistrationFields.document(request), path: "")
            let units = try await AudiencePublish.parse(body, accountKey: accountKey, context: c)
            do throws(StoreError) {
                guard let first = units.first, first.zone != nil else {
                    let message = units[0].message
                    let id = try await c.jobs.publish(message)
                    var answer = JSONObject([("message_id", .string(id.externalID.lowercasedText))])
                    if let requested = body.object["send_at"], requested != .null {
                        answer["state"] = .string(message.sendAt == nil ? MessageState.enqueued.rawValue : MessageState.scheduled.rawValue)
                        answer["send_at"] = message.sendAt.map { .string($0.formatted(.iso8601)) } ?? .null
                    }
                    return .json(answer.encoded(), status: 202)
                }
                // `send_at_local`: one scheduled message per zone, stored together (all or none).
                let ids = try await c.jobs.publish(units.map(\.message))
                let items: [JSONValue] = zip(units, ids).map { unit, id in
                    .object(JSONObject([("message_id", .string(id.externalID.lowercasedText)), ("time_zone", .string(unit.zone ?? "")),
                                        ("state", .string(MessageState.scheduled.rawValue)),
                                        ("send_at", unit.message.sendAt.map { .string($0.formatted(.iso8601)) } ?? .null)]))
                }
                return .json(JSONObject([("messages", .array(items))]).encoded(), status: 202)
            } catch {
                if error.code == .notFound { throw JSONAPIError.notFound("The mobile app has no platform application.", field: "app") }
                throw RegistrationFields.storeError(error)
            }
        })
    }

    static func appID(_ request: HTTPRequest) throws(JSONAPIError) -> UUID {
        guard let id = UUID(text: request.pathParameters["id"] ?? "") else {
            throw JSONAPIError.notFound("No mobile app '\(request.pathParameters["id"] ?? "")'.", field: "id")
        }
        return id
    }
}

/// The body of `POST /v1/publish/audience`:
/// `{"app": <mobile app id>, "user_id"?: text, "languages"?: [..], "os_types"?: [..], "app_version"?: {"min"?, "max"?},
///   "message": text | {"default": .., "APNS": .., "GCM": ..}, "ttl"?: seconds, "send_at"?: RFC 3339,
///   "frequency_cap"?: bool, "quiet_hours"?: "defer" | "skip" | "ignore", "fallback_time_zone"?: zone,
///   "send_at_local"?: "HH:MM"}`.
enum AudiencePublish {
    /// The messages of an audience publish: one (zone nil), or with `send_at_local` one per zone of the audience's
    /// devices, each due at that zone's next local time (as a topic's fan-out is planned, docs/api.md).
    static func parse(_ body: RegistrationFields, accountKey: Int64, context c: RegistrationContext) async throws(JSONAPIError)
        -> [(message: NewAudienceMessage, zone: String?)] {
        let appID = try body.requiredUUID("app")
        let app: MobileAppRecord
        do throws(StoreError) {
            app = try await c.apps.get(externalID: appID, accountKey: accountKey)
        } catch {
            if error.code == .notFound { throw JSONAPIError.notFound("No mobile app '\(appID.lowercasedText)'.", field: "app") }
            throw RegistrationFields.storeError(error)
        }
        let applications = [app.apnsApplication, app.fcmApplication, app.admApplication, app.webPushApplication].compactMap { $0 }
        guard !applications.isEmpty else { throw JSONAPIError.invalidField("app", "The mobile app has no platform application.") }
        let user = try body.string("user_id", maxLength: DeviceRegistrationRoutes.userIDLimit)
        let languages = try list(body, "languages")
        let osTypes = try list(body, "os_types")
        var minimum: String?, maximum: String?
        if let range = body.object["app_version"], range != .null {
            guard let object = range.objectValue else { throw JSONAPIError.invalidField("app_version", "'app_version' must be an object {\"min\", \"max\"}.") }
            let fields = RegistrationFields(object, path: "app_version")
            minimum = try fields.string("min", maxLength: 64)
            maximum = try fields.string("max", maxLength: 64)
            for (key, value) in [("min", minimum), ("max", maximum)] where value != nil && AudienceFilter.versionParts(value!) == nil {
                throw JSONAPIError.invalidField("app_version.\(key)", "'app_version.\(key)' must be a version such as 1.2.3.")
            }
        }
        guard let messageValue = body.object["message"], messageValue != .null else { throw JSONAPIError.missingField("message") }
        let text: String
        let structure: MessageStructure?
        switch messageValue {
        case .string(let plain): (text, structure) = (plain, nil)
        case .object(let map): (text, structure) = (map.jsonText, .json)
        default: throw JSONAPIError.invalidField("message", "'message' must be a string or an object of platform entries.")
        }
        do throws(MessageValidationError) {
            let parsed = try SNSMessage.parse(message: text, structure: structure, requireDefault: false)
            let records = await platforms(applications, context: c)
            for platform in records { try parsed.requireEntry(for: platform) }
        } catch {
            throw JSONAPIError.invalidField(error.key.map { "message.\($0)" } ?? "message", error.message)
        }
        let now = c.clock()
        if body.object["send_at_local"].map({ $0 != .null }) ?? false, body.object["send_at"].map({ $0 != .null }) ?? false {
            throw JSONAPIError.invalidField("send_at_local", "Give 'send_at' or 'send_at_local', not both.")
        }
        let sendAt = try ScheduledSend.resolve(try ScheduledSend.parse(body.object["send_at"]), now: now)
        var expiresAt: Date?
        if let ttl = body.object["ttl"], ttl != .null {
            guard let seconds = ttl.intValue, seconds >= 0, seconds <= 2_419_200 else {
                throw JSONAPIError.invalidField("ttl", "'ttl' must be an integer number of seconds from 0 to 2419200.")
            }
            // A scheduled message's TTL counts from when it is due.
            if seconds > 0 { expiresAt = (sendAt ?? now).addingTimeInterval(TimeInterval(seconds)) }
        }
        // The app's frequency cap and quiet hours (schema v22) as for any publish that is not a campaign: exempt
        // unless asked (`"frequency_cap": true`, `"quiet_hours": "defer"` or `"skip"`).
        let timing = try LocalTimingRequest.parse(NativeFields(body.object), isCampaign: false)
        let filter = AudienceFilter(applications: applications, userID: user, languages: languages, osTypes: osTypes,
                                    minimumAppVersion: minimum, maximumAppVersion: maximum)
        let pace = try PublishPace.parse(body.object["pace"])
        func message(zone: String?, at: Date?) -> NewAudienceMessage {
            var timed = timing
            timed.zone = zone
            let ttl = body.object["ttl"]?.intValue ?? 0
            // A zone's message is due at that zone's local time; its TTL counts from then.
            let expires = at.map { ttl > 0 ? $0.addingTimeInterval(TimeInterval(ttl)) : nil } ?? expiresAt
            return NewAudienceMessage(
                externalID: c.makeID(), accountKey: accountKey, filter: filter, message: text, structure: structure?.rawValue,
                attributesJSON: timed.isEmpty ? "{}" : NativePublishRoutes.storedAttributes([CampaignTiming.attributeName: timed.attributeValue()]),
                expiresAt: expires, sendAt: at ?? sendAt, pace: pace)
        }
        guard let local = timing.local else { return [(message(zone: nil, at: nil), nil)] }
        // `send_at_local`: planned per zone, not per device (one query for the zones), as a topic's fan-out.
        let fallback = timing.effectiveZoneName(nil)
        var zones: [String]
        do throws(StoreError) {
            zones = try await c.jobs.audienceZones(filter, fallback: fallback)
        } catch {
            throw RegistrationFields.storeError(error)
        }
        if zones.isEmpty { zones = [fallback] }
        return zones.map { zone in (message(zone: zone, at: local.next(after: now, in: TimeZoneName.zone(zone)!)), zone) }
    }

    static func list(_ body: RegistrationFields, _ key: String) throws(JSONAPIError) -> [String]? {
        guard let value = body.object[key], value != .null else { return nil }
        guard let items = value.arrayValue, !items.isEmpty, items.count <= 100 else {
            throw JSONAPIError.invalidField(key, "'\(key)' must be a non-empty array of strings.")
        }
        var out: [String] = []
        for (index, item) in items.enumerated() {
            guard let text = item.stringValue, !text.isEmpty, text.utf8.count <= 64 else {
                throw JSONAPIError.invalidField("\(key)[\(index)]", "'\(key)[\(index)]' must be a non-empty string.")
            }
            try NativeFields.checkStorable("\(key)[\(index)]", text)
            out.append(text)
        }
        return out
    }

    static func platforms(_ keys: [Int64], context c: RegistrationContext) async -> [Platform] {
        var out: [Platform] = []
        for key in keys {
            if let record = try? await c.applications.get(key: key), let platform = Platform(rawValue: record.platform) {
                out.append(platform)
            }
        }
        return out
    }
}
