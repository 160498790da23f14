import ClarionCore
import ClarionHTTP2
import ClarionTransport
import Foundation
import Synchronization
import Testing
@testable import ClarionEmulator
@testable import ClarionProviders

/// APNs certificate-based auth (docs/providers.md A.2, A.6, C.7) end to end: a platform application whose
/// PlatformPrincipal is a certificate and PlatformCredential its key sends through the emulator over TLS, the
/// certificate in the TLS handshake and no provider token; what APNs says about certificates comes back as
/// credential failures.
@Suite(.serialized) struct APNsCertificateAuthTests {
    /// A CA the test harness's emulator trusts besides the demo CA, to issue certificates with chosen traits.
    static let authority = try! CertificateAuthority.generate(commonName: "test APNs client CA")
    /// A CA nobody trusts.
    static let stranger = try! CertificateAuthority.generate(commonName: "untrusted CA")

    static func harness(_ adjust: @escaping (inout EmulatorConfiguration) -> Void = { _ in }) throws -> Harness {
        try Harness(tls: true) { configuration in
            let demoCA = configuration.apns.certificates.trustedCAPEM ?? ""
            configuration.apns.certificates.trustedCAPEM = demoCA + "\n" + Self.authority.certificatePEM
            adjust(&configuration)
        }
    }

    static func appleLike(_ bundleID: String, authority: CertificateAuthority = Self.authority, markers: [String] = [],
                          validityDays: Int = 30) throws -> TLSIdentity {
        try authority.issueClientCertificate(
            subject: [("UID", bundleID), ("CN", "Apple Push Services: \(bundleID)"), ("OU", "TEAM000001")],
            markerOIDs: markers, validityDays: validityDays)
    }

    /// The APNs requests the emulator recorded (authorization is recorded as "<redacted>" when present).
    static func apnsRecords(_ harness: Harness) -> [EmulatorRecord] {
        harness.emulator.records().filter { $0.endpoint == "apns" }
    }

    @Test("APNs A.2/C.7 certificate auth: the demo certificate + key (written by the demo-credentials writer) send over TLS with no authorization header and are accepted, single and batch; apns-topic is the certificate's UID")
    func certificateAuthSends() async throws {
        let harness = try Self.harness()
        let client = try harness.client("cert-app", .apns, harness.apnsCertificateAttributes())
        #expect(client.apnsTokenSigner == nil)
        #expect(client.application.apnsBundleID == Demo.credentials.apnsCertificate.bundleID, "topic from the certificate's UID")

        // Rendered as the dispatcher renders it: with the application's bundle id (the certificate's topic)...
        let push = harness.render(platform: .apns, apnsBundleID: client.application.apnsBundleID)
        let outcome = await client.send(push, token: apnsToken())
        guard case .accepted(let id) = outcome else {
            Issue.record("expected accepted, got \(outcome)")
            await harness.close()
            return
        }
        #expect(id?.count == 36)
        // ...and with no bundle id at render time: the client fills the topic from the certificate.
        let bare = harness.render(platform: .apns, apnsBundleID: nil)
        let sink = CollectingSink()
        let deliveries = (0..<20).map { ProviderDelivery(token: apnsToken(seed: $0), tag: UInt64($0)) }
        #expect(client.submit(bare, deliveries: deliveries, sink: sink) == 20)
        let results = try await sink.wait(for: 20)
        #expect(results.count == 20)
        #expect(results.allSatisfy { $0.outcome.label == "accepted" }, "\(results.map(\.outcome))")

        let records = Self.apnsRecords(harness)
        #expect(records.count == 21)
        #expect(records.allSatisfy { $0.headers["authorization"] == nil }, "certificate auth sends no authorization header")
        #expect(records.allSatisfy { $0.headers["apns-topic"] == Demo.credentials.apnsCertificate.bundleID })
        #expect(records.allSatisfy { $0.status == 200 })
        #expect(harness.apnsAuthorizations.tokens.isEmpty)
        #expect((await client.poolStatistics()).connectionsOpened == 1)
        await harness.close()
    }

