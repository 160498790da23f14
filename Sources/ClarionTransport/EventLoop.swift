#if canImport(Glibc)
import Glibc
#endif
internal import CLinux
import Synchronization

/// Monotonic nanoseconds (CLOCK_MONOTONIC): the loop's clock, also the time unit of the state machines.
package typealias NanoTime = UInt64

@inline(__always)
package func monotonicNow() -> NanoTime {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return NanoTime(ts.tv_sec) &* 1_000_000_000 &+ NanoTime(ts.tv_nsec)
}

package extension Duration {
    /// Whole nanoseconds, clamped to zero for negative durations.
    var nanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        if seconds < 0 { return 0 }
        return UInt64(seconds) &* 1_000_000_000 &+ UInt64(attoseconds / 1_000_000_000)
    }
}

/// Something registered with the loop for fd readiness. Called on the loop thread only.
package protocol EventLoopSelectable: AnyObject {
    func selectableReady(readable: Bool, writable: Bool, failed: Bool)
}

/// Something that wants one call at the end of the current loop turn (to batch writes or completions).
package protocol EventLoopFlushable: AnyObject {
    func flushAtEndOfTurn()
}

/// End-of-turn work runs in this order, so one turn costs one write per connection: results go to their sinks
/// first (which may submit more), then pools hand queued requests to connections, then connections write.
package enum FlushPhase: Int {
    case completions = 0
    case dispatch = 1
    case output = 2
}

/// One thread running `epoll`: fd readiness, timers, and a queue of jobs handed over from other threads
/// (woken through an `eventfd`, drained in batches).
///
/// Confinement: everything but `execute`, `schedule(after:)`, `inEventLoop` and shutdown is loop-thread only.
/// The loop-confined state is why this is `@unchecked Sendable`.
public final class EventLoop: @unchecked Sendable {
    public typealias Job = @Sendable () -> Void

    package let index: Int
    private let threadName: String
    private let epollFD: Int32
    private let wakeFD: Int32
    private let inbox = Mutex<[Job]>([])
    private let loopThread = Atomic<UInt>(0)
    private let stopRequested = Atomic<Bool>(false)
    private let started = Semaphore()
    private var pthread: pthread_t?

    // Loop-thread-only state.
    private var selectables: [Registration] = []
    private var generation: UInt32 = 0
    private var timers = TimerHeap()
    private var flushLists: [[any EventLoopFlushable]] = [[], [], []]
    private var flushSpare: [any EventLoopFlushable] = []
    private var drainingJobs: [Job] = []
    /// How many registered fds (not counting the loop's own wake-up) epoll reported ready in this turn. One means
    /// a single connection has the loop to itself: a server answers it in pieces (`HTTP2ServerConnection.inputSlice`).
    package private(set) var readyThisTurn = 0
    /// Shared read buffer for every connection on this loop (one thread, so one buffer is enough).
    package let readBuffer: UnsafeMutableRawBufferPointer
    /// Shared plaintext buffer for TLS connections on this loop.
    package let plaintextBuffer: UnsafeMutableRawBufferPointer

    private struct Registration {
        var handler: (any EventLoopSelectable)?
        var generation: UInt32
    }

    init(index: Int, threadName: String = "clarion-h2") throws {
        self.index = index
        self.threadName = threadName
        let ep = clarion_epoll_create()
        guard ep >= 0 else { throw EventLoopError.system("epoll_create1", errno) }
        let wake = clarion_eventfd()
        guard wake >= 0 else {
            close(ep)
            throw EventLoopError.system("eventfd", errno)
        }
        epollFD = ep
        wakeFD = wake
        readBuffer = .allocate(byteCount: 256 * 1024, alignment: 16)
        plaintextBuffer = .allocate(byteCount: 256 * 1024, alignment: 16)
        clarion_epoll_ctl(ep, Epoll.add, wake, Epoll.readable, UInt64(UInt32(bitPattern: wake)))
    }

    deinit {
        close(epollFD)
        close(wakeFD)
        readBuffer.deallocate()
        plaintextBuffer.deallocate()
    }

    // MARK: - Any thread

    /// True when called on this loop's thread.
    public var inEventLoop: Bool {
        loopThread.load(ordering: .relaxed) == UInt(bitPattern: Int(bitPattern: pthread_self()))
    }

    /// Runs `job` on the loop thread in a later turn. Jobs handed over in one turn run together.
    public func execute(_ job: @escaping Job) {
        let wasEmpty = inbox.withLock { jobs in
            jobs.append(job)
            return jobs.count == 1
        }
        if wasEmpty { wake() }
    }

    /// Runs `job` on the loop thread after `delay`.
    public func schedule(after delay: Duration, _ job: @escaping Job) {
        execute { [self] in _ = addTimer(after: delay.nanoseconds, job) }
    }

    private func wake() {
        var one: UInt64 = 1
        _ = withUnsafeBytes(of: &one) { write(wakeFD, $0.baseAddress, 8) }
    }

