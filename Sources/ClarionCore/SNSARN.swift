import Foundation

/// SNS's ARN forms (docs/providers.md C):
///
///     arn:<partition>:sns:<region>:<account>:app/<PLATFORM>/<name>
///     arn:<partition>:sns:<region>:<account>:endpoint/<PLATFORM>/<app>/<uuid>
///     arn:<partition>:sns:<region>:<account>:<topic>
///     arn:<partition>:sns:<region>:<account>:<topic>:<uuid>
///
/// The partition is the region's (`AWSPartition`: `aws`, `aws-cn` for `cn-north-1`, `aws-us-gov` for `us-gov-west-1`,
/// ...): written from the region, and an ARN whose partition is not its region's does not parse.
package struct SNSARN: Equatable {
    package enum Resource: Equatable {
        case application(platform: String, name: String)
        case endpoint(platform: String, application: String, id: UUID)
        case topic(name: String)
        case subscription(topic: String, id: UUID)
    }

    package let region: String
    package let account: String
    package let resource: Resource

    /// The region's partition, the ARN's second field.
    package var partition: AWSPartition { AWSPartition(region: region) }

    /// The ARN's text, written into one String (interpolating its parts cost about six allocations, on every
    /// publish that names an endpoint).
    package var text: String {
        var pieces: (String, String, String, String) = ("", "", "", "")
        var id: UUID?
        let kind: StaticString
        switch resource {
        case .application(let platform, let name): kind = "app/"; pieces = (platform, "/", name, "")
        case .endpoint(let platform, let application, let uuid): kind = "endpoint/"; pieces = (platform, "/", application, "/"); id = uuid
        case .topic(let name): kind = ""; pieces.0 = name
        case .subscription(let topic, let uuid): kind = ""; pieces = (topic, ":", "", ""); id = uuid
        }
        let partition = self.partition.rawValue
        let capacity = 9 + partition.utf8.count + region.utf8.count + account.utf8.count + 2 + kind.utf8CodeUnitCount
            + pieces.0.utf8.count + pieces.1.utf8.count + pieces.2.utf8.count + pieces.3.utf8.count + (id == nil ? 0 : 36)
        return String(unsafeUninitializedCapacity: capacity) { out in
            var o = 0
            func put(_ bytes: UnsafeBufferPointer<UInt8>) {
                _ = UnsafeMutableBufferPointer(rebasing: out[o..<(o + bytes.count)]).initialize(from: bytes)
                o += bytes.count
            }
            func put(_ text: String) {
                var text = text
                text.withUTF8 { put($0) }
            }
            put("arn:"); put(partition); put(":sns:")
            put(region); put(":"); put(account); put(":")
            kind.withUTF8Buffer { put($0) }
            put(pieces.0); put(pieces.1); put(pieces.2); put(pieces.3)
            if let id { o = id.writeLowercasedText(into: out, at: o) }
            return o
        }
    }

    package static func application(_ region: String, _ account: String, platform: String, name: String) -> String {
        SNSARN(region: region, account: account, resource: .application(platform: platform, name: name)).text
    }

    package static func endpoint(_ region: String, _ account: String, platform: String, application: String, id: UUID) -> String {
        SNSARN(region: region, account: account, resource: .endpoint(platform: platform, application: application, id: id)).text
    }

    package static func topic(_ region: String, _ account: String, name: String) -> String {
        SNSARN(region: region, account: account, resource: .topic(name: name)).text
    }

    package static func subscription(_ region: String, _ account: String, topic: String, id: UUID) -> String {
        SNSARN(region: region, account: account, resource: .subscription(topic: topic, id: id)).text
    }

    /// Parses any of the four forms; nil for anything else. `checkingPartition: false` accepts any partition (to
    /// tell a caller that the ARN is in the wrong one).
    package static func parse(_ text: String, checkingPartition: Bool = true) -> SNSARN? {
        // Split on the UTF-8 bytes (':' and '/' are ASCII): Character-wise splitting and its grapheme breaking
        // were a visible share of every Publish.
        let parts = Substring(text).cut(at: UInt8(ascii: ":"))
        guard parts.count == 6 || parts.count == 7, parts[0].hasBytes("arn"), parts[2].hasBytes("sns"),
              !parts[3].isEmpty, !parts[4].isEmpty, !parts[5].isEmpty else { return nil }
        let (region, account, rest) = (String(parts[3]), String(parts[4]), parts[5])
        // `arn:aws:sns:cn-north-1:...` is no ARN SNS would write: the partition must be the region's.
        guard !checkingPartition || parts[1] == AWSPartition(region: region).rawValue else { return nil }
        if parts.count == 7 {
            guard !rest.utf8Contains(where: { $0 == UInt8(ascii: "/") }), let id = UUID(text: parts[6]) else { return nil }
            return SNSARN(region: region, account: account, resource: .subscription(topic: String(rest), id: id))
        }
        let segments = rest.cut(at: UInt8(ascii: "/"))
        let kind = segments[0]
        if kind.hasBytes("app") {
            guard segments.count == 3, !segments[1].isEmpty, !segments[2].isEmpty else { return nil }
            return SNSARN(region: region, account: account,
                          resource: .application(platform: String(segments[1]), name: String(segments[2])))
        }
        if kind.hasBytes("endpoint") {
            guard segments.count == 4, !segments[1].isEmpty, !segments[2].isEmpty, let id = UUID(text: segments[3]) else {
                return nil
            }
            return SNSARN(region: region, account: account,
                          resource: .endpoint(platform: String(segments[1]), application: String(segments[2]), id: id))
        }
        guard segments.count == 1 else { return nil }
        return SNSARN(region: region, account: account, resource: .topic(name: String(rest)))
    }
}
