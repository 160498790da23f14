import ClarionCore
import Foundation

/// The API's check of a platform application's settings (`PlatformSettingsCheck`), by the code a provider pool is
/// built with: what passes here makes a pool at the first delivery.
public struct ProviderSettingsCheck: PlatformSettingsCheck {
    public init() {}

    public func apnsCertificateExpiry(platform: Platform, attributes: [String: String]) throws(PlatformSettingsRefusal) -> Date? {
        guard platform.provider == .apns else { return nil }
        do throws(ProviderError) {
            guard case .apnsCertificate(let certificate) = try ProviderCredentials.parse(platform: platform, attributes: attributes) else {
                return nil
            }
            return certificate.expiresAt
        } catch {
            throw PlatformSettingsRefusal(error)
        }
    }

    public func check(platform: Platform, attributes: [String: String]) throws(PlatformSettingsRefusal) {
        do throws(ProviderError) {
            if platform == .hms {
                // Huawei's ids go into a form and the send path: checked now, not at the first send (the secret only
                // Huawei can judge; a wrong one disables the application at the first token exchange, with the reason).
                _ = try ProviderCredentials.parse(platform: platform, attributes: attributes)
            }
            try ProviderApplication.checkSettings(platform: platform, attributes: attributes)
        } catch {
            throw PlatformSettingsRefusal(error)
        }
    }
}

extension PlatformSettingsRefusal {
    init(_ error: ProviderError) {
        self.init(attribute: error.attribute, description: error.description)
    }
}
