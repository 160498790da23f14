import ClarionHTTP1
import ClarionCore
import ClarionCrypto
import ClarionStore
import Foundation

/// Registers the device registration API (`/api/v1.0/orgs/{org}/pushdeviceregistration/...`), the mobile event
/// collector (`POST /meiro_mobile`, `POST /v1/events`), mobile apps and their API tokens (`/v1/mobile-apps`,
/// bearer-authenticated like the native API) and the audience publish (`POST /v1/publish/audience`).
///
/// The registration routes only check the request and the API token and store it: processing (limits, dry run,
/// the endpoint, the webhook) is `RegistrationProcessor`'s, off the request path.
public func registerDeviceRegistrationAPI(on router: inout Router, context: RegistrationContext) {
    DeviceRegistrationRoutes.register(on: &router, context: context)
    MobileEventRoutes.register(on: &router, context: context)
    MobileAppRoutes.register(on: &router, context: context)
}

package enum DeviceRegistrationRoutes {
    static let prefix = "/api/v1.0/orgs/{org}/pushdeviceregistration/devices"
    /// Items of a batch, and ids of a status query.
    package static let batchLimit = 100
    static let userIDLimit = 256
    /// 100 registrations with their tokens fit comfortably.
    static let bodyLimit = 1 << 20

    static let trackHeader = "x-ms-track-registration"
    static let callbackHeaders = ["x-ms-callback-url", "x-ms-status-callback-url"]
    static let callbackHeadersHeader = "x-ms-callback-url-headers"
    /// Extra webhook headers may not replace what the sender itself sets.
    static let reservedHeaders: Set<String> = ["host", "content-type", "content-length", "transfer-encoding", "connection",
                                               "expect", "te", "upgrade", "trailer", WebhookSignature.header]

    /// One well-formed registration of a request.
    package struct Parsed {
        let appID: UUID
        let apiToken: String
        let request: NewRegistrationRequest
    }

    static func register(on router: inout Router, context c: RegistrationContext) {
        router.add(.post, prefix, maxBodyBytes: bodyLimit, errorFormat: .json, .json { request throws(JSONAPIError) in
            let org = request.pathParameters["org"] ?? ""
            let callback = try callback(request)
            let item = try RegistrationFields.object(try RegistrationFields.document(request), path: "")
            let parsed = try registration(item, callback: callback, makeID: c.makeID)
            try await accept([parsed], org: org, context: c)
            guard tracked(request) else { return HTTPResponse(status: 202) }
            return json(.object(JSONObject([("RegistrationRequestId", .string(parsed.request.id.lowercasedText))])),
                        status: 202)
        })
        router.add(.post, prefix + "/batch", maxBodyBytes: bodyLimit, errorFormat: .json, .json { request throws(JSONAPIError) in
            let org = request.pathParameters["org"] ?? ""
            let callback = try callback(request)
            let items = try RegistrationFields.items(try RegistrationFields.document(request), limit: batchLimit)
            var parsed: [Parsed] = []
            for (index, item) in items.enumerated() {
                parsed.append(try registration(try RegistrationFields.object(item, path: "[\(index)]"), callback: callback,
                                               makeID: c.makeID))
            }
            try await accept(parsed, org: org, context: c)
            guard tracked(request) else { return HTTPResponse(status: 202) }
            return json(.array(parsed.map {
                .object(JSONObject([("RegistrationRequestId", .string($0.request.id.lowercasedText))]))
            }), status: 202)
        })
        let status: RouteHandler = .json { request throws(JSONAPIError) in
            let org = request.pathParameters["org"] ?? ""
            let body = try RegistrationFields.object(try RegistrationFields.document(request), path: "")
            let (ids, app, token) = try statusQuery(body)
            let states: [RegistrationState]
            do throws(StoreError) {
                states = try await c.registrations.states(ids: ids, accountID: org, appExternalID: app, apiToken: token)
            } catch {
                throw RegistrationFields.storeError(error)
            }
            return json(.array(states.map { state in
                .object(JSONObject([("Status", .string(state.status.rawValue)),
                                    ("FailureReason", state.failureReason.map(JSONValue.string) ?? .null)]))
            }), status: 200)
        }
        router.add(.post, prefix + "/status", maxBodyBytes: bodyLimit, errorFormat: .json, status)
        router.add(.post, prefix + "/status/", maxBodyBytes: bodyLimit, errorFormat: .json, status)
        router.add(.post, prefix + "/cleanup", maxBodyBytes: bodyLimit, errorFormat: .json, .json { request throws(JSONAPIError) in
            let org = request.pathParameters["org"] ?? ""
            let item = try RegistrationFields.object(try RegistrationFields.document(request), path: "")
            try await cleanup([try cleanupItem(item)], org: org, context: c)
            return HTTPResponse(status: 202)
        })
        router.add(.post, prefix + "/cleanup/batch", maxBodyBytes: bodyLimit, errorFormat: .json, .json { request throws(JSONAPIError) in
            let org = request.pathParameters["org"] ?? ""
            let items = try RegistrationFields.items(try RegistrationFields.document(request), limit: batchLimit)
            var parsed: [CleanupItem] = []
            for (index, item) in items.enumerated() {
                parsed.append(try cleanupItem(try RegistrationFields.object(item, path: "[\(index)]")))
            }
            try await cleanup(parsed, org: org, context: c)
            return HTTPResponse(status: 202)
        })
    }

    /// The body of a status query: `RegistrationRequestIds` (at most `batchLimit` UUIDs), `MobileAppId`, `ApiToken`.
    package static func statusQuery(_ body: RegistrationFields) throws(JSONAPIError) -> (ids: [UUID], app: UUID, token: String) {
        guard let list = body.object["RegistrationRequestIds"], list != .null else {
            throw JSONAPIError.missingField("RegistrationRequestIds")
        }
        guard let values = list.arrayValue else {
            throw JSONAPIError.invalidField("RegistrationRequestIds", "The field 'RegistrationRequestIds' must be an array of UUIDs.")
        }
        guard values.count <= batchLimit else {
            throw JSONAPIError(status: 400, code: "too_many_items", message: "At most \(batchLimit) ids per request.",
                               field: "RegistrationRequestIds")
        }
        var ids: [UUID] = []
        for (index, value) in values.enumerated() {
            guard let text = value.stringValue, let id = UUID(text: text) else {
                throw JSONAPIError.invalidField("RegistrationRequestIds[\(index)]",
                                                "The field 'RegistrationRequestIds[\(index)]' must be a UUID.")
            }
            ids.append(id)
        }
        return (ids, try body.requiredUUID("MobileAppId"), try body.requiredString("ApiToken"))
    }

    static func tracked(_ request: HTTPRequest) -> Bool {
        request.headers[trackHeader]?.trimmingCharacters(in: .whitespaces).lowercased() == "true"
    }

    static func json(_ value: JSONValue, status: Int) -> HTTPResponse {
        .json(value.encoded(), status: status)
    }

    // MARK: Registrations

    package static func registration(_ item: RegistrationFields, callback: (url: String, headers: [String: String])?,
                             makeID: () -> UUID) throws(JSONAPIError) -> Parsed {
        let app = try item.requiredUUID("MobileAppId")
        let user = try item.requiredString("UserId", maxLength: userIDLimit)
        let token = try item.requiredString("ApiToken")
        // Lengths are the processor's to judge (DeviceTokenTooLong); the body limit bounds them here.
        let apns = try item.string("ApnsDeviceToken", maxLength: bodyLimit)
        let fcm = try item.string("FcmDeviceToken", maxLength: bodyLimit)
        let webPush = try webPushSubscription(item)
        let given = [apns.map { (RegistrationPlatform.apns, $0) }, fcm.map { (RegistrationPlatform.fcm, $0) },
                     webPush.map { (RegistrationPlatform.webPush, $0) }].compactMap { $0 }
        let names = "'\(item.name("ApnsDeviceToken"))', '\(item.name("FcmDeviceToken"))' or '\(item.name("WebPushSubscription"))'"
        guard given.count == 1, let (platform, device) = given.first else {
            if given.isEmpty {
                throw JSONAPIError(status: 400, code: "missing_field", message: "One of \(names) is required.",
                                   field: item.name("ApnsDeviceToken"))
            }
            throw JSONAPIError.invalidField(item.name("FcmDeviceToken"), "Give one of \(names), not several.")
        }
        // `TimeZone` (Clarion's addition, schema v22): the device's IANA zone for `send_at_local` and quiet hours.
        let zone = try item.string("TimeZone", maxLength: TimeZoneName.maximumLength + 1)
        if let zone, TimeZoneName.zone(zone) == nil { throw LocalTimingRequest.invalidZone(item.name("TimeZone"), zone) }
        var request = NewRegistrationRequest(
            id: makeID(), userID: user, platform: platform, deviceToken: device, callbackURL: callback?.url,
            callbackHeaders: callback?.headers ?? [:])
        request.timeZone = zone
        return Parsed(appID: app, apiToken: token, request: request)
    }

    /// `WebPushSubscription`: the browser's `PushSubscription.toJSON()`, as an object or as its JSON text (Clarion's
    /// addition beside the device tokens). Checked here with CreatePlatformEndpoint's WEBPUSH rules (an https endpoint,
    /// `p256dh` a point on P-256, `auth` 16 octets: RFC 8291 section 2, RFC 8030 section 8), so a bad subscription is a
    /// 400 naming the rule, not a Failed registration; the canonical form is what is stored, so the same subscription
    /// registered twice is the same endpoint.
    static func webPushSubscription(_ item: RegistrationFields) throws(JSONAPIError) -> String? {
        let field = item.name("WebPushSubscription")
        let text: String
        switch item.object["WebPushSubscription"] {
        case nil, .null?: return nil
        case .object(let object)?: text = object.jsonText
        case .string(let string)?: text = string
        default:
            throw JSONAPIError.invalidField(field, "'\(field)' must be the browser's PushSubscription JSON, as an object or a string.")
        }
        guard text.utf8.count <= bodyLimit else { throw JSONAPIError.invalidField(field, "'\(field)' is too long.") }
        do throws(WebPushRules.RuleError) {
            return try WebPushRules.canonicalToken(text)
        } catch {
            throw JSONAPIError.invalidField(field, "'\(field)': \(error.reason)")
        }
    }

    /// Stores the requests whose app and API token check out. The others are dropped without a trace (their ids
    /// read Pending for ever): an invalid token stores nothing and calls nothing.
    static func accept(_ parsed: [Parsed], org: String, context c: RegistrationContext) async throws(JSONAPIError) {
        var groups: [String: (caller: RegistrationCaller?, requests: [NewRegistrationRequest])] = [:]
        var order: [String] = []
        do throws(StoreError) {
            for item in parsed {
                let key = item.appID.uuidString + "\u{0}" + item.apiToken
                if groups[key] == nil {
                    let caller = try await c.registrations.authenticate(accountID: org, appExternalID: item.appID, apiToken: item.apiToken)
                    groups[key] = (caller, [])
                    order.append(key)
                }
                groups[key]!.requests.append(item.request)
            }
            for key in order {
                guard let group = groups[key], let caller = group.caller else { continue }
                try await c.registrations.enqueue(group.requests, caller: caller)
            }
        } catch {
            throw RegistrationFields.storeError(error)
        }
    }

    /// `x-ms-callback-url` (or `x-ms-status-callback-url`) and `x-ms-callback-url-headers`.
    package static func callback(_ request: HTTPRequest) throws(JSONAPIError) -> (url: String, headers: [String: String])? {
        var found: (name: String, value: String)?
        for name in callbackHeaders {
            if let value = request.headers[name]?.trimmingCharacters(in: .whitespaces), !value.isEmpty {
                found = (name, value)
                break
            }
        }
        guard let (name, url) = found else {
            if request.headers[callbackHeadersHeader] != nil {
                throw JSONAPIError.invalidField(callbackHeadersHeader, "'\(callbackHeadersHeader)' needs 'x-ms-callback-url'.")
            }
            return nil
        }
        guard OutboundURL(url) != nil else {
            throw JSONAPIError.invalidField(name, "'\(name)' must be an absolute http or https URL.")
        }
        var headers: [String: String] = [:]
        if let text = request.headers[callbackHeadersHeader] {
            let malformed = JSONAPIError.invalidField(callbackHeadersHeader,
                                                      "'\(callbackHeadersHeader)' must be a JSON object of header names to string values.")
            // The server hands header values over as text with bytes that are not UTF-8 already replaced by U+FFFD;
            // that character in a raw header value is such a replacement (a client meaning it would escape it), and
            // is refused like invalid UTF-8 in a body.
            guard !text.unicodeScalars.contains("\u{FFFD}"),
                  let value = try? JSONValue.parse(text, duplicateKeys: .reject), let object = value.objectValue else { throw malformed }
            for member in object {
                guard let string = member.value.stringValue, isHeaderName(member.key), isHeaderValue(string),
                      !reservedHeaders.contains(member.key.lowercased()) else { throw malformed }
                headers[member.key] = string
            }
        }
        return (url, headers)
    }

    static func isHeaderName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 256 && name.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a)
                || "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }

    static func isHeaderValue(_ value: String) -> Bool {
        value.utf8.count <= 4096 && value.utf8.allSatisfy { $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7f) }
    }

    // MARK: Cleanup

    package struct CleanupItem {
        let appID: UUID
        let apiToken: String
        let userID: String
        let deviceToken: String?
    }

    package static func cleanupItem(_ item: RegistrationFields) throws(JSONAPIError) -> CleanupItem {
        CleanupItem(appID: try item.requiredUUID("MobileAppId"), apiToken: try item.requiredString("ApiToken"),
                    userID: try item.requiredString("UserId", maxLength: userIDLimit),
                    deviceToken: try item.string("DeviceToken", maxLength: bodyLimit))
    }

    /// Removes the devices of items whose app and token check out; the others change nothing.
    static func cleanup(_ items: [CleanupItem], org: String, context c: RegistrationContext) async throws(JSONAPIError) {
        do throws(StoreError) {
            var callers: [String: RegistrationCaller?] = [:]
            for item in items {
                let key = item.appID.uuidString + "\u{0}" + item.apiToken
                if callers[key] == nil {
                    callers[key] = .some(try await c.registrations.authenticate(accountID: org, appExternalID: item.appID,
                                                                                  apiToken: item.apiToken))
                }
                guard let caller = callers[key] ?? nil else { continue }
                try await c.registrations.cleanup(appKey: caller.appKey, userID: item.userID, deviceToken: item.deviceToken)
            }
        } catch {
            throw RegistrationFields.storeError(error)
        }
    }
}
