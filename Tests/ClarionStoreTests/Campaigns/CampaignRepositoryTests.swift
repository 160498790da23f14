import ClarionCore
import ClarionStore
import ClarionTestSupport
import Foundation
import Testing

/// Schema v7's link from a stored message to its campaign, and the opens upsert, on PostgreSQL.
@Suite("Campaign repository and message linking", .serialized)
struct CampaignRepositoryTests {
    struct Fixture {
        let url: String
        let pool: PGPool
        let accounts: [Int64]

        init() throws {
            url = try TestPostgres.migratedDatabase(prefix: "campstore")
            pool = PGPool(conninfo: url, size: 2)
            let c = try PGConnection(conninfo: url)
            accounts = try ["111111111111", "222222222222"].map {
                try c.query("INSERT INTO accounts (account_id) VALUES ($1) RETURNING id", [$0]).first!.int64(0)!
            }
        }

        func insertMessage(account: Int64, attributes: String) throws -> (key: Int64, campaign: Int64?) {
            let row = try PGConnection(conninfo: url).query("""
                INSERT INTO messages (external_id, account, target_kind, message, attributes)
                VALUES (gen_random_uuid(), $1, 'topic', 'hi', $2::jsonb) RETURNING id, campaign
                """, [account, attributes]).first!
            return (row.int64(0)!, row.int64(1))
        }
    }

    static func attribute(campaign: String) -> String {
        let value = PayloadNamespace(key: "acme", kind: .campaign, messageID: "m1", campaign: campaign).attributeValue()
        let inner = JSONObject([("DataType", .string(value.dataType)), ("StringValue", .string(value.stringValue!))])
        return JSONObject([(PayloadNamespace.attributeName, .object(inner))]).jsonText
    }

    @Test("a message is linked to its account's campaign when stored; other accounts and bad attributes link nothing")
    func linking() async throws {
        let fixture = try Fixture()
        let repository = CampaignRepository(pool: fixture.pool)
        let campaign = try await repository.ensureCampaign(accountKey: fixture.accounts[0], externalID: "spring", name: "Spring",
                                                           namespace: "acme")
        let again = try await repository.ensureCampaign(accountKey: fixture.accounts[0], externalID: "spring", name: "Spring 2",
                                                        namespace: "acme")
        #expect(again.key == campaign.key && again.name == "Spring 2")

        #expect(try fixture.insertMessage(account: fixture.accounts[0], attributes: Self.attribute(campaign: "spring")).campaign == campaign.key)
        // Another account naming the same campaign id is not linked to it.
        #expect(try fixture.insertMessage(account: fixture.accounts[1], attributes: Self.attribute(campaign: "spring")).campaign == nil)
        // Unreadable or absent attributes store the message unlinked rather than failing the publish.
        let broken = #"{"Clarion.Namespace": {"DataType": "String", "StringValue": "{not json"}}"#
        #expect(try fixture.insertMessage(account: fixture.accounts[0], attributes: broken).campaign == nil)
        #expect(try fixture.insertMessage(account: fixture.accounts[0], attributes: "{}").campaign == nil)

        let report = try #require(try await repository.campaignReport(accountKey: fixture.accounts[0], externalID: "spring"))
        #expect(report.messages == 1)
        #expect(try await repository.campaignReport(accountKey: fixture.accounts[1], externalID: "spring") == nil)
    }

    @Test("an open is stored once per delivery, keeping first and last times; unknown deliveries store nothing")
    func opens() async throws {
        let fixture = try Fixture()
        let repository = CampaignRepository(pool: fixture.pool)
        let c = try PGConnection(conninfo: fixture.url)
        let application = try c.query("""
            INSERT INTO platform_applications (account, region, name, platform) VALUES ($1, 'us-east-1', 'ios', 'APNS') RETURNING id
            """, [fixture.accounts[0]]).first!.int64(0)!
        let endpoint = try c.query("""
            INSERT INTO endpoints (external_id, application, token) VALUES (gen_random_uuid(), $1, 't1') RETURNING id
            """, [application]).first!.int64(0)!
        let message = try fixture.insertMessage(account: fixture.accounts[0], attributes: "{}").key
        let t0 = Date(timeIntervalSince1970: 1_800_000_000)
        #expect(try await repository.recordOpen(DeliveryID(messageKey: message, endpointKey: endpoint), at: t0.addingTimeInterval(60)))
        #expect(try await repository.recordOpen(DeliveryID(messageKey: message, endpointKey: endpoint), at: t0))
        #expect(try await repository.recordOpen(DeliveryID(messageKey: message, endpointKey: endpoint), at: t0.addingTimeInterval(120)))
        #expect(try await repository.recordOpen(DeliveryID(messageKey: message + 99, endpointKey: endpoint), at: t0) == false)
        #expect(try await repository.recordOpen(DeliveryID(messageKey: message, endpointKey: endpoint + 99), at: t0) == false)
        let row = try #require(try c.query("""
            SELECT count(*), min(first_opened_at), max(last_opened_at), sum(count) FROM opens
            """).first)
        #expect(row.int64(0) == 1)
        #expect(row.date(1) == t0)
        #expect(row.date(2) == t0.addingTimeInterval(120))
        #expect(row.int64(3) == 3)
    }
}
