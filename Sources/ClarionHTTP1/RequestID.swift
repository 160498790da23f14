import ClarionCore
import ClarionCrypto
import Foundation

/// Request ids: random (version 4) UUIDs in lower case, as AWS writes them (`UUID.random()`, formatted
/// directly: Foundation's `UUID()` opened /dev/urandom and formatted through `sprintf` on every call).
enum RequestID {
    static func make() -> String { UUID.random().lowercasedText }
}
