import Foundation
import Synchronization

/// Structured logs: one JSON object per line on standard error, a constant message and data in fields.
/// Callers never pass secrets or full device tokens (docs/security.md).
public struct Log: Sendable {
    public enum Level: String, Sendable { case debug, info, warning, error }

    let label: String
    private static let lock = Mutex(())

    public init(_ label: String) { self.label = label }

    public func info(_ message: String, _ fields: [String: String] = [:]) { write(.info, message, fields) }
    public func warning(_ message: String, _ fields: [String: String] = [:]) { write(.warning, message, fields) }
    public func error(_ message: String, _ fields: [String: String] = [:]) { write(.error, message, fields) }

    func write(_ level: Level, _ message: String, _ fields: [String: String]) {
        var object: [String: String] = fields
        object["ts"] = ISO8601DateFormatter.string(from: Date(), timeZone: TimeZone(identifier: "UTC")!,
                                                   formatOptions: [.withInternetDateTime, .withFractionalSeconds])
        object["level"] = level.rawValue
        object["logger"] = label
        object["msg"] = message
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else { return }
        var line = data
        line.append(0x0a)
        Self.lock.withLock { _ in
            line.withUnsafeBytes { _ = Foundation.write(STDERR_FILENO, $0.baseAddress, $0.count) }
        }
    }
}
