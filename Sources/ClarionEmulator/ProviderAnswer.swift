#if canImport(Glibc)
import Glibc
#endif
import ClarionCrypto
import Synchronization

/// A provider emulator's answer before faults, latency and recording are applied.
struct ProviderAnswer {
    var response: EmulatorResponse
    /// Provider reason / error code for counters and records.
    var reason: String?
    /// The device token / registration id / FCM target the request named (APNs: a slice of the path, so the
    /// hot path copies it only when the answer is recorded).
    var token: Substring?
    /// New SETTINGS_MAX_CONCURRENT_STREAMS for the connection.
    var maxConcurrentStreams: UInt32?

    init(response: EmulatorResponse, reason: String? = nil, token: Substring?, maxConcurrentStreams: UInt32? = nil) {
        self.response = response
        self.reason = reason
        self.token = token
        self.maxConcurrentStreams = maxConcurrentStreams
    }

    init(response: EmulatorResponse, reason: String? = nil, token: String? = nil, maxConcurrentStreams: UInt32? = nil) {
        self.response = response
        self.reason = reason
        self.token = token.map { Substring($0) }
        self.maxConcurrentStreams = maxConcurrentStreams
    }

    var isAccepted: Bool { (200..<300).contains(response.status) }
}

/// Response ids: `apns-id`, `apns-unique-id`, FCM message ids, ADM request ids.
///
/// UUID-shaped (version 4 layout) from a per-emulator random prefix and a counter: unique, cheap (no
/// random draw per request) and in request order, which makes records easy to read.
final class EmulatorIDs: Sendable {
    private let prefix: UInt64
    private let counter = Atomic<UInt64>(0)

    /// The first 20 characters (`xxxxxxxx-xxxx-4xxx-8`): the same for every id of this emulator.
    private let head: [UInt8]

    init() {
        let bytes = SecureRandom.bytes(8)
        prefix = bytes.reduce(0) { $0 << 8 | UInt64($1) }
        var head: [UInt8] = []
        func hex(_ value: UInt64, digits: Int) {
            for shift in stride(from: (digits - 1) * 4, through: 0, by: -4) {
                head.append(Self.hexDigits[Int((value >> UInt64(shift)) & 0xf)])
            }
        }
        hex(prefix >> 32, digits: 8)
        head.append(0x2d)
        hex((prefix >> 16) & 0xffff, digits: 4)
        head.append(0x2d)
        head.append(UInt8(ascii: "4"))
        hex(prefix & 0xfff, digits: 3)
        head.append(0x2d)
        head.append(UInt8(ascii: "8"))
        self.head = head
    }

    func next() -> UInt64 {
        counter.wrappingAdd(1, ordering: .relaxed).newValue
    }

    /// `xxxxxxxx-xxxx-4xxx-8xxx-xxxxxxxxxxxx`, lowercase: the prefix's top 60 bits, then the counter.
    func uuid() -> String {
        let n = next()
        return String(unsafeUninitializedCapacity: 36) { out in
            head.withUnsafeBufferPointer { out.baseAddress!.update(from: $0.baseAddress!, count: 20) }
            Self.hexDigits.withUnsafeBufferPointer { digits in
                for k in 0..<3 { out[20 + k] = digits[Int((n >> UInt64(56 - 4 * k)) & 0xf)] }  // (n >> 48) & 0xfff
                out[23] = 0x2d
                for k in 0..<12 { out[24 + k] = digits[Int((n >> UInt64(44 - 4 * k)) & 0xf)] }  // n & 0xffff_ffff_ffff
            }
            return 36
        }
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)
}

extension String {
    /// True when the string is empty or only ASCII whitespace.
    var isBlank: Bool { utf8.allSatisfy { $0 == 0x20 || $0 == 0x09 } }
}

extension String {
    /// `hasPrefix` for an ASCII literal, as one `memcmp` of UTF-8 (no Unicode comparison on the hot path).
    func hasASCIIPrefix(_ prefix: StaticString) -> Bool {
        let count = prefix.utf8CodeUnitCount
        // Borrowed in place (a native string is contiguous): `var copy = self` + `withUTF8` cost a retain and a
        // release, and `utf8.count` outside as much again as the comparison.
        if let result = utf8.withContiguousStorageIfAvailable({
            $0.count >= count && (count == 0 || memcmp($0.baseAddress!, prefix.utf8Start, count) == 0)
        }) {
            return result
        }
        return utf8.starts(with: UnsafeBufferPointer(start: prefix.utf8Start, count: count))
    }
}
