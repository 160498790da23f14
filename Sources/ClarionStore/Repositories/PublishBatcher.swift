/// Group commit for publishes (docs/architecture.md, "The life of a publish", step 2): `GroupCommit` writing
/// messages with `MessageRepository.write`, one pipelined round trip and one commit per batch. A publish is
/// acknowledged only after the commit that holds it; past `maxQueued` waiting messages it fails fast with `.busy`.
public final class PublishBatcher: Sendable {
    private let group: GroupCommit<NewMessage, MessageID>

    /// Told of each batch written: its size and how long writing and committing it took (for `/metrics`).
    private let onBatch: (@Sendable (_ messages: Int, _ write: Duration) -> Void)?

    public init(pool: PGPool, window: Duration = .microseconds(250), maxBatch: Int = 256, writers: Int = 2,
                maxQueued: Int = 50_000, onBatch: (@Sendable (_ messages: Int, _ write: Duration) -> Void)? = nil) {
        self.onBatch = onBatch
        group = GroupCommit(pool: pool, name: "publish", items: "publishes", window: window, maxBatch: maxBatch, writers: writers,
                            maxQueued: maxQueued, write: { messages, connection in
            guard let onBatch else { return MessageRepository.write(messages, on: connection) }
            let started = ContinuousClock.now
            let results = MessageRepository.write(messages, on: connection)
            onBatch(messages.count, ContinuousClock.now - started)
            return results
        })
    }

    public var window: Duration { group.window }
    public var maxBatch: Int { group.maxBatch }
    public var writers: Int { group.writers }
    public var maxQueued: Int { group.maxQueued }
    /// Batches committed so far.
    public var batchesWritten: Int { group.batchesWritten }

    /// Stores the message durably; returns once its batch committed.
    public func publish(_ message: NewMessage) async throws(StoreError) -> MessageID {
        try await group.commit(message)
    }

    /// Stores several messages durably (one request's targets, a PublishBatch), in one batch when it has room.
    /// Results are in the order of `messages`.
    public func publish(_ messages: [NewMessage]) async -> [Result<MessageID, StoreError>] {
        await group.commit(messages)
    }

    /// `publish(_:)` for callers that answer from a callback: `completion` gets the results in order, exactly once.
    public func submit(_ messages: [NewMessage], completion: @escaping @Sendable ([Result<MessageID, StoreError>]) -> Void) {
        group.submit(messages, completion: completion)
    }

    /// Queues the message; `completion` is called exactly once, on a writer thread right after the commit that
    /// holds it (or at once when the batcher refuses it). The API's Publish replies from here without waking a
    /// task per message.
    public func submit(_ message: NewMessage, completion: @escaping @Sendable (Result<MessageID, StoreError>) -> Void) {
        group.submit(message, completion: completion)
    }

    /// Refuses new publishes, lets the writers finish what is queued, and waits for them to stop.
    public func shutdown() { group.shutdown() }
}
