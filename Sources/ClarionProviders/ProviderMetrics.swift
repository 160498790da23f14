import ClarionCore
import ClarionMetrics

/// Provider response time per platform: `clarion_provider_response_seconds{platform}`, from the moment the
/// dispatcher hands a batch to the client to each answer (so time queued for a stream counts: it is what a
/// delivery waits). One histogram per platform, made here, so the answer path only observes.
public final class ProviderMetrics: Sendable {
    private let histograms: [Platform: Histogram]

    public init(registry: MetricsRegistry) {
        let family = registry.histogram(
            "clarion_provider_response_seconds",
            help: "Seconds from handing a push to the provider client to the provider's answer (or the transport failure), per platform.",
            labels: ["platform"], buckets: MetricBuckets.latencySeconds)
        var histograms: [Platform: Histogram] = [:]
        for platform in Platform.allCases { histograms[platform] = family.labels(platform.rawValue) }
        self.histograms = histograms
    }

    func responseTime(_ platform: Platform) -> Histogram? { histograms[platform] }
}
