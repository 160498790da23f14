/// Why a form or query string could not be decoded. The SNS layer maps it to `InvalidParameter`,
/// the JSON API to `invalid_query`.
public struct FormDecodingError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Reason: String, Sendable {
        /// `%` not followed by two hexadecimal digits.
        case malformedEscape
        /// The decoded bytes are not UTF-8.
        case invalidUTF8
    }

    public let reason: Reason
    /// The raw (still encoded) name of the offending pair, truncated; enough to find it, never the value.
    public let name: String

    public var description: String {
        switch reason {
        case .malformedEscape: "malformed percent-escape in parameter '\(name)'"
        case .invalidUTF8: "parameter '\(name)' is not valid UTF-8"
        }
    }
}

/// `application/x-www-form-urlencoded` pairs in arrival order, repeated names kept.
///
/// Decoding follows the WHATWG form rules that AWS clients rely on: `&` separates pairs, the first `=` splits
/// name from value (a pair without `=` has an empty value), `+` is a space, `%XX` is a byte, and the decoded
/// bytes must be UTF-8. Unlike browsers we refuse malformed escapes instead of passing them through: a request
/// the client did not mean should fail loudly.
public struct FormParameters: Sendable, Sequence {
    public typealias Element = (name: String, value: String)
    public private(set) var pairs: [Element]

    public init() { pairs = [] }
    public init(_ pairs: [(String, String)]) { self.pairs = pairs.map { (name: $0.0, value: $0.1) } }

    public init(decoding bytes: some Collection<UInt8>) throws(FormDecodingError) {
        // One concrete pass over contiguous bytes: generic Collection code costs several times more per byte
        // when unspecialised (debug builds, or across module boundaries).
        let result = bytes.withContiguousStorageIfAvailable { buffer in
            Result { () throws(FormDecodingError) in try Self.parse(buffer) }
        } ?? Array(bytes).withUnsafeBufferPointer { buffer in
            Result { () throws(FormDecodingError) in try Self.parse(buffer) }
        }
        pairs = try result.get()
    }

    private static func parse(_ bytes: UnsafeBufferPointer<UInt8>) throws(FormDecodingError) -> [Element] {
        var pairs: [Element] = []
        var separators = 0
        for byte in bytes where byte == UInt8(ascii: "&") { separators += 1 }
        pairs.reserveCapacity(separators + 1)
        var start = 0
        let end = bytes.count
        while start < end {
            var stop = start
            var equals = -1
            while stop < end && bytes[stop] != UInt8(ascii: "&") {
                if equals < 0 && bytes[stop] == UInt8(ascii: "=") { equals = stop }
                stop += 1
            }
            if stop > start {
                let nameEnd = equals >= 0 ? equals : stop
                let name = UnsafeBufferPointer(rebasing: bytes[start..<nameEnd])
                let value = equals >= 0 ? UnsafeBufferPointer(rebasing: bytes[(equals + 1)..<stop])
                                        : UnsafeBufferPointer(rebasing: bytes[stop..<stop])
                pairs.append((name: try decode(name, name: name), value: try decode(value, name: name)))
            }
            start = stop + 1
        }
        return pairs
    }

    /// Decodes one name or value from a contiguous buffer; `name` labels errors.
    private static func decode(_ raw: UnsafeBufferPointer<UInt8>, name: UnsafeBufferPointer<UInt8>,
                               plusIsSpace: Bool = true) throws(FormDecodingError) -> String {
        var needsDecoding = false
        for byte in raw where byte == UInt8(ascii: "%") || (plusIsSpace && byte == UInt8(ascii: "+")) {
            needsDecoding = true
            break
        }
        if !needsDecoding {
            guard let s = String(validating: raw, as: UTF8.self) else {
                throw FormDecodingError(reason: .invalidUTF8, name: label(name))
            }
            return s
        }
        // Decoded into scratch space on the stack (a decoded text is never longer than its encoding), then
        // validated into the one String allocation.
        return try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: Swift.max(raw.count, 1)) { out throws(FormDecodingError) -> String in
            var count = 0
            var i = 0
            while i < raw.count {
                let byte = raw[i]
                if byte == UInt8(ascii: "%") {
                    guard i + 2 < raw.count, let hi = hexValue(raw[i + 1]), let lo = hexValue(raw[i + 2]) else {
                        throw FormDecodingError(reason: .malformedEscape, name: label(name))
                    }
                    out[count] = hi << 4 | lo
                    i += 3
                } else {
                    out[count] = byte == UInt8(ascii: "+") && plusIsSpace ? UInt8(ascii: " ") : byte
                    i += 1
                }
                count += 1
            }
            guard let s = String(validating: UnsafeBufferPointer(rebasing: out[..<count]), as: UTF8.self) else {
                throw FormDecodingError(reason: .invalidUTF8, name: label(name))
            }
            return s
        }
    }

    private static func label(_ name: UnsafeBufferPointer<UInt8>) -> String {
        String(decoding: UnsafeBufferPointer(rebasing: name.prefix(64)), as: UTF8.self)
    }

    public mutating func append(_ name: String, _ value: String) { pairs.append((name: name, value: value)) }
    public mutating func append(contentsOf other: FormParameters) { pairs.append(contentsOf: other.pairs) }

    /// The first value for a name.
    public subscript(name: String) -> String? { pairs.first { $0.name == name }?.value }
    public func values(_ name: String) -> [String] { pairs.filter { $0.name == name }.map(\.value) }

    public var count: Int { pairs.count }
    public var isEmpty: Bool { pairs.isEmpty }
    public func makeIterator() -> IndexingIterator<[Element]> { pairs.makeIterator() }

    /// Decodes one name or value: `+` is a space (unless `plusIsSpace` is false, as in paths), `%XX` a byte;
    /// the result must be UTF-8.
    static func decodeComponent(_ raw: some Collection<UInt8>, label: String,
                                plusIsSpace: Bool = true) throws(FormDecodingError) -> String {
        let bytes = Array(raw)
        let labelBytes = Array(label.utf8)
        let result = bytes.withUnsafeBufferPointer { buffer in
            labelBytes.withUnsafeBufferPointer { labelBuffer in
                Result { () throws(FormDecodingError) in try decode(buffer, name: labelBuffer, plusIsSpace: plusIsSpace) }
            }
        }
        return try result.get()
    }

    static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

/// Percent-encoding as AWS defines it for SigV4 (RFC 3986 unreserved characters stay, everything else is
/// `%XX` with upper-case hex; a space is `%20`, never `+`).
package enum AWSPercentEncoding {
    package static func encode(_ string: String, keepSlash: Bool = false) -> String {
        let hex: [UInt8] = Array("0123456789ABCDEF".utf8)
        var out = [UInt8]()
        out.reserveCapacity(string.utf8.count)
        for b in string.utf8 {
            if isUnreserved(b) || (keepSlash && b == UInt8(ascii: "/")) {
                out.append(b)
            } else {
                out.append(UInt8(ascii: "%"))
                out.append(hex[Int(b >> 4)])
                out.append(hex[Int(b & 0x0f)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    package static func isUnreserved(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"):
            true
        default:
            false
        }
    }
}
