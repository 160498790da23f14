import Foundation

public struct TagRecord: Sendable, Equatable {
    public let key: String
    public let value: String

    public init(key: String, value: String) {
        self.key = key
        self.value = value
    }
}

/// Resource tags by ARN (SNS: at most 50 per resource).
public struct TagRepository: Sendable {
    public static let maximumTagsPerResource = 50

    public let pool: PGPool

    public init(pool: PGPool) { self.pool = pool }

    /// Adds or overwrites tags. More than 50 on the resource afterwards is `.checkViolation` with constraint
    /// `tags_per_resource_limit`, and nothing changes.
    public func tag(accountKey: Int64, resourceARN: String, _ tags: [TagRecord]) async throws(StoreError) {
        try await pool.transaction { (c) throws(StoreError) in
            for tag in tags {
                try c.query("""
                    INSERT INTO tags (account, resource_arn, key, value) VALUES ($1, $2, $3, $4)
                    ON CONFLICT (resource_arn, key) DO UPDATE SET value = EXCLUDED.value
                    """, [accountKey, resourceARN, tag.key, tag.value])
            }
            let count = try c.query("SELECT count(*) FROM tags WHERE resource_arn = $1", [resourceARN]).first?.int(0) ?? 0
            if count > Self.maximumTagsPerResource {
                throw StoreError(.checkViolation, "more than \(Self.maximumTagsPerResource) tags on \(resourceARN)",
                                 constraint: "tags_per_resource_limit")
            }
        }
    }

    public func untag(accountKey: Int64, resourceARN: String, keys: [String]) async throws(StoreError) {
        try await pool.withConnection { (c) throws(StoreError) in
            for key in keys {
                try c.query("DELETE FROM tags WHERE account = $1 AND resource_arn = $2 AND key = $3", [accountKey, resourceARN, key])
            }
        }
    }

    /// The resource's tags, sorted by key.
    public func list(accountKey: Int64, resourceARN: String) async throws(StoreError) -> [TagRecord] {
        try await pool.withConnection { (c) throws(StoreError) -> [TagRecord] in
            try c.query("SELECT key, value FROM tags WHERE account = $1 AND resource_arn = $2 ORDER BY key", [accountKey, resourceARN])
                .rows.map { TagRecord(key: $0.string(0) ?? "", value: $0.string(1) ?? "") }
        }
    }

    /// Drops every tag of a deleted resource (tags are keyed by ARN, not by a foreign key).
    public func removeAll(resourceARN: String) async throws(StoreError) {
        try await pool.withConnection { (c) throws(StoreError) in
            _ = try c.query("DELETE FROM tags WHERE resource_arn = $1", [resourceARN])
        }
    }

    /// Drops the tags of every resource whose ARN starts with `prefix` (an application's endpoints when the
    /// application is deleted). LIKE wildcards in the prefix are escaped.
    public func removeAll(resourceARNPrefix prefix: String) async throws(StoreError) {
        let pattern = prefix.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "%", with: "\\%")
            .replacingOccurrences(of: "_", with: "\\_") + "%"
        try await pool.withConnection { (c) throws(StoreError) in
            _ = try c.query("DELETE FROM tags WHERE resource_arn LIKE $1", [pattern])
        }
    }
}
