-- 1: accounts, applications, endpoints, topics, subscriptions

CREATE TABLE accounts (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id  text NOT NULL UNIQUE CHECK (account_id ~ '^[0-9]{12}$'),
    name        text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- SigV4 key pairs. The secret is needed in clear to verify signatures, so it is sealed
-- (AES-256-GCM under the master key), not hashed.
CREATE TABLE access_keys (
    access_key_id  text PRIMARY KEY CHECK (length(access_key_id) BETWEEN 16 AND 128),
    account        bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    secret_sealed  bytea NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    disabled_at    timestamptz
);
CREATE INDEX access_keys_account_idx ON access_keys (account);

-- Bearer keys of the native API: only a SHA-256 hash is stored.
CREATE TABLE api_keys (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account     bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    key_hash    bytea NOT NULL UNIQUE,
    prefix      text NOT NULL,
    name        text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now(),
    revoked_at  timestamptz
);
CREATE INDEX api_keys_account_idx ON api_keys (account);

CREATE TABLE platform_applications (
    id                  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account             bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    name                text NOT NULL CHECK (name ~ '^[A-Za-z0-9_.-]{1,256}$'),
    platform            text NOT NULL CHECK (platform IN ('APNS', 'APNS_SANDBOX', 'GCM', 'ADM')),
    -- PlatformCredential / PlatformPrincipal, sealed with AES-256-GCM; the row id is the
    -- associated data, so a ciphertext copied to another row does not open.
    credentials_sealed  bytea,
    attributes          jsonb NOT NULL DEFAULT '{}',
    enabled             boolean NOT NULL DEFAULT true,
    disabled_reason     text,
    disabled_at         timestamptz,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT platform_applications_name_key UNIQUE (account, platform, name)
);

CREATE TABLE endpoints (
    id                   bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    external_id          uuid NOT NULL UNIQUE,
    application          bigint NOT NULL REFERENCES platform_applications(id) ON DELETE CASCADE,
    token                text NOT NULL CHECK (length(token) BETWEEN 1 AND 4096),
    user_id              text,
    custom_user_data     text CHECK (octet_length(custom_user_data) <= 2048),
    enabled              boolean NOT NULL DEFAULT true,
    disabled_reason      text,
    disabled_at          timestamptz,
    app_version          text,
    language             text,
    os_type              text,
    os_version           text,
    device_manufacturer  text,
    device_model         text,
    token_refreshed_at   timestamptz,
    -- Attributes SNS keeps that have no column of their own.
    attributes           jsonb NOT NULL DEFAULT '{}',
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT endpoints_application_token_key UNIQUE (application, token)
);
-- Keyset paging of ListEndpointsByPlatformApplication and audience scans.
CREATE INDEX endpoints_application_id_idx ON endpoints (application, id);
CREATE INDEX endpoints_application_user_idx ON endpoints (application, user_id) WHERE user_id IS NOT NULL;

CREATE TABLE topics (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account     bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    name        text NOT NULL CHECK (name ~ '^[A-Za-z0-9_-]{1,256}$'),
    attributes  jsonb NOT NULL DEFAULT '{}',
    created_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT topics_account_name_key UNIQUE (account, name)
);

CREATE TABLE subscriptions (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    external_id    uuid NOT NULL UNIQUE,
    topic          bigint NOT NULL REFERENCES topics(id) ON DELETE CASCADE,
    -- protocol 'application' points at an endpoint; other protocols keep their target text.
    protocol       text NOT NULL,
    endpoint       bigint REFERENCES endpoints(id) ON DELETE CASCADE,
    target         text,
    filter_policy  jsonb,
    attributes     jsonb NOT NULL DEFAULT '{}',
    created_at     timestamptz NOT NULL DEFAULT now(),
    CHECK ((protocol = 'application') = (endpoint IS NOT NULL)),
    CONSTRAINT subscriptions_topic_endpoint_key UNIQUE (topic, endpoint)
);
-- Fan-out walks a topic's subscriptions in keyset order; shard planning steps through it.
CREATE INDEX subscriptions_topic_id_idx ON subscriptions (topic, id);
CREATE INDEX subscriptions_endpoint_idx ON subscriptions (endpoint) WHERE endpoint IS NOT NULL;

CREATE TABLE tags (
    account       bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    resource_arn  text NOT NULL,
    key           text NOT NULL CHECK (length(key) BETWEEN 1 AND 128),
    value         text NOT NULL CHECK (length(value) <= 256),
    PRIMARY KEY (resource_arn, key)
);

-- Endpoint disabled, application disabled, token replaced: what happened and why.
CREATE TABLE events (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account     bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    kind        text NOT NULL,
    resource    text NOT NULL,
    detail      jsonb NOT NULL DEFAULT '{}',
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX events_account_created_idx ON events (account, created_at);
