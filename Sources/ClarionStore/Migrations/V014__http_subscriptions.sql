-- 14: HTTP/HTTPS subscriptions: confirmation, delivery queue, signing key
--
-- SNS's HTTP/S delivery protocol (docs/providers.md C.11): a new http/https subscription is
-- PendingConfirmation until the endpoint confirms it with the token Clarion sent it; only confirmed subscriptions
-- receive notifications. The token also authorises the UnsubscribeURL (SNS's own URL needs no token; ours does, so
-- a subscription ARN seen in a log cannot be used to unsubscribe someone).
ALTER TABLE subscriptions ADD COLUMN pending_confirmation boolean NOT NULL DEFAULT false;
ALTER TABLE subscriptions ADD COLUMN confirmation_token text;
-- Subscribing the same URL to a topic again returns the existing subscription, as SNS does.
CREATE UNIQUE INDEX subscriptions_topic_target_key ON subscriptions (topic, protocol, target) WHERE endpoint IS NULL;
-- Planning a publish inserts one HTTP delivery per confirmed HTTP subscription of the topic: this index keeps that
-- a probe of the few non-endpoint rows, not a walk of a million application subscriptions.
CREATE INDEX subscriptions_topic_http_idx ON subscriptions (topic, id) WHERE endpoint IS NULL;
CREATE UNIQUE INDEX subscriptions_confirmation_token_key ON subscriptions (confirmation_token)
    WHERE confirmation_token IS NOT NULL;

-- One POST to an HTTP/S subscription: a SubscriptionConfirmation (message NULL) or a Notification of a message.
-- Claimed under a lease (FOR UPDATE SKIP LOCKED) by the HTTP sender, retried on the subscription's DeliveryPolicy
-- schedule (not_before), finished as delivered, failed (retries exhausted or refused by the outbound policy) or
-- filtered (the subscription's filter policy did not match). Rows of a message count in its status; the message
-- finishes only when none of its rows is pending. Finished rows are kept with the message (ON DELETE CASCADE).
CREATE TABLE http_deliveries (
    id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    subscription      bigint NOT NULL REFERENCES subscriptions(id) ON DELETE CASCADE,
    message           bigint REFERENCES messages(id) ON DELETE CASCADE,
    kind              text NOT NULL CHECK (kind IN ('SubscriptionConfirmation', 'Notification')),
    state             text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed', 'filtered')),
    attempts          integer NOT NULL DEFAULT 0,
    not_before        timestamptz NOT NULL DEFAULT now(),
    lease_owner       text,
    lease_expires_at  timestamptz,
    last_error        text,
    last_status       integer,
    created_at        timestamptz NOT NULL DEFAULT now(),
    finished_at       timestamptz,
    CHECK ((kind = 'Notification') = (message IS NOT NULL))
);
CREATE INDEX http_deliveries_due_idx ON http_deliveries (not_before) WHERE state = 'pending';
CREATE INDEX http_deliveries_message_idx ON http_deliveries (message) WHERE message IS NOT NULL;
CREATE INDEX http_deliveries_subscription_idx ON http_deliveries (subscription);

-- The key that signs HTTP/S deliveries (SignatureVersion 1 and 2) and its self-signed certificate, served at the
-- SigningCertURL. Made once by the first node; the private key is sealed under the master key (AES-256-GCM, the
-- row id as associated data), like credentials. One row, id 1.
CREATE TABLE sns_signing_keys (
    id                   integer PRIMARY KEY CHECK (id = 1),
    private_key_sealed   bytea NOT NULL,
    certificate_pem      text NOT NULL,
    created_at           timestamptz NOT NULL DEFAULT now()
);
