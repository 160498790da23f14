import ClarionTransport
/// A pool of HTTP/2 connections to one origin for one credential identity, on one event loop.
///
/// Two ways in: `send` (async, one continuation per request, for ordinary callers) and `submit` (the dispatcher's
/// batch path: no Task and no continuation per request; results come back in batches on the loop thread).
/// Requests beyond the connections' stream capacity wait in a bounded queue; when it is full, callers are told at
/// once (`.overloaded`, or `submit` admitting fewer than offered).
///
/// Lifecycle: the pool runs until `shutdown()`; its loop keeps it alive until then (or until the group stops).
public final class HTTP2ClientPool: Sendable {
    public let configuration: HTTP2PoolConfiguration
    /// Origin + identity + client-certificate hash: how `HTTP2Client` files this pool.
    public let key: HTTP2Client.PoolKey
    public let eventLoop: EventLoop
    private let driver: HTTP2PoolDriver

    /// Creates the pool on the next loop of `group`. Connections open on demand. Throws if `trustedCAPEM` is bad,
    /// or `clientIdentity` is unusable (unreadable certificate or key, or a key that is not the certificate's).
    public init(configuration: HTTP2PoolConfiguration, group: EventLoopGroup) throws(TLSConfigurationError) {
        self.configuration = configuration
        key = HTTP2Client.PoolKey(configuration: configuration)
        let loop = group.next()
        eventLoop = loop
        let driver = try HTTP2PoolDriver(configuration: configuration, loop: loop, resolver: group.resolver)
        self.driver = driver
        loop.execute { driver.start() }
    }

    /// Sends one request and waits for its response or failure.
    public func send(_ request: HTTP2Request) async -> HTTP2Result {
        guard driver.gate.reserve(1) == 1 else { return .failure(.overloaded) }
        let deadline = monotonicNow() &+ (request.timeout ?? configuration.requestTimeout).nanoseconds
        let driver = self.driver
        return await withCheckedContinuation { continuation in
            eventLoop.execute {
                driver.enqueue(PendingRequest(request: request, continuation: continuation, deadline: deadline))
            }
        }
    }

    /// Submits requests for the batch path. Admits a prefix of `requests` (all of them unless the wait queue is
    /// nearly full) and returns how many; the caller keeps the rest and slows down. Each admitted request's result
    /// reaches `sink.receive` exactly once, on this pool's loop thread, carrying the request's `tag`.
    @discardableResult
    public func submit(_ requests: [HTTP2Request], sink: any HTTP2CompletionSink) -> Int {
        guard !requests.isEmpty else { return 0 }
        let admitted = driver.gate.reserve(requests.count)
        guard admitted > 0 else { return 0 }
        let now = monotonicNow()
        let driver = self.driver
        if eventLoop.inEventLoop {
            driver.enqueueBatch(requests, count: admitted, sink: sink, now: now)
        } else {
            eventLoop.execute { driver.enqueueBatch(requests, count: admitted, sink: sink, now: now) }
        }
        return admitted
    }

    /// Requests admitted and not yet on a stream (queued or being handed to the loop).
    public var waitingCount: Int { driver.gate.count }

    /// Closes every connection gracefully (after its streams finish) and opens new ones on demand. APNs: after
    /// `ExpiredProviderToken`, or when the signing key changed.
    public func recycleConnections() {
        let driver = self.driver
        eventLoop.execute { driver.recycleConnections() }
    }

    public func statistics() async -> HTTP2PoolStatistics {
        let driver = self.driver
        return await withCheckedContinuation { continuation in
            eventLoop.execute { continuation.resume(returning: driver.statistics()) }
        }
    }

    /// Sinks with results still to come (tests: the table must not grow with one sink per batch).
    func batcherCount() async -> Int {
        let driver = self.driver
        return await withCheckedContinuation { continuation in
            eventLoop.execute { continuation.resume(returning: driver.batcherCount) }
        }
    }

    /// Fails queued requests with `.shutdown`, lets in-flight ones finish (or time out), closes every connection.
    public func shutdown() async {
        let driver = self.driver
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            eventLoop.execute { driver.shutdown(continuation) }
        }
    }
}
