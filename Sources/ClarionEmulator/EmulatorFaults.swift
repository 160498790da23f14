import Foundation

/// Faults to inject into provider send requests (APNs push, FCM send, ADM send; never the OAuth token
/// endpoints or `/_emulator/*`), deterministic so a test can count on them.
///
/// Each rate is evaluated against the request's sequence number n (1, 2, 3... over the emulator's send
/// requests, in arrival order): `everyNth: N` fires when n is a multiple of N (exactly floor(n/N) of
/// the first n requests); `fraction: f` fires when a hash of (seed, fault, n) falls below f, so the
/// same seed gives the same pattern of faulty sequence numbers on every run.
///
/// Order of evaluation: connection faults first (`dropConnection`, `goAwayAfterStreams`), then stream
/// faults (`stall`, `resetStream`), then the provider's own validation, then status faults for requests
/// that would have succeeded (`internalError` 500, `unavailable` 503, `throttle` 429), then `latency`
/// and the `stallWindow` hold on whatever answer results.
public struct EmulatorFaults: Codable, Sendable, Hashable {
    /// Restrict the faults to these providers (nil: all).
    public var providers: [EmulatorProvider]?
    /// 429: APNs `TooManyRequests`, FCM `QUOTA_EXCEEDED`, ADM `MaxRateExceeded`; FCM and ADM with
    /// `Retry-After`.
    public var throttle: Rate?
    /// 500: APNs `InternalServerError`, FCM `INTERNAL`, ADM 500.
    public var internalError: Rate?
    /// 503: APNs `ServiceUnavailable`, FCM `UNAVAILABLE`, ADM 503; FCM and ADM with `Retry-After`.
    public var unavailable: Rate?
    /// The `Retry-After` seconds sent with throttle and unavailable answers.
    public var retryAfterSeconds: Int = 1
    /// The stream is never answered.
    public var stall: Rate?
    /// The provider stalls once for a while (a fault test's "2 s stall"): from the arrival of send request
    /// number `StallWindow.atRequest`, every send request that arrives within `StallWindow.milliseconds` is
    /// held and answered as it would have been when the window closes. Refused streams (GOAWAY) and
    /// per-stream faults are not held.
    public var stallWindow: StallWindow?
    /// The stream is reset with REFUSED_STREAM (7).
    public var resetStream: Rate?
    /// The socket is closed without GOAWAY.
    public var dropConnection: Rate?
    /// Per connection: after this many streams, the next one gets GOAWAY (earlier ones complete). APNs
    /// connections get debug data `{"reason":"<goAwayReason>"}` (A.7).
    public var goAwayAfterStreams: Int?
    public var goAwayReason: String = "Shutdown"
    /// Added to every answer of a send request, in milliseconds.
    public var latencyMilliseconds: Int?
    public var seed: UInt64 = 1

    public init() {}

    public struct StallWindow: Codable, Sendable, Hashable {
        /// The window opens when the send request with this sequence number (1-based) arrives.
        public var atRequest: Int
        public var milliseconds: Int

        public init(atRequest: Int, milliseconds: Int) {
            self.atRequest = atRequest
            self.milliseconds = milliseconds
        }
    }

    public struct Rate: Codable, Sendable, Hashable {
        public var everyNth: Int?
        public var fraction: Double?

        public init(everyNth: Int? = nil, fraction: Double? = nil) {
            self.everyNth = everyNth
            self.fraction = fraction
        }

        public static func every(_ n: Int) -> Rate { Rate(everyNth: n) }
        public static func fraction(_ f: Double) -> Rate { Rate(fraction: f) }

        func fires(sequence: UInt64, seed: UInt64, salt: UInt64) -> Bool {
            if let everyNth, everyNth > 0, sequence % UInt64(everyNth) == 0 { return true }
            if let fraction, fraction > 0 {
                let draw = Double(splitMix64(seed ^ (salt &* 0x9e37_79b9_7f4a_7c15) ^ sequence) >> 11) / Double(1 << 53)
                return draw < fraction
            }
            return false
        }
    }

    enum CodingKeys: String, CodingKey {
        case providers, throttle, internalError, unavailable, retryAfterSeconds, stall, stallWindow, resetStream, dropConnection
        case goAwayAfterStreams, goAwayReason, latencyMilliseconds, seed
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = Self()
        providers = try c.decodeIfPresent([EmulatorProvider].self, forKey: .providers)
        throttle = try c.decodeIfPresent(Rate.self, forKey: .throttle)
        internalError = try c.decodeIfPresent(Rate.self, forKey: .internalError)
        unavailable = try c.decodeIfPresent(Rate.self, forKey: .unavailable)
        retryAfterSeconds = try c.decode(.retryAfterSeconds, default: d.retryAfterSeconds)
        stall = try c.decodeIfPresent(Rate.self, forKey: .stall)
        stallWindow = try c.decodeIfPresent(StallWindow.self, forKey: .stallWindow)
        resetStream = try c.decodeIfPresent(Rate.self, forKey: .resetStream)
        dropConnection = try c.decodeIfPresent(Rate.self, forKey: .dropConnection)
        goAwayAfterStreams = try c.decodeIfPresent(Int.self, forKey: .goAwayAfterStreams)
        goAwayReason = try c.decode(.goAwayReason, default: d.goAwayReason)
        latencyMilliseconds = try c.decodeIfPresent(Int.self, forKey: .latencyMilliseconds)
        seed = try c.decode(.seed, default: d.seed)
    }

