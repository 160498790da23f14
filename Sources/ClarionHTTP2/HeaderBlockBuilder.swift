internal import CNghttp2

/// Builds an `nghttp2_nv` array in reusable storage, so submitting a request or response allocates nothing once
/// warm. nghttp2 copies the fields during `submit_*`, so the storage is reused right after.
/// Builder: its stored properties skip dynamic exclusivity checks (`@exclusivity(unchecked)`): they are touched by one
/// thread, and no method here calls out while mutating them, so the checks (tens per request) buy nothing.
final class HeaderBlockBuilder {
    @exclusivity(unchecked) private var bytes: UnsafeMutableRawPointer
    @exclusivity(unchecked) private var byteCapacity: Int
    @exclusivity(unchecked) private var used = 0
    @exclusivity(unchecked) private var fields: UnsafeMutablePointer<nghttp2_nv>
    @exclusivity(unchecked) private var fieldCapacity: Int
    /// A field: the name either static (`staticName`, not copied by nghttp2) or at `name` in `bytes`.
    @exclusivity(unchecked) private var offsets: [(staticName: UnsafePointer<UInt8>?, name: Int, nameLength: Int, value: Int, valueLength: Int)] = []

    /// nghttp2 flags for fields added with a `String` name (`:status` and `content-length` are left to nghttp2):
    /// `NGHTTP2_NV_FLAG_NO_INDEX` keeps them out of the HPACK dynamic table (see `init(indexFields:)`).
    private let fieldFlags: UInt8
    private let indexFields: Bool

    // The last list given to `addFields`; once the same array has come twice in a row it is kept encoded (in a
    // builder of its own) while it keeps coming: the requests of a batch share one header list (h2bench, and a
    // dispatcher's per-message fields), and copying its strings is a large part of building a request's block.
    // A list used once (a server's per-response fields) is copied as before. `listSource` holds the
    // array, so its storage cannot be freed and reused for other contents while it is the key.
    @exclusivity(unchecked) private var listCache: HeaderBlockBuilder?
    @exclusivity(unchecked) private var listSource: [(String, String)] = []
    /// `listCache` holds `listSource`'s fields.
    @exclusivity(unchecked) private var listEncoded = false
    /// Where in `offsets` the list's fields go; -1 when this block has none.
    @exclusivity(unchecked) private var listPosition = -1

    /// - Parameter indexFields: false sends every field as a literal that the peer does not add to its HPACK
    ///   dynamic table. The server does this: its responses carry values unique to each response (`apns-id`),
    ///   and indexing them made every response insert a table entry and evict another, which cost more CPU
    ///   (about a tenth of the emulator's per-request instructions) than the bytes it saves on a fast link.
    ///   The client indexes (nghttp2 decides per field: `authorization` is never indexed).
    init(indexFields: Bool = true) {
        fieldFlags = UInt8(indexFields ? NGHTTP2_NV_FLAG_NONE.rawValue : NGHTTP2_NV_FLAG_NO_INDEX.rawValue)
        self.indexFields = indexFields
        byteCapacity = 4096
        bytes = .allocate(byteCount: byteCapacity, alignment: 8)
        fieldCapacity = 32
        fields = .allocate(capacity: fieldCapacity)
        offsets.reserveCapacity(32)
    }

    deinit {
        bytes.deallocate()
        fields.deallocate()
    }

    func reset() {
        used = 0
        listPosition = -1
        offsets.removeAll(keepingCapacity: true)
    }

