import Foundation
import Synchronization

/// Clarion's one logger. Every line carries `ts` (RFC 3339, UTC, milliseconds), `level`, `logger` and `msg`, then
/// the caller's fields in key order: one JSON object per line, or one human-readable line when standard error is a
/// terminal. `CLARION_LOG_FORMAT` (json | text) overrides the choice and `CLARION_LOG_LEVEL` sets the lowest level
/// written (`Log.configure`). Messages are constant; data goes in fields. Callers never pass secrets or full device
/// tokens (`Log.tokenPrefix`; docs/security.md).
///
/// A `Log` made with a sink hands its lines to that closure instead (tests, and modules that count what they log).
public struct Log: Sendable {
    public enum Level: Int, Sendable, Comparable, CaseIterable {
        case debug, info, warning, error

        public var name: String {
            switch self {
            case .debug: "debug"
            case .info: "info"
            case .warning: "warning"
            case .error: "error"
            }
        }

        /// The level a setting names: debug, info, warning (or warn), error; any case.
        public init?(name: String) {
            switch name.lowercased() {
            case "debug": self = .debug
            case "info": self = .info
            case "warning", "warn": self = .warning
            case "error": self = .error
            default: return nil
            }
        }

        public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }
    }

    public enum Format: String, Sendable, CaseIterable {
        case json, text
    }

    public typealias Sink = @Sendable (_ level: Level, _ message: String, _ fields: [String: String]) -> Void

    public let label: String
    private let sink: Sink?

    /// A logger writing to standard error, at the process's level and format.
    public init(_ label: String) {
        self.label = label
        self.sink = nil
    }

    /// A logger handing every line to `sink`, whatever the process's level.
    public init(_ label: String, sink: @escaping Sink) {
        self.label = label
        self.sink = sink
    }

    /// Writes nothing (tests that do not look at logs).
    public static let silent = Log("silent") { _, _, _ in }

    public func debug(_ message: String, _ fields: [String: String] = [:]) { log(.debug, message, fields) }
    public func info(_ message: String, _ fields: [String: String] = [:]) { log(.info, message, fields) }
    public func warning(_ message: String, _ fields: [String: String] = [:]) { log(.warning, message, fields) }
    public func error(_ message: String, _ fields: [String: String] = [:]) { log(.error, message, fields) }

    public func log(_ level: Level, _ message: String, _ fields: [String: String] = [:]) {
        if let sink {
            sink(level, message, fields)
            return
        }
        guard Self.enabled(level) else { return }
        let line = Self.line(level, logger: label, message: message, fields: fields, at: Self.now(),
                             format: Self.format)
        Self.writeToStandardError(line)
    }

    /// A device token as logs may show it: its first 8 characters and an ellipsis.
    public static func tokenPrefix(_ token: String) -> String { String(token.prefix(8)) + "…" }

    // MARK: - The process's settings

    private static let settings = Atomic<Int>(packed(level: .info, format: defaultFormat))
    private static let writeLock = Mutex(())

    private static func packed(level: Level, format: Format) -> Int {
        level.rawValue << 1 | (format == .text ? 1 : 0)
    }

    /// Text when standard error is a terminal, JSON otherwise (a file, a pipe, journald).
    public static var defaultFormat: Format { isatty(STDERR_FILENO) != 0 ? .text : .json }

    public static func configure(level: Level, format: Format) {
        settings.store(packed(level: level, format: format), ordering: .relaxed)
    }

    public static var level: Level { Level(rawValue: settings.load(ordering: .relaxed) >> 1) ?? .info }
    public static var format: Format { settings.load(ordering: .relaxed) & 1 == 1 ? .text : .json }

    /// True when a line at `level` is written (check before building costly fields).
    public static func enabled(_ level: Level) -> Bool { level >= Self.level }

    // MARK: - Lines

    /// Seconds and milliseconds since the epoch, from the real-time clock.
    public static func now() -> (seconds: Int, milliseconds: Int) {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return (time.tv_sec, time.tv_nsec / 1_000_000)
    }

    /// One line, newline included, in `format`.
    public static func line(_ level: Level, logger: String, message: String, fields: [String: String],
                            at time: (seconds: Int, milliseconds: Int), format: Format) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(128 + fields.count * 32)
        switch format {
        case .json:
            appendJSONHead(level, logger: logger, message: message, at: time, to: &out)
            for key in fields.keys.sorted() {
                out.append(UInt8(ascii: ","))
                JSONText.appendQuoted(key, to: &out)
                out.append(UInt8(ascii: ":"))
                JSONText.appendQuoted(fields[key]!, to: &out)
            }
            out.append(contentsOf: "}\n".utf8)
        case .text:
            appendTextHead(level, logger: logger, message: message, at: time, to: &out)
            for key in fields.keys.sorted() {
                appendTextField(key, fields[key]!, to: &out)
            }
            out.append(UInt8(ascii: "\n"))
        }
        return out
    }

    /// `{"ts":"…","level":"…","logger":"…","msg":"…"` with no closing brace: the access log appends its own fields.
    public static func appendJSONHead(_ level: Level, logger: String, message: String,
                                      at time: (seconds: Int, milliseconds: Int), to out: inout [UInt8]) {
        out.append(contentsOf: #"{"ts":""#.utf8)
        appendTimestamp(time, to: &out)
        out.append(contentsOf: #"","level":""#.utf8)
        out.append(contentsOf: level.name.utf8)
        out.append(contentsOf: #"","logger":"#.utf8)
        JSONText.appendQuoted(logger, to: &out)
        out.append(contentsOf: #","msg":"#.utf8)
        JSONText.appendQuoted(message, to: &out)
    }

    /// `2026-12-02T20:44:09.123Z WARN  clarion.dispatch  message` (no newline).
    public static func appendTextHead(_ level: Level, logger: String, message: String,
                                      at time: (seconds: Int, milliseconds: Int), to out: inout [UInt8]) {
        appendTimestamp(time, to: &out)
        out.append(UInt8(ascii: " "))
        let tag: String = switch level {
        case .debug: "DEBUG"
        case .info: "INFO "
        case .warning: "WARN "
        case .error: "ERROR"
        }
        out.append(contentsOf: tag.utf8)
        out.append(UInt8(ascii: " "))
        appendTextValue(logger, to: &out)
        out.append(contentsOf: ": ".utf8)
        appendTextValue(message, to: &out)
    }

    /// ` key=value`; the value in JSON quotes when it is empty or holds a space, a quote, `=` or a control character
    /// (so one line stays one line, whatever a field carries).
    public static func appendTextField(_ key: String, _ value: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: " "))
        appendTextValue(key, to: &out)
        out.append(UInt8(ascii: "="))
        let plain = !value.isEmpty && value.utf8.allSatisfy { $0 > 0x20 && $0 != 0x7f && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "=") }
        if plain { out.append(contentsOf: value.utf8) } else { JSONText.appendQuoted(value, to: &out) }
    }

    /// Text with control characters escaped (messages and keys are constants, but a line must stay one line).
    private static func appendTextValue(_ text: String, to out: inout [UInt8]) {
        if text.utf8.allSatisfy({ $0 >= 0x20 && $0 != 0x7f }) {
            out.append(contentsOf: text.utf8)
        } else {
            var quoted: [UInt8] = []
            JSONText.appendQuoted(text, to: &quoted)
            out.append(contentsOf: quoted.dropFirst().dropLast())
        }
    }

    /// RFC 3339 in UTC with milliseconds: `2026-12-02T20:44:09.123Z`.
    public static func appendTimestamp(_ time: (seconds: Int, milliseconds: Int), to out: inout [UInt8]) {
        UTCTime.appendRFC3339Milliseconds(Int64(time.seconds), milliseconds: time.milliseconds, to: &out)
    }

    /// Whole lines only: a line written by two threads at once never interleaves.
    public static func writeToStandardError(_ line: [UInt8]) {
        writeLock.withLock { _ in
            line.withUnsafeBytes { bytes in
                var offset = 0
                while offset < bytes.count {
                    let n = Foundation.write(STDERR_FILENO, bytes.baseAddress! + offset, bytes.count - offset)
                    if n > 0 { offset += n } else if n < 0 && errno == EINTR { continue } else { return }
                }
            }
        }
    }
}