    func start() {
        let box = Unmanaged.passRetained(self).toOpaque()
        var thread = pthread_t()
        let rc = pthread_create(&thread, nil, { raw in
            let loop = Unmanaged<EventLoop>.fromOpaque(raw!).takeRetainedValue()
            loop.run()
            return nil
        }, box)
        precondition(rc == 0, "pthread_create failed: \(rc)")
        pthread = thread
        // Wait until the thread has published its id so `inEventLoop` is right from the start.
        started.wait()
    }

    /// Stops the thread after the current turn and joins it. Jobs still queued are dropped.
    func stopAndJoin() {
        stopRequested.store(true, ordering: .releasing)
        wake()
        if let thread = pthread, !inEventLoop {
            pthread_join(thread, nil)
            pthread = nil
        }
    }

    // MARK: - Loop thread

    private func run() {
        loopThread.store(UInt(bitPattern: Int(bitPattern: pthread_self())), ordering: .releasing)
        started.signal()
        _ = clarion_set_thread_name(String("\(threadName)-\(index)".prefix(15)))
        let maxEvents = 256
        let eventFlags = UnsafeMutablePointer<UInt32>.allocate(capacity: maxEvents)
        let eventData = UnsafeMutablePointer<UInt64>.allocate(capacity: maxEvents)
        defer {
            eventFlags.deallocate()
            eventData.deallocate()
        }
        while !stopRequested.load(ordering: .acquiring) {
            let timeout = timers.nextTimeoutMilliseconds(now: monotonicNow())
            let count = clarion_epoll_wait(epollFD, eventFlags, eventData, Int32(maxEvents), timeout)
            readyThisTurn = 0
            for i in 0..<Int(max(count, 0)) where Int32(bitPattern: UInt32(truncatingIfNeeded: eventData[i])) != wakeFD {
                readyThisTurn += 1
            }
            if count > 0 {
                for i in 0..<Int(count) {
                    let data = eventData[i]
                    let fd = Int32(bitPattern: UInt32(truncatingIfNeeded: data))
                    if fd == wakeFD {
                        var value: UInt64 = 0
                        _ = withUnsafeMutableBytes(of: &value) { read(wakeFD, $0.baseAddress, 8) }
                        continue
                    }
                    let gen = UInt32(truncatingIfNeeded: data >> 32)
                    guard Int(fd) < selectables.count, selectables[Int(fd)].generation == gen,
                          let handler = selectables[Int(fd)].handler else { continue }
                    let flags = eventFlags[i]
                    handler.selectableReady(
                        readable: flags & (Epoll.readable | Epoll.hangup | Epoll.readHangup) != 0,
                        writable: flags & Epoll.writable != 0,
                        failed: flags & Epoll.error != 0)
                }
            }
            runJobs()
            let now = monotonicNow()
            // One at a time: a timer body may add or cancel timers.
            while let body = timers.popDue(now: now) { body() }
            runFlushes()
        }
        // Release handlers so connections can be freed.
        selectables.removeAll()
        flushLists = [[], [], []]
        timers = TimerHeap()
    }

    private func runJobs() {
        inbox.withLock { swap(&$0, &drainingJobs) }
        guard !drainingJobs.isEmpty else { return }
        for job in drainingJobs { job() }
        drainingJobs.removeAll(keepingCapacity: true)
    }

    private func runFlushes() {
        // A flush may schedule more (completions that submit new requests): run the phases until quiet, always
        // the earliest non-empty phase first.
        var rounds = 0
        while rounds < 32 {
            guard let phase = flushLists.firstIndex(where: { !$0.isEmpty }) else { return }
            swap(&flushSpare, &flushLists[phase])
            for item in flushSpare { item.flushAtEndOfTurn() }
            flushSpare.removeAll(keepingCapacity: true)
            rounds += 1
        }
    }

    /// Asks for one `flushAtEndOfTurn()` call at the end of this turn, in `phase`. Callers keep their own
    /// "already scheduled" flag to avoid duplicates.
    package func scheduleFlush(_ item: any EventLoopFlushable, phase: FlushPhase = .output) {
        flushLists[phase.rawValue].append(item)
    }

    // MARK: fd registration (loop thread)

    package func register(fd: Int32, handler: any EventLoopSelectable, readable: Bool, writable: Bool) {
        let slot = Int(fd)
        if slot >= selectables.count {
            selectables.append(contentsOf: repeatElement(Registration(handler: nil, generation: 0),
                                                         count: slot + 1 - selectables.count))
        }
        generation &+= 1
        selectables[slot] = Registration(handler: handler, generation: generation)
        clarion_epoll_ctl(epollFD, Epoll.add, fd, interest(readable: readable, writable: writable),
                          UInt64(UInt32(bitPattern: fd)) | (UInt64(generation) << 32))
    }

    package func setInterest(fd: Int32, readable: Bool, writable: Bool) {
        let slot = Int(fd)
        guard slot < selectables.count else { return }
        clarion_epoll_ctl(epollFD, Epoll.modify, fd, interest(readable: readable, writable: writable),
                          UInt64(UInt32(bitPattern: fd)) | (UInt64(selectables[slot].generation) << 32))
    }