    @Test("APNs A.6 certificate auth: a certificate the provider does not know (another CA) or an expired one is 403 BadCertificate -> credentials invalid, application disabled; token auth on the same TLS emulator still works")
    func unknownCertificateIsBadCertificate() async throws {
        let harness = try Self.harness()
        let push = harness.render(platform: .apns, apnsBundleID: "com.example.cert")
        let cases: [(String, TLSIdentity)] = [
            ("unknown", try Self.appleLike("com.example.cert", authority: Self.stranger)),
            ("expired", try Self.appleLike("com.example.cert", validityDays: 0)),
        ]
        for (name, identity) in cases {
            let client = try harness.client("cert-\(name)", .apns, harness.apnsCertificateAttributes(identity))
            let outcome = await client.send(push, token: apnsToken())
            #expect(outcome == .credentialsInvalid(reason: "BadCertificate"), "\(name): \(outcome)")
            #expect(outcome.disablesApplication, "\(name)")
        }
        #expect(harness.stats["apns"].reasons["BadCertificate"] == 2)
        #expect(harness.stats["apns"].statuses["200"] == nil)

        // The JWT path is unchanged on a server that asks for certificates: no certificate, a provider token.
        let tokenClient = try harness.client("token-app", .apns, harness.apnsAttributes())
        #expect(await tokenClient.send(harness.render(platform: .apns), token: apnsToken()).label == "accepted")
        await harness.close()
    }

    @Test("APNs A.6 certificate auth: a certificate marked for the development environment is 403 BadCertificateEnvironment on production (credentials invalid) and accepted on the sandbox")
    func certificateEnvironment() async throws {
        let development = try Self.appleLike("com.example.dev", markers: [APNsEmulator.developmentMarkerOID])
        let push = PushRenderer.render(SNSMessage(defaultText: "hi", payloads: [:]), attributes: MobilePushAttributes(),
                                       platform: .apns, settings: RenderSettings(apnsBundleID: "com.example.dev"),
                                       publishedAt: Date(timeIntervalSince1970: 1_800_000_000), now: Date(timeIntervalSince1970: 1_800_000_000))
        guard case .push(let rendered) = push else {
            Issue.record("did not render: \(push)")
            return
        }

        let production = try Self.harness()
        let onProduction = try production.client("dev-on-prod", .apns, production.apnsCertificateAttributes(development))
        let refused = await onProduction.send(rendered, token: apnsToken())
        #expect(refused == .credentialsInvalid(reason: "BadCertificateEnvironment"))
        #expect(refused.disablesApplication)
        await production.close()

        let sandbox = try Self.harness { $0.apns.environment = .sandbox }
        let onSandbox = try sandbox.client("dev-on-sandbox", .apnsSandbox, sandbox.apnsCertificateAttributes(development))
        #expect(await onSandbox.send(rendered, token: apnsToken()).label == "accepted")
        await sandbox.close()
    }

