import ClarionCore
import Foundation

// Records of the fan-out job queue (docs/architecture.md, "The life of a publish"). Plain Sendable values: rows are mapped to
// them on the connection's thread, so nothing of libpq leaves the pool.
//
// Shard encoding (shared with the publish path):
// - a topic message (`target_kind = 'topic'`, `target_id` = topic key) is cut by `FanOutJobs.planPending` into
//   shards whose keys are subscription ids, range (lo, hi];
// - a direct publish (`target_kind = 'endpoint'`, `target_id` = endpoint key) is one shard whose key is the
//   endpoint id: lo = endpoint - 1, hi = endpoint, checkpoint = lo. Since schema v10 the publish path stores it
//   with `planned = false` and no shard; `FanOutJobs.claim` (one shard worker per message) or `claimDirect` (a
//   batch of them for one `DirectBatchWorker`) inserts the shard already leased and sets `planned`.
//   Messages stored before v10 have `planned = true` and a ready shard, claimed like any other shard.

/// Per-shard delivery counters, added at each checkpoint.
///
/// Invariant once a message is finished: `targeted == filtered + heldOut + skipped + accepted + failed + expired`;
/// `sent` counts provider hand-offs (retries included), `retried` the retries scheduled, `filtered` the subscribers
/// whose filter policy did not match the message (not sent, not a failure), `heldOut` the endpoints of a campaign
/// variant's holdout (schema v21: counted, not sent, so the uplift of the sent ones can be measured).
/// Schema v22: `capped` (over the app's frequency cap, not sent) and `quietSkipped` (in quiet hours, dropped) are
/// final and in the invariant's right side; `deferred` (in quiet hours, handed to the retry queue due at their end)
/// is informational like `retried`: the delivery's outcome is counted when it is sent.
public struct DeliveryCounters: Sendable, Hashable {
    public var targeted: Int64 = 0
    public var sent: Int64 = 0
    public var accepted: Int64 = 0
    public var failed: Int64 = 0
    public var retried: Int64 = 0
    public var skipped: Int64 = 0
    public var expired: Int64 = 0
    public var filtered: Int64 = 0
    public var heldOut: Int64 = 0
    public var capped: Int64 = 0
    public var deferred: Int64 = 0
    public var quietSkipped: Int64 = 0

    public init(targeted: Int64 = 0, sent: Int64 = 0, accepted: Int64 = 0, failed: Int64 = 0, retried: Int64 = 0,
                skipped: Int64 = 0, expired: Int64 = 0, filtered: Int64 = 0, heldOut: Int64 = 0,
                capped: Int64 = 0, deferred: Int64 = 0, quietSkipped: Int64 = 0) {
        self.heldOut = heldOut
        self.capped = capped
        self.deferred = deferred
        self.quietSkipped = quietSkipped
        self.targeted = targeted
        self.sent = sent
        self.accepted = accepted
        self.failed = failed
        self.retried = retried
        self.skipped = skipped
        self.expired = expired
        self.filtered = filtered
    }

    public var isZero: Bool { self == DeliveryCounters() }

    /// Deliveries with a final outcome (or not attempted at all).
    public var finished: Int64 { accepted + failed + skipped + expired + filtered + heldOut + capped + quietSkipped }

    public static func += (lhs: inout DeliveryCounters, rhs: DeliveryCounters) {
        lhs.targeted += rhs.targeted
        lhs.sent += rhs.sent
        lhs.accepted += rhs.accepted
        lhs.failed += rhs.failed
        lhs.retried += rhs.retried
        lhs.skipped += rhs.skipped
        lhs.expired += rhs.expired
        lhs.filtered += rhs.filtered
        lhs.heldOut += rhs.heldOut
        lhs.capped += rhs.capped
        lhs.deferred += rhs.deferred
        lhs.quietSkipped += rhs.quietSkipped
    }
}

