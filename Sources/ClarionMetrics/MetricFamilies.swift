import Synchronization

/// The children of one family, keyed by their label values. Resolving a child takes the lock; updating one
/// does not (the caller keeps the child).
final class ChildTable<Child: AnyObject & Sendable>: Sendable {
    let labelNames: [String]
    let seriesLimit: Int
    private let make: @Sendable () -> Child

    private struct State {
        var index: [[String]: Int] = [:]
        var children: [(values: [String], child: Child)] = []
    }

    private let state = Mutex(State())

    init(labelNames: [String], seriesLimit: Int, make: @escaping @Sendable () -> Child) {
        self.labelNames = labelNames
        self.seriesLimit = seriesLimit
        self.make = make
    }

    func child(_ values: [String]) -> Child {
        precondition(values.count == labelNames.count, "expected \(labelNames.count) label values, got \(values.count)")
        let make = self.make
        let seriesLimit = self.seriesLimit
        return state.withLock { state in
            if let position = state.index[values] { return state.children[position].child }
            let key = state.index.count >= seriesLimit ? Array(repeating: "_other", count: values.count) : values
            if let position = state.index[key] { return state.children[position].child }
            let child = make()
            state.children.append((key, child))
            state.index[key] = state.children.count - 1
            return child
        }
    }

    /// Every child in the order first resolved.
    var all: [(values: [String], child: Child)] { state.withLock { $0.children } }
}

// MARK: - Counter

/// A monotonically increasing count. `increment` is one relaxed atomic add.
public final class Counter: Sendable {
    private let count = Atomic<Int>(0)

    public init() {}

    @inline(__always)
    public func increment(by amount: Int = 1) {
        count.wrappingAdd(amount, ordering: .relaxed)
    }

    public var value: Int { count.load(ordering: .relaxed) }
}

extension Counter: MetricChild {
    public static let metricType = MetricType.counter

    public func samples(labels: [(String, String)]) -> [MetricSnapshot.Sample] {
        [MetricSnapshot.Sample(suffix: "_total", labels: labels, value: Double(value))]
    }
}

// MARK: - Gauge

/// A value that goes up and down (integers: connections, requests in flight).
public final class Gauge: Sendable {
    private let current = Atomic<Int>(0)

    public init() {}

    @inline(__always)
    public func add(_ amount: Int) { current.wrappingAdd(amount, ordering: .relaxed) }
    public func set(_ value: Int) { current.store(value, ordering: .relaxed) }
    public var value: Int { current.load(ordering: .relaxed) }
}

extension Gauge: MetricChild {
    public static let metricType = MetricType.gauge

    public func samples(labels: [(String, String)]) -> [MetricSnapshot.Sample] {
        [MetricSnapshot.Sample(labels: labels, value: Double(value))]
    }
}

// MARK: - Histogram

/// Observations counted into fixed buckets. `observe` is a short scan of the bounds, one atomic add for the
/// bucket, one for the count and a compare-and-swap loop for the sum (a `Double` kept as its bit pattern).
/// Buckets are stored non-cumulative and summed at scrape time, so an observation touches one bucket.
public final class Histogram: @unchecked Sendable {
    // @unchecked: `buckets` points at `bounds.count + 1` atomics allocated here and freed in deinit; every access
    // goes through `Atomic`'s own operations.
    public let bounds: [Double]
    private let buckets: UnsafeMutablePointer<Atomic<Int>>
    private let count = Atomic<Int>(0)
    private let sumBits = Atomic<UInt64>(0)

    public init(bounds: [Double]) {
        precondition(zip(bounds, bounds.dropFirst()).allSatisfy { $0 < $1 }, "histogram bounds must ascend")
        precondition(bounds.allSatisfy { $0.isFinite }, "histogram bounds must be finite (+Inf is implied)")
        self.bounds = bounds
        buckets = UnsafeMutablePointer<Atomic<Int>>.allocate(capacity: bounds.count + 1)
        for i in 0...bounds.count { (buckets + i).initialize(to: Atomic(0)) }
    }

    deinit {
        buckets.deinitialize(count: bounds.count + 1)
        buckets.deallocate()
    }

