/// The `apns-push-type` header values (docs/providers.md A.3).
public enum APNsPushType: String, Sendable, Hashable, CaseIterable {
    case alert
    case background
    case voip
    case complication
    case fileprovider
    case location
    case liveactivity
    case pushtotalk
    case mdm
    case controls
    case widgets

    /// What goes after the bundle id in `apns-topic` (A.3). `mdm` has no suffix: its topic is the UID from the
    /// MDM push certificate, which the application configures in place of a bundle id.
    /// `complication` follows the libraries and older Apple text (G.5), not the mirrored page's typo.
    public var topicSuffix: String {
        switch self {
        case .alert, .background, .mdm: ""
        case .voip: ".voip"
        case .complication: ".complication"
        case .fileprovider: ".pushkit.fileprovider"
        case .location: ".location-query"
        case .liveactivity: ".push-type.liveactivity"
        case .pushtotalk: ".voip-ptt"
        case .controls: ".push-type.controls"
        case .widgets: ".push-type.widgets"
        }
    }

    /// `apns-topic` for this push type.
    public func topic(bundleID: String) -> String { bundleID + topicSuffix }

    /// Largest body APNs takes for this push type (A.4): 5120 for VoIP, 4096 otherwise.
    public var payloadLimit: Int { self == .voip ? 5120 : 4096 }

    /// The priority used when the publisher gives none. Background pushes must go with 5: APNs refuses
    /// priority 10 for them (A.3), and SNS's own advice pairs `background` with 5 (C.6).
    public var defaultPriority: APNsPriority { self == .background ? .conservePower : .immediate }

    /// SNS's inference when `AWS.SNS.MOBILE.APNS.PUSH_TYPE` is absent (docs/providers.md C.6). SNS can only infer
    /// `alert` or `background`:
    /// - `background` only when `aps` has `content-available` equal to 1 (the integer 1 or `true`) and none of
    ///   the user-interaction keys `alert`, `badge`, `sound`; custom keys outside `aps` do not matter;
    /// - `alert` otherwise: `content-available` 0, absent, not an integer or boolean (a string "1", `1.0`),
    ///   or 1 together with `alert`, `badge` or `sound`.
    ///
    /// Keys such as `mutable-content`, `category` or `thread-id` do not count as user-interaction keys: AWS
    /// names only alert, badge and sound (G.13).
    public static func inferred(fromPayload payload: JSONObject) -> APNsPushType {
        guard let aps = payload["aps"]?.objectValue, let flag = aps["content-available"] else { return .alert }
        let isOne: Bool
        switch flag {
        case .bool(let b): isOne = b
        case .number(let n): isOne = n.intValue == 1
        default: return .alert
        }
        guard isOne else { return .alert }
        let interactive = ["alert", "badge", "sound"].contains { aps.contains($0) }
        return interactive ? .alert : .background
    }
}

/// `apns-priority`: 10 send now, 5 power-aware, 1 never wake the device (A.2).
public enum APNsPriority: Int, Sendable, Hashable, CaseIterable {
    case immediate = 10
    case conservePower = 5
    case minimal = 1
}
