/// Why a platform application's provider settings cannot be used, or why a provider client cannot be built.
///
/// `attribute` names the platform-application attribute at fault (SNS's CreatePlatformApplication and
/// SetPlatformApplicationAttributes report it as `InvalidParameter`), nil when the problem is not one attribute.
public struct ProviderError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable {
        /// A required attribute is absent or empty.
        case missingAttribute
        /// An attribute is present but unusable (not PEM, wrong key type, bad URL...).
        case invalidAttribute
        /// The HTTP/2 pool could not be configured (e.g. the trusted CA PEM or the TLS client certificate does not load).
        case transportConfiguration
    }

    public let code: Code
    public let attribute: String?
    public let message: String

    public init(_ code: Code, attribute: String? = nil, _ message: String) {
        self.code = code
        self.attribute = attribute
        self.message = message
    }

    public var description: String {
        if let attribute { return "\(attribute): \(message)" }
        return message
    }
}