/// A message's lifecycle state (`messages.state`).
///
/// Transitions: Enqueued -> Processing (first shard claimed) -> Completed | Failed | Expired (last shard and last
/// retry done). A message with nothing to deliver goes Enqueued -> Completed at planning.
/// Scheduled (schema v16, `send_at` in the future) -> Enqueued when a dispatcher finds it due
/// (`FanOutJobs.promoteDue`). Scheduled | Enqueued | Processing -> Cancelled (`FanOutJobs.cancel`): final, with the
/// counts its shards and retries had written.
public enum MessageState: String, Sendable, Hashable {
    case scheduled = "Scheduled"
    case enqueued = "Enqueued"
    case processing = "Processing"
    case completed = "Completed"
    case failed = "Failed"
    case expired = "Expired"
    case cancelled = "Cancelled"

    /// Nothing more happens to the message (Cancelled included).
    public var isFinal: Bool { self == .completed || self == .failed || self == .expired || self == .cancelled }

    /// The final state from the summed counters: Completed when anything was delivered or nothing was to be
    /// sent; Expired when the only unsent outcome is expiry; Failed when failures and no delivery.
    public static func final(for totals: DeliveryCounters) -> MessageState {
        if totals.accepted > 0 { return .completed }
        if totals.failed > 0 { return .failed }
        if totals.expired > 0 { return .expired }
        return .completed
    }
}

/// A shard this worker holds under a lease. `claim` is the fencing token: every write checks it, so a worker
/// whose lease expired and was taken over cannot write over the new holder.
public struct ShardClaim: Sendable, Hashable {
    public let shard: Int64
    public let message: Int64
    public let lo: Int64
    public let hi: Int64
    public let checkpoint: Int64
    public let claim: Int32
    public let owner: String
    public let leaseExpiresAt: Date
}

/// A direct message claimed in a batch (`FanOutJobs.claimDirect`): its one-endpoint shard under this owner's
/// lease, the message, and its endpoint as the shard's target (nil when there is nothing left to send: the
/// endpoint was deleted, or an earlier holder's checkpoint already passed it).
public struct DirectClaim: Sendable, Hashable {
    public let shard: ShardClaim
    public let job: MessageJob
    public let target: ShardTarget?
}

/// One shard's part of a batched checkpoint (`FanOutJobs.checkpoint(batch:)`): the same writes as a single
/// shard's checkpoint, for many shards in one transaction.
public struct ShardProgress: Sendable, Hashable {
    public var claim: ShardClaim
    /// The checkpoint key (the shard's `hi` when it finishes).
    public var checkpoint: Int64
    public var effects: OutcomeEffects
    public var lease: LeaseDisposition

    public init(claim: ShardClaim, checkpoint: Int64, effects: OutcomeEffects, lease: LeaseDisposition) {
        self.claim = claim
        self.checkpoint = checkpoint
        self.effects = effects
        self.lease = lease
    }
}

/// What a worker needs of a message to render and send it.
public struct MessageJob: Sendable, Hashable {
    public enum TargetKind: String, Sendable, Hashable {
        case endpoint, topic, user, audience
    }

    public let key: Int64
    public let externalID: UUID
    public let account: Int64
    public let targetKind: TargetKind
    public let targetID: Int64?
    public let message: String
    public let structure: String?
    public let subject: String?
    /// `messages.attributes` as JSON text (SNS `MessageAttributes`).
    public let attributesJSON: String
    /// When the publish was accepted, or for a scheduled publish when it was due (`send_at`, schema v16): TTLs
    /// and delivery latency count from here, so a push scheduled for next week is not expired on arrival.
    public let publishedAt: Date
    public let expiresAt: Date?
    public let state: MessageState
    /// The publish has a `pace` (schema v16): its shard workers send only what `FanOutJobs.takePaceBudget` grants.
    public var paced = false
}

/// `"pace"` of a publish (schema v16): a rate, or a window the planned targets are spread over.
public enum MessagePace: Sendable, Hashable {
    case perSecond(Double)
    case overSeconds(Int)
}

/// A message's pacing as its status shows it.
public struct PaceStatus: Sendable, Hashable {
    public var pace: MessagePace
    /// The rate in force: `perSecond`, or the planned targets over the window (nil until planned).
    public var effectivePerSecond: Double?
    /// When the first send was granted.
    public var startedAt: Date?
    /// Sends granted so far, across every node.
    public var granted: Int64
}

