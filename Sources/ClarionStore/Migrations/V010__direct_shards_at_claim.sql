-- 10: direct messages get their shard when claimed
--
-- A direct publish's shard is created when a dispatcher claims it, already leased, not when it is published.
--
-- Inserting the one-endpoint shard with the message (heap row and three btree entries) was about a fifth of
-- PostgreSQL's CPU on the durable publish path, and the claim then rewrote that row as a non-HOT update (new
-- entries in all its indexes again). Now a direct message is stored with `planned = false` and no shard; the
-- claim locks it through `messages_direct_unclaimed_idx`, inserts its shard leased and sets `planned` in the
-- update that already marks the message Processing. The planner reads only the other kinds through
-- `messages_unplanned_idx` (its query repeats the predicate so the index proves it), so the two queues do not
-- scan each other's rows. Messages stored before this version (`planned = true` with a ready shard) are
-- claimed through their shard as before. An old node during a rolling upgrade is safe too: its planner and a
-- new claim both lock the message row and re-check `NOT planned`, so only one of them makes its shard.
--
-- A direct message that somehow has a shard but `planned = false` (never written by Clarion) is marked planned
-- here, so the claim never makes it a second one.

UPDATE messages m SET planned = true
WHERE NOT m.planned AND m.target_kind = 'endpoint' AND EXISTS (SELECT 1 FROM fanout_shards s WHERE s.message = m.id);
DROP INDEX messages_unplanned_idx;
CREATE INDEX messages_unplanned_idx ON messages (id) WHERE NOT planned AND target_kind <> 'endpoint';
CREATE INDEX messages_direct_unclaimed_idx ON messages (id) WHERE NOT planned AND target_kind = 'endpoint';
