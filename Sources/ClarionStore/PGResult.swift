import ClarionCore
internal import CPQ
import Foundation

/// The rows of one command's result. Owned by the connection's thread; read it inside the closure that
/// ran the query and map it to Sendable records there.
public final class PGResult {
    let handle: OpaquePointer
    public let rowCount: Int
    public let columnCount: Int

    init(handle: OpaquePointer) {
        self.handle = handle
        self.rowCount = Int(PQntuples(handle))
        self.columnCount = Int(PQnfields(handle))
    }

    deinit { PQclear(handle) }

    /// Rows affected by INSERT/UPDATE/DELETE.
    public var affectedRows: Int {
        guard let text = PQcmdTuples(handle) else { return 0 }
        return Int(String(cString: text)) ?? 0
    }

    public subscript(row: Int) -> PGRow { PGRow(result: self, index: row) }

    public var rows: [PGRow] { (0..<rowCount).map { PGRow(result: self, index: $0) } }

    public var first: PGRow? { rowCount > 0 ? self[0] : nil }
}

/// One row. Getters read PostgreSQL's text format; a NULL reads as nil.
public struct PGRow {
    let result: PGResult
    public let index: Int

    public func isNull(_ column: Int) -> Bool {
        PQgetisnull(result.handle, Int32(index), Int32(column)) == 1
    }

    func withBytes<T>(_ column: Int, _ body: (UnsafeBufferPointer<UInt8>) -> T?) -> T? {
        guard !isNull(column), let value = PQgetvalue(result.handle, Int32(index), Int32(column)) else { return nil }
        let length = Int(PQgetlength(result.handle, Int32(index), Int32(column)))
        return value.withMemoryRebound(to: UInt8.self, capacity: length) {
            body(UnsafeBufferPointer(start: $0, count: length))
        }
    }

    public func string(_ column: Int) -> String? {
        withBytes(column) { String(decoding: $0, as: UTF8.self) }
    }

    public func int64(_ column: Int) -> Int64? {
        withBytes(column) { bytes in
            var value: Int64 = 0
            var negative = false
            for (i, c) in bytes.enumerated() {
                if i == 0, c == 0x2d { negative = true; continue }
                guard c >= 0x30, c <= 0x39 else { return nil }
                value = value &* 10 &+ Int64(c - 0x30)
            }
            return negative ? -value : value
        }
    }

    public func int(_ column: Int) -> Int? { int64(column).map(Int.init) }

    public func double(_ column: Int) -> Double? { string(column).flatMap(Double.init) }

    public func bool(_ column: Int) -> Bool? {
        withBytes(column) { $0.first == 0x74 }  // 't'
    }

    public func date(_ column: Int) -> Date? {
        withBytes(column) { PGTimestamp.parse($0) }
    }

    public func uuid(_ column: Int) -> UUID? { string(column).flatMap { UUID(text: $0) } }

    /// `bytea` in hex output form (`\x...`).
    public func bytes(_ column: Int) -> [UInt8]? {
        withBytes(column) { raw -> [UInt8]? in
            guard raw.count >= 2, raw[0] == 0x5c, raw[1] == 0x78 else { return nil }
            func nibble(_ c: UInt8) -> UInt8? {
                switch c {
                case 0x30...0x39: return c - 0x30
                case 0x61...0x66: return c - 0x61 + 10
                case 0x41...0x46: return c - 0x41 + 10
                default: return nil
                }
            }
            var out = [UInt8]()
            out.reserveCapacity((raw.count - 2) / 2)
            var i = 2
            while i + 1 < raw.count {
                guard let hi = nibble(raw[i]), let lo = nibble(raw[i + 1]) else { return nil }
                out.append(hi << 4 | lo)
                i += 2
            }
            return out
        }
    }

    /// A `jsonb` column as a dictionary of strings (attribute maps).
    public func stringMap(_ column: Int) -> [String: String]? {
        guard let text = string(column),
              let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else { return nil }
        var out = [String: String]()
        for (k, v) in object {
            if let s = v as? String { out[k] = s } else if let n = v as? NSNumber { out[k] = n.stringValue }
        }
        return out
    }

    public func requireInt64(_ column: Int) throws(StoreError) -> Int64 {
        guard let v = int64(column) else { throw StoreError(.invalidData, "column \(column) is not a bigint") }
        return v
    }

    public func requireString(_ column: Int) throws(StoreError) -> String {
        guard let v = string(column) else { throw StoreError(.invalidData, "column \(column) is null") }
        return v
    }

    public func requireDate(_ column: Int) throws(StoreError) -> Date {
        guard let v = date(column) else { throw StoreError(.invalidData, "column \(column) is not a timestamptz") }
        return v
    }
}
