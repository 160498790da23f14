import ClarionCore
import ClarionCrypto
import ClarionTransport
import Foundation
import Synchronization

/// The emulator's request -> decision core: routes a request to APNs, FCM or ADM logic, injects
/// faults, counts and records. No sockets: the HTTP/2 server calls `handle` on its event-loop thread,
/// and tests call it directly.
///
/// Routes (one listener serves every provider):
/// - `POST /3/device/<token>`: APNs (`APNsEmulator`)
/// - `POST /token`: Google OAuth for FCM service accounts; `POST /v1/projects/<p>/messages:send`: FCM
///   (`FCMEmulator`)
/// - `POST /auth/o2/token`: Login with Amazon for ADM; `POST /messaging/registrations/<id>/messages`:
///   ADM (`ADMEmulator`)
/// - `POST /oauth2/v3/token`: Huawei OAuth; `POST /v1/<app id>/messages:send`: Huawei Push Kit (`HMSEmulator`)
/// - `GET /_emulator/stats` (counters as JSON), `POST /_emulator/reset` (clear counters and records),
///   `GET /_emulator/records` (in-memory records as JSON lines), `GET /_emulator/health`
///
/// Streams: a connection starts at `initialMaxConcurrentStreams` (APNs' 1 when APNs keys or certificates
/// are configured, A.7). APNs raises it when the connection presents a valid provider token (or its first
/// request is accepted on its client certificate: emulator choice, Apple documents the single stream for token
/// auth only); the first FCM or ADM request on a connection raises it to that provider's limit.
///
/// Thread safety: the configuration is immutable; shared mutable state (issued access tokens, counters,
/// records, the fault sequence) sits behind `Mutex`/`Atomic`. Per-connection state is confined to the
/// connection's loop thread.
public final class ProviderEmulator: Sendable {
    public let configuration: EmulatorConfiguration
    let apns: APNsEmulator
    let fcm: FCMEmulator
    let adm: ADMEmulator
    let hms: HMSEmulator
    let webPush = WebPushEmulator()
    let recorder: EmulatorRecorder
    let ids = EmulatorIDs()
    let clock: @Sendable () -> Double
    private let faults: EmulatorFaults
    private let faultsEnabled: Bool
    private let sendSequence = Atomic<UInt64>(0)
    /// When the stall window opened (clock seconds), once it has.
    private let stallWindowOpenedAt = Mutex<Double?>(nil)
    /// Send requests the stall window held.
    private let stallWindowHeld = Atomic<Int>(0)

    /// The SETTINGS_MAX_CONCURRENT_STREAMS a new connection advertises.
    public let initialMaxConcurrentStreams: UInt32

