import ClarionCore
import ClarionHTTP1
import ClarionStore
import Foundation

/// The mobile event collector: `POST /meiro_mobile` and `POST /v1/events`.
///
/// Two event types are understood, `fcm_registration_token_registered` and `fcm_registration_token_refreshed`;
/// both create or update the FCM endpoint of the mobile app whose Firebase project id matches. Every refusal is
/// `{"message": "<kind>: ...", "status": "error"}`: `400 validation: <field> ...` naming the first field at fault,
/// in the order the fields are listed in `MobileEvent.parse`; `401 authentication: ...` for a missing (when the
/// app requires it) or wrong API token; `403 authorization: ...` for a token move to another user that needs one.
///
/// The route is public because the mobile SDK calls it without credentials; an app's settings decide how much an
/// anonymous caller may do (docs/security.md, "The public event collector"). `Authorization: Bearer <API token>`
/// (a token of the app the event is routed to) authenticates an event; every reassignment of a device token to
/// another `user_id`, made or refused, is logged as a warning and counted in `RegistrationContext.eventCounters`.
enum MobileEventRoutes {
    static let paths = ["/meiro_mobile", "/v1/events"]
    static let bodyLimit = 64 * 1024
    static let log = Log("clarion.events")

    static func register(on router: inout Router, context c: RegistrationContext) {
        for path in paths {
            router.add(.post, path, maxBodyBytes: bodyLimit, errorFormat: .json, .task { request in
                await handle(request, context: c)
            })
        }
    }

