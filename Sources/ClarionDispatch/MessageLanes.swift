import ClarionCore
import ClarionStore
import Foundation

/// A message parsed once per worker: its SNS message map and reserved attributes, or why it cannot be sent.
struct MessageContent: Sendable {
    let job: MessageJob
    let parsed: Result<(SNSMessage, MobilePushAttributes), MessageValidationError>

    init(_ job: MessageJob) {
        self.job = job
        do throws(MessageValidationError) {
            let structure = try MessageStructure.parse(job.structure)
            let message = try SNSMessage.parse(message: job.message, structure: structure, requireDefault: false)
            let attributes = try MobilePushAttributes.parse(Self.attributes(json: job.attributesJSON))
            parsed = .success((message, attributes))
        } catch {
            parsed = .failure(error)
        }
    }

    /// Reads `messages.attributes`: SNS's `{"Name": {"DataType": "String", "StringValue": "..."}}` form (also
    /// `Type`/`Value` as in SNS's HTTP notifications), or plain `{"Name": "value"}`.
    static func attributes(json: String) -> [String: MessageAttributeValue] {
        guard let object = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any] else { return [:] }
        var out: [String: MessageAttributeValue] = [:]
        for (name, value) in object {
            if let text = value as? String {
                out[name] = .string(text)
            } else if let number = value as? NSNumber {
                out[name] = .number(number.stringValue)
            } else if let map = value as? [String: Any] {
                let type = (map["DataType"] ?? map["Type"]) as? String ?? "String"
                let raw = map["StringValue"] ?? map["Value"]
                let text = (raw as? String) ?? (raw as? NSNumber)?.stringValue
                out[name] = MessageAttributeValue(dataType: type, stringValue: text)
            }
        }
        return out
    }
}

/// How one platform application's deliveries of a message go: rendered once, through one transport, or not
/// sent at all with a fixed outcome.
struct ApplicationLane: @unchecked Sendable {
    let application: DispatchApplication
    /// Set when the push can be sent.
    let transport: (any PushTransport)?
    let push: RenderedPush?
    /// The outcome of every delivery when nothing is sent (expired, invalid, application disabled).
    var unsent: DeliveryOutcome?
    let expiresAt: Date?
    let successSampleRate: Int
    /// `ClarionSendRate`: deliveries per second this process may send to the application; nil is unlimited.
    /// Read once when the lane is made (the shard worker consults it on every submit).
    let sendRate: Double?
    /// The application's delivery counters (nil when metrics are off).
    var counters: ApplicationDeliveryCounters?
    /// What the transport asks to be handed at once for this push (`PushTransport.preferredSubmitSize`); nil: the
    /// dispatcher's `submitBatchSize`.
    var preferredSubmitSize: Int?

    static let sendRateAttribute = "ClarionSendRate"

    init(application: DispatchApplication, transport: (any PushTransport)?, push: RenderedPush?, unsent: DeliveryOutcome?,
         expiresAt: Date?, successSampleRate: Int) {
        self.application = application
        self.transport = transport
        self.push = push
        self.unsent = unsent
        self.expiresAt = expiresAt
        self.successSampleRate = successSampleRate
        sendRate = SendRateLimiter.rate(attribute: application.attributes[Self.sendRateAttribute])
        counters = nil
    }

    /// The outcome sends get once the application is disabled.
    static let applicationDisabled = DeliveryOutcome.rejected(reason: "PlatformApplicationDisabled")

    static func make(
        _ application: DispatchApplication, content: MessageContent, directory: any PushTransportDirectory,
        disabledInProcess: Bool, now: Date, metrics: DeliveryMetrics?
    ) async -> ApplicationLane {
        var lane = await makeUncounted(application, content: content, directory: directory, disabledInProcess: disabledInProcess,
                                       now: now)
        lane.counters = metrics?.counters(platform: application.platform, application: application.name)
        return lane
    }

    private static func makeUncounted(
        _ application: DispatchApplication, content: MessageContent, directory: any PushTransportDirectory,
        disabledInProcess: Bool, now: Date
    ) async -> ApplicationLane {
        let rate = Int(application.attributes["SuccessFeedbackSampleRate"] ?? "") ?? 0
        let messageExpiry = content.job.expiresAt
        func unsent(_ outcome: DeliveryOutcome) -> ApplicationLane {
            ApplicationLane(application: application, transport: nil, push: nil, unsent: outcome, expiresAt: messageExpiry,
                            successSampleRate: rate)
        }
        if !application.enabled || disabledInProcess { return unsent(applicationDisabled) }
        if let expiry = messageExpiry, expiry <= now { return unsent(.expired) }
        guard let platform = Platform(rawValue: application.platform) else {
            return unsent(.rejected(reason: "UnknownPlatform"))
        }
        let message: SNSMessage
        let attributes: MobilePushAttributes
        switch content.parsed {
        case .success(let parsed): (message, attributes) = parsed
        case .failure(let error): return unsent(.messageInvalid(reason: error.message))
        }
        switch await directory.resolve(application) {
        case .unavailable(let outcome):
            return unsent(outcome)
        case .ready(let transport, let settings):
            let rendered = PushRenderer.render(
                message, attributes: attributes, platform: platform, settings: settings,
                publishedAt: content.job.publishedAt, now: now)
            switch rendered {
            case .push(let push):
                let expiry = [push.expiresAt, messageExpiry].compactMap { $0 }.min()
                var lane = ApplicationLane(application: application, transport: transport, push: push, unsent: nil,
                                           expiresAt: expiry, successSampleRate: rate)
                lane.preferredSubmitSize = transport.preferredSubmitSize(for: push)
                return lane
            case .expired, .invalid:
                return unsent(rendered.outcome ?? .expired)
            }
        }
    }
}
