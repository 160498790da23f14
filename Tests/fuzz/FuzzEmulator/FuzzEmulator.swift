import ClarionCore
import ClarionCrypto
import ClarionEmulator
import ClarionHTTP2
import Foundation
import FuzzSupport

/// The provider emulator's request handling (`ProviderEmulator.handle`: APNs sends with provider tokens, FCM and ADM
/// token exchanges and sends, control paths), and its parsers on their own: the lean JSON tape, form bodies and the
/// FCM v1 message check.
///
/// Input: fields separated by 0x1E: `METHOD path`, header lines (`name: value`), body. Credentials cannot be guessed,
/// so these placeholders are replaced before the request is handled: `$APNS_JWT` (a valid APNs provider token),
/// `$FCM_ASSERTION` (a signed service-account assertion), `$FCM_TOKEN` and `$ADM_TOKEN` (access tokens the emulator
/// issued). The emulator's clock is fixed.
///
/// Invariants: the emulator answers every request with a status from 200 to 599; `JSONTape` accepts exactly what
/// ClarionCore's parser accepts (for valid UTF-8, at most 64 deep, without surrogate escapes) and reads the same
/// strings, keys and number literals; form bodies re-encode to themselves; an FCM message the check accepts is JSON
/// and names a target of a known kind.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzEmulator(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let fields = FuzzFields(data, size, limit: 3)
    let body = fields[2]
    handleRequest(fields)
    compareTape(body)
    checkForm(body)
    if case .valid(let result) = FCMMessageCheck.check(body: body) {
        require(["token", "topic", "condition", "fid"].contains(result.target.kind), "target kind \(result.target.kind)")
        require(result.payloadSize >= 0, "negative payload size")
        require((try? JSONValue.parse(bytes: body))?.objectValue != nil, "an accepted FCM body is not a JSON object")
    }
    return 0
}

// MARK: - Requests

/// Seconds since 1970 on the emulator's clock.
private let now: Double = 1_800_000_000
private let teamID = "TEAM123456", keyID = "KEY1234567", bundleID = "com.example.app"
private let clientEmail = "fuzz@clarion-fuzz.iam.gserviceaccount.com", project = "clarion-fuzz"
private let admClientID = "amzn1.application-oa2-client.fuzz", admSecret = "fuzz-secret"
private let hmsClientID = "107000001", hmsSecret = "hms-fuzz-secret"

private struct Emulator: Sendable {
    let emulator: ProviderEmulator
    let substitutions: [(String, String)]
}

/// One emulator for the run, with the credentials above and placeholders filled in. Built once: key generation and
/// the token exchanges cost milliseconds.
private let fixture: Emulator = {
    let apnsKey = SigningKey.generateP256()
    let rsaKey = try! SigningKey.generateRSA()
    var configuration = EmulatorConfiguration()
    configuration.apns.keys = [.init(keyID: keyID, teamID: teamID, publicKeyPEM: apnsKey.verifyingKey.pem)]
    configuration.apns.teams = [.init(teamID: teamID, bundleIDs: [bundleID])]
    configuration.fcm.serviceAccounts = [.init(clientEmail: clientEmail, projectID: project, publicKeyPEM: rsaKey.verifyingKey.pem)]
    configuration.adm.clients = [.init(clientID: admClientID, clientSecret: admSecret)]
    configuration.hms.clients = [.init(clientID: hmsClientID, clientSecret: hmsSecret)]
    let emulator = try! ProviderEmulator(configuration: configuration, clock: { now })

    let apnsJWT = try! JWT.sign(header: ["kid": .string(keyID)], claims: ["iss": .string(teamID), "iat": .double(now)], key: apnsKey)
    let assertion = try! JWT.sign(claims: [
        "iss": .string(clientEmail), "scope": "https://www.googleapis.com/auth/firebase.messaging",
        "aud": "https://oauth2.googleapis.com/token", "iat": .double(now), "exp": .double(now + 3600),
    ], key: rsaKey)
    func token(_ path: String, _ form: String) -> String {
        let request = EmulatorRequest(method: "POST", path: path, headers: [("content-type", "application/x-www-form-urlencoded")],
                                      body: Array(form.utf8))
        let response = emulator.handle(request, connection: emulator.makeConnectionState(id: 0)).response
        return (try? JSONValue.parse(bytes: response?.body ?? []))?["access_token"]?.stringValue ?? "no-token"
    }
    let fcmToken = token("/token", "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)")
    let admToken = token("/auth/o2/token", "grant_type=client_credentials&scope=messaging%3Apush&client_id=\(admClientID)&client_secret=\(admSecret)")
    let hmsToken = token("/oauth2/v3/token", "grant_type=client_credentials&client_id=\(hmsClientID)&client_secret=\(hmsSecret)")
    return Emulator(emulator: emulator, substitutions: [
        ("$APNS_JWT", apnsJWT), ("$FCM_ASSERTION", assertion), ("$FCM_TOKEN", fcmToken), ("$ADM_TOKEN", admToken),
        ("$HMS_TOKEN", hmsToken),
    ])
}()

