import ClarionStore
import Foundation

/// `clarion messages watch <id>`: a live progress line (bar, counts, rate, ETA) until the message reaches a final
/// state. The rate is measured between polls from the outcomes counted so far, and the ETA divides what is left by it.
struct MessageWatch {
    let jobs: FanOutJobs
    let id: UUID
    let interval: Double
    let interactive: Bool

    /// Polls until the message is final; returns the exit code (0 Completed, 1 Failed or Expired, 64 unknown id).
    func run() throws(NodeError) -> Int32 {
        var previous: (at: Date, done: Int64)?
        var rate = 0.0
        while true {
            let status: MessageStatus?
            do {
                let jobs = self.jobs
                let id = self.id
                status = try blockingAwait { () async throws(StoreError) in try await jobs.messageStatus(externalID: id) }
            } catch {
                throw NodeError(.unavailable, "database: \(error)")
            }
            guard let status else { throw NodeError(.usage, "no message \(id)") }
            let c = status.counters
            let done = c.finished
            let now = Date()
            if let previous, now.timeIntervalSince(previous.at) > 0 {
                let instant = Double(done - previous.done) / now.timeIntervalSince(previous.at)
                rate = rate == 0 ? instant : 0.5 * rate + 0.5 * instant
            }
            previous = (now, done)
            let line = Self.line(status: status, done: done, rate: rate)
            if interactive {
                FileHandle.standardOutput.write(Data(("\r\u{1B}[2K" + line).utf8))
            } else {
                say(line)
            }
            if status.state.isFinal {
                if interactive { say("") }
                let failures = status.failuresByReason.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
                if !failures.isEmpty { say("failures: " + failures.joined(separator: " ")) }
                return status.state == .completed ? 0 : 1
            }
            Thread.sleep(forTimeInterval: interval)
        }
    }

    static func line(status: MessageStatus, done: Int64, rate: Double) -> String {
        let total = max(status.plannedTargets, status.counters.targeted, done)
        let fraction = total > 0 ? min(1, Double(done) / Double(total)) : (status.state.isFinal ? 1 : 0)
        let width = 30
        let filled = Int((fraction * Double(width)).rounded(.down))
        let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
        let percent = String(format: "%5.1f%%", fraction * 100)
        var text = "[\(bar)] \(percent) \(done)/\(total) \(status.state.rawValue)"
        text += " accepted \(status.counters.accepted) failed \(status.counters.failed)"
        text += " skipped \(status.counters.skipped) expired \(status.counters.expired)"
        if status.counters.filtered > 0 { text += " filtered \(status.counters.filtered)" }
        if rate > 0 {
            text += String(format: " %.0f/s", rate)
            if !status.state.isFinal, total > done {
                text += String(format: " ETA %.0fs", Double(total - done) / rate)
            }
        }
        return text
    }
}
