import ClarionCore
import ClarionCrypto
import Foundation
import Synchronization

/// One request the emulator answered, as recorded (JSON line in the record file).
///
/// The device token is kept whole (tests assert on it, and emulator tokens are not secrets), but the
/// `authorization` header never is: provider tokens, access tokens and client secrets are credentials,
/// so the record holds `<redacted>` instead.
public struct EmulatorRecord: Codable, Sendable, Equatable {
    /// Unix seconds.
    public var time: Double
    /// `apns`, `fcm`, `adm` (sends), `fcm-oauth`, `adm-oauth` (token endpoints) or `unknown`.
    public var endpoint: String
    public var connection: UInt64
    public var method: String
    public var path: String
    /// The device token / FCM target / ADM registration id, when the request named one.
    public var token: String?
    /// The HTTP status, or 0 when the stream got no response (stall, reset, drop, GOAWAY: see `fault`).
    public var status: Int
    /// APNs `reason`, FCM `errorCode` (or canonical status), ADM `reason`, OAuth `error`.
    public var reason: String?
    /// The injected fault that decided the answer, if any.
    public var fault: String?
    /// How long the answer was held after `time` (added latency, the stall window); nil when it went out at once.
    /// The client saw the answer no earlier than `time + heldSeconds`.
    public var heldSeconds: Double?
    public var headers: [String: String]
    /// The request body as UTF-8 text (form bodies have their secrets redacted). Web Push: the decrypted plaintext.
    public var payload: String
    /// Web Push: the raw (encrypted) request body, base64url, so a test can decrypt it on its own.
    public var body: String? = nil
    /// Web Push: the VAPID JWT of the `authorization` header. The push service is its audience (it is no secret
    /// from the emulator playing that service), and a test verifies it independently with the `k=` key.
    public var vapidToken: String? = nil
}

/// Counters served at `GET /_emulator/stats`.
public struct EmulatorStats: Codable, Sendable, Equatable {
    public struct Endpoint: Codable, Sendable, Equatable {
        public var requests: Int = 0
        /// Count per HTTP status ("200", "410"...), and for stalled/reset/dropped/GOAWAY streams
        /// the action name.
        public var statuses: [String: Int] = [:]
        /// Count per provider reason / error code.
        public var reasons: [String: Int] = [:]
        /// Count per injected fault.
        public var faults: [String: Int] = [:]
    }

    /// Per endpoint (`apns`, `fcm`, `fcm-oauth`, `adm`, `adm-oauth`, `unknown`).
    public var endpoints: [String: Endpoint] = [:]
    public var totalRequests: Int = 0
    /// Records not kept in memory because `recordLimit` was reached.
    public var recordsDropped: Int = 0
    /// Send requests whose answer the stall window held (`EmulatorFaults.stallWindow`).
    public var heldByStallWindow: Int = 0

    public subscript(endpoint: String) -> Endpoint { endpoints[endpoint] ?? Endpoint() }

    /// Accepted (2xx) answers for `endpoint`.
    public func accepted(_ endpoint: String) -> Int {
        self[endpoint].statuses.filter { $0.key.hasPrefix("2") }.reduce(0) { $0 + $1.value }
    }
}

/// The outcome of one request, for counters and records.
struct RequestOutcome {
    /// One of `EmulatorRecorder.endpointNames`.
    var endpointIndex: Int
    var endpoint: String { EmulatorRecorder.endpointNames[endpointIndex] }
    var token: Substring?
    /// HTTP status, or nil for stall / reset / drop / GOAWAY.
    var status: Int?
    var reason: String?
    var fault: InjectedFault?
    var action: String {
        if let status { return String(status) }
        return fault?.rawValue ?? "none"
    }
}

/// Counters, in-memory records and the JSON-lines record file.
///
/// Counting takes one short lock per request; records are built only when recording is on. The file
/// is written through a buffer flushed every 64 KiB and on `flush()`.
final class EmulatorRecorder: Sendable {
    private struct CounterKey: Hashable {
        var endpoint: String
        var action: String
        var reason: String?
        var fault: String?
    }

    /// Endpoint names, indexed by `RequestOutcome.endpointIndex`.
    static let endpointNames = ["apns", "fcm", "fcm-oauth", "adm", "adm-oauth", "unknown", "webpush", "hms", "hms-oauth"]

    private struct State {
        /// Hot path: plain 200s without reason or fault, per endpoint index (no hashing).
        var plainAccepted = [Int](repeating: 0, count: EmulatorRecorder.endpointNames.count)
        var counts: [CounterKey: Int] = [:]
        var records: [EmulatorRecord] = []
        var dropped = 0
        var fileBuffer: [UInt8] = []
    }

    private let state = Mutex(State())
    private let file: Mutex<FileHandle?>
    let recordInMemory: Bool
    let recordLimit: Int
    let recordsToFile: Bool
    var isRecording: Bool { recordInMemory || recordsToFile }

