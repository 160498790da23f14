import ClarionCore
import ClarionStore

/// The filter policies of the subscriptions one shard worker streams, compiled once per distinct policy text and
/// scope (never per delivery), and the message they are matched against, built once per worker.
///
/// A policy stored before policies were checked (schema < v13 accepted any JSON object) may not compile: the
/// subscriber then gets the message, as it did before, and the worker says so once per policy (`unusable`).
struct SubscriptionFilters {
    private struct Key: Hashable {
        var text: String
        var scope: String?
    }

    private let job: MessageJob
    private var compiled: [Key: FilterPolicy?] = [:]
    private var attributesOnly: FilterMessage?
    private var withBody: FilterMessage?
    /// Policies that did not compile, with why: for the worker to log once each.
    private(set) var unusable: [(policy: String, reason: String)] = []

    /// More distinct policies than this in one shard and the cache starts over (memory stays bounded).
    static let capacity = 4096

    init(job: MessageJob) {
        self.job = job
    }

    /// Whether a subscriber with this policy gets the message.
    mutating func passes(policy text: String, scope: String?) -> Bool {
        let key = Key(text: text, scope: scope)
        let policy: FilterPolicy?
        if let found = compiled[key] {
            policy = found
        } else {
            if compiled.count >= Self.capacity { compiled.removeAll(keepingCapacity: true) }
            let parsedScope = scope.flatMap(FilterPolicyScope.init(rawValue:)) ?? .messageAttributes
            do throws(FilterPolicyError) {
                policy = try FilterPolicy.compile(text, scope: parsedScope)
            } catch {
                policy = nil
                unusable.append((text, error.message))
            }
            compiled[key] = policy
        }
        guard let policy else { return true }
        return policy.matches(message(for: policy.scope))
    }

    mutating func takeUnusable() -> [(policy: String, reason: String)] {
        defer { unusable.removeAll() }
        return unusable
    }

    private mutating func message(for scope: FilterPolicyScope) -> FilterMessage {
        switch scope {
        case .messageAttributes:
            if let attributesOnly { return attributesOnly }
            let made = FilterMessage(attributes: MessageContent.attributes(json: job.attributesJSON), body: nil)
            attributesOnly = made
            return made
        case .messageBody:
            if let withBody { return withBody }
            let made = FilterMessage(attributes: MessageContent.attributes(json: job.attributesJSON), body: job.message)
            withBody = made
            return made
        }
    }
}
