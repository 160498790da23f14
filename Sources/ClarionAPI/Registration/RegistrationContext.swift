import ClarionCore
import ClarionCrypto
import ClarionHTTP1
import ClarionStore
import Foundation
import Synchronization

/// What the device registration API, the mobile event collector and the mobile-app routes stand on.
public struct RegistrationContext: Sendable {
    public let registrations: RegistrationRepository
    public let apps: MobileAppRepository
    public let devices: MobileDeviceRepository
    public let accounts: AccountRepository
    public let applications: PlatformApplicationRepository
    public let jobs: FanOutJobs
    public let admin: MobileAppAdmin
    /// Bearer keys of the native API, for `/v1/mobile-apps` and `/v1/publish/audience`.
    public let authenticator: BearerAuthenticator
    public let clock: @Sendable () -> Date
    public let makeID: @Sendable () -> UUID
    /// What the event collector did with token reassignments since this process started.
    public let eventCounters = MobileEventCounters()
    /// The node's one cache (`APIResources.accountKeys`), or one of its own.
    private let accountKeys: AccountKeyCache

    public init(pool: PGPool, masterKey: AESGCMKey, region: String = "us-east-1", authenticator: BearerAuthenticator? = nil,
                accountKeys: AccountKeyCache = AccountKeyCache(),
                clock: @escaping @Sendable () -> Date = { Date() }, makeID: @escaping @Sendable () -> UUID = { UUID.timeOrdered() }) {
        self.accountKeys = accountKeys
        let accounts = AccountRepository(pool: pool, masterKey: masterKey)
        self.registrations = RegistrationRepository(pool: pool, masterKey: masterKey)
        self.apps = MobileAppRepository(pool: pool, masterKey: masterKey)
        self.devices = MobileDeviceRepository(pool: pool)
        self.accounts = accounts
        self.applications = PlatformApplicationRepository(pool: pool, masterKey: masterKey)
        self.jobs = FanOutJobs(pool: pool)
        self.admin = MobileAppAdmin(pool: pool, masterKey: masterKey, region: region)
        self.authenticator = authenticator ?? BearerAuthenticator(resolver: StoreAPIKeyResolver(accounts: accounts))
        self.clock = clock
        self.makeID = makeID
    }

    /// The bearer caller's account key.
    func accountKey(_ request: HTTPRequest) async throws(JSONAPIError) -> Int64 {
        let principal = try await authenticator.authenticate(request)
        do throws(StoreError) {
            return try await accountKeys.key(principal.accountID) { () async throws(StoreError) in
                try await accounts.account(accountID: principal.accountID).key
            }
        } catch {
            throw error.code == .notFound ? JSONAPIError.invalidAPIKey : RegistrationFields.storeError(error)
        }
    }
}

/// Device-token reassignments by the mobile event collector (a token bound to one `user_id` moved to another),
/// counted per process since start; `/metrics` exports them as
/// `clarion_mobile_token_reassignments_total{outcome="allowed"|"refused"}`. Deliberately not per app: a metric's
/// labels stay bounded, or a metrics store grows with every app; the log line of each one names the app.
public final class MobileEventCounters: Sendable {
    private let allowed = Atomic<Int>(0)
    private let refused = Atomic<Int>(0)

    public init() {}

    /// Reassignments made (with the app's API token, or by an app that does not require it for a user change).
    public var tokenReassignmentsAllowed: Int { allowed.load(ordering: .relaxed) }
    /// Reassignments refused because the event had no API token and the app requires one for a user change.
    public var tokenReassignmentsRefused: Int { refused.load(ordering: .relaxed) }

    func countReassignment(allowed wasAllowed: Bool) {
        if wasAllowed {
            allowed.add(1, ordering: .relaxed)
        } else {
            refused.add(1, ordering: .relaxed)
        }
    }
}

