import Foundation

/// One page of a keyset-paged listing. `next` is the key to pass as `after` for the following page; nil on
/// the last page.
public struct Page<Item: Sendable>: Sendable {
    public let items: [Item]
    public let next: Int64?

    public init(items: [Item], next: Int64?) {
        self.items = items
        self.next = next
    }
}

extension Page: Equatable where Item: Equatable {}

enum RepositoryJSON {
    /// A string map as a jsonb parameter (keys sorted, so equal maps are equal documents).
    static func encode(_ map: [String: String]) -> PGJSON { PGJSON(map) }

    /// Reads a jsonb text back as a string map; non-string values keep their JSON text.
    static func decode(_ text: String?) -> [String: String] {
        guard let text, let data = text.data(using: .utf8),
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return [:] }
        var out: [String: String] = [:]
        for (key, value) in object {
            if let string = value as? String {
                out[key] = string
            } else if let number = value as? NSNumber {
                out[key] = number.stringValue
            } else if let nested = try? JSONSerialization.data(withJSONObject: value, options: [.sortedKeys]) {
                out[key] = String(decoding: nested, as: UTF8.self)
            }
        }
        return out
    }
}

extension PGConnection {
    /// Rows of a keyset page: the query must select `limit + 1` rows ordered by key; the extra row only says
    /// there is a next page.
    func page<Item>(_ sql: String, _ parameters: [any PGEncodable], limit: Int, key: (Item) -> Int64,
                    _ map: (PGRow) throws(StoreError) -> Item) throws(StoreError) -> Page<Item> {
        var items: [Item] = []
        for row in try query(sql, parameters).rows { items.append(try map(row)) }
        guard items.count > limit else { return Page(items: items, next: nil) }
        items.removeLast(items.count - limit)
        return Page(items: items, next: items.last.map(key))
    }
}