    /// Removes the fd from epoll. Call before `close(fd)`.
    package func deregister(fd: Int32) {
        let slot = Int(fd)
        guard slot < selectables.count else { return }
        selectables[slot] = Registration(handler: nil, generation: 0)
        clarion_epoll_ctl(epollFD, Epoll.delete, fd, 0, 0)
    }

    private func interest(readable: Bool, writable: Bool) -> UInt32 {
        var flags: UInt32 = 0
        if readable { flags |= Epoll.readable | Epoll.readHangup }
        if writable { flags |= Epoll.writable }
        return flags
    }

    // MARK: timers (loop thread)

    /// Calls `body` on the loop thread once `delay` nanoseconds have passed. Returns an id for `cancelTimer`.
    @discardableResult
    package func addTimer(after delay: UInt64, _ body: @escaping () -> Void) -> UInt64 {
        timers.add(deadline: monotonicNow() &+ delay, body)
    }

    @discardableResult
    package func addTimer(at deadline: NanoTime, _ body: @escaping () -> Void) -> UInt64 {
        timers.add(deadline: deadline, body)
    }

    package func cancelTimer(_ id: UInt64) {
        timers.cancel(id)
    }
}

/// epoll's constants (Linux ABI values; the C macros do not import).
enum Epoll {
    static let add: Int32 = 1
    static let delete: Int32 = 2
    static let modify: Int32 = 3
    static let readable: UInt32 = 0x001
    static let writable: UInt32 = 0x004
    static let error: UInt32 = 0x008
    static let hangup: UInt32 = 0x010
    static let readHangup: UInt32 = 0x2000
}

enum EventLoopError: Error, CustomStringConvertible {
    case system(String, Int32)

    var description: String {
        switch self {
        case .system(let call, let code): "\(call) failed: \(String(cString: strerror(code)))"
        }
    }
}

/// A min-heap of deadlines; cancelled timers stay in the heap and are skipped when they come up.
struct TimerHeap {
    private struct Entry {
        var deadline: NanoTime
        var id: UInt64
    }

    private var heap: [Entry] = []
    private var bodies: [UInt64: () -> Void] = [:]
    private var nextID: UInt64 = 1

    mutating func add(deadline: NanoTime, _ body: @escaping () -> Void) -> UInt64 {
        let id = nextID
        nextID &+= 1
        bodies[id] = body
        heap.append(Entry(deadline: deadline, id: id))
        siftUp(heap.count - 1)
        return id
    }

    mutating func cancel(_ id: UInt64) {
        bodies[id] = nil
    }

    func nextTimeoutMilliseconds(now: NanoTime) -> Int32 {
        guard let first = heap.first else { return 1000 }
        if first.deadline <= now { return 0 }
        // Round up so a timer never fires early.
        let ms = (first.deadline - now + 999_999) / 1_000_000
        return Int32(min(ms, 1000))
    }

    /// The body of the next timer due at `now` (skipping cancelled ones), removed from the heap.
    mutating func popDue(now: NanoTime) -> (() -> Void)? {
        while let first = heap.first, first.deadline <= now {
            popFirst()
            if let body = bodies.removeValue(forKey: first.id) { return body }
        }
        return nil
    }

    private mutating func popFirst() {
        let last = heap.removeLast()
        if !heap.isEmpty {
            heap[0] = last
            siftDown(0)
        }
    }

    private mutating func siftUp(_ start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            if heap[parent].deadline <= heap[child].deadline { break }
            heap.swapAt(parent, child)
            child = parent
        }
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        let count = heap.count
        while true {
            let left = parent * 2 + 1
            if left >= count { return }
            var smallest = left
            if left + 1 < count && heap[left + 1].deadline < heap[left].deadline { smallest = left + 1 }
            if heap[parent].deadline <= heap[smallest].deadline { return }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
    }
}

/// A few event loops, about one per core. Owns its threads: `shutdown()` stops and joins them.
public final class EventLoopGroup: Sendable {
    public let loops: [EventLoop]
    private let nextIndex = Atomic<Int>(0)
    private let stopped = Atomic<Bool>(false)
    package let resolver: HostResolver

    /// Starts `threadCount` loop threads (at least one), named `threadName-N`.
    public init(threadCount: Int = 1, threadName: String = "clarion-h2") throws {
        var loops: [EventLoop] = []
        for i in 0..<max(1, threadCount) {
            let loop = try EventLoop(index: i, threadName: threadName)
            loop.start()
            loops.append(loop)
        }
        self.loops = loops
        resolver = HostResolver()
    }

    /// The next loop, round robin.
    public func next() -> EventLoop {
        let i = nextIndex.wrappingAdd(1, ordering: .relaxed).oldValue
        return loops[i % loops.count]
    }

    /// Stops and joins every loop thread. Shut servers and pools down first. Must not be called on a loop thread.
    public func shutdown() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        for loop in loops { loop.stopAndJoin() }
        resolver.stop()
    }

    deinit {
        shutdown()
    }
}
