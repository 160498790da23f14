import ClarionCore
import ClarionStore
import Foundation

/// Resource ids of the native API. Every place that takes an id also takes the SNS ARN of the same resource,
/// so ids move freely between the two APIs:
///
/// | resource | id | ARN (SNS) |
/// |---|---|---|
/// | platform application | `<PLATFORM>:<name>` (`APNS:chat`) | `arn:aws:sns:<region>:<account>:app/<PLATFORM>/<name>` |
/// | endpoint | the UUID | `...:endpoint/<PLATFORM>/<app>/<uuid>` |
/// | topic | the name | `...:<name>` |
/// | subscription | the UUID | `...:<topic>:<uuid>` |
///
/// Names (applications, topics) are the node's region's (`CLARION_REGION`); UUIDs (endpoints, subscriptions) are
/// global: they name their resource in whichever region it lives, and its ARN carries that region. An ARN of another
/// account, or an application or topic ARN of another region, names nothing here: it is "not found", like an unknown id.
package enum NativeID {
    /// Platforms a platform application can have (the SNS actions' list, the store's check constraint).
    static let platforms = PlatformApplicationActions.platforms.sorted()

    static func applicationID(platform: String, name: String) -> String { "\(platform):\(name)" }

    static func uuidText(_ id: UUID) -> String { id.lowercasedText }

    /// A platform application id or ARN -> (platform, name); nil when malformed or of another account.
    package static func application(_ text: String, _ caller: NativeCaller) -> (platform: String, name: String)? {
        if text.hasPrefix("arn:") {
            guard let arn = SNSARN.parse(text), arn.region == caller.region, arn.account == caller.accountID,
                  case .application(let platform, let name) = arn.resource else { return nil }
            return platforms.contains(platform) && isApplicationName(name) ? (platform, name) : nil
        }
        guard let colon = text.firstIndex(of: ":") else { return nil }
        let platform = String(text[..<colon]), name = String(text[text.index(after: colon)...])
        return platforms.contains(platform) && isApplicationName(name) ? (platform, name) : nil
    }

    /// The endpoint's UUID, and the region its ARN names (nil for a bare UUID: any region).
    package static func endpoint(_ text: String, _ caller: NativeCaller) -> (id: UUID, region: String?)? {
        if text.hasPrefix("arn:") {
            guard let arn = SNSARN.parse(text), arn.account == caller.accountID,
                  case .endpoint(_, _, let id) = arn.resource else { return nil }
            return (id, arn.region)
        }
        return UUID(text: text).map { ($0, nil) }
    }

    package static func topic(_ text: String, _ caller: NativeCaller) -> String? {
        if text.hasPrefix("arn:") {
            guard let arn = SNSARN.parse(text), arn.region == caller.region, arn.account == caller.accountID,
                  case .topic(let name) = arn.resource else { return nil }
            return isTopicName(name) ? name : nil
        }
        return isTopicName(text) ? text : nil
    }

    /// The subscription's UUID, and the region its ARN names (nil for a bare UUID: any region).
    package static func subscription(_ text: String, _ caller: NativeCaller) -> (id: UUID, region: String?)? {
        if text.hasPrefix("arn:") {
            guard let arn = SNSARN.parse(text), arn.account == caller.accountID,
                  case .subscription(_, let id) = arn.resource else { return nil }
            return (id, arn.region)
        }
        return UUID(text: text).map { ($0, nil) }
    }

    /// SNS: 1-256 of `[A-Za-z0-9_.-]`.
    static func isApplicationName(_ name: String) -> Bool {
        (1...256).contains(name.utf8.count) && name.utf8.allSatisfy { isNameByte($0) || $0 == UInt8(ascii: ".") }
    }

    /// SNS: 1-256 of `[A-Za-z0-9_-]`.
    static func isTopicName(_ name: String) -> Bool {
        (1...256).contains(name.utf8.count) && name.utf8.allSatisfy(isNameByte)
    }

    private static func isNameByte(_ b: UInt8) -> Bool {
        (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x5F || b == 0x2D
    }

    // MARK: ARNs of records

    static func arn(_ application: PlatformApplicationRecord, _ caller: NativeCaller) -> String {
        SNSARN.application(caller.region, caller.accountID, platform: application.platform, name: application.name)
    }

    static func arn(_ endpoint: EndpointRecord, _ caller: NativeCaller) -> String {
        SNSARN.endpoint(endpoint.region.isEmpty ? caller.region : endpoint.region, caller.accountID, platform: endpoint.platform,
                        application: endpoint.applicationName,
                        id: endpoint.externalID)
    }

    static func topicARN(_ name: String, _ caller: NativeCaller) -> String {
        SNSARN.topic(caller.region, caller.accountID, name: name)
    }

    static func arn(_ subscription: SubscriptionRecord, _ caller: NativeCaller) -> String {
        SNSARN.subscription(subscription.region.isEmpty ? caller.region : subscription.region, caller.accountID,
                            topic: subscription.topicName, id: subscription.externalID)
    }
}

/// Lookups scoped to the caller's account: a resource of another account is "not found", never "forbidden",
/// so ids of other tenants cannot be probed.
extension NativeAPIContext {
    func application(_ text: String, _ caller: NativeCaller, field: String?) async throws(JSONAPIError) -> PlatformApplicationRecord {
        let notFound = JSONAPIError.notFound("No platform application '\(text)'.", field: field)
        guard let (platform, name) = NativeID.application(text, caller) else { throw notFound }
        do throws(StoreError) {
            return try await resources.applications.get(accountKey: caller.accountKey, region: caller.region, platform: platform, name: name)
        } catch {
            throw JSONAPIError.store(error, notFound: notFound)
        }
    }

    func endpoint(_ text: String, _ caller: NativeCaller, field: String?) async throws(JSONAPIError) -> EndpointRecord {
        let notFound = JSONAPIError.notFound("No endpoint '\(text)'.", field: field)
        guard let (id, region) = NativeID.endpoint(text, caller) else { throw notFound }
        let record: EndpointRecord, application: PlatformApplicationRecord
        do throws(StoreError) {
            record = try await resources.endpoints.get(externalID: id)
            application = try await resources.applications.get(key: record.applicationKey)
        } catch {
            throw JSONAPIError.store(error, notFound: notFound)
        }
        guard application.accountKey == caller.accountKey, region == nil || region == application.region else { throw notFound }
        return record
    }

    func topic(_ text: String, _ caller: NativeCaller, field: String?) async throws(JSONAPIError) -> TopicRecord {
        let notFound = JSONAPIError.notFound("No topic '\(text)'.", field: field)
        guard let name = NativeID.topic(text, caller) else { throw notFound }
        do throws(StoreError) {
            return try await resources.topics.get(accountKey: caller.accountKey, region: caller.region, name: name)
        } catch {
            throw JSONAPIError.store(error, notFound: notFound)
        }
    }

    func subscription(_ text: String, _ caller: NativeCaller, field: String?) async throws(JSONAPIError) -> SubscriptionRecord {
        let notFound = JSONAPIError.notFound("No subscription '\(text)'.", field: field)
        guard let (id, region) = NativeID.subscription(text, caller) else { throw notFound }
        let record: SubscriptionRecord
        do throws(StoreError) {
            record = try await resources.subscriptions.get(externalID: id)
        } catch {
            throw JSONAPIError.store(error, notFound: notFound)
        }
        guard record.accountKey == caller.accountKey, region == nil || region == record.region else { throw notFound }
        return record
    }
}
