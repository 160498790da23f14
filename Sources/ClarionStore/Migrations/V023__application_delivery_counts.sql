-- 23: exact per-application delivery counts by minute, for the console; event ARNs in their partition
--
-- Issue 17.
-- The console's "last hour" read the delivery log, which logs successes only at the application's
-- SuccessFeedbackSampleRate: its send rate and outcomes were exact only at 100. The dispatcher now adds its outcomes
-- per (application, minute) in the transaction of the checkpoint that writes them (shard, direct batch and retry
-- checkpoints): counts are aggregated in memory and written with one INSERT ... ON CONFLICT DO UPDATE SET n = n +
-- EXCLUDED.n per checkpoint, never one statement per delivery, so nodes add to the same row safely and a checkpoint
-- that rolls back (lost lease) adds nothing. `minute` is the database's clock at the checkpoint (one clock for every
-- node), truncated to the minute; the outcomes counted are those the checkpoint writes, at most a quarter of a
-- second old.
--
-- Columns are the dispatcher's outcome classes (DeliveryOutcome, DeliveryAccounting): `sent` counts provider
-- hand-offs (retries included); `accepted` (token replaced included); the final failures `token_invalid`,
-- `message_invalid`, `credentials_invalid`, `rejected` and `retry_exhausted` (a retryable or auth-token failure
-- given up: attempts used up or nothing to retry with); `retried` (another attempt scheduled, not final);
-- `expired`, `skipped` (disabled or stale endpoint), `filtered` (filter policy), `held_out` (campaign holdout).
--
-- No foreign key: an application deleted while its deliveries are being checkpointed must not fail the checkpoint;
-- application ids are never reused, and rows age out with the delivery log: the dispatcher's hourly housekeeping
-- (`maintainDeliveryLog`) deletes rows older than the log's retention (`deliveryLogRetentionDays`, 30 days): at most
-- 43,200 rows per application that sends every minute.
CREATE TABLE application_delivery_counts (
    application bigint NOT NULL,
    minute timestamptz NOT NULL,
    sent bigint NOT NULL DEFAULT 0,
    accepted bigint NOT NULL DEFAULT 0,
    token_invalid bigint NOT NULL DEFAULT 0,
    message_invalid bigint NOT NULL DEFAULT 0,
    credentials_invalid bigint NOT NULL DEFAULT 0,
    rejected bigint NOT NULL DEFAULT 0,
    retry_exhausted bigint NOT NULL DEFAULT 0,
    retried bigint NOT NULL DEFAULT 0,
    expired bigint NOT NULL DEFAULT 0,
    skipped bigint NOT NULL DEFAULT 0,
    filtered bigint NOT NULL DEFAULT 0,
    held_out bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (application, minute)
);

-- Pruning by age reads this index; the summary reads the primary key (one application, the last 60 minutes).
CREATE INDEX application_delivery_counts_minute_idx ON application_delivery_counts (minute);

-- Issue 16, in this migration because it is the branch's one number: endpoint lifecycle events (V017) wrote their
-- ARNs with the partition `aws` whatever the region. They take the event topic ARN's partition now, as its region
-- (`arn:aws-cn:sns:cn-north-1:...` for a topic in cn-north-1: the partition is the region's, docs/api.md "Regions").
CREATE OR REPLACE FUNCTION clarion_event_document(event_type text, topic_arn text, account_id text, platform text,
                                                  app_name text, endpoint_id uuid, fields jsonb)
RETURNS text LANGUAGE sql STABLE AS $$
    SELECT (jsonb_build_object(
        'EventType', event_type,
        'Timestamp', to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
        'Service', 'SNS',
        'Resource', format('arn:%s:sns:%s:%s:app/%s/%s', split_part(topic_arn, ':', 2), split_part(topic_arn, ':', 4),
                           account_id, platform, app_name),
        'EndpointArn', format('arn:%s:sns:%s:%s:endpoint/%s/%s/%s', split_part(topic_arn, ':', 2),
                              split_part(topic_arn, ':', 4), account_id, platform, app_name, endpoint_id)) || fields)::text
$$;
