/// Why a Publish's message or attributes were refused. The API answers it as SNS does:
/// `InvalidParameter` (HTTP 400) with `message` as the error text.
public struct MessageValidationError: Error, Sendable, Hashable, CustomStringConvertible {
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// MessageStructure is neither absent nor "json".
        public static let invalidMessageStructure = Code(rawValue: "invalidMessageStructure")
        /// The message map is not a JSON object (bad syntax, another type, a repeated key).
        public static let invalidJSON = Code(rawValue: "invalidJSON")
        /// A topic publish whose map has no string "default".
        public static let missingDefault = Code(rawValue: "missingDefault")
        /// A direct publish whose map has neither "default" nor the endpoint platform's key.
        public static let missingPlatformEntry = Code(rawValue: "missingPlatformEntry")
        /// A platform key's string is not a JSON object.
        public static let invalidPlatformPayload = Code(rawValue: "invalidPlatformPayload")
        /// A reserved AWS.SNS.MOBILE.* attribute has a wrong type or value.
        public static let invalidAttribute = Code(rawValue: "invalidAttribute")
    }

    public let code: Code
    /// SNS's wording where it is known (docs/providers.md, emulators that match SNS), else the same style.
    public let message: String
    /// The message-map key or attribute name at fault, when there is one.
    public let key: String?

    public init(_ code: Code, _ message: String, key: String? = nil) {
        self.code = code
        self.message = message
        self.key = key
    }

    public var description: String { "\(code): \(message)" }
}