private func handleRequest(_ fields: FuzzFields) {
    func filled(_ text: String) -> String {
        guard text.contains("$") else { return text }
        return fixture.substitutions.reduce(text) { $0.replacingOccurrences(of: $1.0, with: $1.1) }
    }
    let line = fields.text(0)
    let space = line.firstIndex(of: " ") ?? line.endIndex
    let path = space < line.endIndex ? String(line[line.index(after: space)...]) : "/"
    var headers: [(String, String)] = []
    for headerLine in filled(fields.text(1)).split(separator: "\n") {
        guard let colon = headerLine.firstIndex(of: ":") else { continue }
        // As nghttp2 hands them over: lower-case names, values trimmed.
        headers.append((headerLine[..<colon].lowercased(), headerLine[headerLine.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
    }
    let body = fields[2].contains(UInt8(ascii: "$")) ? Array(filled(fields.text(2)).utf8) : fields[2]
    let request = EmulatorRequest(method: String(line[..<space]), path: path, headers: headers, body: body)
    let connection = fixture.emulator.makeConnectionState(id: 1)
    // Twice on one connection: the second request takes the connection's cached paths (accepted token, topic).
    for _ in 0..<2 {
        let decision = fixture.emulator.handle(request, connection: connection)
        if let response = decision.response {
            require((200...599).contains(response.status), "status \(response.status)")
        }
    }
}

// MARK: - Parsers

private func compareTape(_ body: [UInt8]) {
    let tape = JSONTape(body)
    let value = try? JSONValue.parse(bytes: body, duplicateKeys: .lastWins)
    guard let tape else {
        guard let value, String(validating: body, as: UTF8.self) != nil, depth(value) <= JSONTape.maximumDepth,
              !hasSurrogateEscape(body) else { return }
        fatalError("fuzz invariant: JSONTape refuses a document JSONValue reads")
    }
    guard let value else { fatalError("fuzz invariant: JSONTape accepts a document JSONValue refuses") }
    // Repeated keys collapse in JSONValue (last wins): compare member by member only without them.
    guard (try? JSONValue.parse(bytes: body, duplicateKeys: .reject)) != nil else { return }
    require(same(tape, tape.root, value), "JSONTape and JSONValue read different values")
}

private func same(_ tape: JSONTape, _ index: Int, _ value: JSONValue) -> Bool {
    switch (tape.kind(index), value) {
    case (.null, .null): return true
    case (.true, .bool(true)), (.false, .bool(false)): return true
    case (.number, .number(let number)): return tape.literal(index) == number.literal
    case (.string, .string(let text)): return tape.string(index) == text && tape.stringLength(index) == text.utf8.count
    case (.array, .array(let items)):
        let children = Array(tape.children(index))
        return children.count == items.count && zip(children, items).allSatisfy { same(tape, $0, $1) }
    case (.object, .object(let object)):
        let children = Array(tape.children(index))
        return children.count == object.count && zip(children, object.members).allSatisfy { child, member in
            tape.key(child) == member.key && same(tape, child, member.value)
        }
    default: return false
    }
}

private func depth(_ value: JSONValue) -> Int {
    switch value {
    case .array(let items): 1 + (items.map(depth).max() ?? 0)
    case .object(let object): 1 + (object.map { depth($0.value) }.max() ?? 0)
    default: 0
    }
}

/// `\u` followed by D8-DF: the tape refuses lone surrogates, JSONValue reads them as U+FFFD.
private func hasSurrogateEscape(_ body: [UInt8]) -> Bool {
    body.indices.contains { i in
        i + 3 < body.count && body[i] == UInt8(ascii: "\\") && body[i + 1] == UInt8(ascii: "u") && body[i + 2] | 0x20 == UInt8(ascii: "d")
            && ((UInt8(ascii: "8")...UInt8(ascii: "9")).contains(body[i + 3]) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(body[i + 3] | 0x20))
    }
}

private func checkForm(_ body: [UInt8]) {
    guard let parsed = FormBody.parse(body), !parsed.repeated else { return }
    let fields = parsed.fields
    let encoded = fields.sorted { $0.key < $1.key }.map { FormBody.encode($0.key) + "=" + FormBody.encode($0.value) }.joined(separator: "&")
    guard let again = FormBody.parse(Array(encoded.utf8)) else { fatalError("fuzz invariant: an encoded form does not parse") }
    require(again.fields == fields && !again.repeated, "a form body does not re-encode to itself")
}
