-- 14: HTTP/HTTPS subscriptions (confirmation, delivery queue, signing key); endpoint lifecycle events
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

-- Endpoint lifecycle and delivery-failure events (docs/providers.md C.12): a platform application's attributes
-- EventEndpointCreated, EventEndpointUpdated, EventEndpointDeleted and EventDeliveryFailure name topics of its
-- account; each event is published to its topic as an ordinary topic message (the same durable path as any publish:
-- the planner fans it out, HTTP/S subscribers get it as a Notification). Triggers insert the message in the
-- transaction that makes the change, whichever path makes it (SNS API, native API, registration processor, the
-- dispatcher disabling an endpoint on provider feedback or replacing its token, the final failure it logs), so an
-- event is never lost and never sent for a change that rolled back. The message's `target` carries `event`, so a
-- failed delivery of an event message raises no further DeliveryFailure event (no loops).

-- Publishes one event document about an endpoint of `app` to the topic its `attribute` names, if any. The ARNs take
-- the region of that topic ARN (it was checked against the caller's region when set). A topic that no longer exists
-- is recorded in `events` (kind event_topic_missing), not silently dropped.
CREATE FUNCTION clarion_endpoint_event(app bigint, attribute text, event_type text, endpoint_id uuid, fields jsonb)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    topic_arn text;
    account_key bigint;
    account_text text;
    platform_name text;
    app_name text;
    topic_key bigint;
    region text;
    document jsonb;
BEGIN
    SELECT a.attributes->>attribute, a.account, c.account_id, a.platform, a.name
        INTO topic_arn, account_key, account_text, platform_name, app_name
        FROM platform_applications a JOIN accounts c ON c.id = a.account WHERE a.id = app;
    IF topic_arn IS NULL OR topic_arn = '' THEN
        RETURN;
    END IF;
    region := split_part(topic_arn, ':', 4);
    SELECT t.id INTO topic_key FROM topics t WHERE t.account = account_key AND t.name = split_part(topic_arn, ':', 6);
    IF topic_key IS NULL THEN
        INSERT INTO events (account, kind, resource, detail)
        VALUES (account_key, 'event_topic_missing', topic_arn, jsonb_build_object('event', event_type, 'attribute', attribute));
        RETURN;
    END IF;
    document := jsonb_build_object(
        'EventType', event_type,
        'Timestamp', to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
        'Service', 'SNS',
        'Resource', format('arn:aws:sns:%s:%s:app/%s/%s', region, account_text, platform_name, app_name),
        'EndpointArn', format('arn:aws:sns:%s:%s:endpoint/%s/%s/%s', region, account_text, platform_name, app_name,
                              endpoint_id)) || fields;
    INSERT INTO messages (external_id, account, target_kind, target_id, target, message)
    VALUES (gen_random_uuid(), account_key, 'topic', topic_key, jsonb_build_object('arn', topic_arn, 'event', event_type),
            document::text);
    PERFORM pg_notify('clarion_work', '');
END $$;

-- The endpoint's SNS attributes, as GetEndpointAttributes shows them.
CREATE FUNCTION clarion_endpoint_attributes(e endpoints) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
    SELECT jsonb_strip_nulls(jsonb_build_object('Token', e.token, 'Enabled', CASE WHEN e.enabled THEN 'true' ELSE 'false' END,
                                                'CustomUserData', e.custom_user_data))
$$;

CREATE FUNCTION clarion_endpoint_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM clarion_endpoint_event(NEW.application, 'EventEndpointCreated', 'EndpointCreated', NEW.external_id,
                                       jsonb_build_object('Attributes', clarion_endpoint_attributes(NEW)));
    ELSIF TG_OP = 'UPDATE' THEN
        -- Disabled (by the API or by provider feedback): the reason comes with it.
        PERFORM clarion_endpoint_event(NEW.application, 'EventEndpointUpdated', 'EndpointUpdated', NEW.external_id,
            jsonb_build_object('Attributes', clarion_endpoint_attributes(NEW))
            || CASE WHEN NOT NEW.enabled AND NEW.disabled_reason IS NOT NULL
                    THEN jsonb_build_object('DisabledReason', NEW.disabled_reason) ELSE '{}'::jsonb END);
    ELSE
        PERFORM clarion_endpoint_event(OLD.application, 'EventEndpointDeleted', 'EndpointDeleted', OLD.external_id,
                                       jsonb_build_object('Attributes', clarion_endpoint_attributes(OLD)));
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER endpoints_lifecycle_events AFTER INSERT OR DELETE ON endpoints
    FOR EACH ROW EXECUTE FUNCTION clarion_endpoint_events();
CREATE TRIGGER endpoints_update_events AFTER UPDATE ON endpoints
    FOR EACH ROW WHEN (OLD.* IS DISTINCT FROM NEW.*) EXECUTE FUNCTION clarion_endpoint_events();

-- A delivery given up for good is logged as FAILURE (the dispatcher's final failures only); that row raises the
-- DeliveryFailure event. Its provider_response is "<outcome>: <reason>".
CREATE FUNCTION clarion_delivery_failure_event() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    app bigint;
    endpoint_id uuid;
    message_id uuid;
    message_event text;
BEGIN
    SELECT e.application, e.external_id INTO app, endpoint_id
        FROM endpoints e JOIN platform_applications a ON a.id = e.application
        WHERE e.id = NEW.endpoint AND coalesce(a.attributes->>'EventDeliveryFailure', '') <> '';
    IF app IS NULL THEN
        RETURN NULL;
    END IF;
    SELECT m.external_id, m.target->>'event' INTO message_id, message_event FROM messages m WHERE m.id = NEW.message;
    IF message_event IS NOT NULL THEN
        RETURN NULL;
    END IF;
    PERFORM clarion_endpoint_event(app, 'EventDeliveryFailure', 'DeliveryFailure', endpoint_id, jsonb_build_object(
        -- SNS names a dead token InvalidPlatformToken; other outcomes keep Clarion's label (docs/providers.md C.12).
        'FailureType', CASE split_part(coalesce(NEW.provider_response, ''), ': ', 1)
                           WHEN 'token_invalid' THEN 'InvalidPlatformToken'
                           ELSE split_part(coalesce(NEW.provider_response, ''), ': ', 1) END,
        'FailureMessage', CASE WHEN position(': ' IN coalesce(NEW.provider_response, '')) > 0
                               THEN substr(NEW.provider_response, position(': ' IN NEW.provider_response) + 2)
                               ELSE coalesce(NEW.provider_response, '') END,
        'DeliveryAttempts', NEW.attempts,
        'MessageId', message_id));
    RETURN NULL;
END $$;

CREATE TRIGGER delivery_log_failure_events AFTER INSERT ON delivery_log
    FOR EACH ROW WHEN (NEW.status = 'FAILURE') EXECUTE FUNCTION clarion_delivery_failure_event();
