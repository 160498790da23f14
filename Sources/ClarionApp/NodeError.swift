/// Why `clarion` could not do what it was asked; each code has its own exit status.
public struct NodeError: Error, Sendable, CustomStringConvertible {
    public enum Code: Sendable {
        /// Bad flags or arguments (exit 64, EX_USAGE).
        case usage
        /// The database or another service is unreachable (exit 69, EX_UNAVAILABLE).
        case unavailable
        /// A setting is invalid or missing (exit 78, EX_CONFIG).
        case configuration
        /// Anything else (exit 70, EX_SOFTWARE).
        case internalError
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var exitCode: Int32 {
        switch code {
        case .usage: return 64
        case .unavailable: return 69
        case .configuration: return 78
        case .internalError: return 70
        }
    }

    public var description: String { message }
}