/// One target of a shard, in key order.
public struct ShardTarget: Sendable, Hashable {
    /// The keyset key (subscription id for topics, endpoint id for direct publishes).
    public let key: Int64
    public let endpoint: Int64
    public let application: Int64
    public let token: String
    public let enabled: Bool
    /// Not refreshed within the staleness horizon: skipped and counted.
    public let stale: Bool
    /// When the token was last set (an APNs 410 older than this does not disable the endpoint).
    public let tokenUpdatedAt: Date?
    /// The subscription's FilterPolicy text and FilterPolicyScope (topic messages only; nil: no policy).
    public var filterPolicy: String? = nil
    public var filterPolicyScope: String? = nil
    /// The endpoint's IANA zone (its `TimeZone` attribute; nil when unset), for local times and quiet hours.
    public var timeZone: String? = nil
}

/// A platform application as the dispatcher sees it.
public struct DispatchApplication: Sendable, Hashable {
    public let key: Int64
    public let account: Int64
    public let name: String
    public let platform: String
    public let enabled: Bool
    public let disabledReason: String?
    /// Attributes as stored (jsonb of strings): settings such as `SuccessFeedbackSampleRate`.
    public let attributes: [String: String]
    /// A digest of the sealed credentials (nil without any): changes whenever they are replaced, so a transport
    /// resolved for this application can be reused while it is the same.
    public let credentialsVersion: String?
    /// The frequency cap and quiet hours of the mobile app this application belongs to (schema v22; nil: none).
    public var frequencyCap: FrequencyCap? = nil
    public var quietHours: QuietHours? = nil
    /// The zone of quiet hours for endpoints without one (before the message's fallback zone).
    public var quietTimeZone: String? = nil

    public init(key: Int64, account: Int64, name: String, platform: String, enabled: Bool, disabledReason: String?,
                attributes: [String: String], credentialsVersion: String? = nil) {
        self.key = key
        self.account = account
        self.name = name
        self.platform = platform
        self.enabled = enabled
        self.disabledReason = disabledReason
        self.attributes = attributes
        self.credentialsVersion = credentialsVersion
    }
}

/// A delivery waiting for another attempt, claimed by a retry worker.
public struct RetryClaim: Sendable, Hashable {
    public let id: Int64
    public let message: Int64
    /// The shard the delivery came from (nil for rows written before schema v4).
    public let shard: Int64?
    /// Attempts already made.
    public let attempt: Int
    public let lastReason: String?
    public let target: ShardTarget
    /// Why the delivery's endpoint is gone (`PlatformApplicationDeleted`, `EndpointDeleted`); nil while it exists.
    /// A vanished retry's `target` carries only the endpoint key.
    public let vanished: String?
}

// MARK: - Checkpoint contents

/// One delivery-log row (SNS delivery status): every failure, sampled successes.
public struct DeliveryLogEntry: Sendable, Hashable {
    public var endpoint: Int64
    public var status: String
    public var providerStatus: Int?
    public var providerResponse: String?
    public var attempts: Int
    public var dwellMilliseconds: Int

    public init(endpoint: Int64, status: String, providerStatus: Int? = nil, providerResponse: String? = nil,
                attempts: Int, dwellMilliseconds: Int) {
        self.endpoint = endpoint
        self.status = status
        self.providerStatus = providerStatus
        self.providerResponse = providerResponse
        self.attempts = attempts
        self.dwellMilliseconds = dwellMilliseconds
    }
}

/// An endpoint to disable. `token` guards against a concurrent token update: the endpoint is disabled only if
/// it still has the token that was refused.
public struct EndpointDisable: Sendable, Hashable {
    public var endpoint: Int64
    public var token: String
    public var reason: String
    public var at: Date
    /// The provider's HTTP status with the refusal (nil when none came back).
    public var providerStatus: Int?

    public init(endpoint: Int64, token: String, reason: String, at: Date, providerStatus: Int? = nil) {
        self.endpoint = endpoint
        self.token = token
        self.reason = reason
        self.at = at
        self.providerStatus = providerStatus
    }
}

/// A token the provider replaced (ADM canonical registration id).
public struct TokenReplacement: Sendable, Hashable {
    public var endpoint: Int64
    public var oldToken: String
    public var newToken: String

