import ClarionAPI
import ClarionCore
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
    ///   - resources: what the SNS actions and the native API share (the registration context holds its account-key
    ///     cache too).
    static func router(pool: PGPool, masterKey: AESGCMKey, resources: APIResources, configuration: Configuration,
                       registration: RegistrationContext, signingCertificatePEM: String, metrics: RouteHandler?,
                       emulatorReset: (@Sendable () -> Void)? = nil,
                       readiness: @escaping @Sendable () async -> Readiness) -> Router {
        var router = Router.api()
        let region = configuration.region
        let listensOnLoopbackOnly = ClarionNode.isLoopback(configuration.listenHost)
        let sns = SNSActionContext(resources: resources)
        let keys = CachingAccessKeyResolver(base: DemoKeyGuard(base: StoreAccessKeyResolver(accounts: resources.accounts),
                                                               listensOnLoopbackOnly: listensOnLoopbackOnly))
        SNSQueryService(region: region, actions: makeSNSActionTable(context: sns),
                        authentication: .sigV4(SigV4Verifier(regions: configuration.servedRegions, resolver: keys,
                                                             unknownKeyAccount: configuration.devMode ? configuration.accountID : nil)))
            .register(on: &router)
        let native = NativeAPIContext(resources: resources)
        registerNativeAPI(on: &router, context: native)
        ConsoleRoutes.register(on: &router, context: native, staleAfterDays: configuration.staleAfterDays)
        HTTPSubscriptionRoutes.register(on: &router, subscriptions: resources.subscriptions, region: region,
                                        certificatePEM: signingCertificatePEM)
        let beaconLimiter = configuration.beaconLimitBurst > 0 ? BeaconLimiter(settings: .init(
            burst: Double(configuration.beaconLimitBurst), perSecond: Double(configuration.beaconLimitRate))) : nil
        registerCampaignAPI(on: &router, context: CampaignContext(
            pool: pool, masterKey: masterKey, beaconLimiter: beaconLimiter,
            trustedProxies: TrustedProxies(list: configuration.trustedProxies) ?? TrustedProxies(),
            accountKeys: resources.accountKeys))
        registerDeviceRegistrationAPI(on: &router, context: registration)
        if let metrics { router.add(.get, "/metrics", errorFormat: .json, metrics) }
        // Served in dev mode only: anywhere else the path is unknown (404), like any other.
        if configuration.devMode { router.add(.post, resetPath, errorFormat: .json, reset(pool: pool, emulatorReset: emulatorReset)) }
        HealthRoutes.addMissing(to: &router, readiness: readiness)
        return router
    }

    static let resetPath = "/_clarion/reset"

    /// `POST /_clarion/reset` (`serve --dev`): empties every resource (`ResourceReset`) and the emulator's records.
    /// No authentication, like the rest of dev mode's trust: the node listens on loopback unless told otherwise.
    static func reset(pool: PGPool, emulatorReset: (@Sendable () -> Void)?) -> RouteHandler {
        let log = Log("clarion.dev")
        return .task { _ in
            do throws(StoreError) {
                let emptied = try await ResourceReset(pool: pool).reset()
                emulatorReset?()
                log.info("resources reset", ["tables": String(emptied.count)])
                var body = #"{"reset":true,"tables_emptied":"#.utf8.map { $0 }
                body.append(contentsOf: String(emptied.count).utf8)
                body.append(UInt8(ascii: "}"))
                return .json(body)
            } catch {
                log.error("reset failed", ["cause": error.logText, "code": error.code.rawValue])
                var answer = error.isTransient ? JSONAPIError.serviceUnavailable("The database is unavailable; nothing was reset.")
                                               : JSONAPIError.internalError
                answer.cause = error.logText
                return answer.response()
            }
        }
    }
}
