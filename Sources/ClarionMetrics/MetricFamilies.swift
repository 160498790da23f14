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

public final class CounterFamily: MetricFamily, Sendable {
    public let name: String
    public let help: String
    public let labelNames: [String]
    private let table: ChildTable<Counter>

    init(name: String, help: String, labelNames: [String], seriesLimit: Int = MetricsRegistry.defaultSeriesLimit) {
        self.name = name
        self.help = help
        self.labelNames = labelNames
        table = ChildTable(labelNames: labelNames, seriesLimit: seriesLimit) { Counter() }
    }

    /// The child for these label values (in the order of the family's label names). Keep it: this takes a lock.
    public func labels(_ values: String...) -> Counter { table.child(values) }
    public func labels(_ values: [String]) -> Counter { table.child(values) }

    func snapshot() -> MetricSnapshot {
        MetricSnapshot(name: name, help: help, type: .counter, samples: table.all.map { values, child in
            MetricSnapshot.Sample(suffix: "_total", labels: Array(zip(labelNames, values)), value: Double(child.value))
        })
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

public final class GaugeFamily: MetricFamily, Sendable {
    public let name: String
    public let help: String
    public let labelNames: [String]
    private let table: ChildTable<Gauge>

    init(name: String, help: String, labelNames: [String], seriesLimit: Int = MetricsRegistry.defaultSeriesLimit) {
        self.name = name
        self.help = help
        self.labelNames = labelNames
        table = ChildTable(labelNames: labelNames, seriesLimit: seriesLimit) { Gauge() }
    }

    public func labels(_ values: String...) -> Gauge { table.child(values) }
    public func labels(_ values: [String]) -> Gauge { table.child(values) }

    func snapshot() -> MetricSnapshot {
        MetricSnapshot(name: name, help: help, type: .gauge, samples: table.all.map { values, child in
            MetricSnapshot.Sample(labels: Array(zip(labelNames, values)), value: Double(child.value))
        })
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

public final class HistogramFamily: MetricFamily, Sendable {
    public let name: String
    public let help: String
    public let labelNames: [String]
    public let buckets: [Double]
    private let table: ChildTable<Histogram>

    init(name: String, help: String, labelNames: [String], buckets: [Double],
         seriesLimit: Int = MetricsRegistry.defaultSeriesLimit) {
        precondition(!labelNames.contains("le"), "a histogram cannot have a label named le")
        self.name = name
        self.help = help
        self.labelNames = labelNames
        self.buckets = buckets
        table = ChildTable(labelNames: labelNames, seriesLimit: seriesLimit) { Histogram(bounds: buckets) }
    }

    public func labels(_ values: String...) -> Histogram { table.child(values) }
    public func labels(_ values: [String]) -> Histogram { table.child(values) }

    func snapshot() -> MetricSnapshot {
        var samples: [MetricSnapshot.Sample] = []
        for (values, child) in table.all {
            let labels = Array(zip(labelNames, values))
            let (cumulative, sum, count) = child.cumulative
            for (i, bound) in buckets.enumerated() {
                samples.append(.init(suffix: "_bucket", labels: labels + [("le", ExpositionWriter.format(bound))],
                                     value: Double(cumulative[i])))
            }
            // `+Inf` is the count itself (read last), so the buckets never exceed it.
            samples.append(.init(suffix: "_bucket", labels: labels + [("le", "+Inf")], value: Double(count)))
            samples.append(.init(suffix: "_sum", labels: labels, value: sum))
            samples.append(.init(suffix: "_count", labels: labels, value: Double(count)))
        }
        return MetricSnapshot(name: name, help: help, type: .histogram, samples: samples)
    }
}

/// Latency buckets in seconds, 1 ms to 30 s: provider round trips, API requests, publish to completion.
public enum MetricBuckets {
    public static let latencySeconds: [Double] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]
    /// Publish to completion: seconds to hours (a fan-out to millions, retries up to a TTL).
    public static let completionSeconds: [Double] = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600]
}
