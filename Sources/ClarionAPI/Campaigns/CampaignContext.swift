import ClarionCore
import ClarionCrypto
import ClarionHTTP1
import ClarionStore
import Foundation

/// What the campaign routes stand on: the campaign repository, the delivery-id codec the dispatcher also uses,
/// the API-key authenticator and accounts (reports are per account), the open recorder (group commit), the limiter
/// for beacons that fail verification, the trusted proxies and the clock.
public struct CampaignContext: Sendable {
    public let authenticator: BearerAuthenticator
    public let accounts: AccountRepository
    public let campaigns: CampaignRepository
    /// Must be the codec of `DispatcherConfiguration.deliveryIDs`, or no beacon verifies.
    public let deliveryIDs: DeliveryIDCodec
    public let opens: OpenRecorder
    /// Charged only by delivery ids that fail verification; nil when `CLARION_BEACON_LIMIT_BURST` is 0.
    public let beaconLimiter: BeaconLimiter?
    /// Whose forwarding headers name the client (`CLARION_TRUSTED_PROXIES`).
    public let trustedProxies: TrustedProxies
    public let clock: @Sendable () -> Date
    /// The node's one cache (`APIResources.accountKeys`), or one of its own.
    private let accountKeys: AccountKeyCache

    public init(authenticator: BearerAuthenticator, accounts: AccountRepository, campaigns: CampaignRepository,
                deliveryIDs: DeliveryIDCodec, opens: OpenRecorder, beaconLimiter: BeaconLimiter? = BeaconLimiter(),
                trustedProxies: TrustedProxies = TrustedProxies(), accountKeys: AccountKeyCache = AccountKeyCache(),
                clock: @escaping @Sendable () -> Date = { Date() }) {
        self.accountKeys = accountKeys
        self.authenticator = authenticator
        self.accounts = accounts
        self.campaigns = campaigns
        self.deliveryIDs = deliveryIDs
        self.opens = opens
        self.beaconLimiter = beaconLimiter
        self.trustedProxies = trustedProxies
        self.clock = clock
    }

    /// Everything over one pool and master key; delivery ids keyed from the master key (`DeliveryIDSecret`).
    public init(pool: PGPool, masterKey: AESGCMKey, beaconLimiter: BeaconLimiter? = BeaconLimiter(),
                trustedProxies: TrustedProxies = TrustedProxies(), accountKeys: AccountKeyCache = AccountKeyCache(),
                clock: @escaping @Sendable () -> Date = { Date() }) {
        let accounts = AccountRepository(pool: pool, masterKey: masterKey)
        self.init(authenticator: BearerAuthenticator(resolver: StoreAPIKeyResolver(accounts: accounts)), accounts: accounts,
                  campaigns: CampaignRepository(pool: pool), deliveryIDs: DeliveryIDSecret.codec(masterKey: masterKey),
                  opens: OpenRecorder(pool: pool), beaconLimiter: beaconLimiter, trustedProxies: trustedProxies,
                  accountKeys: accountKeys, clock: clock)
    }

    /// The account key of an authenticated request.
    func accountKey(_ request: HTTPRequest) async throws(JSONAPIError) -> Int64 {
        let principal = try await authenticator.authenticate(request)
        do throws(StoreError) {
            return try await accountKeys.key(principal.accountID) { () async throws(StoreError) in
                try await accounts.account(accountID: principal.accountID).key
            }
        } catch {
            throw error.code == .notFound ? JSONAPIError.invalidAPIKey : JSONAPIError.internalError(cause: error.logText)
        }
    }
}

/// The server secret of delivery ids, derived from the master key so every node of a deployment agrees without
/// another setting: HMAC-SHA256(master key, "clarion delivery-id v1"). The master key itself never MACs ids.
public enum DeliveryIDSecret {
    static let label = "clarion delivery-id v1"

    public static func secret(masterKey: AESGCMKey) -> [UInt8] {
        let keyBytes = [UInt8](Data(base64Encoded: masterKey.base64) ?? Data())
        return Digest.hmacSHA256(key: keyBytes, string: label)
    }

    /// The codec to give both `DispatcherConfiguration(deliveryIDs:)` and `CampaignContext`.
    public static func codec(masterKey: AESGCMKey) -> DeliveryIDCodec {
        let secret = secret(masterKey: masterKey)
        return DeliveryIDCodec { Digest.hmacSHA256(key: secret, data: $0) }
    }
}
