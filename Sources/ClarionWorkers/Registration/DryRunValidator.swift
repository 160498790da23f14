import ClarionCore
import ClarionDispatch
import ClarionStore
import Foundation
import Synchronization

/// Checks that a device token works before it is stored, without showing anything on the device: FCM with
/// `validate_only`, APNs with a background push that carries only `content-available`.
public protocol DryRunValidator: Sendable {
    func validate(applicationKey: Int64, token: String) async -> DeliveryOutcome
}

/// A `DryRunValidator` over the dispatcher's transports (`ProviderRegistryDirectory` in the app: the same pools
/// and credentials as the fan-out).
public struct TransportDryRunValidator: DryRunValidator {
    public let directory: any PushTransportDirectory
    public let jobs: FanOutJobs
    public let timeoutSeconds: Double
    public let clock: @Sendable () -> Date

    public init(directory: any PushTransportDirectory, jobs: FanOutJobs, timeoutSeconds: Double = 10,
                clock: @escaping @Sendable () -> Date = { Date() }) {
        self.directory = directory
        self.jobs = jobs
        self.timeoutSeconds = timeoutSeconds
        self.clock = clock
    }

    /// The message map of a dry run: FCM's v1 form with `validate_only`, APNs' silent background push.
    static let dryRunMessage = #"{"GCM":"{\"fcmV1Message\":{\"validate_only\":true,\"message\":{\"data\":{\"clarion\":\"dry-run\"}}}}","APNS":"{\"aps\":{\"content-available\":1}}","APNS_SANDBOX":"{\"aps\":{\"content-available\":1}}"}"#

    public func validate(applicationKey: Int64, token: String) async -> DeliveryOutcome {
        let application: DispatchApplication
        do {
            guard let found = try await jobs.applications([applicationKey]).first else {
                return .rejected(reason: "ApplicationNotFound")
            }
            application = found
        } catch {
            return .retryable(reason: "StoreUnavailable", retryAfter: nil)
        }
        guard application.enabled else { return .rejected(reason: "ApplicationDisabled") }
        guard let platform = Platform(rawValue: application.platform) else { return .rejected(reason: "UnknownPlatform") }
        switch await directory.resolve(application) {
        case .unavailable(let outcome):
            return outcome
        case .ready(let transport, let settings):
            let now = clock()
            let push: RenderedPush
            do throws(MessageValidationError) {
                let message = try SNSMessage.parse(message: Self.dryRunMessage, structure: .json, requireDefault: false)
                let attributes = try MobilePushAttributes.parse([:])
                switch PushRenderer.render(message, attributes: attributes, platform: platform, settings: settings,
                                           publishedAt: now, now: now) {
                case .push(let rendered): push = rendered
                case .expired: return .expired
                case .invalid(let reason): return .messageInvalid(reason: reason)
                }
            } catch {
                return .messageInvalid(reason: error.message)
            }
            let sink = OneOutcomeSink()
            return await sink.wait(timeoutSeconds: timeoutSeconds) {
                let admitted = transport.submit(push, deliveries: [PushDelivery(token: token, tag: 1)], sink: sink)
                if admitted == 0 { sink.receive([PushResult(tag: 1, outcome: .retryable(reason: "Busy", retryAfter: nil))]) }
            }
        }
    }
}

/// Waits for the outcome of one delivery, or a timeout, whichever comes first.
final class OneOutcomeSink: PushResultSink {
    private enum State {
        case idle
        case waiting(CheckedContinuation<DeliveryOutcome, Never>)
        case done(DeliveryOutcome)
        case finished
    }

    private let state = Mutex<State>(.idle)

    func receive(_ results: [PushResult]) {
        guard let outcome = results.first?.outcome else { return }
        complete(outcome)
    }

    private func complete(_ outcome: DeliveryOutcome) {
        let continuation = state.withLock { state -> CheckedContinuation<DeliveryOutcome, Never>? in
            switch state {
            case .idle:
                state = .done(outcome)
                return nil
            case .waiting(let continuation):
                state = .finished
                return continuation
            case .done, .finished:
                return nil
            }
        }
        continuation?.resume(returning: outcome)
    }

    func wait(timeoutSeconds: Double, start: () -> Void) async -> DeliveryOutcome {
        start()
        let timer = Task { [weak self] in
            try? await Task.sleep(for: .milliseconds(Int(timeoutSeconds * 1000)))
            self?.complete(.retryable(reason: "DryRunTimeout", retryAfter: nil))
        }
        defer { timer.cancel() }
        return await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> DeliveryOutcome? in
                if case .done(let outcome) = state {
                    state = .finished
                    return outcome
                }
                state = .waiting(continuation)
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}
