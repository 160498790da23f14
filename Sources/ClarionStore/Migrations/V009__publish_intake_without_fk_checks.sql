-- 9: publish intake without per-row foreign-key checks
--
-- Publish intake without per-row foreign-key checks.
--
-- A foreign key costs PostgreSQL an SPI query and a `FOR KEY SHARE` row lock per inserted row; on the durable
-- publish path (one `messages` row and one `fanout_shards` row per direct publish) the two checks are a large
-- share of the writer sessions' work (docs/benchmarks.md). Both references are written by Clarion alone: a
-- message's account is the authenticated caller's, a shard's message is the row inserted by the same
-- statement (or the planner's, read from the table). What the constraints also did, cascading deletes, is kept
-- by statement-level triggers, which cost nothing on insert. The `(account, published_at)` index had no reader.

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
