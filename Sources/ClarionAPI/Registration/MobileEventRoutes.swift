import ClarionCore
import ClarionStore
import Foundation

/// The mobile event collector: `POST /meiro_mobile` and `POST /v1/events`.
///
/// Two event types are understood, `fcm_registration_token_registered` and `fcm_registration_token_refreshed`;
/// both create or update the FCM endpoint of the mobile app whose Firebase project id matches. Every refusal is
/// `400 {"message": "validation: <field> ...", "status": "error"}` naming the first field at fault, in the order
/// the fields are listed in `MobileEvent.parse`.
enum MobileEventRoutes {
    static let paths = ["/meiro_mobile", "/v1/events"]
    static let bodyLimit = 64 * 1024

    static func register(on router: inout Router, context c: RegistrationContext) {
        for path in paths {
            router.add(.post, path, maxBodyBytes: bodyLimit, errorFormat: .json, .asynchronous { request in
                await handle(request, context: c)
            })
        }
    }

    static func handle(_ request: HTTPRequest, context c: RegistrationContext) async -> HTTPResponse {
        let event: MobileEvent
        do {
            event = try MobileEvent.parse(request.body)
        } catch {
            return answer(400, message: "validation: " + error.text)
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
        let report = MobileDeviceReport(
            userID: event.userID, token: event.registrationToken, appVersion: event.appVersion, language: event.language,
            osType: event.osType, osVersion: event.osVersion, manufacturer: event.manufacturer, model: event.model,
            refreshedAt: event.refreshedAt)
        do {
            _ = try await c.devices.record(applicationKey: application, report)
        } catch {
            switch error.code {
            case .unavailable, .connectionLost, .shutDown, .timeout, .serializationFailure:
                return answer(503, message: "the store is unavailable; retry later")
            default:
                return answer(500, message: "the device could not be stored")
            }
        }
        return .json(Array(#"{"status":"ok"}"#.utf8), status: 200)
    }

    static func answer(_ status: Int, message: String) -> HTTPResponse {
        let body = JSONObject([("message", .string(message)), ("status", .string("error"))])
        return .json(body.encoded(), status: status)
    }
}

/// Why an event was refused: the text after `validation: `.
package struct MobileEventError: Error, Sendable, Equatable {
    let text: String

    static func required(_ field: String) -> MobileEventError { MobileEventError(text: "\(field) is required property") }
    static func type(_ field: String, _ type: String) -> MobileEventError { MobileEventError(text: "\(field) must be \(type)") }
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
        guard let value = try? JSONValue.parse(bytes: body), let root = value.objectValue else {
            throw MobileEventError(text: "request body must be a JSON object")
        }
        let userID = try requiredString(root, "user_id", path: "user_id")
        let typeText = try requiredString(root, "event_type", path: "event_type")
        guard let eventType = EventType(rawValue: typeText) else {
            throw MobileEventError(text: "event_type must be one of [\(EventType.allCases.map(\.rawValue).joined(separator: " "))]")
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
                throw MobileEventError(text: "app.language must be a 2-letter ISO-639-1 code")
            }
            language = code.lowercased()
        }
        let os = try requiredObject(root, "os", path: "os")
        let osType = try requiredString(os, "type", path: "os.type")
        guard osTypes.contains(osType) else {
            throw MobileEventError(text: "os.type must be one of [\(osTypes.joined(separator: " "))]")
        }
        let osVersion = try optionalString(os, "version", path: "os.version")
        let device = try optionalObject(root, "device", path: "device")
        let manufacturer = try device.flatMap { (d) throws(MobileEventError) in try optionalString(d, "manufacturer", path: "device.manufacturer") }
        let model = try device.flatMap { (d) throws(MobileEventError) in try optionalString(d, "model", path: "device.model") }
        let firebase = try requiredObject(root, "firebase", path: "firebase")
        let project = try requiredString(firebase, "project_id", path: "firebase.project_id")
        let token = try requiredString(firebase, "registration_token", path: "firebase.registration_token")
        guard token.utf8.count <= 4096 else { throw MobileEventError(text: "firebase.registration_token must be at most 4096 bytes") }
        return MobileEvent(userID: userID, eventType: eventType, timestamp: timestamp, appID: appID, appVersion: appVersion,
                           language: language, osType: osType, osVersion: osVersion, manufacturer: manufacturer, model: model,
                           firebaseProjectID: project, registrationToken: token, refreshedAt: refreshedAt)
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
