-- 3: mobile apps, registration requests, webhooks, campaigns, opens

-- A mobile app groups one platform application per platform and owns the API tokens of the
-- registration API.
CREATE TABLE mobile_apps (
    id                  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    external_id         uuid NOT NULL UNIQUE,
    account             bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    name                text NOT NULL,
    apns_application    bigint REFERENCES platform_applications(id) ON DELETE SET NULL,
    fcm_application     bigint REFERENCES platform_applications(id) ON DELETE SET NULL,
    adm_application     bigint REFERENCES platform_applications(id) ON DELETE SET NULL,
    firebase_project_id text,
    dry_run_validation  boolean NOT NULL DEFAULT false,
    created_at          timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT mobile_apps_account_name_key UNIQUE (account, name)
);
CREATE INDEX mobile_apps_firebase_idx ON mobile_apps (firebase_project_id) WHERE firebase_project_id IS NOT NULL;

-- API tokens are compared by SHA-256 hash; the webhook signature needs the token itself,
-- so it is also kept sealed.
CREATE TABLE mobile_app_tokens (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    mobile_app    bigint NOT NULL REFERENCES mobile_apps(id) ON DELETE CASCADE,
    token_hash    bytea NOT NULL UNIQUE,
    token_sealed  bytea NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    revoked_at    timestamptz
);

CREATE TABLE registration_requests (
    id                uuid PRIMARY KEY,
    mobile_app        bigint NOT NULL REFERENCES mobile_apps(id) ON DELETE CASCADE,
    token_id          bigint REFERENCES mobile_app_tokens(id) ON DELETE SET NULL,
    request           jsonb NOT NULL,
    status            text NOT NULL DEFAULT 'Pending' CHECK (status IN ('Pending', 'Success', 'Failed')),
    failure_reason    text,
    callback_url      text,
    callback_headers  jsonb,
    created_at        timestamptz NOT NULL DEFAULT now(),
    processed_at      timestamptz
);
CREATE INDEX registration_requests_pending_idx ON registration_requests (created_at) WHERE status = 'Pending';

-- Outbound webhooks, sent from a queue, never from the request path.
CREATE TABLE webhook_outbox (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    url         text NOT NULL,
    headers     jsonb NOT NULL DEFAULT '{}',
    body        text NOT NULL,
    state       text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'sent', 'failed')),
    attempts    integer NOT NULL DEFAULT 0,
    last_error  text,
    created_at  timestamptz NOT NULL DEFAULT now(),
    sent_at     timestamptz
);
CREATE INDEX webhook_outbox_pending_idx ON webhook_outbox (id) WHERE state = 'pending';

CREATE TABLE campaigns (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    external_id  text NOT NULL,
    account      bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    name         text NOT NULL,
    namespace    text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT campaigns_account_external_key UNIQUE (account, external_id)
);
ALTER TABLE messages ADD CONSTRAINT messages_campaign_fkey
    FOREIGN KEY (campaign) REFERENCES campaigns(id) ON DELETE SET NULL;

-- One row per opened (message, endpoint): the beacon is idempotent by this key.
CREATE TABLE opens (
    message          bigint NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    endpoint         bigint NOT NULL,
    first_opened_at  timestamptz NOT NULL,
    last_opened_at   timestamptz NOT NULL,
    count            integer NOT NULL DEFAULT 1,
    PRIMARY KEY (message, endpoint)
);
