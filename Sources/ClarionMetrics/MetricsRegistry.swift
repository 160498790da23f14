import Synchronization

/// The metric families of one process and their Prometheus text exposition (format 0.0.4).
///
/// Families are registered at start with a fixed list of label names; each child (one combination of label
/// values) is resolved once, off the hot path, and then updated with atomics only: no lock and no allocation per
/// update (`Counter.increment`, `Histogram.observe`). Label values are bounded by the callers (platform,
/// application name, outcome class, route pattern, status class: never a token or an id), and each family caps its
/// children at `seriesLimit` as a last guard: past it, new combinations share one child whose label values are all
/// `_other`, so a bug that labels by an id grows nothing.
///
/// Figures known only at scrape time (rows waiting in the database, pool sizes, resident memory) come from
/// collectors: closures run by `exposition()`, which may suspend (a database query, a hop to an event loop).
public final class MetricsRegistry: Sendable {
    /// Children per family past which new label combinations are folded into one `_other` child.
    public static let defaultSeriesLimit = 2_000

    private struct State {
        var families: [any MetricFamily] = []
        var names: Set<String> = []
        var collectors: [@Sendable () async -> [MetricSnapshot]] = []
    }

    private let state = Mutex(State())

    public init() {}

    /// A counter family. `labels` are the label names, fixed here.
    public func counter(_ name: String, help: String, labels: [String] = []) -> CounterFamily {
        let family = CounterFamily(name: name, help: help, labelNames: labels) { Counter() }
        add(family)
        return family
    }

    /// A gauge family (set or moved by the code that knows the figure).
    public func gauge(_ name: String, help: String, labels: [String] = []) -> GaugeFamily {
        let family = GaugeFamily(name: name, help: help, labelNames: labels) { Gauge() }
        add(family)
        return family
    }

    /// A histogram family with fixed bucket upper bounds (ascending; `+Inf` is implied).
    public func histogram(_ name: String, help: String, labels: [String] = [], buckets: [Double]) -> HistogramFamily {
        precondition(!labels.contains("le"), "a histogram cannot have a label named le")
        let family = HistogramFamily(name: name, help: help, labelNames: labels) { Histogram(bounds: buckets) }
        add(family)
        return family
    }

    /// Families computed at scrape time. The collector's family names must not clash with registered ones
    /// (`exposition()` writes them after the registered families, in the order given).
    public func collector(_ collect: @escaping @Sendable () async -> [MetricSnapshot]) {
        state.withLock { $0.collectors.append(collect) }
    }

    private func add(_ family: any MetricFamily) {
        precondition(MetricName.isValid(family.name), "invalid metric name \(family.name)")
        for label in family.labelNames { precondition(MetricName.isValidLabel(label), "invalid label name \(label)") }
        state.withLock { state in
            precondition(state.names.insert(family.name).inserted, "metric \(family.name) registered twice")
            state.families.append(family)
        }
    }

    /// The whole exposition: every registered family, then every collector's.
    public func exposition() async -> String {
        let (families, collectors) = state.withLock { ($0.families, $0.collectors) }
        var writer = ExpositionWriter()
        for family in families { writer.write(family.snapshot()) }
        for collect in collectors {
            for snapshot in await collect() { writer.write(snapshot) }
        }
        return writer.text
    }
}

/// What every registered family can do: describe itself and read its children.
protocol MetricFamily: Sendable {
    var name: String { get }
    var labelNames: [String] { get }
    func snapshot() -> MetricSnapshot
}

/// Prometheus's metric types as written after `# TYPE`.
public enum MetricType: String, Sendable {
    case counter, gauge, histogram, untyped
}

/// One family as read at scrape time.
public struct MetricSnapshot: Sendable {
    public var name: String
    public var help: String
    public var type: MetricType
    public var samples: [Sample]

    public init(name: String, help: String, type: MetricType, samples: [Sample]) {
        self.name = name
        self.help = help
        self.type = type
        self.samples = samples
    }

    /// One line: `name` + `suffix` (`_bucket`, `_sum`, `_count`, or empty), labels in order, a value.
    public struct Sample: Sendable {
        public var suffix: String
        public var labels: [(String, String)]
        public var value: Double

        public init(suffix: String = "", labels: [(String, String)] = [], value: Double) {
            self.suffix = suffix
            self.labels = labels
            self.value = value
        }
    }

    /// A gauge family from (label values, value) pairs.
    public static func gauge(_ name: String, help: String, labels: [String] = [], _ values: [([String], Double)]) -> MetricSnapshot {
        MetricSnapshot(name: name, help: help, type: .gauge, samples: values.map { values, value in
            Sample(labels: Array(zip(labels, values)), value: value)
        })
    }

    /// A counter family from (label values, value) pairs (for totals something else keeps, read at scrape time).
    public static func counter(_ name: String, help: String, labels: [String] = [], _ values: [([String], Double)]) -> MetricSnapshot {
        MetricSnapshot(name: name, help: help, type: .counter, samples: values.map { values, value in
            Sample(labels: Array(zip(labels, values)), value: value)
        })
    }
}

/// Metric and label names as the exposition format allows them.
enum MetricName {
    static func isValid(_ name: String) -> Bool {
        guard let first = name.utf8.first, !(0x30...0x39).contains(first) else { return false }
        return name.utf8.allSatisfy { isLetter($0) || (0x30...0x39).contains($0) || $0 == 0x5F || $0 == 0x3A }
    }

    static func isValidLabel(_ name: String) -> Bool {
        guard let first = name.utf8.first, !(0x30...0x39).contains(first), !name.hasPrefix("__") else { return false }
        return name.utf8.allSatisfy { isLetter($0) || (0x30...0x39).contains($0) || $0 == 0x5F }
    }

    private static func isLetter(_ byte: UInt8) -> Bool { (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) }
}
