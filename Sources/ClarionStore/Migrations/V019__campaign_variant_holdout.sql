-- 19: campaign variants: endpoints held out are counted per shard
--
-- Campaign variants (A/B) and holdout (issue 18).
--
-- A campaign publish with `variants` stores one message per variant and topic, each marked with the reserved
-- attribute `Clarion.Variant` (ClarionCore `VariantSplit`): its shard workers send only to the endpoints whose
-- stable choice is its variant, and count the endpoints of the holdout (`holdout` percent, chosen independently of
-- the variant) as `held_out` on their shard, never sent. Per-variant reports group a campaign's messages by that
-- attribute. Old rows read 0.

ALTER TABLE fanout_shards ADD COLUMN held_out bigint NOT NULL DEFAULT 0;
