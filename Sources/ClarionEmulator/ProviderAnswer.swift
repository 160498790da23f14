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

    /// `xxxxxxxx-xxxx-4xxx-8xxx-xxxxxxxxxxxx`, lowercase: the prefix's top 60 bits, then the counter.
    func uuid() -> String {
        let n = next()
        let high = prefix
        return String(unsafeUninitializedCapacity: 36) { out in
            var position = 0
            func hex(_ value: UInt64, digits: Int) {
                var shift = (digits - 1) * 4
                while shift >= 0 {
                    out[position] = Self.hexDigits[Int((value >> UInt64(shift)) & 0xf)]
                    position += 1
                    shift -= 4
                }
            }
            func put(_ byte: UInt8) {
                out[position] = byte
                position += 1
            }
            hex(high >> 32, digits: 8)
            put(0x2d)
            hex((high >> 16) & 0xffff, digits: 4)
            put(0x2d)
            put(UInt8(ascii: "4"))
            hex(high & 0xfff, digits: 3)
            put(0x2d)
            put(UInt8(ascii: "8"))
            hex((n >> 48) & 0xfff, digits: 3)
            put(0x2d)
            hex(n & 0xffff_ffff_ffff, digits: 12)
            return position
        }
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)
}

extension String {
    /// True when the string is empty or only ASCII whitespace.
    var isBlank: Bool { utf8.allSatisfy { $0 == 0x20 || $0 == 0x09 } }
}
