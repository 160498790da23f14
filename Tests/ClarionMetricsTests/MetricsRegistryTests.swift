import Testing
@testable import ClarionMetrics

@Suite("Metrics registry and exposition")
struct MetricsRegistryTests {
    @Test("a counter family writes HELP and TYPE once (naming the _total sample, as format 0.0.4 parsers read it), then one line per child")
    func counterExposition() async {
        let registry = MetricsRegistry()
        let deliveries = registry.counter("clarion_deliveries_total", help: "Deliveries by outcome.", labels: ["platform", "outcome"])
        let apnsAccepted = deliveries.labels("APNS", "accepted")
        apnsAccepted.increment()
        apnsAccepted.increment(by: 2)
        deliveries.labels("GCM", "token_invalid").increment()
        #expect(deliveries.labels("APNS", "accepted") === apnsAccepted, "the same label values resolve to the same child")
        let text = await registry.exposition()
        #expect(text == """
            # HELP clarion_deliveries_total Deliveries by outcome.
            # TYPE clarion_deliveries_total counter
            clarion_deliveries_total{platform="APNS",outcome="accepted"} 3
            clarion_deliveries_total{platform="GCM",outcome="token_invalid"} 1

            """)
    }

    @Test("exposition format 0.0.4: label values escape backslash, double quote and newline; HELP escapes backslash and newline")
    func escaping() async {
        let registry = MetricsRegistry()
        let family = registry.gauge("clarion_test", help: "a \\ b\nc \"q\"", labels: ["application"])
        family.labels("a\\b\"c\nd").set(7)
        let text = await registry.exposition()
        #expect(text == """
            # HELP clarion_test a \\\\ b\\nc "q"
            # TYPE clarion_test gauge
            clarion_test{application="a\\\\b\\"c\\nd"} 7

            """)
    }

    @Test("a histogram writes cumulative _bucket lines with le, +Inf equal to _count, and _sum")
    func histogramBuckets() async {
        let registry = MetricsRegistry()
        let latency = registry.histogram("clarion_latency_seconds", help: "Latency.", labels: ["platform"], buckets: [0.01, 0.1, 1])
        let child = latency.labels("ADM")
        for value in [0.005, 0.01, 0.05, 0.5, 2.0] { child.observe(value) }  // 0.01 falls in le="0.01": bounds are inclusive
        let text = await registry.exposition()
        #expect(text == """
            # HELP clarion_latency_seconds Latency.
            # TYPE clarion_latency_seconds histogram
            clarion_latency_seconds_bucket{platform="ADM",le="0.01"} 2
            clarion_latency_seconds_bucket{platform="ADM",le="0.1"} 3
            clarion_latency_seconds_bucket{platform="ADM",le="1"} 4
            clarion_latency_seconds_bucket{platform="ADM",le="+Inf"} 5
            clarion_latency_seconds_sum{platform="ADM"} 2.565
            clarion_latency_seconds_count{platform="ADM"} 5

            """)
    }

    @Test("a family caps its children: past the limit new label values share one _other child")
    func seriesLimit() {
        let family = CounterFamily(name: "clarion_capped_total", help: "h", labelNames: ["application"], seriesLimit: 2) { Counter() }
        family.labels("a").increment()
        family.labels("b").increment()
        family.labels("c").increment()
        family.labels("d").increment(by: 5)
        family.labels("a").increment()
        let samples = family.snapshot().samples.map { ($0.labels.map(\.1), $0.value) }
        #expect(samples.map(\.0) == [["a"], ["b"], ["_other"]])
        #expect(samples.map(\.1) == [2, 1, 6])
    }

    @Test("collectors run at scrape time and their families follow the registered ones")
    func collectors() async {
        let registry = MetricsRegistry()
        registry.counter("clarion_first_total", help: "first").labels().increment()
        registry.collector {
            [MetricSnapshot.gauge("clarion_waiting", help: "rows waiting", labels: ["queue"], [(["retries"], 4), (["shards"], 0.5)])]
        }
        let text = await registry.exposition()
        #expect(text == """
            # HELP clarion_first_total first
            # TYPE clarion_first_total counter
            clarion_first_total 1
            # HELP clarion_waiting rows waiting
            # TYPE clarion_waiting gauge
            clarion_waiting{queue="retries"} 4
            clarion_waiting{queue="shards"} 0.5

            """)
    }

    @Test("numbers: integers without a fraction, special values as the format spells them")
    func numberFormat() {
        #expect(ExpositionWriter.format(12) == "12")
        #expect(ExpositionWriter.format(0.005) == "0.005")
        #expect(ExpositionWriter.format(.infinity) == "+Inf")
        #expect(ExpositionWriter.format(-.infinity) == "-Inf")
        #expect(ExpositionWriter.format(.nan) == "NaN")
        #expect(ExpositionWriter.format(1e20) == "1e+20")
    }

    @Test("counters and histograms lose no update under concurrent writers")
    func concurrentUpdates() async {
        let counter = Counter()
        let histogram = Histogram(bounds: [1])
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    for _ in 0..<10_000 {
                        counter.increment()
                        histogram.observe(0.5)
                    }
                }
            }
        }
        #expect(counter.value == 80_000)
        let (buckets, sum, count) = histogram.cumulative
        #expect(buckets == [80_000, 80_000])
        #expect(count == 80_000)
        #expect(sum == 40_000)
    }
}