    static func handle(_ request: HTTPRequest, context c: RegistrationContext) async -> HTTPResponse {
        let event: MobileEvent
        do {
            event = try MobileEvent.parse(request.body)
        } catch {
            return answer(400, message: "validation: " + error.text, field: error.field)
        }
        let apps: [MobileAppRecord]
        do {
            apps = try await c.apps.find(firebaseProjectID: event.firebaseProjectID).filter { $0.fcmApplication != nil }
        } catch {
            return answer(503, message: "the store is unavailable; retry later")
        }
        // Several apps may share a Firebase project: the one named by app.id when it is a mobile app id, else the oldest.
        guard let app = apps.first(where: { $0.externalID.lowercasedText == event.appID.lowercased() }) ?? apps.first,
              let application = app.fcmApplication else {
            return answer(404, message: "firebase.project_id does not match any mobile app with an FCM application")
        }
        let authenticated: Bool
        switch presentedToken(request) {
        case nil:
            guard !app.eventsRequireAPIToken else {
                return answer(401, message: "authentication: this mobile app requires its API token (Authorization: Bearer <token>)")
            }
            authenticated = false
        case let token?:
            do {
                guard let token, try await c.registrations.authenticate(appKey: app.key, apiToken: token) != nil else {
                    return answer(401, message: "authentication: the API token is not valid for this mobile app")
                }
            } catch {
                return storeFailure(error)
            }
            authenticated = true
        }
        var report = MobileDeviceReport(
            userID: event.userID, token: event.registrationToken, appVersion: event.appVersion, language: event.language,
            osType: event.osType, osVersion: event.osVersion, manufacturer: event.manufacturer, model: event.model,
            refreshedAt: event.refreshedAt)
        report.timeZone = event.timeZone
        let change: MobileDeviceChange
        do {
            change = try await c.devices.record(applicationKey: application, report,
                                                allowUserChange: authenticated || !app.eventsRequireAPITokenForUserChange)
        } catch {
            return storeFailure(error)
        }
        switch change {
        case .reassigned(_, let previous):
            c.eventCounters.countReassignment(allowed: true)
            log.warning("event token reassigned", reassignmentFields(app, event, from: previous, authenticated: authenticated))
        case .reassignmentRefused(_, let current):
            c.eventCounters.countReassignment(allowed: false)
            log.warning("event token reassignment refused", reassignmentFields(app, event, from: current, authenticated: authenticated))
            return answer(403, message: "authorization: firebase.registration_token is bound to another user_id; "
                                        + "moving it needs the mobile app's API token (Authorization: Bearer <token>)")
        case .created, .updated, .tokenReplaced:
            break
        }
        return .json(Array(#"{"status":"ok"}"#.utf8), status: 200)
    }

    /// The bearer token of the request: nil without an `Authorization` header, `.some(nil)` when the header is
    /// not `Bearer <token>` (refused like a wrong token rather than ignored).
    static func presentedToken(_ request: HTTPRequest) -> String?? {
        guard let header = request.headers["Authorization"] else { return nil }
        let value = header.trimmingCharacters(in: .whitespaces)
        guard let space = value.firstIndex(of: " "), value[..<space].lowercased() == "bearer" else { return .some(nil) }
        let token = value[space...].trimmingCharacters(in: .whitespaces)
        return .some(token.isEmpty ? nil : token)
    }

    /// The fields of a reassignment's log line: the app, the device token as a short prefix only, both users.
    static func reassignmentFields(_ app: MobileAppRecord, _ event: MobileEvent, from: String,
                                   authenticated: Bool) -> [String: String] {
        ["app": app.externalID.lowercasedText, "token": Log.tokenPrefix(event.registrationToken),
         "from_user": from, "to_user": event.userID, "authenticated": authenticated ? "true" : "false",
         "event_type": event.eventType.rawValue]
    }

    static func storeFailure(_ error: StoreError) -> HTTPResponse {
        switch error.code {
        case _ where error.isTransient:
            return answer(503, message: "the store is unavailable; retry later")
        default:
            return answer(500, message: "the device could not be stored")
        }
    }

    /// `{"message", "status": "error"}`, the collector's shape, and for a field at fault its full path in `field`
    /// (the collector's clients ignore members they do not know).
    static func answer(_ status: Int, message: String, field: String? = nil) -> HTTPResponse {
        var members: [(String, JSONValue)] = [("message", .string(message)), ("status", .string("error"))]
        if let field { members.append(("field", .string(field))) }
        return .json(JSONObject(members).encoded(), status: status)
    }
}

/// Why an event was refused: the text after `validation: `, and the full path of the field at fault.
///
/// The text names the property by its own name, as the event collector writes it (`registration_token is required
/// property` for `firebase.registration_token`); SDKs and their tests match these messages. The path goes in the
/// answer's `field` member.
package struct MobileEventError: Error, Sendable, Equatable {
    let text: String
    /// `firebase.registration_token`; nil when the body as a whole is at fault.
    let field: String?

    init(text: String, field: String? = nil) {
        self.text = text
        self.field = field
    }

    /// `field`'s own name: the last component of its path.
    static func property(_ path: String) -> String { String(path.split(separator: ".").last ?? Substring(path)) }

    static func required(_ path: String) -> MobileEventError {
        MobileEventError(text: "\(property(path)) is required property", field: path)
    }

    static func type(_ path: String, _ type: String) -> MobileEventError {
        MobileEventError(text: "\(property(path)) must be \(type)", field: path)
    }

    /// A body the JSON parser refused. Bad syntax keeps the collector's one wording; text that is not UTF-8, an
    /// unpaired surrogate escape and the JSON limits (docs/api.md) say which.
    static func body(_ error: JSONParseError) -> MobileEventError {
        switch error.code {
        case .invalidUTF8: MobileEventError(text: "request body must be valid UTF-8 (byte \(error.offset))")
        case .unpairedSurrogate:
            MobileEventError(text: "request body must not contain an unpaired UTF-16 surrogate escape (byte \(error.offset))")
        case .tooManyMembers:
            MobileEventError(text: "request body must have at most \(JSONValue.maximumObjectMembers) members in an object")
        case .tooManyValues: MobileEventError(text: "request body must have at most \(JSONValue.maximumValues) values")
        case .nestingTooDeep:
            MobileEventError(text: "request body must not nest arrays and objects more than \(JSONValue.maximumNestingDepth) deep")
        default: MobileEventError(text: "request body must be a JSON object")
        }
    }
}

/// A validated FCM token event.
package struct MobileEvent: Sendable, Equatable {
    enum EventType: String, CaseIterable, Sendable {
        case registered = "fcm_registration_token_registered"
        case refreshed = "fcm_registration_token_refreshed"
    }

    package static let osTypes = ["android", "ios"]

    package var userID: String
    var eventType: EventType
    var timestamp: Date
    var appID: String
    var appVersion: String
    package var language: String?
    /// `app.time_zone`: an IANA name (schema v22), the endpoint's `TimeZone`.
    package var timeZone: String? = nil
    package var osType: String
    var osVersion: String?
    var manufacturer: String?
    var model: String?
    package var firebaseProjectID: String
    package var registrationToken: String
    /// The refresh timestamp for a refresh, the event time for a registration.
    var refreshedAt: Date

    /// Validates in a fixed order: user_id, event_type, event_timestamp, version, session_id, event_data (and, for
    /// a refresh, its fcm_registration_token_refresh_timestamp), app (id, name, version, language), os (type,
    /// version), device (manufacturer, model), firebase (project_id, registration_token).
    package static func parse(_ body: [UInt8]) throws(MobileEventError) -> MobileEvent {
        let value: JSONValue
        do throws(JSONParseError) { value = try JSONValue.parse(bytes: body) } catch { throw .body(error) }
        guard let root = value.objectValue else { throw MobileEventError(text: "request body must be a JSON object") }
        let userID = try requiredString(root, "user_id", path: "user_id")
        let typeText = try requiredString(root, "event_type", path: "event_type")
        guard let eventType = EventType(rawValue: typeText) else {
            throw MobileEventError.type("event_type", "one of [\(EventType.allCases.map(\.rawValue).joined(separator: " "))]")
        }
        let timestamp = try requiredDate(root, "event_timestamp", path: "event_timestamp")
        _ = try requiredString(root, "version", path: "version")
        _ = try optionalString(root, "session_id", path: "session_id")
        let eventData = try eventType == .refreshed ? requiredObject(root, "event_data", path: "event_data")
                                                    : optionalObject(root, "event_data", path: "event_data")
        var refreshedAt = timestamp
        if eventType == .refreshed, let eventData {
            refreshedAt = try requiredDate(eventData, "fcm_registration_token_refresh_timestamp",
                                           path: "event_data.fcm_registration_token_refresh_timestamp")
        }
        let app = try requiredObject(root, "app", path: "app")
        let appID = try requiredString(app, "id", path: "app.id")
        _ = try requiredString(app, "name", path: "app.name")
        let appVersion = try requiredString(app, "version", path: "app.version")
        var language = try optionalString(app, "language", path: "app.language")
        if let code = language {
            guard code.utf8.count == 2, code.utf8.allSatisfy({ ($0 >= 0x61 && $0 <= 0x7a) || ($0 >= 0x41 && $0 <= 0x5a) }) else {
                throw MobileEventError.type("app.language", "a 2-letter ISO-639-1 code")
            }
            language = code.lowercased()
        }
        let timeZone = try optionalString(app, "time_zone", path: "app.time_zone")
        if let timeZone, TimeZoneName.zone(timeZone) == nil {
            throw MobileEventError.type("app.time_zone", "an IANA time zone name such as Europe/Berlin")
        }
        let os = try requiredObject(root, "os", path: "os")
        let osType = try requiredString(os, "type", path: "os.type")
        guard osTypes.contains(osType) else {
            throw MobileEventError.type("os.type", "one of [\(osTypes.joined(separator: " "))]")
        }
        let osVersion = try optionalString(os, "version", path: "os.version")
        let device = try optionalObject(root, "device", path: "device")
        let manufacturer = try device.flatMap { (d) throws(MobileEventError) in try optionalString(d, "manufacturer", path: "device.manufacturer") }
        let model = try device.flatMap { (d) throws(MobileEventError) in try optionalString(d, "model", path: "device.model") }
        let firebase = try requiredObject(root, "firebase", path: "firebase")
        let project = try requiredString(firebase, "project_id", path: "firebase.project_id")
        let token = try requiredString(firebase, "registration_token", path: "firebase.registration_token")
        guard token.utf8.count <= 4096 else { throw MobileEventError.type("firebase.registration_token", "at most 4096 bytes") }
        var event = MobileEvent(userID: userID, eventType: eventType, timestamp: timestamp, appID: appID, appVersion: appVersion,
                                language: language, osType: osType, osVersion: osVersion, manufacturer: manufacturer, model: model,
                                firebaseProjectID: project, registrationToken: token, refreshedAt: refreshedAt)
        event.timeZone = timeZone
        return event
    }

    static func requiredString(_ object: JSONObject, _ key: String, path: String) throws(MobileEventError) -> String {
        guard let text = try optionalString(object, key, path: path) else { throw .required(path) }
        return text
    }

    /// nil when absent or null; an empty string counts as absent for a required field's purposes.
    static func optionalString(_ object: JSONObject, _ key: String, path: String) throws(MobileEventError) -> String? {
        guard let value = object[key], value != .null else { return nil }
        guard let text = value.stringValue else { throw .type(path, "a string") }
        guard text.utf8.count <= 1024 || key == "registration_token" else { throw .type(path, "at most 1024 bytes") }
        // `\u0000` is valid JSON, but PostgreSQL text cannot hold it and libpq would cut the value there: a token
        // "tok\u0000x" would be stored as "tok".
        guard !text.utf8.contains(0) else { throw .type(path, "a string without U+0000") }
        return text.isEmpty ? nil : text
    }

    static func requiredObject(_ object: JSONObject, _ key: String, path: String) throws(MobileEventError) -> JSONObject {
        guard let found = try optionalObject(object, key, path: path) else { throw .required(path) }
        return found
    }

    static func optionalObject(_ object: JSONObject, _ key: String, path: String) throws(MobileEventError) -> JSONObject? {
        guard let value = object[key], value != .null else { return nil }
        guard let found = value.objectValue else { throw .type(path, "an object") }
        return found
    }

    static func requiredDate(_ object: JSONObject, _ key: String, path: String) throws(MobileEventError) -> Date {
        let text = try requiredString(object, key, path: path)
        guard let date = parseDate(text) else { throw .type(path, "an ISO-8601 date-time") }
        return date
    }

    /// ISO-8601 date-time with a zone, with or without fractional seconds.
    static func parseDate(_ text: String) -> Date? {
        if let date = try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)) { return date }
        return try? Date(text, strategy: Date.ISO8601FormatStyle())
    }
}
