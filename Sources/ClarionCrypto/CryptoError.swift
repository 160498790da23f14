/// A crypto failure, keys and JWTs alike: a code to switch on and a message for people. Never carries key material
/// or a token.
public struct CryptoError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable {
        case invalidKey
        case decryptionFailed
        case invalidPEM
        case signingFailed
        case verificationFailed
        case certificateFailed
        /// A JWT that is not three base64url parts, or a part that is not a JSON object.
        case malformedToken
        /// A JWT whose `alg` is missing, `none`, or not one Clarion verifies.
        case unsupportedAlgorithm
        /// The key's algorithm is not the JWT's `alg`.
        case algorithmMismatch
        /// A JWT whose signature does not verify with the key.
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