    init(recordPath: String?, recordInMemory: Bool, recordLimit: Int) throws(EmulatorConfigurationError) {
        self.recordInMemory = recordInMemory
        self.recordLimit = max(0, recordLimit)
        if let recordPath {
            if !FileManager.default.fileExists(atPath: recordPath) {
                guard FileManager.default.createFile(atPath: recordPath, contents: nil) else {
                    throw EmulatorConfigurationError("cannot create the record file \(recordPath)")
                }
            }
            guard let handle = FileHandle(forWritingAtPath: recordPath) else {
                throw EmulatorConfigurationError("cannot open the record file \(recordPath) for writing")
            }
            _ = try? handle.seekToEnd()
            file = Mutex(handle)
            recordsToFile = true
        } else {
            file = Mutex(nil)
            recordsToFile = false
        }
    }

    deinit {
        flush()
        file.withLock { try? $0?.close() }
    }

    func count(_ outcome: RequestOutcome) {
        if outcome.status == 200, outcome.reason == nil, outcome.fault == nil {
            state.withLock { $0.plainAccepted[outcome.endpointIndex] += 1 }
            return
        }
        let key = CounterKey(endpoint: outcome.endpoint, action: outcome.action, reason: outcome.reason, fault: outcome.fault?.rawValue)
        state.withLock { $0.counts[key, default: 0] += 1 }
    }

    func record(_ record: EmulatorRecord) {
        var line: [UInt8] = []
        if recordsToFile {
            line = Self.jsonLine(record)
        }
        let flushNow = state.withLock { state -> Bool in
            if recordInMemory {
                if state.records.count < recordLimit {
                    state.records.append(record)
                } else {
                    state.dropped += 1
                }
            }
            guard recordsToFile else { return false }
            state.fileBuffer.append(contentsOf: line)
            return state.fileBuffer.count >= 64 * 1024
        }
        if flushNow { flush() }
    }

    /// Writes buffered record lines to the file.
    func flush() {
        guard recordsToFile else { return }
        // Take the buffer and write it under the file lock, so lines stay in order and whole.
        file.withLock { handle in
            let pending = state.withLock { state -> [UInt8] in
                let pending = state.fileBuffer
                state.fileBuffer.removeAll(keepingCapacity: true)
                return pending
            }
            guard !pending.isEmpty, let handle else { return }
            try? handle.write(contentsOf: pending)
        }
    }

    func records() -> [EmulatorRecord] {
        state.withLock { $0.records }
    }

    func stats() -> EmulatorStats {
        var (counts, plain, dropped) = state.withLock { ($0.counts, $0.plainAccepted, $0.dropped) }
        for (index, count) in plain.enumerated() where count > 0 {
            counts[CounterKey(endpoint: Self.endpointNames[index], action: "200", reason: nil, fault: nil), default: 0] += count
        }
        var stats = EmulatorStats()
        stats.recordsDropped = dropped
        for (key, count) in counts {
            var endpoint = stats.endpoints[key.endpoint] ?? EmulatorStats.Endpoint()
            endpoint.requests += count
            endpoint.statuses[key.action, default: 0] += count
            if let reason = key.reason { endpoint.reasons[reason, default: 0] += count }
            if let fault = key.fault { endpoint.faults[fault, default: 0] += count }
            stats.endpoints[key.endpoint] = endpoint
            stats.totalRequests += count
        }
        return stats
    }

    /// Clears counters and in-memory records (the record file is left as written).
    func reset() {
        flush()
        state.withLock { state in
            state.counts.removeAll()
            state.plainAccepted = [Int](repeating: 0, count: Self.endpointNames.count)
            state.records.removeAll()
            state.dropped = 0
        }
    }

    static func jsonLine(_ record: EmulatorRecord) -> [UInt8] {
        var object: JSONObject = [
            "time": .double(record.time),
            "endpoint": .string(record.endpoint),
            "connection": .number(JSONNumber(record.connection)),
            "method": .string(record.method),
            "path": .string(record.path),
            "status": .number(JSONNumber(record.status)),
            "headers": .object(JSONObject(record.headers.map { ($0.key, .string($0.value)) })),
            "payload": .string(record.payload),
        ]
        if let token = record.token { object["token"] = .string(token) }
        if let reason = record.reason { object["reason"] = .string(reason) }
        if let fault = record.fault { object["fault"] = .string(fault) }
        if let held = record.heldSeconds { object["heldSeconds"] = .double(held) }
        if let body = record.body { object["body"] = .string(body) }
        if let vapid = record.vapidToken { object["vapidToken"] = .string(vapid) }
        var line = JSONValue.object(object).encodedSortingKeys()
        line.append(0x0a)
        return line
    }

    static func statsJSON(_ stats: EmulatorStats) -> [UInt8] {
        func counts(_ table: [String: Int]) -> JSONValue { .object(JSONObject(table.map { ($0.key, .number(JSONNumber($0.value))) })) }
        let endpoints = JSONObject(stats.endpoints.map { name, endpoint -> (String, JSONValue) in
            (name, .object([
                "requests": .number(JSONNumber(endpoint.requests)),
                "statuses": counts(endpoint.statuses),
                "reasons": counts(endpoint.reasons),
                "faults": counts(endpoint.faults),
            ]))
        })
        return JSONValue.object([
            "totalRequests": .number(JSONNumber(stats.totalRequests)),
            "recordsDropped": .number(JSONNumber(stats.recordsDropped)),
            "heldByStallWindow": .number(JSONNumber(stats.heldByStallWindow)),
            "endpoints": .object(endpoints),
        ]).encodedSortingKeys()
    }
}
