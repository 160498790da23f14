-- 17: HTTP/HTTPS subscriptions (confirmation, delivery queue, signing key); endpoint lifecycle events
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
-- the planner fans it out, HTTP/S subscribers get it as a Notification). Triggers insert the messages in the
-- transaction that makes the change, whichever path makes it (SNS API, native API, registration processor, the
-- dispatcher disabling an endpoint on provider feedback or replacing its token, the final failure it logs), so an
-- event is never lost and never sent for a change that rolled back. The message's `target` carries `event`, so a
-- failed delivery of an event message raises no further DeliveryFailure event (no loops).
--
-- The triggers are per statement, over transition tables, one set-based INSERT each: a per-row PL/pgSQL trigger
-- made 100,000 endpoint inserts 2.4 times slower even with no event configured (9.9 s against 4.1 s without
-- triggers, psql on the loaded test machine); per statement they are within the noise (2.4 and 3.6 s against 3.0 s):
-- one join of the changed rows with their applications, and PL/pgSQL only where an event is configured.

-- The event document: SNS's members (EventType, Timestamp, Service, Resource, EndpointArn) and `fields`. The ARNs
-- take the region of the event topic's ARN (checked against the caller's region when it was set).
CREATE FUNCTION clarion_event_document(event_type text, topic_arn text, account_id text, platform text, app_name text,
                                       endpoint_id uuid, fields jsonb) RETURNS text LANGUAGE sql STABLE AS $$
    SELECT (jsonb_build_object(
        'EventType', event_type,
        'Timestamp', to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
        'Service', 'SNS',
        'Resource', format('arn:aws:sns:%s:%s:app/%s/%s', split_part(topic_arn, ':', 4), account_id, platform, app_name),
        'EndpointArn', format('arn:aws:sns:%s:%s:endpoint/%s/%s/%s', split_part(topic_arn, ':', 4), account_id, platform,
                              app_name, endpoint_id)) || fields)::text
$$;

-- The endpoint's SNS attributes, as GetEndpointAttributes shows them.
CREATE FUNCTION clarion_endpoint_attributes(token text, enabled boolean, custom_user_data text) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
    SELECT jsonb_strip_nulls(jsonb_build_object('Token', token, 'Enabled', CASE WHEN enabled THEN 'true' ELSE 'false' END,
                                                'CustomUserData', custom_user_data))
$$;

-- Publishes the prepared events (one row each: application, attribute, event type, endpoint, fields) to their
-- topics. A topic that no longer exists is recorded in `events` (kind event_topic_missing), not dropped silently.
CREATE FUNCTION clarion_publish_endpoint_events(pending jsonb) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    WITH e AS (
        SELECT (p->>'app')::bigint AS app, p->>'attribute' AS attribute, p->>'event' AS event,
               (p->>'endpoint')::uuid AS endpoint, p->'fields' AS fields
        FROM jsonb_array_elements(pending) p
    ), x AS (
        SELECT e.*, a.account, c.account_id, a.platform, a.name, a.attributes->>e.attribute AS topic_arn
        FROM e JOIN platform_applications a ON a.id = e.app JOIN accounts c ON c.id = a.account
    ), resolved AS (
        SELECT x.*, t.id AS topic FROM x
        LEFT JOIN topics t ON t.account = x.account AND t.name = split_part(x.topic_arn, ':', 6)
    ), published AS (
        INSERT INTO messages (external_id, account, target_kind, target_id, target, message)
        SELECT gen_random_uuid(), account, 'topic', topic, jsonb_build_object('arn', topic_arn, 'event', event),
               clarion_event_document(event, topic_arn, account_id, platform, name, endpoint, fields)
        FROM resolved WHERE topic IS NOT NULL
        RETURNING 1
    )
    INSERT INTO events (account, kind, resource, detail)
    SELECT account, 'event_topic_missing', topic_arn, jsonb_build_object('event', event, 'attribute', attribute)
    FROM resolved WHERE topic IS NULL;
    PERFORM pg_notify('clarion_work', '');
END $$;

CREATE FUNCTION clarion_endpoints_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    pending jsonb;
BEGIN
    SELECT jsonb_agg(jsonb_build_object('app', n.application, 'attribute', 'EventEndpointCreated', 'event', 'EndpointCreated',
               'endpoint', n.external_id, 'fields', jsonb_build_object('Attributes',
                   clarion_endpoint_attributes(n.token, n.enabled, n.custom_user_data))))
        INTO pending
        FROM new_rows n JOIN platform_applications a ON a.id = n.application
        WHERE coalesce(a.attributes->>'EventEndpointCreated', '') <> '';
    IF pending IS NOT NULL THEN PERFORM clarion_publish_endpoint_events(pending); END IF;
    RETURN NULL;
