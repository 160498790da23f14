-- 4: fan-out: planned targets per shard, retries remember their shard
--
-- Fan-out accounting (ClarionStore/Jobs): a shard records how many targets its range held when it was
-- planned (progress before the shard is worked), and a retry remembers its shard so its outcome is added
-- to that shard's counters (no per-message hot row).

ALTER TABLE fanout_shards ADD COLUMN planned_targets bigint NOT NULL DEFAULT 0;
ALTER TABLE delivery_retries ADD COLUMN shard bigint REFERENCES fanout_shards(id) ON DELETE CASCADE;
CREATE INDEX delivery_retries_lease_idx ON delivery_retries (lease_owner) WHERE lease_owner IS NOT NULL;
