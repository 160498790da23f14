import ClarionCrypto
import Synchronization

/// A provider emulator's answer before faults, latency and recording are applied.
struct ProviderAnswer {
    var response: EmulatorResponse
    /// Provider reason / error code for counters and records.
    var reason: String?
    /// The device token / registration id / FCM target the request named.
    var token: String?
    /// New SETTINGS_MAX_CONCURRENT_STREAMS for the connection.
    var maxConcurrentStreams: UInt32?

    var isAccepted: Bool { (200..<300).contains(response.status) }
}

/// Response ids: `apns-id`, `apns-unique-id`, FCM message ids, ADM request ids.
///
/// UUID-shaped (version 4 layout) from a per-emulator random prefix and a counter: unique, cheap (no
/// random draw per request) and in request order, which makes records easy to read.
final class EmulatorIDs: Sendable {
    private let prefix: UInt64
    private let counter = Atomic<UInt64>(0)

    init() {
        let bytes = SecureRandom.bytes(8)
        prefix = bytes.reduce(0) { $0 << 8 | UInt64($1) }
    }

    func next() -> UInt64 {
        counter.wrappingAdd(1, ordering: .relaxed).newValue
    }

    /// `xxxxxxxx-xxxx-4xxx-8xxx-xxxxxxxxxxxx`, lowercase.
    func uuid() -> String {
        let n = next()
        var out = [UInt8]()
        out.reserveCapacity(36)
        let high = prefix
        let low = n
        func hex(_ value: UInt64, digits: Int) {
            var shift = (digits - 1) * 4
            while shift >= 0 {
                out.append(Self.hexDigits[Int((value >> UInt64(shift)) & 0xf)])
                shift -= 4
            }
        }
        hex(high >> 32, digits: 8)
        out.append(0x2d)
        hex((high >> 16) & 0xffff, digits: 4)
        out.append(0x2d)
        out.append(UInt8(ascii: "4"))
        hex(high & 0xfff, digits: 3)
        out.append(0x2d)
        out.append(UInt8(ascii: "8"))
        hex((low >> 48) & 0xfff, digits: 3)
        out.append(0x2d)
        hex(low & 0xffff_ffff_ffff, digits: 12)
        return String(decoding: out, as: UTF8.self)
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)
}

extension String {
    /// True when the string is empty or only ASCII whitespace.
    var isBlank: Bool { utf8.allSatisfy { $0 == 0x20 || $0 == 0x09 } }
}
