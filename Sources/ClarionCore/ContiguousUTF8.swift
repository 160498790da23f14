/// Byte scans over a string's contiguous UTF-8 storage.
///
/// `String.UTF8View`'s own `allSatisfy` / `contains` step an index per byte (about 30 instructions a byte in the
/// publish profile); a native string's bytes are contiguous, so these scan an `UnsafeBufferPointer` instead and
/// fall back to the view only for a string without contiguous storage.
extension StringProtocol {
    @inlinable
    public func utf8AllSatisfy(_ predicate: (UInt8) throws -> Bool) rethrows -> Bool {
        if let result = try utf8.withContiguousStorageIfAvailable({ try $0.allSatisfy(predicate) }) { return result }
        return try utf8.allSatisfy(predicate)
    }

    @inlinable
    public func utf8Contains(where predicate: (UInt8) throws -> Bool) rethrows -> Bool {
        try !utf8AllSatisfy { try !predicate($0) }
    }
}
