extension Schema {
    /// Publish intake without per-row foreign-key checks.
    ///
    /// A foreign key costs PostgreSQL an SPI query and a `FOR KEY SHARE` row lock per inserted row; on the durable
    /// publish path (one `messages` row and one `fanout_shards` row per direct publish) the two checks were 19% of
    /// the writer sessions' CPU (perf, docs/benchmarks.md). Both references are written by Clarion alone: a
    /// message's account is the authenticated caller's, a shard's message is the row inserted by the same
    /// statement (or the planner's, read from the table). What the constraints also did, cascading deletes, is kept
    /// by statement-level triggers, which cost nothing on insert. The `(account, published_at)` index had no reader.
    static let v9 = """
        ALTER TABLE messages DROP CONSTRAINT messages_account_fkey;
        ALTER TABLE fanout_shards DROP CONSTRAINT fanout_shards_message_fkey;
        DROP INDEX messages_account_published_idx;

        CREATE FUNCTION clarion_delete_account_messages() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            DELETE FROM messages WHERE account IN (SELECT id FROM gone);
            RETURN NULL;
        END $$;
        CREATE TRIGGER accounts_delete_messages AFTER DELETE ON accounts
            REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION clarion_delete_account_messages();

        CREATE FUNCTION clarion_delete_message_shards() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            DELETE FROM fanout_shards WHERE message IN (SELECT id FROM gone);
            RETURN NULL;
        END $$;
        CREATE TRIGGER messages_delete_shards AFTER DELETE ON messages
            REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION clarion_delete_message_shards();
        """
}
