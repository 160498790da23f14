import Foundation
import Synchronization
import Testing
@testable import ClarionProviders

@Suite struct TokenWorkerTests {
    final class Log: Sendable {
        let entries = Mutex<[String]>([])
        func add(_ entry: String) { entries.withLock { $0.append(entry) } }
        var all: [String] { entries.withLock { $0 } }
    }

    @Test("Token worker: jobs run in order on the worker's own thread; timed jobs run when due; nothing runs after shutdown")
    func ordering() async throws {
        let worker = TokenWorker()
        let log = Log()
        worker.schedule(after: 0.15) { log.add("timer") }
        for i in 0..<3 {
            worker.execute { log.add("job\(i)\(Thread.isMainThread ? "-main" : "")") }
        }
        // At least three: on a busy machine this task may wake only after the 150 ms timer has run as well (the
        // whole suite in parallel starved the cooperative pool for longer than that, and `== 3` then never held).
        #expect(try await eventually { log.all.count >= 3 })
        #expect(Array(log.all.prefix(3)) == ["job0", "job1", "job2"])
        #expect(try await eventually { log.all.count == 4 })
        #expect(log.all.last == "timer")
        worker.schedule(after: 0.05) { log.add("late timer") }
        await worker.shutdown()
        #expect(worker.execute { log.add("after") } == false)
        try await Task.sleep(for: .milliseconds(100))
        #expect(log.all.count == 4)
    }
}
