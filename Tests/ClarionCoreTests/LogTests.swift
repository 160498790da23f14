import Foundation
import Synchronization
import Testing
@testable import ClarionCore

/// The one logger's line shapes (issue 17, "One structured logger"): `ts` (RFC 3339, UTC, milliseconds), `level`,
/// `logger`, `msg`, then fields; JSON or a human-readable line.
@Suite("Log")
struct LogTests {
    static let time = (seconds: 1_796_245_449, milliseconds: 7)

    @Test("A JSON line: ts, level, logger, msg first, then the fields in key order")
    func jsonLine() throws {
        let bytes = Log.line(.warning, logger: "clarion.dispatch", message: "endpoint disabled",
                             fields: ["reason": "Unregistered", "application": "ios"], at: Self.time, format: .json)
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text == #"{"ts":"2026-12-02T21:04:09.007Z","level":"warning","logger":"clarion.dispatch","msg":"endpoint disabled","application":"ios","reason":"Unregistered"}"# + "\n")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: String])
        #expect(object.count == 6)
    }

    @Test("A field can never break a JSON line: quotes, backslashes, newlines and control characters are escaped")
    func jsonEscapes() throws {
        let hostile = "a\"b\\c\nd\u{1}e"
        let bytes = Log.line(.info, logger: "x", message: "m", fields: ["k\n": hostile], at: Self.time, format: .json)
        #expect(bytes.filter { $0 == 0x0a }.count == 1)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: String])
        #expect(object["k\n"] == hostile)
    }

    @Test("A text line: time, level tag, logger, message, key=value with quotes only where needed")
    func textLine() {
        let bytes = Log.line(.error, logger: "clarion.store", message: "database unavailable",
                             fields: ["cause": "connection refused", "down_seconds": "3", "empty": ""],
                             at: Self.time, format: .text)
        #expect(String(decoding: bytes, as: UTF8.self)
            == #"2026-12-02T21:04:09.007Z ERROR clarion.store: database unavailable cause="connection refused" down_seconds=3 empty="""# + "\n")
        let injected = Log.line(.info, logger: "l", message: "m", fields: ["k": "a\nb=c"], at: Self.time, format: .text)
        #expect(String(decoding: injected, as: UTF8.self) == #"2026-12-02T21:04:09.007Z INFO  l: m k="a\nb=c""# + "\n")
    }

    @Test("The timestamp is RFC 3339 in UTC with milliseconds, as Foundation's ISO 8601 formatter writes it")
    func timestampsAgreeWithFoundation() {
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")!
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        var generator = SystemRandomNumberGenerator()
        var seconds: [Int] = [0, 59, 86_399, 86_400, 951_782_400, 951_868_799, 4_102_444_800, 253_402_300_799]
        for _ in 0..<2000 { seconds.append(Int.random(in: 0...253_402_300_799, using: &generator)) }
        for second in seconds {
            let millis = Int.random(in: 0...999, using: &generator)
            var out: [UInt8] = []
            Log.appendTimestamp((second, millis), to: &out)
            let expected = formatter.string(from: Date(timeIntervalSince1970: Double(second) + Double(millis) / 1000 + 0.0001))
            #expect(String(decoding: out, as: UTF8.self) == expected, "second \(second)")
        }
    }

    @Test("Levels: names as settings spell them, ordered, and a logger with a sink gets every line")
    func levelsAndSinks() {
        #expect(Log.Level(name: "WARN") == .warning)
        #expect(Log.Level(name: "Debug") == .debug)
        #expect(Log.Level(name: "verbose") == nil)
        #expect(Log.Level.debug < .info && Log.Level.warning < .error)
        let seen = Mutex<[String]>([])
        let log = Log("t") { level, message, fields in seen.withLock { $0.append("\(level.name) \(message) \(fields)") } }
        log.debug("d")
        log.error("e", ["k": "v"])
        #expect(seen.withLock { $0 } == ["debug d [:]", "error e [\"k\": \"v\"]"])
    }

    @Test("A device token in a log is its first 8 characters")
    func tokenPrefix() {
        #expect(Log.tokenPrefix(String(repeating: "ab", count: 32)) == "abababab…")
    }
}
