/// A store failure as a code to switch on, never a string to match.
///
/// Constraint violations carry the constraint's name so repositories can turn them into domain errors
/// (for example `endpoints_application_token_key` -> "an endpoint with this token exists").
public struct StoreError: Error, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable {
        /// SQLSTATE 23505.
        case uniqueViolation
        /// SQLSTATE 23503.
        case foreignKeyViolation
        /// SQLSTATE 23514.
        case checkViolation
        /// SQLSTATE 23502.
        case notNullViolation
        /// The row the caller named does not exist.
        case notFound
        /// The connection broke while a command ran (server restart, network). Safe to retry idempotent work.
        case connectionLost
        /// No connection could be made: the database is down or unreachable.
        case unavailable
        /// SQLSTATE 40001 / 40P01: retry the transaction.
        case serializationFailure
        /// SQLSTATE 57014: statement timeout or cancel.
        case timeout
        /// SQLSTATE class 53: the server is out of a resource (53100 disk full, 53200 out of memory, 53300 too many
        /// connections). It still answers, but cannot do this now; `message` names the resource ("could not extend
        /// file ...: No space left on device").
        case insufficientResources
        /// This process's own queue for the store is full (the publish batcher): back off and retry.
        case busy
        /// A migration or schema problem.
        case migrationFailed
        /// A value in a row did not have the expected form.
        case invalidData
        /// The pool was shut down.
        case shutDown
        /// Any other server error; `sqlState` tells which.
        case queryFailed
    }

    public let code: Code
    public let message: String
    public let sqlState: String?
    public let constraint: String?

    public init(_ code: Code, _ message: String, sqlState: String? = nil, constraint: String? = nil) {
        self.code = code
        self.message = message
        self.sqlState = sqlState
        self.constraint = constraint
    }

    /// Maps a SQLSTATE to a code. Class 08 is connection trouble; 57P01-57P03 mean the server went away.
    static func code(forSQLState state: String) -> Code {
        switch state {
        case "23505": return .uniqueViolation
        case "23503": return .foreignKeyViolation
        case "23514": return .checkViolation
        case "23502": return .notNullViolation
        case "40001", "40P01": return .serializationFailure
        case "57014": return .timeout
        case "57P01", "57P02", "57P03": return .connectionLost
        default:
            if state.hasPrefix("08") { return .connectionLost }
            if state.hasPrefix("53") { return .insufficientResources }
            return .queryFailed
        }
    }

    /// The database itself is out: it cannot be reached, the session was lost, or it is out of a resource.
    /// `DatabaseHealth` reports these once per outage.
    public var isOutage: Bool {
        switch code {
        case .unavailable, .connectionLost, .insufficientResources: true
        default: false
        }
    }

    /// The request may succeed if repeated later, and the caller did nothing wrong: the API answers 503 (or SNS's
    /// throttling error for `.busy`), never 500.
    public var isTransient: Bool {
        switch code {
        case .unavailable, .connectionLost, .insufficientResources, .busy, .shutDown, .timeout, .serializationFailure: true
        default: false
        }
    }

    /// The error for a log line: code, SQLSTATE, constraint, and the message cut to 200 characters.
    public var logText: String {
        var text = "store \(code.rawValue): \(message.prefix(200))"
        if let sqlState { text += " (SQLSTATE \(sqlState))" }
        if let constraint { text += " [constraint \(constraint)]" }
        return text
    }

    public var description: String {
        var text = "\(code.rawValue): \(message)"
        if let sqlState { text += " (SQLSTATE \(sqlState))" }
        if let constraint { text += " [constraint \(constraint)]" }
        return text
    }
}
