-- 18: a topic's recent messages, for the web console
--
-- The console's topic page lists the latest messages published to each topic (GET /v1/topics/{id}/summary). Without
-- an index that is a scan of every message the node ever stored. Partial: only topic messages get an entry, so a
-- direct publish (the hot path) writes nothing more.
CREATE INDEX messages_topic_recent_idx ON messages (target_id, id) WHERE target_kind = 'topic';