    /// True when no fault is configured: the hot path then skips the fault machinery entirely.
    var isEmpty: Bool {
        throttle == nil && internalError == nil && unavailable == nil && stall == nil && stallWindow == nil && resetStream == nil
            && dropConnection == nil && goAwayAfterStreams == nil && (latencyMilliseconds ?? 0) <= 0
    }

    func applies(to provider: EmulatorProvider) -> Bool {
        providers?.contains(provider) ?? true
    }
}

/// Which injected fault decided a request (recorded and counted).
enum InjectedFault: String, Sendable {
    case throttle, internalError, unavailable, stall, resetStream, dropConnection, goAway
}

/// SplitMix64: a tiny, well-mixed, stateless hash of a 64-bit value, used for seeded fault draws.
func splitMix64(_ value: UInt64) -> UInt64 {
    var z = value &+ 0x9e37_79b9_7f4a_7c15
    z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
    z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
    return z ^ (z >> 31)
}

// MARK: - Command-line form

extension EmulatorFaults {
    /// Applies one `name=value` fault setting, the form a command line takes
    /// (`clarion emulator --fault throttle=0.05 --fault goaway-after=1000`):
    ///
    /// | name | value | sets |
    /// |---|---|---|
    /// | `throttle`, `internal-error`, `unavailable`, `stall`, `reset`, `drop` | `N` (every Nth) or `0.05` / `5%` (seeded fraction) | the rate |
    /// | `stall-window` | `N:MS`: from send request N on, hold every send arriving within MS milliseconds | `stallWindow` |
    /// | `goaway-after` | streams per connection | `goAwayAfterStreams` |
    /// | `goaway-reason` | APNs reason in the GOAWAY debug data | `goAwayReason` |
    /// | `latency-ms` | milliseconds | `latencyMilliseconds` |
    /// | `retry-after` | seconds | `retryAfterSeconds` |
    /// | `seed` | integer | `seed` |
    /// | `providers` | `apns,fcm,adm,hms` | `providers` |
    public mutating func apply(_ setting: String) throws(EmulatorConfigurationError) {
        let parts = setting.split(separator: "=", maxSplits: 1).map(String.init)
        guard parts.count == 2, !parts[1].isEmpty else {
            throw EmulatorConfigurationError("fault setting \(setting) is not name=value")
        }
        let (name, value) = (parts[0].lowercased(), parts[1])
        func integer() throws(EmulatorConfigurationError) -> Int {
            guard let number = Int(value), number >= 0 else {
                throw EmulatorConfigurationError("fault \(name) needs a non-negative integer, got \(value)")
            }
            return number
        }
        func rate() throws(EmulatorConfigurationError) -> Rate {
            if value.hasSuffix("%"), let percent = Double(value.dropLast()), (0...100).contains(percent) {
                return .fraction(percent / 100)
            }
            if value.contains("."), let fraction = Double(value), (0...1).contains(fraction) {
                return .fraction(fraction)
            }
            if let every = Int(value), every >= 1 { return .every(every) }
            throw EmulatorConfigurationError("fault \(name) needs N (every Nth), a fraction like 0.05, or a percentage like 5%, got \(value)")
        }
        switch name {
        case "throttle": throttle = try rate()
        case "internal-error", "internalerror", "500": internalError = try rate()
        case "unavailable", "503": unavailable = try rate()
        case "stall": stall = try rate()
        case "reset", "reset-stream": resetStream = try rate()
        case "drop", "drop-connection": dropConnection = try rate()
        case "stall-window":
            let numbers = value.split(separator: ":", maxSplits: 1).map { Int($0) }
            guard numbers.count == 2, let at = numbers[0], let milliseconds = numbers[1], at >= 1, milliseconds >= 1 else {
                throw EmulatorConfigurationError("fault stall-window needs N:MS (from send request N >= 1, hold MS >= 1 milliseconds), got \(value)")
            }
            stallWindow = StallWindow(atRequest: at, milliseconds: milliseconds)
        case "goaway-after": goAwayAfterStreams = try integer()
        case "goaway-reason": goAwayReason = value
        case "latency-ms", "latency": latencyMilliseconds = try integer()
        case "retry-after": retryAfterSeconds = try integer()
        case "seed":
            guard let number = UInt64(value) else { throw EmulatorConfigurationError("fault seed needs an unsigned integer, got \(value)") }
            seed = number
        case "providers":
            var chosen: [EmulatorProvider] = []
            for item in value.split(separator: ",") {
                guard let provider = EmulatorProvider(rawValue: item.trimmingCharacters(in: .whitespaces).lowercased()) else {
                    throw EmulatorConfigurationError("fault providers: unknown provider \(item) (apns, fcm, adm, hms)")
                }
                chosen.append(provider)
            }
            providers = chosen
        default:
            throw EmulatorConfigurationError("unknown fault \(name) (throttle, internal-error, unavailable, stall, stall-window, reset, drop, goaway-after, goaway-reason, latency-ms, retry-after, seed, providers)")
        }
    }
}
