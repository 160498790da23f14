@testable import ClarionStore
import Synchronization
import Testing

/// Rules of `DatabaseHealth` and of the error codes it reads (the fault tests in Tests/e2e show them end to end).
@Suite("Database health (pure)")
struct DatabaseHealthTests {
    final class Events: Sendable {
        let list = Mutex<[DatabaseHealth.Event]>([])
        var count: Int { list.withLock { $0.count } }
        func add(_ event: DatabaseHealth.Event) { list.withLock { $0.append(event) } }
    }

    @Test("an outage is reported once with its first cause, however many calls fail; errors that are not outages are not")
    func oneLinePerOutage() {
        let events = Events()
        let health = DatabaseHealth(settle: .seconds(60)) { events.add($0) }
        health.failed(StoreError(.uniqueViolation, "duplicate key"))
        health.failed(StoreError(.notFound, "no row"))
        #expect(events.count == 0 && !health.isDown)
        health.failed(StoreError(.unavailable, "cannot connect to PostgreSQL: Connection refused"))
        for _ in 0..<1000 { health.failed(StoreError(.connectionLost, "server closed the connection unexpectedly")) }
        #expect(events.count == 1 && health.isDown)
        guard case .unavailable(let cause)? = events.list.withLock({ $0.first }) else { Issue.record("no event"); return }
        #expect(cause.code == .unavailable)
        // A success right after failures (reads still work on a full disk) does not end the outage.
        health.succeeded()
        #expect(events.count == 1 && health.isDown)
    }

    @Test("every failure is counted by its code for clarion_db_errors_total, outage or not")
    func errorsByCode() {
        let health = DatabaseHealth(settle: .seconds(60)) { _ in }
        health.failed(StoreError(.uniqueViolation, "duplicate key"))
        health.failed(StoreError(.unavailable, "cannot connect"))
        health.failed(StoreError(.unavailable, "cannot connect"))
        health.succeeded()
        #expect(health.errorsByCode == ["uniqueViolation": 1, "unavailable": 2])
    }

    @Test("the first success once failures stopped for `settle` reports the end, with the failures counted; the next outage is reported again")
    func endAndAgain() async throws {
        let events = Events()
        let health = DatabaseHealth(settle: .milliseconds(50)) { events.add($0) }
        health.failed(StoreError(.insufficientResources, "could not extend file: No space left on device", sqlState: "53100"))
        health.failed(StoreError(.insufficientResources, "could not extend file: No space left on device", sqlState: "53100"))
        try await Task.sleep(for: .milliseconds(80))
        health.succeeded()
        health.succeeded()
        #expect(events.count == 2 && !health.isDown)
        guard case .available(_, let failures)? = events.list.withLock({ $0.last }) else { Issue.record("no end"); return }
        #expect(failures == 2)
        health.failed(StoreError(.connectionLost, "terminating connection due to administrator command"))
        #expect(events.count == 3 && health.isDown)
    }

    @Test("SQLSTATE class 53 (disk full, out of memory, too many connections) is insufficientResources: an outage, transient")
    func insufficientResources() {
        for state in ["53000", "53100", "53200", "53300", "53400"] {
            let code = StoreError.code(forSQLState: state)
            #expect(code == .insufficientResources)
            #expect(StoreError(code, "x").isOutage && StoreError(code, "x").isTransient)
        }
        #expect(StoreError.code(forSQLState: "57P01") == .connectionLost)
        // A full batcher queue is transient (retry) but not an outage of the database.
        #expect(StoreError(.busy, "queue full").isTransient && !StoreError(.busy, "queue full").isOutage)
        #expect(!StoreError(.queryFailed, "syntax").isTransient && !StoreError(.checkViolation, "x").isTransient)
    }
}
