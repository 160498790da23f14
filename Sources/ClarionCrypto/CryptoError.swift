/// A crypto failure: a code to switch on and a message for people. Never carries key material.
public struct CryptoError: Error, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable {
        case invalidKey
        case decryptionFailed
        case invalidPEM
        case signingFailed
        case verificationFailed
        case certificateFailed
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }
}