    private func ensure(_ extra: Int) {
        guard used + extra > byteCapacity else { return }
        var newCapacity = byteCapacity * 2
        while newCapacity < used + extra { newCapacity *= 2 }
        let newBytes = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 8)
        newBytes.copyMemory(from: bytes, byteCount: used)
        bytes.deallocate()
        bytes = newBytes
        byteCapacity = newCapacity
    }

    private func copy(_ string: String) -> (Int, Int) {
        // The string's bytes borrowed in place (a native string is contiguous) and its length taken from them:
        // a separate `utf8.count` would walk it again, and `var copy = string` + `withUTF8` costs a retain and a
        // release; a request has nine or more fields.
        if let copied = string.utf8.withContiguousStorageIfAvailable({ append($0) }) { return copied }
        var string = string  // not contiguous (bridged): `withUTF8` makes it so
        return string.withUTF8 { append($0) }
    }

    private func append(_ buffer: UnsafeBufferPointer<UInt8>) -> (Int, Int) {
        let start = used
        ensure(buffer.count)
        if let base = buffer.baseAddress { (bytes + start).copyMemory(from: base, byteCount: buffer.count) }
        used += buffer.count
        return (start, buffer.count)
    }

    func add(_ name: String, _ value: String) {
        let (n, nl) = copy(name)
        let (v, vl) = copy(value)
        offsets.append((nil, n, nl, v, vl))
    }

    /// A field with a name in static storage: neither we nor nghttp2 copy it.
    func add(_ name: StaticString, _ value: String) {
        let (v, vl) = copy(value)
        offsets.append((name.utf8Start, 0, name.utf8CodeUnitCount, v, vl))
    }

    /// A field with a static name whose value is `value` followed by `suffix` (no joined string).
    func add(_ name: StaticString, _ value: String, suffix: String) {
        let (v, vl) = copy(value)
        let (_, sl) = copy(suffix)  // lands right after `value`
        offsets.append((name.utf8Start, 0, name.utf8CodeUnitCount, v, vl + sl))
    }

    /// A field whose value is a non-negative decimal number.
    func add(_ name: StaticString, decimal: Int) {
        var digits = 1
        var rest = max(0, decimal) / 10
        while rest > 0 {
            digits += 1
            rest /= 10
        }
        ensure(digits)
        var value = max(0, decimal)
        for k in stride(from: digits - 1, through: 0, by: -1) {
            bytes.storeBytes(of: UInt8(48 + value % 10), toByteOffset: used + k, as: UInt8.self)
            value /= 10
        }
        offsets.append((name.utf8Start, 0, name.utf8CodeUnitCount, used, digits))
        used += digits
    }

    /// Adds `:status` as three ASCII digits.
    func addStatus(_ status: Int) {
        let name: StaticString = ":status"
        ensure(3)
        let s = max(100, min(999, status))
        bytes.storeBytes(of: UInt8(48 + s / 100), toByteOffset: used, as: UInt8.self)
        bytes.storeBytes(of: UInt8(48 + (s / 10) % 10), toByteOffset: used + 1, as: UInt8.self)
        bytes.storeBytes(of: UInt8(48 + s % 10), toByteOffset: used + 2, as: UInt8.self)
        offsets.append((name.utf8Start, 0, 7, used, 3))
        used += 3
    }

    /// Adds every field of `list` (names and values as they are), at this point of the block. Encoded once while
    /// the same array (the same storage) comes again.
    func addFields(_ list: [(String, String)]) {
        let same = list.count == listSource.count && list.withUnsafeBufferPointer { new in
            listSource.withUnsafeBufferPointer { old in new.baseAddress == old.baseAddress || new.isEmpty }
        }
        guard same else {
            listSource = list
            listEncoded = false
            for (name, value) in list { add(name, value) }
            return
        }
        if !listEncoded {
            let cache = listCache ?? HeaderBlockBuilder(indexFields: indexFields)
            cache.reset()
            for (name, value) in list { cache.add(name, value) }
            _ = cache.fixUpFields()
            listCache = cache
            listEncoded = true
        }
        listPosition = offsets.count
    }

    /// Fills `fields` from `offsets` (storage no longer moves), leaving room for the list's fields at
    /// `listPosition`; returns how many fields the block has.
    private func fixUpFields() -> Int {
        let listCount = listPosition >= 0 ? listSource.count : 0
        let total = offsets.count + listCount
        if total > fieldCapacity {
            fields.deallocate()
            fieldCapacity = max(total, fieldCapacity * 2)
            fields = .allocate(capacity: fieldCapacity)
        }
        let base = bytes.assumingMemoryBound(to: UInt8.self)
        let noCopyName = UInt8(NGHTTP2_NV_FLAG_NO_COPY_NAME.rawValue)
        for (i, o) in offsets.enumerated() {
            let at = listPosition >= 0 && i >= listPosition ? i + listCount : i
            if let staticName = o.staticName {
                fields[at] = nghttp2_nv(name: UnsafeMutablePointer(mutating: staticName), value: base + o.value,
                                        namelen: o.nameLength, valuelen: o.valueLength, flags: noCopyName)
            } else {
                fields[at] = nghttp2_nv(name: base + o.name, value: base + o.value, namelen: o.nameLength,
                                        valuelen: o.valueLength, flags: fieldFlags)
            }
        }
        if listCount > 0, let listCache {
            (fields + listPosition).update(from: listCache.fields, count: listCount)
        }
        return total
    }

    /// Fixes up the pointers and hands the array to `body`.
    func withFields<R>(_ body: (UnsafePointer<nghttp2_nv>, Int) -> R) -> R {
        let count = fixUpFields()
        return body(fields, count)
    }
}

/// Shared nghttp2 option and callback tables (nghttp2 copies them into each session, so one set serves all).
final class NGHTTP2Tables: @unchecked Sendable {
    let callbacks: OpaquePointer
    let option: OpaquePointer

    init(configure: (OpaquePointer, OpaquePointer) -> Void) {
        var callbacks: OpaquePointer?
        nghttp2_session_callbacks_new(&callbacks)
        var option: OpaquePointer?
        nghttp2_option_new(&option)
        self.callbacks = callbacks!
        self.option = option!
        configure(self.callbacks, self.option)
    }

    deinit {
        nghttp2_session_callbacks_del(callbacks)
        nghttp2_option_del(option)
    }
}

@inline(__always)
func bytesToString(_ pointer: UnsafePointer<UInt8>, _ count: Int) -> String {
    String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self)
}
