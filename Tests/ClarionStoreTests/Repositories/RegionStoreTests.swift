import ClarionStore
import ClarionTestSupport
import Foundation
import Testing

/// Resources are regional (V020, docs/api.md "Regions"; SNS: a resource exists in the region it was made in, and
/// "Same-region only" for publishes, docs/providers.md C.2): names are unique per account and region, lookups and
/// lists see one region, endpoints and subscriptions take their parent's region, and a direct publish naming an
/// endpoint by an ARN of another region finds nothing. On real PostgreSQL.
@Suite struct RegionStoreTests {
    @Test("the same topic and application names in two regions are two resources; get and list see one region")
    func namesAreUniquePerRegion() async throws {
        let fixture = try RepositoryFixture()
        let account = try await fixture.accounts.ensureAccount(accountID: "123456789012")
        let topics = TopicRepository(pool: fixture.pool)
        let apps = PlatformApplicationRepository(pool: fixture.pool, masterKey: fixture.masterKey)

        let (east, eastCreated) = try await topics.create(accountKey: account.key, region: "us-east-1", name: "news", attributes: ["DisplayName": "E"])
        let (west, westCreated) = try await topics.create(accountKey: account.key, region: "eu-west-1", name: "news", attributes: ["DisplayName": "W"])
        #expect(eastCreated && westCreated && east.key != west.key)
        #expect(east.region == "us-east-1" && west.region == "eu-west-1")
        // Creating again in a region returns that region's topic.
        let (again, createdAgain) = try await topics.create(accountKey: account.key, region: "eu-west-1", name: "news", attributes: [:])
        #expect(!createdAgain && again.key == west.key)
        #expect(try await topics.get(accountKey: account.key, region: "us-east-1", name: "news").attributes["DisplayName"] == "E")
        #expect(try await topics.get(accountKey: account.key, region: "eu-west-1", name: "news").attributes["DisplayName"] == "W")
        #expect(await storeError { _ = try await topics.get(accountKey: account.key, region: "ap-southeast-4", name: "news") }?.code == .notFound)
        _ = try await topics.create(accountKey: account.key, region: "us-east-1", name: "only-east", attributes: [:])
        #expect(try await topics.list(accountKey: account.key, region: "us-east-1").items.map(\.name) == ["news", "only-east"])
        #expect(try await topics.list(accountKey: account.key, region: "eu-west-1").items.map(\.key) == [west.key])

        let (appEast, _) = try await apps.createOrUpdate(accountKey: account.key, region: "us-east-1", name: "chat", platform: "GCM",
                                                         credentials: PlatformCredentials(credential: "east-key"), attributes: [:])
        let (appWest, westApp) = try await apps.createOrUpdate(accountKey: account.key, region: "eu-west-1", name: "chat", platform: "GCM",
                                                               credentials: PlatformCredentials(credential: "west-key"), attributes: [:])
        #expect(westApp && appEast.key != appWest.key && appWest.region == "eu-west-1")
        // Each keeps its own credentials: the second create did not update the first region's application.
        #expect(try await apps.credentials(applicationKey: appEast.key).credential == "east-key")
        #expect(try await apps.credentials(applicationKey: appWest.key).credential == "west-key")
        #expect(try await apps.list(accountKey: account.key, region: "eu-west-1").items.map(\.key) == [appWest.key])
        #expect(await storeError {
            _ = try await apps.get(accountKey: account.key, region: "us-west-2", platform: "GCM", name: "chat")
        }?.code == .notFound)

        // Endpoints and subscriptions live in their parent's region; the account's subscription list is per region.
        let endpoints = EndpointRepository(pool: fixture.pool)
        let subscriptions = SubscriptionRepository(pool: fixture.pool)
        let endpoint = try await endpoints.create(NewEndpoint(applicationKey: appWest.key, token: "tok"), externalID: UUID()).record
        #expect(endpoint.region == "eu-west-1")
        let (subscription, _) = try await subscriptions.subscribe(topicKey: west.key, endpointKey: endpoint.key, externalID: UUID(),
                                                                  filterPolicy: nil, attributes: [:])
        #expect(subscription.region == "eu-west-1")
        #expect(try await subscriptions.list(accountKey: account.key, region: "eu-west-1").items.map(\.key) == [subscription.key])
        #expect(try await subscriptions.list(accountKey: account.key, region: "us-east-1").items.isEmpty)
    }

    @Test("a region name of the wrong shape is refused by the table's check")
    func regionShapeChecked() async throws {
        let fixture = try RepositoryFixture()
        let account = try await fixture.accounts.ensureAccount(accountID: "123456789012")
        let error = await storeError {
            _ = try await TopicRepository(pool: fixture.pool).create(accountKey: account.key, region: "US-EAST-1", name: "t", attributes: [:])
        }
        #expect(error?.code == .checkViolation)
        #expect(error?.constraint == "topics_region_check")
    }

    @Test("a direct publish by endpoint reference finds the endpoint only in the region its ARN names")
    func endpointReferenceIsRegional() async throws {
        let fixture = try RepositoryFixture()
        let account = try await fixture.accounts.ensureAccount(accountID: "123456789012")
        let apps = PlatformApplicationRepository(pool: fixture.pool, masterKey: fixture.masterKey)
        let (app, _) = try await apps.createOrUpdate(accountKey: account.key, region: "eu-west-1", name: "chat", platform: "GCM",
                                                     credentials: PlatformCredentials(credential: "k"), attributes: [:])
        let id = UUID()
        _ = try await EndpointRepository(pool: fixture.pool).create(NewEndpoint(applicationKey: app.key, token: "tok"), externalID: id)
        let batcher = PublishBatcher(pool: fixture.pool)
        defer { batcher.shutdown() }
        func publish(region: String) async -> Result<MessageID, StoreError> {
            let arn = "arn:aws:sns:\(region):123456789012:endpoint/GCM/chat/\(id.uuidString.lowercased())"
            let message = NewMessage(externalID: UUID(), accountKey: account.key,
                                     target: .endpointReference(id: id, platform: "GCM", application: "chat", arn: arn),
                                     message: "hi", structure: nil, subject: nil, attributesJSON: "{}")
            do throws(StoreError) { return .success(try await batcher.publish(message)) } catch { return .failure(error) }
        }
        guard case .success = await publish(region: "eu-west-1") else { Issue.record("the endpoint's own region refused"); return }
        guard case .failure(let error) = await publish(region: "us-east-1") else { Issue.record("another region's ARN found the endpoint"); return }
        #expect(error.code == .notFound)
    }

    /// V017's endpoint lifecycle events, made regional by V020: the event goes to the event topic in the application's
    /// region (not to the same name in another region) and its document's ARNs carry that region.
    @Test("an endpoint event is published to the event topic of the application's region, with that region's ARNs")
    func endpointEventsAreRegional() async throws {
        let fixture = try RepositoryFixture()
        let account = try await fixture.accounts.ensureAccount(accountID: "123456789012")
        let topics = TopicRepository(pool: fixture.pool)
        let (eastTopic, _) = try await topics.create(accountKey: account.key, region: "us-east-1", name: "events", attributes: [:])
        let (westTopic, _) = try await topics.create(accountKey: account.key, region: "eu-west-1", name: "events", attributes: [:])
        let (app, _) = try await PlatformApplicationRepository(pool: fixture.pool, masterKey: fixture.masterKey).createOrUpdate(
            accountKey: account.key, region: "eu-west-1", name: "chat", platform: "GCM", credentials: PlatformCredentials(credential: "k"),
            attributes: ["EventEndpointCreated": "arn:aws:sns:eu-west-1:123456789012:events"])
        let id = UUID()
        _ = try await EndpointRepository(pool: fixture.pool).create(NewEndpoint(applicationKey: app.key, token: "tok"), externalID: id)
        let rows = try PGConnection(conninfo: fixture.url).query("SELECT target_id, message FROM messages").rows
        #expect(rows.count == 1)
        #expect(rows.first?.int64(0) == westTopic.key && rows.first?.int64(0) != eastTopic.key)
        let document = rows.first?.string(1) ?? ""
        #expect(document.contains("\"EndpointArn\": \"arn:aws:sns:eu-west-1:123456789012:endpoint/GCM/chat/\(id.uuidString.lowercased())\""),
                "\(document)")
        #expect(document.contains("\"Resource\": \"arn:aws:sns:eu-west-1:123456789012:app/GCM/chat\""), "\(document)")
    }

    @Test("V020 gives rows made before regions the migrating node's region")
    func migrationUsesTheConfiguredRegion() async throws {
        let url = try TestPostgres.freshDatabase(prefix: "region")
        let c = try PGConnection(conninfo: url)
        try Migrator(migrations: Schema.migrations.filter { $0.version < 20 }).migrate(c)
        let account = try c.query("INSERT INTO accounts (account_id) VALUES ('123456789012') RETURNING id").first!.int64(0)!
        try c.query("INSERT INTO topics (account, name) VALUES ($1, 'old')", [account])
        try c.query("INSERT INTO platform_applications (account, name, platform) VALUES ($1, 'old', 'GCM')", [account])
        let other = try PGConnection(conninfo: url)
        #expect(try Migrator(migrations: Schema.migrations.filter { $0.version <= 20 }, defaultRegion: "eu-central-2").migrate(other) == [20])
        #expect(try c.query("SELECT region FROM topics").first?.string(0) == "eu-central-2")
        #expect(try c.query("SELECT region FROM platform_applications").first?.string(0) == "eu-central-2")
        // Afterwards the column has no default: a writer that names no region is refused, not put somewhere.
        let error = await storeError { _ = try c.query("INSERT INTO topics (account, name) VALUES ($1, 'new')", [account]) }
        #expect(error?.code == .notNullViolation)
    }
}
