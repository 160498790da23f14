/// Platform-application attribute names the provider layer reads (and the API checks before storing them): SNS's own,
/// and Clarion's additions.
public enum ProviderAttribute {
    /// APNs token: the `.p8` signing key (PEM). APNs certificate: the private key (PEM). FCM: the
    /// service-account JSON. ADM: the client secret.
    public static let platformCredential = "PlatformCredential"
    /// APNs token: the key id. APNs certificate: the certificate (PEM). ADM: the client id. FCM: unused.
    public static let platformPrincipal = "PlatformPrincipal"
    public static let appleTeamID = "ApplePlatformTeamID"
    public static let appleBundleID = "ApplePlatformBundleID"
    /// Clarion: FCM project id, replacing the service account's `project_id`.
    public static let fcmProjectID = "FCMProjectID"
    /// Clarion: base URL of the send API (`https://host[:port]`, or `http://` for h2c), replacing
    /// api.push.apple.com / api.sandbox.push.apple.com / fcm.googleapis.com / api.amazon.com.
    public static let providerEndpoint = "ProviderEndpoint"
    /// Clarion: the token URL (ADM's Login with Amazon URL; for FCM it replaces the JSON's `token_uri`).
    public static let providerAuthEndpoint = "ProviderAuthEndpoint"
    /// Clarion: extra trusted CA certificate(s), PEM, on top of the system store, for this application.
    public static let providerCACertificate = "ProviderCACertificate"
    /// Web Push: the VAPID contact URI, `mailto:` or `https:` (RFC 8292 section 2.1). The key pair's private half is
    /// `PlatformCredential` (a P-256 PEM).
    public static let vapidSubject = "VAPIDSubject"
    /// Huawei Push Kit: the app id in the send path (`/v1/<app id>/messages:send`). Optional: AppGallery Connect
    /// issues the OAuth client id equal to the app id, so without it the client id (`PlatformPrincipal`) is used.
    public static let hmsAppID = "HMSAppID"
}
