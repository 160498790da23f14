-- 13: fan-out counts subscribers a filter policy filtered out
--
-- Subscription filter policies applied at fan-out (docs/architecture.md, "The life of a publish", step 5): a
-- subscriber whose policy does not match the message is counted `filtered` on its shard, apart from `skipped`
-- (disabled or stale endpoints) and never as a failure. Old rows read 0.

ALTER TABLE fanout_shards ADD COLUMN filtered bigint NOT NULL DEFAULT 0;