/// One JSON object of a request, read field by field; every refusal is a 400 naming the field as a path
/// (`[3].UserId`).
package struct RegistrationFields {
    let object: JSONObject
    let path: String

    init(_ object: JSONObject, path: String) {
        self.object = object
        self.path = path
    }

    func name(_ key: String) -> String { path.isEmpty ? key : path + "." + key }

    /// The parsed body; `application/json` (or no Content-Type) only.
    package static func document(_ request: HTTPRequest) throws(JSONAPIError) -> JSONValue {
        if let contentType = request.headers["Content-Type"] {
            let media = contentType.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
            guard media == "application/json" || media.hasSuffix("+json") else { throw JSONAPIError.unsupportedMediaType(contentType) }
        }
        guard !request.body.isEmpty else { throw JSONAPIError.invalidJSON("The request body is empty.") }
        do throws(JSONParseError) {
            return try JSONValue.parse(bytes: request.body, duplicateKeys: .reject)
        } catch {
            throw JSONAPIError.invalidJSON(error)
        }
    }

    package static func object(_ value: JSONValue, path: String) throws(JSONAPIError) -> RegistrationFields {
        guard let object = value.objectValue else {
            if path.isEmpty { throw JSONAPIError.invalidJSON("The request body must be a JSON object.") }
            throw JSONAPIError.invalidField(path, "The item '\(path)' must be a JSON object.")
        }
        return RegistrationFields(object, path: path)
    }

    /// Items of a batch body: a JSON array of 1...`limit` values.
    package static func items(_ value: JSONValue, limit: Int) throws(JSONAPIError) -> [JSONValue] {
        guard let items = value.arrayValue else { throw JSONAPIError.invalidJSON("The request body must be a JSON array.") }
        guard !items.isEmpty else { throw JSONAPIError(status: 400, code: "invalid_json", message: "The array is empty.") }
        guard items.count <= limit else {
            throw JSONAPIError(status: 400, code: "too_many_items",
                               message: "A batch holds at most \(limit) items; this one has \(items.count).")
        }
        return items
    }

    /// A string member; nil when absent. A non-string, an empty string or one longer than `maxLength` is refused.
    func string(_ key: String, maxLength: Int = 4096) throws(JSONAPIError) -> String? {
        guard let value = object[key], value != .null else { return nil }
        guard let text = value.stringValue else {
            throw JSONAPIError.invalidField(name(key), "The field '\(name(key))' must be a string.")
        }
        guard !text.isEmpty else { throw JSONAPIError.invalidField(name(key), "The field '\(name(key))' must not be empty.") }
        guard text.utf8.count <= maxLength else {
            throw JSONAPIError.invalidField(name(key), "The field '\(name(key))' is longer than \(maxLength) bytes.")
        }
        // `\u0000` is valid JSON, but PostgreSQL text cannot hold it and libpq would cut the value there.
        try NativeFields.checkStorable(name(key), text)
        return text
    }

    func requiredString(_ key: String, maxLength: Int = 4096) throws(JSONAPIError) -> String {
        guard let text = try string(key, maxLength: maxLength) else { throw JSONAPIError.missingField(name(key)) }
        return text
    }

    func requiredUUID(_ key: String) throws(JSONAPIError) -> UUID {
        let text = try requiredString(key, maxLength: 64)
        guard let id = UUID(text: text) else {
            throw JSONAPIError.invalidField(name(key), "The field '\(name(key))' must be a UUID.")
        }
        return id
    }

    func bool(_ key: String) throws(JSONAPIError) -> Bool? {
        guard let value = object[key], value != .null else { return nil }
        guard let flag = value.boolValue else {
            throw JSONAPIError.invalidField(name(key), "The field '\(name(key))' must be true or false.")
        }
        return flag
    }

    /// A store failure at the edge: transient ones are 503, the rest 500.
    static func storeError(_ error: StoreError) -> JSONAPIError {
        switch error.code {
        case _ where error.isTransient:
            return .serviceUnavailable("The store is unavailable; retry later.")
        default:
            return .internalError(cause: error.logText)
        }
    }
}
