-- 2: messages, fan-out shards, retries, delivery accounting

CREATE TABLE messages (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    external_id   uuid NOT NULL UNIQUE,
    account       bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    -- endpoint | topic | user | audience
    target_kind   text NOT NULL CHECK (target_kind IN ('endpoint', 'topic', 'user', 'audience')),
    target_id     bigint,
    target        jsonb NOT NULL DEFAULT '{}',
    message       text NOT NULL,
    structure     text,
    subject       text,
    attributes    jsonb NOT NULL DEFAULT '{}',
    campaign      bigint,
    published_at  timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz,
    state         text NOT NULL DEFAULT 'Enqueued'
                  CHECK (state IN ('Enqueued', 'Processing', 'Completed', 'Failed', 'Expired')),
    planned       boolean NOT NULL DEFAULT false,
    started_at    timestamptz,
    completed_at  timestamptz
);
CREATE INDEX messages_unplanned_idx ON messages (id) WHERE NOT planned;
CREATE INDEX messages_account_published_idx ON messages (account, published_at);

-- A slice of one message's targets in keyset order (lo, hi], claimed under a lease.
CREATE TABLE fanout_shards (
    id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    message           bigint NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    lo                bigint NOT NULL,
    hi                bigint NOT NULL,
    checkpoint        bigint NOT NULL,
    state             text NOT NULL DEFAULT 'ready' CHECK (state IN ('ready', 'leased', 'done')),
    lease_owner       text,
    lease_expires_at  timestamptz,
    claims            integer NOT NULL DEFAULT 0,
    -- Counters of this shard, added at each checkpoint (no hot row per message).
    targeted          bigint NOT NULL DEFAULT 0,
    sent              bigint NOT NULL DEFAULT 0,
    accepted          bigint NOT NULL DEFAULT 0,
    failed            bigint NOT NULL DEFAULT 0,
    retried           bigint NOT NULL DEFAULT 0,
    skipped           bigint NOT NULL DEFAULT 0,
    expired           bigint NOT NULL DEFAULT 0,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    CHECK (lo <= checkpoint AND checkpoint <= hi)
);
CREATE INDEX fanout_shards_claimable_idx ON fanout_shards (state, lease_expires_at) WHERE state <> 'done';
CREATE INDEX fanout_shards_message_idx ON fanout_shards (message);

-- Failures by reason, per shard, added at checkpoints.
CREATE TABLE shard_failures (
    shard    bigint NOT NULL REFERENCES fanout_shards(id) ON DELETE CASCADE,
    reason   text NOT NULL,
    count    bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (shard, reason)
);

-- Deliveries waiting for another attempt.
CREATE TABLE delivery_retries (
    id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    message           bigint NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    endpoint          bigint NOT NULL REFERENCES endpoints(id) ON DELETE CASCADE,
    attempt           integer NOT NULL,
    not_before        timestamptz NOT NULL,
    last_reason       text,
    lease_owner       text,
    lease_expires_at  timestamptz,
    CONSTRAINT delivery_retries_message_endpoint_key UNIQUE (message, endpoint)
);
CREATE INDEX delivery_retries_due_idx ON delivery_retries (not_before);

-- SNS-style delivery status: every failure, sampled successes. Partitioned by day; a default
-- partition catches rows for days whose partition was not made yet, so nothing is lost.
CREATE TABLE delivery_log (
    logged_at          timestamptz NOT NULL DEFAULT now(),
    message            bigint NOT NULL,
    endpoint           bigint NOT NULL,
    status             text NOT NULL,
    provider_status    integer,
    provider_response  text,
    attempts           integer NOT NULL DEFAULT 1,
    dwell_ms           integer
) PARTITION BY RANGE (logged_at);
CREATE TABLE delivery_log_default PARTITION OF delivery_log DEFAULT;
CREATE INDEX delivery_log_message_idx ON delivery_log (message);