    public func observe(_ value: Double) {
        var slot = bounds.count
        for i in 0..<bounds.count where value <= bounds[i] {
            slot = i
            break
        }
        buckets[slot].wrappingAdd(1, ordering: .relaxed)
        count.wrappingAdd(1, ordering: .relaxed)
        var old = sumBits.load(ordering: .relaxed)
        while true {
            let new = (Double(bitPattern: old) + value).bitPattern
            let (exchanged, original) = sumBits.weakCompareExchange(expected: old, desired: new, ordering: .relaxed)
            if exchanged { break }
            old = original
        }
    }

    /// Seconds from a `Duration`.
    public func observe(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        observe(Double(seconds) + Double(attoseconds) / 1e18)
    }

    /// Cumulative counts per bound, then the `+Inf` bucket (which equals the count), and the sum.
    /// Read bucket by bucket while others may observe: a scrape can be off by the observations in flight.
    public var cumulative: (buckets: [Int], sum: Double, count: Int) {
        var running = 0
        var out: [Int] = []
        out.reserveCapacity(bounds.count + 1)
        for i in 0...bounds.count {
            running += buckets[i].load(ordering: .relaxed)
            out.append(running)
        }
        return (out, Double(bitPattern: sumBits.load(ordering: .relaxed)), running)
    }
}

extension Histogram: MetricChild {
    public static let metricType = MetricType.histogram

    /// A bucket per bound and `+Inf`, then `_sum` and `_count`.
    public func samples(labels: [(String, String)]) -> [MetricSnapshot.Sample] {
        let (cumulative, sum, count) = self.cumulative
        var samples: [MetricSnapshot.Sample] = []
        samples.reserveCapacity(bounds.count + 3)
        for (i, bound) in bounds.enumerated() {
            samples.append(.init(suffix: "_bucket", labels: labels + [("le", ExpositionWriter.format(bound))],
                                 value: Double(cumulative[i])))
        }
        // `+Inf` is the count itself (read last), so the buckets never exceed it.
        samples.append(.init(suffix: "_bucket", labels: labels + [("le", "+Inf")], value: Double(count)))
        samples.append(.init(suffix: "_sum", labels: labels, value: sum))
        samples.append(.init(suffix: "_count", labels: labels, value: Double(count)))
        return samples
    }
}

// MARK: - Families

/// What a family's children are: counters, gauges or histograms, each writing its own samples.
public protocol MetricChild: AnyObject, Sendable {
    static var metricType: MetricType { get }
    /// This child's samples under its label pairs.
    func samples(labels: [(String, String)]) -> [MetricSnapshot.Sample]
}

/// A metric's family: its name, help and label names, fixed at registration, and one child per set of label values
/// (`labels(...)` takes a lock: resolve a child once and keep it; updating it takes none).
public final class LabeledFamily<Child: MetricChild>: MetricFamily, Sendable {
    public let name: String
    public let help: String
    public let labelNames: [String]
    private let table: ChildTable<Child>

    init(name: String, help: String, labelNames: [String], seriesLimit: Int = MetricsRegistry.defaultSeriesLimit,
         make: @escaping @Sendable () -> Child) {
        self.name = name
        self.help = help
        self.labelNames = labelNames
        table = ChildTable(labelNames: labelNames, seriesLimit: seriesLimit, make: make)
    }

    /// The child for these label values (in the order of the family's label names).
    public func labels(_ values: String...) -> Child { table.child(values) }
    public func labels(_ values: [String]) -> Child { table.child(values) }

    func snapshot() -> MetricSnapshot {
        MetricSnapshot(name: name, help: help, type: Child.metricType, samples: table.all.flatMap { values, child in
            child.samples(labels: Array(zip(labelNames, values)))
        })
    }
}

public typealias CounterFamily = LabeledFamily<Counter>
public typealias GaugeFamily = LabeledFamily<Gauge>
public typealias HistogramFamily = LabeledFamily<Histogram>

/// Latency buckets in seconds, 1 ms to 30 s: provider round trips, API requests, publish to completion.
public enum MetricBuckets {
    public static let latencySeconds: [Double] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]
    /// Publish to completion: seconds to hours (a fan-out to millions, retries up to a TTL).
    public static let completionSeconds: [Double] = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600]
}
