// What an update of a metric costs on the delivery path (issue 17: "no lock and no allocation"), measured:
// nanoseconds per Counter.increment, per Histogram.observe and per delivery's worth of updates (sent + accepted +
// one response-time observation), on one thread and on two threads sharing the same counters; and the malloc calls
// made during the loops (counted by mallocount.c, preloaded). Built and run by loadtest/metrics/run.sh.
import Foundation
import Synchronization

typealias CountFunction = @convention(c) () -> Int
let countSymbol = dlsym(nil, "clarion_malloc_calls")  // RTLD_DEFAULT: the preloaded library
let mallocCalls: () -> Int = countSymbol.map { pointer in
    let function = unsafeBitCast(pointer, to: CountFunction.self)
    return { function() }
} ?? { -1 }

let registry = MetricsRegistry()
let deliveries = registry.counter("bench_deliveries_total", help: "h", labels: ["platform", "application", "outcome"])
let latency = registry.histogram("bench_seconds", help: "h", labels: ["platform"], buckets: MetricBuckets.latencySeconds)
let sent = deliveries.labels("GCM", "shop", "sent")
let accepted = deliveries.labels("GCM", "shop", "accepted")
let response = latency.labels("GCM")

@inline(never) func measure(_ name: String, iterations: Int, threads: Int = 1, _ body: @escaping @Sendable (Int) -> Void) {
    let mallocBefore = mallocCalls()
    let start = ContinuousClock.now
    if threads == 1 {
        body(iterations)
    } else {
        DispatchQueue.concurrentPerform(iterations: threads) { _ in body(iterations / threads) }
    }
    let elapsed = start.duration(to: .now)
    let mallocs = mallocCalls() - mallocBefore
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    print(String(format: "%-44@ %7.2f ns/op  (%d ops, %d thread%@)  malloc calls during the loop: %d",
                 name as NSString, seconds / Double(iterations) * 1e9, iterations, threads, threads == 1 ? "" : "s", mallocs))
}

@inline(never) func increments(_ counter: Counter, _ count: Int) { for _ in 0..<count { counter.increment() } }
@inline(never) func observations(_ histogram: Histogram, _ count: Int) {
    for i in 0..<count { histogram.observe(Double(i & 1023) * 1e-4) }
}
@inline(never) func deliveryUpdates(_ sent: Counter, _ accepted: Counter, _ histogram: Histogram, _ count: Int) {
    for i in 0..<count {
        sent.increment()
        accepted.increment()
        histogram.observe(Double(i & 1023) * 1e-4)
    }
}

let n = 20_000_000
// Warm up (first touches, lazy runtime work) before measuring.
for _ in 0..<1000 { sent.increment(); response.observe(0.003) }
measure("Counter.increment", iterations: n) { [sent] count in increments(sent, count) }
measure("Histogram.observe (14 buckets)", iterations: n) { [response] count in observations(response, count) }
measure("one delivery: sent + accepted + observe", iterations: n) { [sent, accepted, response] count in
    deliveryUpdates(sent, accepted, response, count)
}
measure("one delivery, 2 threads on the same counters", iterations: n, threads: 2) { [sent, accepted, response] count in
    deliveryUpdates(sent, accepted, response, count)
}
let before = mallocCalls()
_ = deliveries.labels("GCM", "shop", "accepted")
print("resolving a child again (lock + lookup): \(mallocCalls() - before) malloc calls (once per lane, off the hot path)")
