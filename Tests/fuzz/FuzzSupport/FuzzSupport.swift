/// Helpers shared by the fuzz targets (Tests/fuzz/Fuzz*/): invariant checks that fail like a crash, and splitting one
/// input into fields.

/// Stops the run when an invariant does not hold. `fatalError` traps, libFuzzer sees the signal and saves the input,
/// so a broken invariant is reported exactly like a crash.
public func require(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError("fuzz invariant: \(message())") }
}

/// The separator between the fields of a structured input: ASCII record separator (0x1E), which no valid JSON,
/// form body or PEM text contains, so the seed corpus stays readable and each field can be any text.
public let fieldSeparator: UInt8 = 0x1E

/// An input cut into at most `limit` fields at `fieldSeparator`; the last field takes the rest (separators too).
public struct FuzzFields {
    public let fields: [[UInt8]]

    public init(_ data: UnsafePointer<UInt8>, _ size: Int, limit: Int) {
        let bytes = UnsafeBufferPointer(start: data, count: size)
        fields = bytes.split(separator: fieldSeparator, maxSplits: limit - 1, omittingEmptySubsequences: false).map(Array.init)
    }

    public var count: Int { fields.count }

    /// Field `index` as bytes; empty when the input has fewer fields.
    public subscript(index: Int) -> [UInt8] { index < fields.count ? fields[index] : [] }

    /// Field `index` as text (invalid UTF-8 repaired, as a server decoding a request would see it).
    public func text(_ index: Int) -> String { String(decoding: self[index], as: UTF8.self) }

    /// Field `index` as text, nil when absent or empty.
    public func optionalText(_ index: Int) -> String? { index < fields.count && !fields[index].isEmpty ? text(index) : nil }
}

/// The input as bytes, for targets that take it whole.
public func bytes(_ data: UnsafePointer<UInt8>, _ size: Int) -> [UInt8] {
    Array(UnsafeBufferPointer(start: data, count: size))
}
