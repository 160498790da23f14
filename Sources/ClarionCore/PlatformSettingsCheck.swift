import Foundation

/// The provider layer's judgement of a platform application's settings, asked by the API before it stores them, so
/// a setting the dispatcher could not use is refused when it is given rather than at the first delivery.
///
/// The API owns no provider code: the node gives it the provider layer's implementation (ClarionProviders'
/// `ProviderSettingsCheck`), which runs the very code a provider pool is built with.
public protocol PlatformSettingsCheck: Sendable {
    /// APNs certificate auth: the certificate in `PlatformPrincipal` and the key in `PlatformCredential` must load
    /// into TLS and belong together. Returns the certificate's expiry; nil when `attributes` hold no certificate
    /// pair (token auth, other platforms).
    func apnsCertificateExpiry(platform: Platform, attributes: [String: String]) throws(PlatformSettingsRefusal) -> Date?

    /// Throws when a provider pool could not be built from `attributes` (the stored attributes as they will be, with
    /// `PlatformCredential` and `PlatformPrincipal` among them).
    func check(platform: Platform, attributes: [String: String]) throws(PlatformSettingsRefusal)
}

/// Why settings cannot be used: `attribute` names the attribute at fault (SNS's InvalidParameter reports it), nil
/// when the problem is not one attribute.
public struct PlatformSettingsRefusal: Error, Sendable, Equatable, CustomStringConvertible {
    public let attribute: String?
    public let description: String

    public init(attribute: String?, description: String) {
        self.attribute = attribute
        self.description = description
    }
}