    @Test("APNs A.3 certificate auth: a certificate pushes to its own bundle id (UID) only: another topic is TopicDisallowed (credentials invalid); ApplePlatformBundleID overrides the certificate's topic")
    func certificateTopics() async throws {
        let harness = try Self.harness()
        let identity = try Self.appleLike("com.example.cert")
        let client = try harness.client("cert-topics", .apns, harness.apnsCertificateAttributes(identity))
        let push = harness.render(platform: .apns, apnsBundleID: nil)
        #expect(await client.send(push, token: apnsToken()).label == "accepted")
        #expect(Self.apnsRecords(harness).last?.headers["apns-topic"] == "com.example.cert")

        let voip = APNsRequestHeaders(pushType: .voip, topic: nil, priority: .immediate, expiration: nil, collapseID: nil)
        let voipPush = RenderedPush(platform: .apns, request: .apns(voip), body: push.body, expiresAt: push.expiresAt)
        #expect(await client.send(voipPush, token: apnsToken()).label == "accepted")
        #expect(Self.apnsRecords(harness).last?.headers["apns-topic"] == "com.example.cert.voip")

        let other = APNsRequestHeaders(pushType: .alert, topic: "com.not.ours", priority: .immediate, expiration: nil, collapseID: nil)
        let otherPush = RenderedPush(platform: .apns, request: .apns(other), body: push.body, expiresAt: push.expiresAt)
        #expect(await client.send(otherPush, token: apnsToken()) == .credentialsInvalid(reason: "TopicDisallowed"))

        // A bundle id given as an attribute is the topic, whatever the certificate says (here: one it may not use).
        let overridden = try harness.client("cert-bundle", .apns, harness.apnsCertificateAttributes(identity, bundleID: "com.example.other"))
        #expect(overridden.application.apnsBundleID == "com.example.other")
        #expect(await overridden.send(harness.render(platform: .apns, apnsBundleID: nil), token: apnsToken())
                == .credentialsInvalid(reason: "TopicDisallowed"))
        await harness.close()
    }

    @Test("APNs certificate auth pools: keyed by the certificate's SHA-256 + environment, never by host: one certificate shares a pool across applications, another certificate or environment gets its own")
    func certificatePoolKeys() async throws {
        let harness = try Self.harness()
        let other = try Self.appleLike(Demo.credentials.apnsCertificate.bundleID)
        let a = try harness.client("a", .apns, harness.apnsCertificateAttributes())
        let b = try harness.client("b", .apns, harness.apnsCertificateAttributes())
        let c = try harness.client("c", .apns, harness.apnsCertificateAttributes(other))
        let sandbox = try harness.client("s", .apnsSandbox, harness.apnsCertificateAttributes())
        #expect(a.pool === b.pool)
        #expect(a.pool !== c.pool)
        #expect(a.pool !== sandbox.pool, "same host, same certificate, other environment")
        let demoHash = try TLSCertificate(pem: Demo.credentials.apnsCertificate.certificatePEM).sha256
        #expect(a.pool.key.clientCertificateSHA256 == demoHash)
        #expect(a.pool.configuration.identity.hasPrefix("apns-cert:\(demoHash):production"))
        #expect(sandbox.pool.configuration.identity.hasPrefix("apns-cert:\(demoHash):sandbox"))
        #expect(c.pool.key.clientCertificateSHA256 == (try other.leafCertificate().sha256))

        let push = harness.render(platform: .apns, apnsBundleID: Demo.credentials.apnsCertificate.bundleID)
        #expect(await a.send(push, token: apnsToken()).label == "accepted")
        #expect(await c.send(push, token: apnsToken()).label == "accepted")
        let connections = Set(Self.apnsRecords(harness).map(\.connection))
        #expect(connections.count == 2, "two certificates, two connections")
        await harness.close()
    }

    @Test("APNs certificate auth: a server that refuses our certificate in the TLS handshake (alert) -> credentials invalid (BadCertificate), not a retry")
    func tlsAlertIsCredentialFailure() async throws {
        let group = try EventLoopGroup(threadCount: 1)
        let serverCertificate = try SelfSignedCertificate.generate()
        let server = try HTTP2Server(
            configuration: .init(tls: serverCertificate.identity,
                                 clientCertificates: TLSClientCertificateRequest(trustedCAPEM: Self.authority.certificatePEM,
                                                                                 requireVerified: true)),
            group: group) { _, _ in .respond(status: 200, headers: [("apns-id", UUID().uuidString)]) }
        let port = try server.start()
        let registry = try ProviderRegistry(options: Harness.options)
        func attributes(_ identity: TLSIdentity) -> [String: String] {
            [
                ProviderAttribute.platformPrincipal: identity.certificateChainPEM,
                ProviderAttribute.platformCredential: identity.privateKeyPEM,
                ProviderAttribute.providerEndpoint: "https://127.0.0.1:\(port)",
                ProviderAttribute.providerCACertificate: serverCertificate.certificatePEM,
            ]
        }
        let push = try #require({ () -> RenderedPush? in
            let result = PushRenderer.render(SNSMessage(defaultText: "hi", payloads: [:]), attributes: MobilePushAttributes(),
                                             platform: .apns, settings: RenderSettings(apnsBundleID: "com.example.cert"),
                                             publishedAt: Date(), now: Date())
            if case .push(let push) = result { return push }
            return nil
        }())
        let good = try registry.client(applicationID: "good", platform: .apns, attributes: attributes(try Self.appleLike("com.example.cert")))
        #expect(await good.send(push, token: apnsToken()).label == "accepted")
        let refused = try registry.client(applicationID: "refused", platform: .apns,
                                          attributes: attributes(try Self.appleLike("com.example.cert", authority: Self.stranger)))
        let outcome = await refused.send(push, token: apnsToken())
        #expect(outcome.label == "credentials_invalid", "\(outcome)")
        #expect(outcome.reason?.hasPrefix("BadCertificate (TLS client certificate refused") == true, "\(outcome)")
        #expect(outcome.disablesApplication)
        await registry.shutdown()
        await server.shutdown()
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                group.shutdown()
                done.resume()
            }
        }
    }
}
