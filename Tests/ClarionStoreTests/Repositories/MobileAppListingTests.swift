import ClarionCrypto
import ClarionStore
import ClarionTestSupport
import Foundation
import Testing

@Suite("Mobile app listing (clarion apps list)")
struct MobileAppListingTests {
    // Rule: `clarion apps list` shows every mobile app with its platform applications (APNs, FCM, ADM), a mobile
    // app without any, and the platform applications no mobile app uses, each with enabled / disabled reason /
    // disabled time; another account's resources never appear.
    @Test("the listing: mobile apps with their platform applications and state, then the applications in no mobile app")
    func listing() async throws {
        let fixture = try RepositoryFixture()
        let account = try await fixture.accounts.ensureAccount(accountID: "123456789012")
        let other = try await fixture.accounts.ensureAccount(accountID: "210987654321")
        let applications = PlatformApplicationRepository(pool: fixture.pool, masterKey: fixture.masterKey)
        func app(_ name: String, _ platform: String, account: Int64) async throws -> PlatformApplicationRecord {
            try await applications.createOrUpdate(accountKey: account, region: "us-east-1", name: name, platform: platform,
                                                  credentials: PlatformCredentials(credential: "k"), attributes: [:]).0
        }
        let ios = try await app("ios", "APNS", account: account.key)
        let android = try await app("android", "GCM", account: account.key)
        let kindle = try await app("kindle", "ADM", account: account.key)
        _ = try await app("elsewhere", "GCM", account: other.key)
        let at = Date(timeIntervalSince1970: 1_767_323_045)  // 2026-01-02T03:04:05Z
        _ = try fixture.raw("UPDATE platform_applications SET enabled = false, disabled_reason = 'THIRD_PARTY_AUTH_ERROR', disabled_at = $2 WHERE id = $1",
                            [android.key, at])
        let apps = MobileAppRepository(pool: fixture.pool, masterKey: fixture.masterKey)
        let shop = try await apps.create(accountKey: account.key, NewMobileApp(name: "shop", apnsApplication: ios.key, fcmApplication: android.key))
        let empty = try await apps.create(accountKey: account.key, NewMobileApp(name: "bare"))
        _ = try await apps.create(accountKey: other.key, NewMobileApp(name: "theirs"))

        let rows = try await apps.listing(accountKey: account.key)
        #expect(rows == [
            MobileAppListingRow(mobileAppName: "bare", mobileAppID: empty.externalID, platform: nil, applicationName: nil,
                                enabled: true, disabledReason: nil, disabledAt: nil),
            MobileAppListingRow(mobileAppName: "shop", mobileAppID: shop.externalID, platform: "APNS", applicationName: "ios",
                                enabled: true, disabledReason: nil, disabledAt: nil),
            MobileAppListingRow(mobileAppName: "shop", mobileAppID: shop.externalID, platform: "GCM", applicationName: "android",
                                enabled: false, disabledReason: "THIRD_PARTY_AUTH_ERROR", disabledAt: at),
            MobileAppListingRow(mobileAppName: nil, mobileAppID: nil, platform: "ADM", applicationName: kindle.name,
                                enabled: true, disabledReason: nil, disabledAt: nil),
        ])
    }
}