    public init(endpoint: Int64, oldToken: String, newToken: String) {
        self.endpoint = endpoint
        self.oldToken = oldToken
        self.newToken = newToken
    }
}

/// A delivery to try again, not before `notBefore`.
public struct RetrySchedule: Sendable, Hashable {
    public var endpoint: Int64
    /// Attempts made so far.
    public var attempt: Int
    public var notBefore: Date
    public var reason: String

    public init(endpoint: Int64, attempt: Int, notBefore: Date, reason: String) {
        self.endpoint = endpoint
        self.attempt = attempt
        self.notBefore = notBefore
        self.reason = reason
    }
}

/// A platform application whose credentials the provider refused (or that could not be configured to send).
public struct ApplicationDisable: Sendable, Hashable {
    public var application: Int64
    public var reason: String
    public var at: Date
    /// The provider's HTTP status with the refusal; nil when none came back (nothing was sent: the application's
    /// settings could not make a client, or the connection itself was refused).
    public var providerStatus: Int?

    public init(application: Int64, reason: String, at: Date, providerStatus: Int? = nil) {
        self.application = application
        self.reason = reason
        self.at = at
        self.providerStatus = providerStatus
    }
}

/// One application's outcomes in a checkpoint, by the dispatcher's outcome classes: added to its row of
/// `application_delivery_counts` for the minute the checkpoint commits (schema v23), so the console's figures are
/// exact whatever the application's `SuccessFeedbackSampleRate`.
///
/// Final outcomes: `accepted` (a new token included), `tokenInvalid`, `messageInvalid`, `credentialsInvalid`,
/// `rejected`, `retryExhausted` (a retryable or auth-token failure given up), `expired`, `skipped`, `filtered`,
/// `heldOut`. `retried` counts attempts scheduled again (not final); `sent` counts provider hand-offs.
public struct ApplicationOutcomeCounts: Sendable, Hashable {
    public var sent: Int64 = 0
    public var accepted: Int64 = 0
    public var tokenInvalid: Int64 = 0
    public var messageInvalid: Int64 = 0
    public var credentialsInvalid: Int64 = 0
    public var rejected: Int64 = 0
    public var retryExhausted: Int64 = 0
    public var retried: Int64 = 0
    public var expired: Int64 = 0
    public var skipped: Int64 = 0
    public var filtered: Int64 = 0
    public var heldOut: Int64 = 0

    public init() {}

    /// The columns in `application_delivery_counts` order (after `application`, `minute`).
    static let columns = ["sent", "accepted", "token_invalid", "message_invalid", "credentials_invalid", "rejected",
                          "retry_exhausted", "retried", "expired", "skipped", "filtered", "held_out"]

    /// The values in `columns` order.
    var values: [Int64] {
        [sent, accepted, tokenInvalid, messageInvalid, credentialsInvalid, rejected, retryExhausted, retried, expired,
         skipped, filtered, heldOut]
    }

    init(values v: [Int64]) {
        (sent, accepted, tokenInvalid, messageInvalid, credentialsInvalid, rejected) = (v[0], v[1], v[2], v[3], v[4], v[5])
        (retryExhausted, retried, expired, skipped, filtered, heldOut) = (v[6], v[7], v[8], v[9], v[10], v[11])
    }

    /// Failed for good: every final outcome that is neither accepted, expired, skipped, filtered nor held out.
    public var failed: Int64 { tokenInvalid + messageInvalid + credentialsInvalid + rejected + retryExhausted }

    public static func += (lhs: inout ApplicationOutcomeCounts, rhs: ApplicationOutcomeCounts) {
        lhs.sent += rhs.sent
        lhs.accepted += rhs.accepted
        lhs.tokenInvalid += rhs.tokenInvalid
        lhs.messageInvalid += rhs.messageInvalid
        lhs.credentialsInvalid += rhs.credentialsInvalid
        lhs.rejected += rhs.rejected
        lhs.retryExhausted += rhs.retryExhausted
        lhs.retried += rhs.retried
        lhs.expired += rhs.expired
        lhs.skipped += rhs.skipped
        lhs.filtered += rhs.filtered
        lhs.heldOut += rhs.heldOut
    }
}

