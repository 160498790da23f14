import ClarionTransport

/// What the emulator remembers about one HTTP/2 connection.
///
/// Confined to the connection's event-loop thread (the transport calls the emulator for a connection
/// only there), so it is a plain class without locks and deliberately not `Sendable`.
///
/// APNs binds a connection to the first team and key that authenticated on it (docs/providers.md A.5), and
/// the provider token verified on it is cached here: the hot path compares the `authorization` string
/// with the cached one and only checks the token's age, no signature.
///
/// Its stored properties skip dynamic exclusivity checks (`@exclusivity(unchecked)`): one thread touches
/// them, never from inside another access, and a request reads or writes about ten of them.
public final class EmulatorConnectionState {
    public let id: UInt64
    /// Streams (requests) seen on this connection.
    @exclusivity(unchecked) public internal(set) var streamCount: Int = 0
    /// The SETTINGS_MAX_CONCURRENT_STREAMS this connection currently advertises.
    @exclusivity(unchecked) public internal(set) var advertisedMaxConcurrentStreams: UInt32
    /// Set once a GOAWAY was decided: later streams are refused too.
    @exclusivity(unchecked) var goingAway = false
    /// The TLS client certificate the connection presented (nil: none, or h2c).
    public let peerCertificate: TLSPeerCertificate?

    // APNs (A.5, A.7)
    /// The `authorization` value last accepted, verbatim (`bearer <jwt>`), as bytes: the hot path compares
    /// the request's header bytes with it.
    @exclusivity(unchecked) var apnsAcceptedAuthorization: [UInt8]?
    @exclusivity(unchecked) var apnsTokenIssuedAt: Int64 = 0
    /// The key and team the connection is bound to (nil until a token is accepted).
    @exclusivity(unchecked) var apnsKeyID: String?
    @exclusivity(unchecked) var apnsTeamID: String?
    /// The last topic / push-type header pair that passed the topic check, and the type it resolved to.
    @exclusivity(unchecked) var apnsCheckedTopic: [UInt8]?
    @exclusivity(unchecked) var apnsCheckedPushType: [UInt8]?
    @exclusivity(unchecked) var apnsCheckedResolvedType: String?
    /// What the connection's client certificate is worth for APNs, judged at its first APNs request.
    @exclusivity(unchecked) var apnsCertificateVerdict: APNsEmulator.CertificateVerdict?
    /// A request was accepted on the strength of the client certificate (A.2: `authorization` is then ignored).
    @exclusivity(unchecked) var apnsCertificateAuthenticated = false

    // FCM / ADM: the access token last accepted, to skip the shared store's lock on repeat requests.
    @exclusivity(unchecked) var fcmAccessToken: String?
    @exclusivity(unchecked) var fcmGrant: IssuedAccessToken?
    @exclusivity(unchecked) var admAccessToken: String?
    @exclusivity(unchecked) var admGrant: IssuedAccessToken?

    public init(id: UInt64, advertisedMaxConcurrentStreams: UInt32, peerCertificate: TLSPeerCertificate? = nil) {
        self.id = id
        self.advertisedMaxConcurrentStreams = advertisedMaxConcurrentStreams
        self.peerCertificate = peerCertificate
    }

    /// The APNs key id this connection is bound to, if any.
    public var boundAPNsKeyID: String? { apnsKeyID }

    /// True once an APNs request was accepted on this connection's client certificate.
    public var isAPNsCertificateAuthenticated: Bool { apnsCertificateAuthenticated }
}
