internal import ClarionTransport

/// How long a connection may take over each part of a request, in the loop's clock (monotonic nanoseconds).
///
/// Every byte resets the idle timeout, so on its own it lets a client that sends a byte now and then keep its
/// connection for ever; enough such clients hold every connection the server allows. Hence a total deadline per
/// head, counted from its first byte, and per body, counted from the end of its head and growing with the body's
/// size at a minimum rate:
///
///     head: first byte + requestHeadTimeout                      (20 s by default)
///     body: end of head + requestBodyTimeout + size / rate       (30 s + 1 s per 16 KiB by default:
///                                                                 256 KiB 46 s, 1 MiB 94 s)
///
/// The size is the declared `Content-Length`, or the route's limit for a chunked body (its size is not known
/// ahead). A pure value: the connection asks it for deadlines and compares them with the loop's clock.
struct RequestDeadlines: Sendable {
    let idle: NanoTime
    let head: NanoTime
    let body: NanoTime
    /// Bytes per second; 0 adds nothing for size.
    let bodyMinimumRate: Int

    init(idle: Duration, head: Duration, body: Duration, bodyMinimumRate: Int) {
        self.idle = Self.nanoseconds(idle)
        self.head = Self.nanoseconds(head)
        self.body = Self.nanoseconds(body)
        self.bodyMinimumRate = max(0, bodyMinimumRate)
    }

    func headDeadline(firstByteAt start: NanoTime) -> NanoTime {
        start &+ head
    }

    func bodyDeadline(headEndedAt start: NanoTime, expectedBytes: Int) -> NanoTime {
        guard bodyMinimumRate > 0, expectedBytes > 0 else { return start &+ body }
        // In floating point: a route's limit may be huge; a day is plenty for any body.
        let seconds = min(Double(expectedBytes) / Double(bodyMinimumRate), 86_400)
        return start &+ body &+ NanoTime(seconds * 1_000_000_000)
    }

    /// How often each loop sweeps its connections for deadlines: a quarter of the shortest timeout, between 10 ms
    /// and a second (so a deadline is met within a quarter of its length, and production sweeps once a second).
    var sweepInterval: NanoTime {
        min(max(min(idle, head, body) / 4, 10_000_000), 1_000_000_000)
    }

    static func nanoseconds(_ duration: Duration) -> NanoTime {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0, attoseconds >= 0 else { return 0 }
        return NanoTime(seconds) &* 1_000_000_000 &+ NanoTime(attoseconds / 1_000_000_000)
    }
}
