/// A push platform as SNS names it (`Platform` of CreatePlatformApplication), and what follows from it.
///
/// SNS documents ADM, APNS, APNS_SANDBOX and GCM; APNS_VOIP and APNS_VOIP_SANDBOX exist in SNS too
/// (docs/providers.md C.2, C.4: their own message keys and TTL attributes), and cost nothing extra here:
/// they are APNs with push type `voip`.
public enum Platform: String, Sendable, Hashable, CaseIterable {
    case apns = "APNS"
    case apnsSandbox = "APNS_SANDBOX"
    case apnsVoIP = "APNS_VOIP"
    case apnsVoIPSandbox = "APNS_VOIP_SANDBOX"
    case gcm = "GCM"
    case adm = "ADM"
    /// Browsers through their push services (RFC 8030), VAPID-signed (RFC 8292), encrypted (RFC 8291).
    case webPush = "WEBPUSH"
    /// Huawei Push Kit, HMS Core (Android) v1 API (docs/providers.md E.1): OAuth client credentials, many tokens per
    /// request. HarmonyOS 5+ (the v3 API with service-account JWTs) is another protocol and not served.
    case hms = "HMS"

    /// The provider protocol that carries this platform's pushes.
    public var provider: PushProvider {
        switch self {
        case .apns, .apnsSandbox, .apnsVoIP, .apnsVoIPSandbox: .apns
        case .gcm: .fcm
        case .adm: .adm
        case .webPush: .webPush
        case .hms: .hms
        }
    }

    /// The APNs host environment; nil for non-APNs platforms.
    public var apnsEnvironment: APNsEnvironment? {
        switch self {
        case .apns, .apnsVoIP: .production
        case .apnsSandbox, .apnsVoIPSandbox: .sandbox
        case .gcm, .adm, .webPush, .hms: nil
        }
    }

    /// The message-map keys that apply to an endpoint of this platform, in order of preference
    /// (SNS C.2: the platform's own key wins, "default" is the fallback).
    public var messageKeys: [SNSMessageKey] {
        switch self {
        case .apns: [.apns, .default]
        case .apnsSandbox: [.apnsSandbox, .default]
        case .apnsVoIP: [.apnsVoIP, .default]
        case .apnsVoIPSandbox: [.apnsVoIPSandbox, .default]
        case .gcm: [.gcm, .default]
        case .adm: [.adm, .default]
        case .webPush: [.webPush, .default]
        case .hms: [.hms, .default]
        }
    }

    /// The platform's own message-map key.
    public var messageKey: SNSMessageKey { messageKeys[0] }

    /// The reserved message attribute carrying this platform's TTL (docs/providers.md C.4).
    public var ttlAttributeNames: [String] {
        switch self {
        case .apns: ["AWS.SNS.MOBILE.APNS.TTL"]
        case .apnsSandbox: ["AWS.SNS.MOBILE.APNS_SANDBOX.TTL"]
        case .apnsVoIP: ["AWS.SNS.MOBILE.APNS_VOIP.TTL"]
        case .apnsVoIPSandbox: ["AWS.SNS.MOBILE.APNS_VOIP_SANDBOX.TTL"]
        case .gcm: ["AWS.SNS.MOBILE.FCM.TTL", "AWS.SNS.MOBILE.GCM.TTL"]
        case .adm: ["AWS.SNS.MOBILE.ADM.TTL"]
        case .webPush: ["AWS.SNS.MOBILE.WEBPUSH.TTL"]
        case .hms: ["AWS.SNS.MOBILE.HMS.TTL"]
        }
    }

    /// The push type an endpoint of this platform gets when nothing says otherwise; nil means "infer".
    var fixedAPNsPushType: APNsPushType? {
        switch self {
        case .apnsVoIP, .apnsVoIPSandbox: .voip
        default: nil
        }
    }
}

/// The provider protocol behind a platform.
public enum PushProvider: String, Sendable, Hashable, CaseIterable {
    case apns
    case fcm
    case adm
    case webPush
    case hms

    /// The largest payload the provider takes (bytes), before any per-type exception such as VoIP.
    /// APNs counts the body; FCM counts payload keys and values; ADM documents 6 KB; Web Push takes 4096 octets of
    /// encrypted body, 3993 of plaintext (RFC 8291 section 4); Push Kit 4096 bytes of body not counting the tokens
    /// (E.1).
    public var payloadLimit: Int {
        switch self {
        case .apns: 4096
        case .fcm: 4096
        case .adm: 6144
        case .webPush: 3993
        case .hms: 4096
        }
    }
}

/// APNs host environment: production `api.push.apple.com`, sandbox `api.sandbox.push.apple.com`.
public enum APNsEnvironment: String, Sendable, Hashable {
    case production
    case sandbox
}