    /// - Parameter clock: Unix time in seconds; injected so tests control token ages and expiry.
    public init(configuration: EmulatorConfiguration,
                clock: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }) throws(EmulatorConfigurationError) {
        for rule in configuration.tokenRules where rule.prefix == nil && rule.suffix == nil {
            throw EmulatorConfigurationError("token rule \(rule.provider.rawValue) -> \(rule.outcome) needs a prefix or a suffix")
        }
        let rates = [configuration.faults.throttle, configuration.faults.internalError, configuration.faults.unavailable,
                     configuration.faults.stall, configuration.faults.resetStream, configuration.faults.dropConnection]
        for rate in rates.compactMap({ $0 }) {
            if let n = rate.everyNth, n <= 0 { throw EmulatorConfigurationError("fault everyNth must be at least 1, got \(n)") }
            if let f = rate.fraction, !(0...1).contains(f) { throw EmulatorConfigurationError("fault fraction must be within 0...1, got \(f)") }
        }
        self.configuration = configuration
        self.clock = clock
        let retryAfter = max(0, configuration.faults.retryAfterSeconds)
        apns = try APNsEmulator(configuration: configuration.apns, rules: configuration.tokenRules)
        fcm = try FCMEmulator(configuration: configuration.fcm, rules: configuration.tokenRules, retryAfterSeconds: retryAfter)
        adm = try ADMEmulator(configuration: configuration.adm, rules: configuration.tokenRules, retryAfterSeconds: retryAfter)
        hms = try HMSEmulator(configuration: configuration.hms, rules: configuration.tokenRules, retryAfterSeconds: retryAfter)
        recorder = try EmulatorRecorder(recordPath: configuration.recordPath, recordInMemory: configuration.recordInMemory,
                                        recordLimit: configuration.recordLimit)
        faults = configuration.faults
        faultsEnabled = !configuration.faults.isEmpty
        initialMaxConcurrentStreams = configuration.apns.keys.isEmpty && configuration.apns.certificates.isEmpty
            ? max(configuration.fcm.maxConcurrentStreams, configuration.adm.maxConcurrentStreams)
            : configuration.apns.maxConcurrentStreamsBeforeToken
    }

    /// State for a new connection; the transport keeps it in the connection's slot.
    /// - Parameter peerCertificate: the TLS client certificate the connection presented, if any.
    public func makeConnectionState(id: UInt64, peerCertificate: TLSPeerCertificate? = nil) -> EmulatorConnectionState {
        EmulatorConnectionState(id: id, advertisedMaxConcurrentStreams: initialMaxConcurrentStreams, peerCertificate: peerCertificate)
    }

    /// How the TLS server asks for client certificates: nil when APNs certificate auth is not configured.
    public var clientCertificateRequest: TLSClientCertificateRequest? {
        apns.acceptsCertificates ? TLSClientCertificateRequest(trustedCAPEM: apns.trustedClientCAPEM, requireVerified: false) : nil
    }

    // MARK: - Handling

    public func handle(_ request: EmulatorRequest, connection: EmulatorConnectionState) -> EmulatorDecision {
        connection.streamCount += 1
        let path = request.path
        let endpoint: Endpoint
        if path.hasASCIIPrefix(APNsEmulator.pathPrefix) {  // the hot path first
            endpoint = .apnsSend
        } else if path.hasASCIIPrefix("/_emulator/") {
            return control(request)
        } else if let id = WebPushEmulator.subscriptionID(ofPushPath: path) {
            endpoint = .webPushSend(id: id)
        } else if let project = FCMEmulator.project(ofSendPath: path) {
            endpoint = .fcmSend(project: project)
        } else if let app = HMSEmulator.appID(ofSendPath: path) {
            endpoint = .hmsSend(appID: app)
        } else if path == HMSEmulator.tokenPath {
            endpoint = .hmsToken
        } else if path == "/token" {
            endpoint = .fcmToken
        } else if let id = ADMEmulator.registrationID(ofSendPath: path) {
            endpoint = .admSend(registrationID: id)
        } else if ADMEmulator.isTokenPath(path) {
            endpoint = .admToken
        } else if path.hasPrefix("/3/") {
            endpoint = .apnsSend  // APNs answers its own bad paths with 404 BadPath (A.6)
        } else {
            endpoint = .unknown
        }
        let now = clock()

        // Connection and stream faults, before any validation.
        var fault: InjectedFault?
        var sequence: UInt64 = 0
        let faultable = faultsEnabled && endpoint.provider.map(faults.applies(to:)) == true
        if faultable {
            sequence = sendSequence.wrappingAdd(1, ordering: .relaxed).newValue
            if connection.goingAway {
                fault = .goAway
            } else if let limit = faults.goAwayAfterStreams, connection.streamCount > limit {
                fault = .goAway
            } else if faults.dropConnection?.fires(sequence: sequence, seed: faults.seed, salt: 1) == true {
                fault = .dropConnection
            } else if faults.stall?.fires(sequence: sequence, seed: faults.seed, salt: 2) == true {
                fault = .stall
            } else if faults.resetStream?.fires(sequence: sequence, seed: faults.seed, salt: 3) == true {
                fault = .resetStream
            }
            if let fault {
                return connectionFault(fault, endpoint: endpoint, request: request, connection: connection, now: now)
            }
        }

        var answer: ProviderAnswer
        var webPushPlaintext: [UInt8]?
        var hmsTokens: (all: [String], illegal: Set<String>)?
        switch endpoint {
        case .hmsToken:
            answer = hms.handleToken(request, now: now)
            answer.maxConcurrentStreams = raiseLimit(connection, to: configuration.hms.maxConcurrentStreams)
        case .hmsSend(let app):
            let sent = hms.handleSend(request, appID: app, now: now, ids: ids)
            answer = sent.answer
            hmsTokens = (sent.tokens, sent.illegal)
            answer.maxConcurrentStreams = raiseLimit(connection, to: configuration.hms.maxConcurrentStreams)
        case .webPushSend(let id):
            let outcome = webPush.handlePush(request, id: id, now: now)
            answer = outcome.answer
            webPushPlaintext = outcome.plaintext
        case .apnsSend:
            answer = apns.handle(request, connection: connection, now: now, ids: ids)
            if configuration.apns.lowerLimitAfterRejection,
               connection.apnsAcceptedAuthorization != nil || connection.apnsCertificateAuthenticated {
                // A.7 (observed): 1 after a rejected notification, back up after the next accepted one.
                let wanted: UInt32 = answer.isAccepted ? configuration.apns.maxConcurrentStreamsAfterToken : 1
                if wanted != connection.advertisedMaxConcurrentStreams { answer.maxConcurrentStreams = wanted }
            }
        case .fcmToken:
            answer = fcm.handleToken(request, now: now)
            answer.maxConcurrentStreams = raiseLimit(connection, to: configuration.fcm.maxConcurrentStreams)
        case .fcmSend(let project):
            answer = fcm.handleSend(request, project: project, connection: connection, now: now, ids: ids)
            answer.maxConcurrentStreams = raiseLimit(connection, to: configuration.fcm.maxConcurrentStreams)
        case .admToken:
            answer = adm.handleToken(request, now: now)
            answer.maxConcurrentStreams = raiseLimit(connection, to: configuration.adm.maxConcurrentStreams)
        case .admSend(let registrationID):
            answer = adm.handleSend(request, registrationID: registrationID, connection: connection, now: now, ids: ids)
            answer.maxConcurrentStreams = raiseLimit(connection, to: configuration.adm.maxConcurrentStreams)
        case .unknown:
            answer = ProviderAnswer(response: EmulatorResponse(status: 404, headers: [("content-type", "text/plain")],
                                                               body: Array("no emulated endpoint at this path\n".utf8)),
                                    reason: "NotFound")
        }

        // Status faults replace answers that would have been accepted.
        if faultable, answer.isAccepted, let provider = endpoint.provider {
            if faults.internalError?.fires(sequence: sequence, seed: faults.seed, salt: 4) == true {
                fault = .internalError
            } else if faults.unavailable?.fires(sequence: sequence, seed: faults.seed, salt: 5) == true {
                fault = .unavailable
            } else if faults.throttle?.fires(sequence: sequence, seed: faults.seed, salt: 6) == true {
                fault = .throttle
            }
            if let fault {
                let (response, reason) = faultResponse(fault, provider: provider, accepted: answer)
                answer.response = response
                answer.reason = reason
            }
        }

        if let limit = answer.maxConcurrentStreams { connection.advertisedMaxConcurrentStreams = limit }
        var delayMilliseconds = 0
        if faultable {
            delayMilliseconds = max(0, faults.latencyMilliseconds ?? 0)
            if faults.stallWindow != nil, let held = stallWindowHold(sequence: sequence, now: now) {
                delayMilliseconds = max(delayMilliseconds, held)
            }
        }
        let outcome = RequestOutcome(endpointIndex: endpoint.index, token: answer.token, status: answer.response.status,
                                     reason: answer.reason, fault: fault)
        account(outcome, request: request, connection: connection, now: now, heldMilliseconds: delayMilliseconds,
                webPushPlaintext: webPushPlaintext, hmsTokens: hmsTokens)

        let action: EmulatorAction
        if delayMilliseconds > 0 {
            action = .respondAfter(.milliseconds(delayMilliseconds), answer.response)
        } else {
            action = .respond(answer.response)
        }
        return EmulatorDecision(action: action, maxConcurrentStreams: answer.maxConcurrentStreams)
    }

    // MARK: - Inspection (in-process API for tests)

    public func stats() -> EmulatorStats {
        var stats = recorder.stats()
        stats.heldByStallWindow = stallWindowHeld.load(ordering: .relaxed)
        return stats
    }

    /// In-memory records (empty unless `recordInMemory`).
    public func records() -> [EmulatorRecord] { recorder.records() }

    /// Clears counters, in-memory records and the fault sequence (so `everyNth` counts from 1 again).
    public func reset() {
        recorder.reset()
        sendSequence.store(0, ordering: .relaxed)
        stallWindowOpenedAt.withLock { $0 = nil }
        stallWindowHeld.store(0, ordering: .relaxed)
    }

    /// Writes buffered record lines to the record file.
    public func flushRecords() { recorder.flush() }

    // MARK: - Internals

    enum Endpoint {
        case apnsSend
        case fcmToken
        case fcmSend(project: String)
        case admToken
        case admSend(registrationID: String)
        case webPushSend(id: String)
        case hmsToken
        case hmsSend(appID: String)
        case unknown

        /// Index into `EmulatorRecorder.endpointNames`.
        var index: Int {
            switch self {
            case .apnsSend: 0
            case .fcmSend: 1
            case .fcmToken: 2
            case .admSend: 3
            case .admToken: 4
            case .unknown: 5
            case .webPushSend: 6
            case .hmsSend: 7
            case .hmsToken: 8
            }
        }

        /// The provider whose send endpoint this is (faults apply to sends only).
        var provider: EmulatorProvider? {
            switch self {
            case .apnsSend: .apns
            case .fcmSend: .fcm
            case .admSend: .adm
            case .hmsSend: .hms
            default: nil
            }
        }
    }

    private func raiseLimit(_ connection: EmulatorConnectionState, to limit: UInt32) -> UInt32? {
        connection.advertisedMaxConcurrentStreams < limit ? limit : nil
    }

    /// Milliseconds to hold the answer to send request `sequence` arriving at `now`, if the stall window is open
    /// (it opens at the arrival of request `atRequest`); nil outside it.
    private func stallWindowHold(sequence: UInt64, now: Double) -> Int? {
        guard let window = faults.stallWindow else { return nil }
        let openedAt = stallWindowOpenedAt.withLock { openedAt -> Double? in
            if openedAt == nil, sequence >= UInt64(window.atRequest) { openedAt = now }
            return openedAt
        }
        guard let openedAt else { return nil }
        let remaining = Int(((openedAt + Double(window.milliseconds) / 1000 - now) * 1000).rounded(.up))
        guard remaining > 0 else { return nil }
        stallWindowHeld.add(1, ordering: .relaxed)
        return remaining
    }

    private func connectionFault(_ fault: InjectedFault, endpoint: Endpoint, request: EmulatorRequest,
                                 connection: EmulatorConnectionState, now: Double) -> EmulatorDecision {
        let action: EmulatorAction
        switch fault {
        case .goAway:
            connection.goingAway = true
            let debug = endpoint.provider == .apns ? JSONValue.object(["reason": .string(faults.goAwayReason)]).encodedSortingKeys() : []
            action = .goAway(errorCode: 0, debugData: debug)
        case .dropConnection:
            action = .dropConnection
        case .stall:
            action = .stall
        default:
            action = .resetStream(errorCode: 7)
        }
        let outcome = RequestOutcome(endpointIndex: endpoint.index, token: nil, status: nil, reason: nil, fault: fault)
        account(outcome, request: request, connection: connection, now: now)
        return EmulatorDecision(action: action)
    }

    private func faultResponse(_ fault: InjectedFault, provider: EmulatorProvider, accepted: ProviderAnswer) -> (EmulatorResponse, String) {
        switch provider {
        case .apns: apns.faultResponse(fault, accepted: accepted)
        case .fcm: fcm.faultResponse(fault, accepted: accepted)
        case .adm: adm.faultResponse(fault, accepted: accepted, ids: ids)
        case .hms: hms.faultResponse(fault, accepted: accepted, ids: ids)
        }
    }

    private func account(_ outcome: RequestOutcome, request: EmulatorRequest, connection: EmulatorConnectionState, now: Double,
                         heldMilliseconds: Int = 0, webPushPlaintext: [UInt8]? = nil,
                         hmsTokens: (all: [String], illegal: Set<String>)? = nil) {
        recorder.count(outcome)
        guard recorder.isRecording else { return }
        var headers: [String: String] = [:]
        for (name, value) in request.headers {
            headers[name] = name == "authorization" ? "<redacted>" : value
        }
        var payload = String(decoding: request.body, as: UTF8.self)
        if outcome.endpoint == "adm-oauth" || outcome.endpoint == "fcm-oauth" || outcome.endpoint == "hms-oauth" {
            payload = Self.redactForm(request.body)
        }
        var record = EmulatorRecord(time: now, endpoint: outcome.endpoint, connection: connection.id, method: request.method,
                                    path: request.path, token: outcome.token.map(String.init), status: outcome.status ?? 0, reason: outcome.reason,
                                    fault: outcome.fault?.rawValue, heldSeconds: heldMilliseconds > 0 ? Double(heldMilliseconds) / 1000 : nil,
                                    headers: headers, payload: payload)
        if outcome.endpoint == "webpush" {
            record.payload = webPushPlaintext.map { String(decoding: $0, as: UTF8.self) } ?? ""
            record.body = Base64URL.encode(request.body)
            record.vapidToken = request.header("authorization").flatMap(VAPIDSigner.parseAuthorization)?.token
        }
        if let hmsTokens, !hmsTokens.all.isEmpty {
            // One record per token of a Push Kit request (E.1: up to 1000 share one body), each with the request's
            // status, and `IllegalToken` for those a partial success refused.
            for token in hmsTokens.all {
                var each = record
                each.token = token
                if hmsTokens.illegal.contains(token) { each.reason = "IllegalToken" }
                recorder.record(each)
            }
            return
        }
        recorder.record(record)
    }

    /// A token request's form with its secrets (`client_secret`, `assertion`) replaced.
    static func redactForm(_ body: [UInt8]) -> String {
        guard let (fields, _) = FormBody.parse(body) else { return "<unparseable form>" }
        return fields.keys.sorted().map { key in
            let value = (key == "client_secret" || key == "assertion") ? "<redacted>" : fields[key]!
            return "\(key)=\(FormBody.encode(value))"
        }.joined(separator: "&")
    }

    // MARK: - /_emulator

    /// The value of `name` in a control path's query (`?a=1&b=2`); control paths carry plain values, not escapes.
    static func queryValue(_ name: String, in path: String) -> String? {
        guard let query = path.split(separator: "?", maxSplits: 1).dropFirst().first else { return nil }
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            if parts.count == 2, parts[0] == name { return String(parts[1]) }
        }
        return nil
    }

    private func control(_ request: EmulatorRequest) -> EmulatorDecision {
        let path = request.path.split(separator: "?", maxSplits: 1).first.map(String.init) ?? request.path
        let json = [("content-type", "application/json")]
        switch (request.method, path) {
        case ("GET", "/_emulator/stats"):
            return EmulatorDecision(action: .respond(EmulatorResponse(status: 200, headers: json, body: EmulatorRecorder.statsJSON(stats()))))
        case ("POST", "/_emulator/reset"), ("DELETE", "/_emulator/stats"):
            reset()
            return EmulatorDecision(action: .respond(EmulatorResponse(status: 204)))
        case ("GET", "/_emulator/records"):
            recorder.flush()
            var body: [UInt8] = []
            for record in records() { body.append(contentsOf: EmulatorRecorder.jsonLine(record)) }
            return EmulatorDecision(action: .respond(EmulatorResponse(status: 200, headers: [("content-type", "application/x-ndjson")], body: body)))
        case ("POST", WebPushEmulator.subscriptionsPath):
            if let count = Self.queryValue("count", in: request.path) {
                guard let n = Int(count), (1...WebPushEmulator.bulkLimit).contains(n) else {
                    return EmulatorDecision(action: .respond(EmulatorResponse(status: 400, headers: [("content-type", "text/plain")],
                                                                              body: Array("count must be 1 to \(WebPushEmulator.bulkLimit)\n".utf8))))
                }
                return EmulatorDecision(action: .respond(EmulatorResponse(status: 201, headers: [("content-type", "application/x-ndjson")],
                                                                          body: webPush.subscribe(authority: request.authority, count: n))))
            }
            return EmulatorDecision(action: .respond(EmulatorResponse(status: 201, headers: json, body: webPush.subscribe(authority: request.authority, body: request.body))))
        case ("DELETE", _) where path.hasPrefix(WebPushEmulator.subscriptionsPath + "/"):
            let id = String(path.dropFirst(WebPushEmulator.subscriptionsPath.count + 1))
            return EmulatorDecision(action: .respond(EmulatorResponse(status: webPush.unsubscribe(id: id) ? 204 : 404)))
        case ("GET", "/_emulator/health"):
            return EmulatorDecision(action: .respond(EmulatorResponse(status: 200, headers: [("content-type", "text/plain")], body: Array("ok\n".utf8))))
        default:
            return EmulatorDecision(action: .respond(EmulatorResponse(status: 404, headers: [("content-type", "text/plain")],
                                                                      body: Array("unknown emulator control path\n".utf8))))
        }
    }
}
