import ClarionCore
import Foundation
import ClarionHTTP1

/// The account an API key acts for.
public struct APIPrincipal: Sendable, Equatable {
    public let accountID: String
    /// The key's id (not the secret), for audit and logs.
    public let keyID: String

    public init(accountID: String, keyID: String) {
        self.accountID = accountID
        self.keyID = keyID
    }
}

/// Maps a presented API key to its principal (the store implements it; it should compare a hash of the key,
/// never keep keys in clear). nil for an unknown or revoked key; throw only when the lookup itself failed.
public protocol APIKeyResolver: Sendable {
    func principal(forAPIKey key: String) async throws -> APIPrincipal?
}

/// `Authorization: Bearer <key>` for the native API.
public struct BearerAuthenticator: Sendable {
    private let resolver: any APIKeyResolver

    public init(resolver: any APIKeyResolver) { self.resolver = resolver }

    public func authenticate(_ request: HTTPRequest) async throws(JSONAPIError) -> APIPrincipal {
        guard let header = request.headers["Authorization"] else { throw JSONAPIError.unauthorized }
        // Byte-level parsing (no Character splitting or Foundation trimming per request).
        let value = Substring(header).trimmingSpaces()
        guard let space = value.utf8.firstIndex(of: 0x20) else { throw JSONAPIError.unauthorized }
        guard String(value[..<space]).caseInsensitiveEquals("Bearer") else { throw JSONAPIError.unauthorized }
        let key = String(value[space...].trimmingSpaces())
        guard !key.isEmpty else { throw JSONAPIError.unauthorized }
        let found: APIPrincipal?
        do {
            found = try await resolver.principal(forAPIKey: key)
        } catch let error as any TemporaryFailure where error.isTemporary {
            var unavailable = JSONAPIError.serviceUnavailable("The store is unavailable; retry later.")
            unavailable.cause = "API key lookup: \(error)"
            throw unavailable
        } catch {
            throw JSONAPIError.internalError(cause: "API key lookup: \(error)")
        }
        guard let principal = found else { throw JSONAPIError.invalidAPIKey }
        return principal
    }
}
