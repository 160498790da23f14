import Foundation

/// Runs async work from a synchronous, non-cooperative thread (the CLI's main thread, node start-up) and
/// waits for it. Never call it from async code: it blocks the calling thread.
func blockingAwait<T: Sendable, E: Error>(_ body: @escaping @Sendable () async throws(E) -> T) throws(E) -> T {
    let done = DispatchSemaphore(value: 0)
    nonisolated(unsafe) var outcome: Result<T, E>?
    Task.detached {
        do throws(E) {
            outcome = .success(try await body())
        } catch {
            outcome = .failure(error)
        }
        done.signal()
    }
    done.wait()
    return try outcome!.get()
}
