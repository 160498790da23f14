extension Schema {
    /// Publish intake without per-row foreign-key checks.
    ///
    /// A foreign key costs PostgreSQL an SPI query and a `FOR KEY SHARE` row lock per inserted row; on the durable
    /// publish path (one `messages` row and one `fanout_shards` row per direct publish) the two checks are a large
    /// share of the writer sessions' work (docs/benchmarks.md). Both references are written by Clarion alone: a
    /// message's account is the authenticated caller's, a shard's message is the row inserted by the same
    /// statement (or the planner's, read from the table). What the constraints also did, cascading deletes, is kept
    /// by statement-level triggers, which cost nothing on insert. The `(account, published_at)` index had no reader.
    static let v9 = """
        ALTER TABLE messages DROP CONSTRAINT messages_account_fkey;
        ALTER TABLE fanout_shards DROP CONSTRAINT fanout_shards_message_fkey;
        DROP INDEX messages_account_published_idx;

        -- ON DELETE CASCADE without a foreign key: deletes the rows of TG_ARGV[0] whose column TG_ARGV[1] names a
        -- deleted row's id.
        CREATE FUNCTION clarion_delete_referencing() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            EXECUTE format('DELETE FROM %I WHERE %I IN (SELECT id FROM gone)', TG_ARGV[0], TG_ARGV[1]);
            RETURN NULL;
        END $$;
        CREATE TRIGGER accounts_delete_messages AFTER DELETE ON accounts
            REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION clarion_delete_referencing('messages', 'account');
        CREATE TRIGGER messages_delete_shards AFTER DELETE ON messages
            REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION clarion_delete_referencing('fanout_shards', 'message');
        """
}

extension Schema {
    /// A direct publish's shard is created when a dispatcher claims it, already leased, not when it is published.
    ///
    /// Inserting the one-endpoint shard with the message (heap row and three btree entries) was about a fifth of
    /// PostgreSQL's CPU on the durable publish path, and the claim then rewrote that row as a non-HOT update (new
    /// entries in all its indexes again). Now a direct message is stored with `planned = false` and no shard; the
    /// claim locks it through `messages_direct_unclaimed_idx`, inserts its shard leased and sets `planned` in the
    /// update that already marks the message Processing. The planner reads only the other kinds through
    /// `messages_unplanned_idx` (its query repeats the predicate so the index proves it), so the two queues do not
    /// scan each other's rows. Messages stored before this version (`planned = true` with a ready shard) are
    /// claimed through their shard as before. An old node during a rolling upgrade is safe too: its planner and a
    /// new claim both lock the message row and re-check `NOT planned`, so only one of them makes its shard.
    ///
    /// A direct message that somehow has a shard but `planned = false` (never written by Clarion) is marked planned
    /// here, so the claim never makes it a second one.
    static let v10 = """
        UPDATE messages m SET planned = true
        WHERE NOT m.planned AND m.target_kind = 'endpoint' AND EXISTS (SELECT 1 FROM fanout_shards s WHERE s.message = m.id);
        DROP INDEX messages_unplanned_idx;
        CREATE INDEX messages_unplanned_idx ON messages (id) WHERE NOT planned AND target_kind <> 'endpoint';
        CREATE INDEX messages_direct_unclaimed_idx ON messages (id) WHERE NOT planned AND target_kind = 'endpoint';
        """
}