/// Side effects of a batch of outcomes, written in the checkpoint's transaction.
public struct OutcomeEffects: Sendable, Hashable {
    public var counters = DeliveryCounters()
    /// The same outcomes by application (`application_delivery_counts`, schema v23).
    public var applications: [Int64: ApplicationOutcomeCounts] = [:]
    public var failures: [String: Int64] = [:]
    public var log: [DeliveryLogEntry] = []
    public var disable: [EndpointDisable] = []
    public var replace: [TokenReplacement] = []
    public var retries: [RetrySchedule] = []
    public var disableApplications: [ApplicationDisable] = []
    /// When the first of these outcomes that delivered (accepted, or accepted with a new token) came back: the
    /// checkpoint records it as the message's first delivery unless an earlier checkpoint already did.
    public var firstAcceptedAt: Date?

    public init() {}

    public var isEmpty: Bool {
        counters.isZero && applications.isEmpty && failures.isEmpty && log.isEmpty && disable.isEmpty && replace.isEmpty
            && retries.isEmpty && disableApplications.isEmpty
    }
}

// MARK: - What a write disabled or gave up on

/// An endpoint a checkpoint disabled, read back from its UPDATE: only the transaction that turned `enabled` off
/// reports it, so each disable is reported once, whichever worker or node wrote it.
public struct DisabledEndpoint: Sendable, Hashable {
    public let endpoint: Int64
    public let externalID: UUID
    /// The owning account's 12-digit id (with the platform, application name and id: the endpoint's ARN).
    public let accountID: String
    public let applicationName: String
    public let platform: String
    /// The first characters of the refused token (at most 8, at most half of it), never the whole token
    /// (docs/security.md: logs never carry a full device token).
    public let tokenPrefix: String
    public let reason: String
    public let providerStatus: Int?
    public let disabledAt: Date
    /// The message whose delivery was refused.
    public let message: Int64

    public init(endpoint: Int64, externalID: UUID, accountID: String, applicationName: String, platform: String,
                tokenPrefix: String, reason: String, providerStatus: Int?, disabledAt: Date, message: Int64) {
        self.endpoint = endpoint
        self.externalID = externalID
        self.accountID = accountID
        self.applicationName = applicationName
        self.platform = platform
        self.tokenPrefix = tokenPrefix
        self.reason = reason
        self.providerStatus = providerStatus
        self.disabledAt = disabledAt
        self.message = message
    }
}

/// A platform application a checkpoint disabled, read back from its UPDATE (reported once, as endpoints are).
public struct DisabledApplication: Sendable, Hashable {
    public let application: Int64
    public let accountID: String
    public let name: String
    public let platform: String
    public let reason: String
    public let providerStatus: Int?
    public let disabledAt: Date
    /// The message whose delivery found the credentials refused.
    public let message: Int64

    public init(application: Int64, accountID: String, name: String, platform: String, reason: String,
                providerStatus: Int?, disabledAt: Date, message: Int64) {
        self.application = application
        self.accountID = accountID
        self.name = name
        self.platform = platform
        self.reason = reason
        self.providerStatus = providerStatus
        self.disabledAt = disabledAt
        self.message = message
    }
}

/// A message a write finished with deliveries given up: its final state is Failed or Expired, or it is Completed
/// with some deliveries failed or expired. Read back from the finishing UPDATE, so reported once.
public struct GivenUpMessage: Sendable, Hashable {
    public let message: Int64
    public let externalID: UUID
    public let accountID: String
    public let targetKind: String
    public let state: MessageState
    public let counters: DeliveryCounters
    /// Failed deliveries by reason (provider reason codes, cut to 80 characters).
    public let failuresByReason: [String: Int64]

    public init(message: Int64, externalID: UUID, accountID: String, targetKind: String, state: MessageState,
                counters: DeliveryCounters, failuresByReason: [String: Int64]) {
        self.message = message
        self.externalID = externalID
        self.accountID = accountID
        self.targetKind = targetKind
        self.state = state
        self.counters = counters
        self.failuresByReason = failuresByReason
    }
}

