import ClarionCore
import ClarionCrypto
import ClarionProviders
import Foundation
import FuzzSupport

/// PEM and key parsing (`PEMBlock`, `SigningKey`, `VerifyingKey`: the DER goes to OpenSSL's d2i readers) and the
/// provider credentials of a platform application (`ProviderCredentials.parse`): an APNs `.p8` signing key with its
/// key id, team id and bundle id; an FCM service-account JSON; ADM's client id and secret.
///
/// Input: fields separated by 0x1E: a kind (its first letter: k keys only, p APNs token, f FCM, a ADM, c APNs
/// certificate; any other byte runs all but c), PlatformCredential, PlatformPrincipal, and a JSON object of further
/// attributes (ApplePlatformTeamID, ApplePlatformBundleID, FCMProjectID).
///
/// APNs certificate auth reads its PEM through ClarionHTTP2's TLS loader, whose memory bug (a BIO over a pointer
/// that outlives `withUnsafeBytes`) is being fixed on another branch: kind c runs only with
/// CLARION_FUZZ_APNS_CERTIFICATES=1 until then.
///
/// Invariants: every PEM block writes text that parses back to itself; a loaded signing key signs, its public half
/// verifies that signature, and its PKCS#8 form loads as the same key; parsed credentials hold what their rules say.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCredentials(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let fields = FuzzFields(data, size, limit: 4)
    let credential = fields.text(1)
    let principal = fields.text(2)
    var attributes: [String: String] = [
        "ApplePlatformTeamID": "TEAM123456", "ApplePlatformBundleID": "com.example.app",
    ]
    for member in (try? JSONValue.parse(bytes: fields[3]))?.objectValue ?? JSONObject() {
        attributes[member.key] = member.value.stringValue
    }
    if !credential.isEmpty { attributes["PlatformCredential"] = credential }
    if !principal.isEmpty { attributes["PlatformPrincipal"] = principal }

    switch fields[0].first {
    case UInt8(ascii: "k"): keys(credential)
    case UInt8(ascii: "p"): providerCredentials(.apns, attributes)
    case UInt8(ascii: "f"): providerCredentials(.gcm, attributes)
    case UInt8(ascii: "a"): providerCredentials(.adm, attributes)
    case UInt8(ascii: "c"): providerCredentials(.apnsSandbox, attributes)
    default:
        keys(credential)
        for platform in [Platform.apns, .gcm, .adm] { providerCredentials(platform, attributes) }
    }
    return 0
}

private let certificatesEnabled = ProcessInfo.processInfo.environment["CLARION_FUZZ_APNS_CERTIFICATES"] == "1"

private func keys(_ text: String) {
    guard let blocks = try? PEMBlock.parseAll(text) else { return }
    for block in blocks {
        require((try? PEMBlock.parseAll(block.text)) == [block], "PEM block \(block.label) does not round-trip")
        if let key = try? SigningKey(block: block) { checkSigningKey(key) }
    }
    if let key = try? SigningKey(pem: text) { checkSigningKey(key) }
    if let verifying = try? VerifyingKey(pem: text) {
        require((try? VerifyingKey(subjectPublicKeyInfoDER: verifying.subjectPublicKeyInfoDER))?.algorithm == verifying.algorithm,
                "a public key does not reload from its SubjectPublicKeyInfo")
    }
}

private func checkSigningKey(_ key: SigningKey) {
    let message = Array("fuzz".utf8)
    guard let signature = try? key.sign(message) else { fatalError("fuzz invariant: a loaded \(key.algorithm) key cannot sign") }
    require(key.verifyingKey.verify(signature: signature, message: message), "a key's public half does not verify its signature")
    guard let again = try? SigningKey(pem: key.pkcs8PEM) else { fatalError("fuzz invariant: a key's PKCS#8 PEM does not load") }
    require(again.verifyingKey.subjectPublicKeyInfoDER == key.verifyingKey.subjectPublicKeyInfoDER, "PKCS#8 reload changed the key")
}

private func providerCredentials(_ platform: Platform, _ attributes: [String: String]) {
    if platform.provider == .apns, !certificatesEnabled, attributes["PlatformPrincipal"]?.contains("-----BEGIN") == true {
        return
    }
    guard let parsed = try? ProviderCredentials.parse(platform: platform, attributes: attributes) else { return }
    switch parsed {
    case .apnsToken(let token):
        require(token.keyID.utf8.count == 10 && token.teamID.utf8.count == 10, "Apple ids of the wrong length")
        require(token.signingKey.algorithm == .es256, "an APNs key that is not ES256")
    case .apnsCertificate(let certificate):
        require(!certificate.certificateFingerprint.isEmpty, "a certificate without a fingerprint")
    case .fcm(let account):
        require(account.signingKey.algorithm == .rs256, "a service-account key that is not RS256")
        require(!account.projectID.isEmpty && !account.projectID.contains("/") && !account.projectID.contains(" "),
                "project id \(account.projectID)")
        require(account.tokenURI.lowercased().hasPrefix("http"), "token_uri \(account.tokenURI)")
    case .adm(let client):
        require(!client.clientID.isEmpty && !client.clientSecret.isEmpty, "empty ADM client credentials")
    case .webPush(let vapid):
        require(vapid.signingKey.algorithm == .es256, "a VAPID key that is not ES256")
        require(Base64URL.decode(vapid.publicKey)?.count == 65, "a VAPID public key that is not a 65-byte point")
    case .hms(let client):
        // The ids go into the send URL's path and the token request's form: checked when parsed.
        require(!client.appID.isEmpty && !client.clientID.isEmpty && !client.clientSecret.isEmpty, "empty HMS credentials")
        require(!(client.appID + client.clientID).contains(where: { " /?#%".contains($0) }), "an HMS id that breaks a URL: \(client.appID)")
    }
    _ = parsed.identity
}