END $$;

-- Any change of the row is an update (SNS: "any of the attributes ... are changed"); a disable carries its reason.
CREATE FUNCTION clarion_endpoints_updated() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    pending jsonb;
BEGIN
    SELECT jsonb_agg(jsonb_build_object('app', n.application, 'attribute', 'EventEndpointUpdated', 'event', 'EndpointUpdated',
               'endpoint', n.external_id, 'fields', jsonb_build_object('Attributes',
                   clarion_endpoint_attributes(n.token, n.enabled, n.custom_user_data))
                   || CASE WHEN NOT n.enabled AND n.disabled_reason IS NOT NULL
                           THEN jsonb_build_object('DisabledReason', n.disabled_reason) ELSE '{}'::jsonb END))
        INTO pending
        FROM new_rows n JOIN old_rows o ON o.id = n.id JOIN platform_applications a ON a.id = n.application
        WHERE coalesce(a.attributes->>'EventEndpointUpdated', '') <> '' AND o IS DISTINCT FROM n;
    IF pending IS NOT NULL THEN PERFORM clarion_publish_endpoint_events(pending); END IF;
    RETURN NULL;
END $$;

-- An endpoint deleted with its application (cascade) raises no event: the application, and its settings, are gone.
CREATE FUNCTION clarion_endpoints_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    pending jsonb;
BEGIN
    SELECT jsonb_agg(jsonb_build_object('app', o.application, 'attribute', 'EventEndpointDeleted', 'event', 'EndpointDeleted',
               'endpoint', o.external_id, 'fields', jsonb_build_object('Attributes',
                   clarion_endpoint_attributes(o.token, o.enabled, o.custom_user_data))))
        INTO pending
        FROM old_rows o JOIN platform_applications a ON a.id = o.application
        WHERE coalesce(a.attributes->>'EventEndpointDeleted', '') <> '';
    IF pending IS NOT NULL THEN PERFORM clarion_publish_endpoint_events(pending); END IF;
    RETURN NULL;
END $$;

-- A delivery given up for good is logged as FAILURE (the dispatcher logs final failures only); that row raises the
-- DeliveryFailure event. Its provider_response is "<outcome label>: <reason>"; SNS calls a dead token
-- InvalidPlatformToken, other outcomes keep Clarion's label (docs/providers.md C.12).
CREATE FUNCTION clarion_delivery_failures_logged() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    pending jsonb;
BEGIN
    SELECT jsonb_agg(jsonb_build_object('app', e.application, 'attribute', 'EventDeliveryFailure', 'event', 'DeliveryFailure',
               'endpoint', e.external_id, 'fields', jsonb_build_object(
                   'FailureType', CASE split_part(coalesce(l.provider_response, ''), ': ', 1)
                                      WHEN 'token_invalid' THEN 'InvalidPlatformToken'
                                      ELSE split_part(coalesce(l.provider_response, ''), ': ', 1) END,
                   'FailureMessage', CASE WHEN position(': ' IN coalesce(l.provider_response, '')) > 0
                                          THEN substr(l.provider_response, position(': ' IN l.provider_response) + 2)
                                          ELSE coalesce(l.provider_response, '') END,
                   'DeliveryAttempts', l.attempts,
                   'MessageId', m.external_id)))
        INTO pending
        FROM new_rows l JOIN endpoints e ON e.id = l.endpoint JOIN platform_applications a ON a.id = e.application
        JOIN messages m ON m.id = l.message
        WHERE l.status = 'FAILURE' AND coalesce(a.attributes->>'EventDeliveryFailure', '') <> ''
            AND m.target->>'event' IS NULL;
    IF pending IS NOT NULL THEN PERFORM clarion_publish_endpoint_events(pending); END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER endpoints_created_events AFTER INSERT ON endpoints REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION clarion_endpoints_inserted();
CREATE TRIGGER endpoints_updated_events AFTER UPDATE ON endpoints REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION clarion_endpoints_updated();
CREATE TRIGGER endpoints_deleted_events AFTER DELETE ON endpoints REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION clarion_endpoints_deleted();
CREATE TRIGGER delivery_log_failure_events AFTER INSERT ON delivery_log REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION clarion_delivery_failures_logged();