/// What a committed write disabled or gave up on, for the caller to report (one warning each) once the
/// transaction is over: never inside it, where a log line could claim what a rollback undid.
public struct FailureReport: Sendable, Hashable {
    public var endpoints: [DisabledEndpoint] = []
    public var applications: [DisabledApplication] = []
    public var messages: [GivenUpMessage] = []
    /// Messages whose first delivery this transaction recorded (exactly one transaction records each), for the
    /// publish-to-first-delivery histogram. Not a failure: it rides along because it is read back the same way.
    public var firstDeliveries: [FirstDelivery] = []

    public init(endpoints: [DisabledEndpoint] = [], applications: [DisabledApplication] = [], messages: [GivenUpMessage] = []) {
        self.endpoints = endpoints
        self.applications = applications
        self.messages = messages
    }

    public var isEmpty: Bool { endpoints.isEmpty && applications.isEmpty && messages.isEmpty }

    public static func += (lhs: inout FailureReport, rhs: FailureReport) {
        lhs.endpoints += rhs.endpoints
        lhs.applications += rhs.applications
        lhs.messages += rhs.messages
        lhs.firstDeliveries += rhs.firstDeliveries
    }
}

/// A message's first delivery, read back from the UPDATE that recorded it.
public struct FirstDelivery: Sendable, Hashable {
    public let message: Int64
    public let targetKind: String
    /// Seconds from the publish to the first provider acceptance.
    public let seconds: Double

    public init(message: Int64, targetKind: String, seconds: Double) {
        self.message = message
        self.targetKind = targetKind
        self.seconds = seconds
    }
}

/// What a shard checkpoint does to the lease.
public enum LeaseDisposition: Sendable, Hashable {
    /// Keep working: renew the lease for this many seconds.
    case renew(seconds: Double)
    /// Shutting down: hand the shard back (state ready) at the checkpoint.
    case release
    /// Every target has a final outcome or a scheduled retry: the shard is done.
    case finish
}

/// Why a checkpoint did not apply.
public enum CheckpointResult: Sendable, Hashable {
    /// Written; when the shard finished and the message with it, its final state.
    case applied(finishedMessage: MessageState?)
    /// The lease was taken over (expired and claimed by another worker): stop, write nothing more.
    case leaseLost
    /// Written, but the message was cancelled (the shard is done): stop sending, finish what is in flight and
    /// write it with a `.finish` checkpoint.
    case cancelled
}

/// What `FanOutJobs.cancel` found and did.
public enum CancelOutcome: Sendable, Hashable {
    /// Cancelled now: no shard of it is claimed again, its retries are gone, workers holding a shard stop at
    /// their next checkpoint (at once when they hear `clarion_cancel`).
    case cancelled(MessageStatus)
    /// It was cancelled before (cancel is idempotent).
    case alreadyCancelled(MessageStatus)
    /// It had finished (Completed, Failed or Expired): nothing to cancel.
    case finished(MessageStatus)
}

/// The status of a message for `GET /v1/messages/{id}`.
public struct MessageStatus: Sendable, Hashable {
    public let key: Int64
    public let externalID: UUID
    public let account: Int64
    public let state: MessageState
    public let targetKind: String
    public let planned: Bool
    public let shards: Int
    public let shardsDone: Int
    /// Targets counted when the shards were planned (subscriptions in the ranges), an estimate until the end;
    /// a direct message counts its one target before its shard exists.
    public let plannedTargets: Int64
    public let counters: DeliveryCounters
    public let failuresByReason: [String: Int64]
    public let pendingRetries: Int64
    public let publishedAt: Date
    public let startedAt: Date?
    public let completedAt: Date?
    public let expiresAt: Date?
    /// When a scheduled publish is (or was) due; nil for an ordinary publish.
    public var sendAt: Date? = nil
    /// Its pacing, when it has one.
    public var pace: PaceStatus? = nil
    /// When a provider first accepted a delivery of this message; nil before that, or when none was delivered.
    public var firstDeliveryAt: Date? = nil

    /// 0...1: deliveries with a final outcome over the planned (or, when larger, counted) targets. A cancelled
    /// message keeps the fraction it reached.
    public var progress: Double {
        if state.isFinal && state != .cancelled { return 1 }
        let total = max(plannedTargets, counters.targeted)
        guard total > 0 else { return 0 }
        return min(1, Double(counters.finished) / Double(total))
    }
}
