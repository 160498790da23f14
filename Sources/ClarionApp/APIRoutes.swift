import ClarionAPI
import ClarionCrypto
import ClarionStore
import ClarionHTTP1

/// Every route a node's API serves, in one place: the SNS Query API at `/`, the native JSON API under `/v1`,
/// the web console at `/console` with its read-only summaries, the HTTP/S subscribers' confirm, unsubscribe and signing-certificate routes, campaigns and beacons, the device registration API and event collector, `/metrics`, `/health` and `/ready`.
/// `RouteTableTests` checks this table against the OpenAPI document in both directions.
enum APIRoutes {
    /// - Parameters:
    ///   - registration: the registration routes' context (the node keeps it: the metrics read its counters).
    ///   - metrics: the Prometheus exposition's handler, served here unless `CLARION_METRICS_LISTEN` moves it to a
    ///     listener of its own or `CLARION_METRICS=off` (then nil). No authentication: it carries no secret, token
    ///     or id (docs/security.md).
    static func router(pool: PGPool, masterKey: AESGCMKey, batcher: PublishBatcher, configuration: Configuration,
                       registration: RegistrationContext, signingCertificatePEM: String, metrics: RouteHandler?,
                       readiness: @escaping @Sendable () async -> Readiness) -> Router {
        var router = Router.api()
        let region = configuration.region
        let listensOnLoopbackOnly = ClarionNode.isLoopback(configuration.listenHost)
        let sns = SNSActionContext(pool: pool, masterKey: masterKey, batcher: batcher, region: region)
        let accounts = AccountRepository(pool: pool, masterKey: masterKey)
        let keys = CachingAccessKeyResolver(base: DemoKeyGuard(base: StoreAccessKeyResolver(accounts: accounts),
                                                               listensOnLoopbackOnly: listensOnLoopbackOnly))
        SNSQueryService(region: region, actions: makeSNSActionTable(context: sns),
                        authentication: .sigV4(SigV4Verifier(region: region, resolver: keys)))
            .register(on: &router)
        let native = NativeAPIContext(sharing: sns)
        registerNativeAPI(on: &router, context: native)
        ConsoleRoutes.register(on: &router, context: native, staleAfterDays: configuration.staleAfterDays)
        HTTPSubscriptionRoutes.register(on: &router, subscriptions: sns.subscriptions, region: region,
                                        certificatePEM: signingCertificatePEM)
        let beaconLimiter = configuration.beaconLimitBurst > 0 ? BeaconLimiter(settings: .init(
            burst: Double(configuration.beaconLimitBurst), perSecond: Double(configuration.beaconLimitRate))) : nil
        registerCampaignAPI(on: &router, context: CampaignContext(
            pool: pool, masterKey: masterKey, beaconLimiter: beaconLimiter,
            trustedProxies: TrustedProxies(list: configuration.trustedProxies) ?? TrustedProxies()))
        registerDeviceRegistrationAPI(on: &router, context: registration)
        if let metrics { router.add(.get, "/metrics", errorFormat: .json, metrics) }
        HealthRoutes.addMissing(to: &router, readiness: readiness)
        return router
    }
}
