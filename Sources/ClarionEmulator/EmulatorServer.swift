import ClarionHTTP2
import ClarionTransport
import Foundation

/// A running emulator: the HTTP/2 server (h2c or TLS) around a `ProviderEmulator`.
///
/// One owner: whoever called `runEmulator` shuts it down (`shutdown()` from async code, or
/// `shutdownAndWait()` from a plain thread such as the CLI's main thread). The in-process API reads the
/// counters and records directly, without HTTP.
public final class EmulatorHandle: Sendable {
    public let emulator: ProviderEmulator
    public let host: String
    /// The bound port (the ephemeral one when the configuration asked for 0).
    public let port: Int
    /// The certificate served over TLS (PEM), for clients to trust; nil for h2c.
    public let certificatePEM: String?
    private let server: HTTP2Server
    private let group: EventLoopGroup
    private let ownsGroup: Bool

    init(emulator: ProviderEmulator, server: HTTP2Server, group: EventLoopGroup, ownsGroup: Bool, host: String, port: Int, certificatePEM: String?) {
        self.emulator = emulator
        self.server = server
        self.group = group
        self.ownsGroup = ownsGroup
        self.host = host
        self.port = port
        self.certificatePEM = certificatePEM
    }

    public var usesTLS: Bool { certificatePEM != nil }

    /// `https://host:port` or `http://host:port` (IPv6 hosts bracketed).
    public var baseURL: String {
        let shownHost = host.contains(":") ? "[\(host)]" : host
        return "\(usesTLS ? "https" : "http")://\(shownHost):\(port)"
    }

    /// The FCM token URI to put in a service-account JSON for this emulator.
    public var fcmTokenURI: String { baseURL + "/token" }

    public func stats() -> EmulatorStats { emulator.stats() }
    public func records() -> [EmulatorRecord] { emulator.records() }
    public func reset() { emulator.reset() }

    /// Connections currently open.
    public var connectionCount: Int { server.connectionCount }

    /// Stops accepting, sends GOAWAY to every connection, waits for them to close, flushes the record
    /// file and stops the event loops the handle owns.
    public func shutdown() async {
        await server.shutdown()
        emulator.flushRecords()
        if ownsGroup {
            // Joining loop threads blocks: keep it off the cooperative pool.
            let group = self.group
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                Thread.detachNewThread {
                    group.shutdown()
                    done.resume()
                }
            }
        }
    }

    /// `shutdown()` for synchronous callers (not on an event-loop thread, not on the cooperative pool).
    public func shutdownAndWait() {
        let done = DispatchSemaphore(value: 0)
        Task.detached { [self] in
            await self.shutdown()
            done.signal()
        }
        done.wait()
    }
}

/// Starts the emulator described by `configuration` and returns once it listens.
///
/// TLS: with `tls.enabled`, the certificate and key come from `tls.certificatePath`/`privateKeyPath`,
/// or a self-signed certificate is generated (and written to `tls.writeCertificateTo` when set) so
/// clients can trust it. With `apns.certificates` set, the TLS server also asks clients for a certificate
/// (APNs certificate-based auth); it never refuses a handshake for it: the APNs logic answers `403` instead.
/// Over h2c no certificate can be checked, so only provider tokens authenticate.
///
/// - Parameters:
///   - group: event loops to serve on; nil starts `configuration.eventLoops` threads owned by the handle.
///   - clock: Unix time in seconds (tests inject one).
public func runEmulator(configuration: EmulatorConfiguration, group: EventLoopGroup? = nil,
                        clock: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }) throws -> EmulatorHandle {
    let emulator = try ProviderEmulator(configuration: configuration, clock: clock)
    let identity = try tlsIdentity(configuration.tls)
    let serverConfiguration = HTTP2ServerConfiguration(
        host: configuration.host, port: configuration.port, tls: identity,
        clientCertificates: emulator.clientCertificateRequest, maxConcurrentStreams: emulator.initialMaxConcurrentStreams)
    let ownsGroup = group == nil
    let loops = try group ?? EventLoopGroup(threadCount: max(1, configuration.eventLoops))
    let server: HTTP2Server
    do {
        server = try HTTP2Server(configuration: serverConfiguration, group: loops, handler: makeHandler(emulator))
        try server.start()
    } catch {
        if ownsGroup { loops.shutdown() }
        throw error
    }
    return EmulatorHandle(emulator: emulator, server: server, group: loops, ownsGroup: ownsGroup, host: configuration.host,
                          port: server.port, certificatePEM: identity?.certificateChainPEM)
}

/// Adapts `ProviderEmulator.handle` to the HTTP/2 server's handler: per-connection state in the
/// connection's slot, SETTINGS changes, actions mapped one to one.
func makeHandler(_ emulator: ProviderEmulator) -> HTTP2ServerHandler {
    { request, context in
        let state: EmulatorConnectionState
        if let existing = context.connectionState as? EmulatorConnectionState {
            state = existing
        } else {
            state = emulator.makeConnectionState(id: context.connectionID, peerCertificate: context.peerCertificate)
            context.connectionState = state
        }
        let decision = emulator.handle(request, connection: state)
        if let limit = decision.maxConcurrentStreams, limit != context.maxConcurrentStreams {
            context.setMaxConcurrentStreams(limit)
        }
        switch decision.action {
        case .respond(let response):
            return .respond(response)
        case .respondAfter(let delay, let response):
            return .respondAfter(delay, response)
        case .stall:
            return .stall
        case .goAway(let errorCode, let debugData):
            return debugData.isEmpty && errorCode == 0 ? .goAway : .goAwayWith(errorCode: errorCode, debugData: debugData)
        case .resetStream(let errorCode):
            return .reset(errorCode: errorCode)
        case .dropConnection:
            return .dropConnection
        }
    }
}

/// The TLS identity for `tls`, or nil for h2c.
func tlsIdentity(_ tls: EmulatorConfiguration.TLS) throws -> TLSIdentity? {
    guard tls.enabled else { return nil }
    if tls.certificatePath != nil || tls.privateKeyPath != nil {
        guard let certificatePath = tls.certificatePath, let keyPath = tls.privateKeyPath else {
            throw EmulatorConfigurationError("TLS needs both certificatePath and privateKeyPath (or neither, to generate one)")
        }
        guard let certificate = try? String(contentsOfFile: certificatePath, encoding: .utf8),
              let key = try? String(contentsOfFile: keyPath, encoding: .utf8)
        else {
            throw EmulatorConfigurationError("cannot read the TLS certificate \(certificatePath) or key \(keyPath)")
        }
        return TLSIdentity(certificateChainPEM: certificate, privateKeyPEM: key)
    }
    let ipAddresses = tls.subjectAlternativeNames.filter(isIPAddress)
    let dnsNames = tls.subjectAlternativeNames.filter { !isIPAddress($0) }
    let generated = try SelfSignedCertificate.generate(commonName: dnsNames.first ?? "localhost", dnsNames: dnsNames, ipAddresses: ipAddresses)
    if let path = tls.writeCertificateTo {
        guard FileManager.default.createFile(atPath: path, contents: Data(generated.certificatePEM.utf8)) else {
            throw EmulatorConfigurationError("cannot write the generated certificate to \(path)")
        }
    }
    return generated.identity
}

private func isIPAddress(_ text: String) -> Bool {
    var v4 = in_addr()
    var v6 = in6_addr()
    return inet_pton(AF_INET, text, &v4) == 1 || inet_pton(AF_INET6, text, &v6) == 1
}
