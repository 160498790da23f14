/// Why a JWT was refused. Carries no key material and never the token itself.
public struct JWTError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable {
        /// Not three base64url parts, or a part is not a JSON object.
        case malformed
        /// `alg` missing, `none`, or not one Clarion verifies.
        case unsupportedAlgorithm
        /// The key's algorithm is not the token's `alg`.
        case algorithmMismatch
        /// The signature does not verify with the key.
        case invalidSignature
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }
}
