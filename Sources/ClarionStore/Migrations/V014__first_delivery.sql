-- 14: a message's first delivery time
--
-- When a message's first delivery was accepted by a provider (issue 17: the publish-to-first-delivery histogram and
-- the message status). Set by the first checkpoint that records an accepted delivery, with the time that outcome
-- came back; `WHERE first_delivery_at IS NULL` makes every later checkpoint leave it alone, so exactly one
-- transaction, on whichever node, reads it back and observes it. NULL until then, and for a message nothing was
-- delivered to. Nullable with no default: adding it rewrites no row.
ALTER TABLE messages ADD COLUMN first_delivery_at timestamptz;
