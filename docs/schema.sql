--
-- PostgreSQL database dump
--



SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

--
-- Name: clarion_delete_referencing(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.clarion_delete_referencing() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    EXECUTE format('DELETE FROM %I WHERE %I IN (SELECT id FROM gone)', TG_ARGV[0], TG_ARGV[1]);
    RETURN NULL;
END $$;


--
-- Name: clarion_delivery_failures_logged(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.clarion_delivery_failures_logged() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
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


--
-- Name: clarion_endpoint_attributes(text, boolean, text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.clarion_endpoint_attributes(token text, enabled boolean, custom_user_data text) RETURNS jsonb
    LANGUAGE sql IMMUTABLE
    AS $$
    SELECT jsonb_strip_nulls(jsonb_build_object('Token', token, 'Enabled', CASE WHEN enabled THEN 'true' ELSE 'false' END,
                                                'CustomUserData', custom_user_data))
$$;


--
-- Name: clarion_endpoints_deleted(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.clarion_endpoints_deleted() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
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


--
-- Name: clarion_endpoints_inserted(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.clarion_endpoints_inserted() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
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


--
-- Name: clarion_endpoints_updated(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.clarion_endpoints_updated() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
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


--
-- Name: clarion_event_document(text, text, text, text, text, uuid, jsonb); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.clarion_event_document(event_type text, topic_arn text, account_id text, platform text, app_name text, endpoint_id uuid, fields jsonb) RETURNS text
    LANGUAGE sql STABLE
    AS $$
    SELECT (jsonb_build_object(
        'EventType', event_type,
        'Timestamp', to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
        'Service', 'SNS',
        'Resource', format('arn:%s:sns:%s:%s:app/%s/%s', split_part(topic_arn, ':', 2), split_part(topic_arn, ':', 4),
                           account_id, platform, app_name),
        'EndpointArn', format('arn:%s:sns:%s:%s:endpoint/%s/%s/%s', split_part(topic_arn, ':', 2),
                              split_part(topic_arn, ':', 4), account_id, platform, app_name, endpoint_id)) || fields)::text
$$;


--
-- Name: clarion_link_campaign(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.clarion_link_campaign() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
    spec jsonb;
BEGIN
    IF NEW.campaign IS NULL AND NEW.attributes ? 'Clarion.Namespace' THEN
        BEGIN
            spec := coalesce(NEW.attributes->'Clarion.Namespace'->>'StringValue',
                             NEW.attributes->>'Clarion.Namespace')::jsonb;
        EXCEPTION WHEN others THEN
            spec := NULL;
        END;
        IF jsonb_typeof(spec) = 'object' AND spec->>'campaign' IS NOT NULL THEN
            NEW.campaign := (SELECT c.id FROM campaigns c
                             WHERE c.account = NEW.account AND c.external_id = spec->>'campaign');
        END IF;
    END IF;
    RETURN NEW;
END
$$;


--
-- Name: clarion_publish_endpoint_events(jsonb); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.clarion_publish_endpoint_events(pending jsonb) RETURNS void
    LANGUAGE plpgsql
    AS $$
BEGIN
    WITH e AS (
        SELECT (p->>'app')::bigint AS app, p->>'attribute' AS attribute, p->>'event' AS event,
               (p->>'endpoint')::uuid AS endpoint, p->'fields' AS fields
        FROM jsonb_array_elements(pending) p
    ), x AS (
        SELECT e.*, a.account, a.region, c.account_id, a.platform, a.name, a.attributes->>e.attribute AS topic_arn
        FROM e JOIN platform_applications a ON a.id = e.app JOIN accounts c ON c.id = a.account
    ), resolved AS (
        SELECT x.*, t.id AS topic FROM x
        LEFT JOIN topics t ON t.account = x.account AND t.region = x.region AND t.name = split_part(x.topic_arn, ':', 6)
            AND split_part(x.topic_arn, ':', 4) = x.region
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


--
-- Name: clarion_retries_endpoint_gone(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.clarion_retries_endpoint_gone() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    UPDATE delivery_retries r
    SET vanished = CASE WHEN EXISTS (SELECT 1 FROM platform_applications a WHERE a.id = g.application)
                        THEN 'EndpointDeleted' ELSE 'PlatformApplicationDeleted' END,
        not_before = least(r.not_before, now())
    FROM gone g WHERE r.endpoint = g.id;
    RETURN NULL;
END $$;


--
-- Name: frequency_history_forget(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.frequency_history_forget() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    DELETE FROM frequency_history h USING gone g WHERE h.endpoint = g.id;
    RETURN NULL;
END $$;


SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: access_keys; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.access_keys (
    access_key_id text NOT NULL,
    account bigint NOT NULL,
    secret_sealed bytea NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    disabled_at timestamp with time zone,
    CONSTRAINT access_keys_access_key_id_check CHECK (((length(access_key_id) >= 16) AND (length(access_key_id) <= 128)))
);


--
-- Name: accounts; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.accounts (
    id bigint NOT NULL,
    account_id text NOT NULL,
    name text DEFAULT ''::text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT accounts_account_id_check CHECK ((account_id ~ '^[0-9]{12}$'::text))
);


--
-- Name: accounts_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.accounts ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.accounts_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: api_keys; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.api_keys (
    id bigint NOT NULL,
    account bigint NOT NULL,
    key_hash bytea NOT NULL,
    prefix text NOT NULL,
    name text DEFAULT ''::text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    revoked_at timestamp with time zone
);


--
-- Name: api_keys_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.api_keys ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.api_keys_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: application_delivery_counts; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.application_delivery_counts (
    application bigint NOT NULL,
    minute timestamp with time zone NOT NULL,
    sent bigint DEFAULT 0 NOT NULL,
    accepted bigint DEFAULT 0 NOT NULL,
    token_invalid bigint DEFAULT 0 NOT NULL,
    message_invalid bigint DEFAULT 0 NOT NULL,
    credentials_invalid bigint DEFAULT 0 NOT NULL,
    rejected bigint DEFAULT 0 NOT NULL,
    retry_exhausted bigint DEFAULT 0 NOT NULL,
    retried bigint DEFAULT 0 NOT NULL,
    expired bigint DEFAULT 0 NOT NULL,
    skipped bigint DEFAULT 0 NOT NULL,
    filtered bigint DEFAULT 0 NOT NULL,
    held_out bigint DEFAULT 0 NOT NULL
);


--
-- Name: campaigns; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.campaigns (
    id bigint NOT NULL,
    external_id text NOT NULL,
    account bigint NOT NULL,
    name text NOT NULL,
    namespace text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);


--
-- Name: campaigns_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.campaigns ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.campaigns_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: delivery_log; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.delivery_log (
    logged_at timestamp with time zone DEFAULT now() NOT NULL,
    message bigint NOT NULL,
    endpoint bigint NOT NULL,
    status text NOT NULL,
    provider_status integer,
    provider_response text,
    attempts integer DEFAULT 1 NOT NULL,
    dwell_ms integer
)
PARTITION BY RANGE (logged_at);


--
-- Name: delivery_log_default; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.delivery_log_default (
    logged_at timestamp with time zone DEFAULT now() NOT NULL,
    message bigint NOT NULL,
    endpoint bigint NOT NULL,
    status text NOT NULL,
    provider_status integer,
    provider_response text,
    attempts integer DEFAULT 1 NOT NULL,
    dwell_ms integer
);


--
-- Name: delivery_retries; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.delivery_retries (
    id bigint NOT NULL,
    message bigint NOT NULL,
    endpoint bigint NOT NULL,
    attempt integer NOT NULL,
    not_before timestamp with time zone NOT NULL,
    last_reason text,
    lease_owner text,
    lease_expires_at timestamp with time zone,
    shard bigint,
    vanished text
);


--
-- Name: delivery_retries_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.delivery_retries ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.delivery_retries_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: endpoints; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.endpoints (
    id bigint NOT NULL,
    external_id uuid NOT NULL,
    application bigint NOT NULL,
    token text NOT NULL,
    user_id text,
    custom_user_data text,
    enabled boolean DEFAULT true NOT NULL,
    disabled_reason text,
    disabled_at timestamp with time zone,
    app_version text,
    language text,
    os_type text,
    os_version text,
    device_manufacturer text,
    device_model text,
    token_refreshed_at timestamp with time zone,
    attributes jsonb DEFAULT '{}'::jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT endpoints_custom_user_data_check CHECK ((octet_length(custom_user_data) <= 2048)),
    CONSTRAINT endpoints_token_check CHECK (((length(token) >= 1) AND (length(token) <= 4096)))
);


--
-- Name: endpoints_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.endpoints ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.endpoints_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: events; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.events (
    id bigint NOT NULL,
    account bigint NOT NULL,
    kind text NOT NULL,
    resource text NOT NULL,
    detail jsonb DEFAULT '{}'::jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);


--
-- Name: events_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.events ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.events_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: fanout_shards; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.fanout_shards (
    id bigint NOT NULL,
    message bigint NOT NULL,
    lo bigint NOT NULL,
    hi bigint NOT NULL,
    checkpoint bigint NOT NULL,
    state text DEFAULT 'ready'::text NOT NULL,
    lease_owner text,
    lease_expires_at timestamp with time zone,
    claims integer DEFAULT 0 NOT NULL,
    targeted bigint DEFAULT 0 NOT NULL,
    sent bigint DEFAULT 0 NOT NULL,
    accepted bigint DEFAULT 0 NOT NULL,
    failed bigint DEFAULT 0 NOT NULL,
    retried bigint DEFAULT 0 NOT NULL,
    skipped bigint DEFAULT 0 NOT NULL,
    expired bigint DEFAULT 0 NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    planned_targets bigint DEFAULT 0 NOT NULL,
    filtered bigint DEFAULT 0 NOT NULL,
    held_out bigint DEFAULT 0 NOT NULL,
    capped bigint DEFAULT 0 NOT NULL,
    deferred bigint DEFAULT 0 NOT NULL,
    quiet_skipped bigint DEFAULT 0 NOT NULL,
    CONSTRAINT fanout_shards_check CHECK (((lo <= checkpoint) AND (checkpoint <= hi))),
    CONSTRAINT fanout_shards_state_check CHECK ((state = ANY (ARRAY['ready'::text, 'leased'::text, 'done'::text])))
);


--
-- Name: fanout_shards_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.fanout_shards ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.fanout_shards_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: frequency_history; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.frequency_history (
    endpoint bigint NOT NULL,
    messages bigint[] NOT NULL,
    sent_at timestamp with time zone[] NOT NULL
);


--
-- Name: http_deliveries; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.http_deliveries (
    id bigint NOT NULL,
    subscription bigint NOT NULL,
    message bigint,
    kind text NOT NULL,
    state text DEFAULT 'pending'::text NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    not_before timestamp with time zone DEFAULT now() NOT NULL,
    lease_owner text,
    lease_expires_at timestamp with time zone,
    last_error text,
    last_status integer,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    finished_at timestamp with time zone,
    CONSTRAINT http_deliveries_check CHECK (((kind = 'Notification'::text) = (message IS NOT NULL))),
    CONSTRAINT http_deliveries_kind_check CHECK ((kind = ANY (ARRAY['SubscriptionConfirmation'::text, 'Notification'::text]))),
    CONSTRAINT http_deliveries_state_check CHECK ((state = ANY (ARRAY['pending'::text, 'delivered'::text, 'failed'::text, 'filtered'::text])))
);


--
-- Name: http_deliveries_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.http_deliveries ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.http_deliveries_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: messages; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.messages (
    id bigint NOT NULL,
    external_id uuid NOT NULL,
    account bigint NOT NULL,
    target_kind text NOT NULL,
    target_id bigint,
    target jsonb DEFAULT '{}'::jsonb NOT NULL,
    message text NOT NULL,
    structure text,
    subject text,
    attributes jsonb DEFAULT '{}'::jsonb NOT NULL,
    campaign bigint,
    published_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone,
    state text DEFAULT 'Enqueued'::text NOT NULL,
    planned boolean DEFAULT false NOT NULL,
    started_at timestamp with time zone,
    completed_at timestamp with time zone,
    first_delivery_at timestamp with time zone,
    send_at timestamp with time zone,
    pace_per_second double precision,
    pace_over_seconds integer,
    pace_started_at timestamp with time zone,
    pace_granted bigint DEFAULT 0 NOT NULL,
    CONSTRAINT messages_pace_over_seconds_check CHECK ((pace_over_seconds > 0)),
    CONSTRAINT messages_pace_per_second_check CHECK ((pace_per_second > (0)::double precision)),
    CONSTRAINT messages_scheduled_send_at CHECK (((state <> 'Scheduled'::text) OR (send_at IS NOT NULL))),
    CONSTRAINT messages_state_check CHECK ((state = ANY (ARRAY['Scheduled'::text, 'Enqueued'::text, 'Processing'::text, 'Completed'::text, 'Failed'::text, 'Expired'::text, 'Cancelled'::text]))),
    CONSTRAINT messages_target_kind_check CHECK ((target_kind = ANY (ARRAY['endpoint'::text, 'topic'::text, 'user'::text, 'audience'::text])))
);


--
-- Name: messages_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.messages ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.messages_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: mobile_app_tokens; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.mobile_app_tokens (
    id bigint NOT NULL,
    mobile_app bigint NOT NULL,
    token_hash bytea NOT NULL,
    token_sealed bytea NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    revoked_at timestamp with time zone
);


--
-- Name: mobile_app_tokens_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.mobile_app_tokens ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.mobile_app_tokens_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: mobile_apps; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.mobile_apps (
    id bigint NOT NULL,
    external_id uuid NOT NULL,
    account bigint NOT NULL,
    name text NOT NULL,
    apns_application bigint,
    fcm_application bigint,
    adm_application bigint,
    firebase_project_id text,
    dry_run_validation boolean DEFAULT false NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    events_require_api_token boolean DEFAULT false NOT NULL,
    events_require_api_token_for_user_change boolean DEFAULT true NOT NULL,
    frequency_cap_max integer,
    frequency_cap_window_seconds integer,
    quiet_start_minute smallint,
    quiet_end_minute smallint,
    quiet_time_zone text,
    webpush_application bigint,
    CONSTRAINT mobile_apps_frequency_cap_check CHECK (((frequency_cap_max IS NULL) = (frequency_cap_window_seconds IS NULL))),
    CONSTRAINT mobile_apps_frequency_cap_max_check CHECK (((frequency_cap_max >= 1) AND (frequency_cap_max <= 1000))),
    CONSTRAINT mobile_apps_frequency_cap_window_seconds_check CHECK (((frequency_cap_window_seconds >= 60) AND (frequency_cap_window_seconds <= 2592000))),
    CONSTRAINT mobile_apps_quiet_end_minute_check CHECK (((quiet_end_minute >= 0) AND (quiet_end_minute <= 1439))),
    CONSTRAINT mobile_apps_quiet_hours_check CHECK (((((quiet_start_minute IS NULL) = (quiet_end_minute IS NULL)) AND (quiet_start_minute IS DISTINCT FROM quiet_end_minute)) OR (quiet_start_minute IS NULL))),
    CONSTRAINT mobile_apps_quiet_start_minute_check CHECK (((quiet_start_minute >= 0) AND (quiet_start_minute <= 1439)))
);


--
-- Name: mobile_apps_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.mobile_apps ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.mobile_apps_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: opens; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.opens (
    message bigint NOT NULL,
    endpoint bigint NOT NULL,
    first_opened_at timestamp with time zone NOT NULL,
    last_opened_at timestamp with time zone NOT NULL,
    count integer DEFAULT 1 NOT NULL
);


--
-- Name: platform_applications; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.platform_applications (
    id bigint NOT NULL,
    account bigint NOT NULL,
    name text NOT NULL,
    platform text NOT NULL,
    credentials_sealed bytea,
    attributes jsonb DEFAULT '{}'::jsonb NOT NULL,
    enabled boolean DEFAULT true NOT NULL,
    disabled_reason text,
    disabled_at timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    region text NOT NULL,
    CONSTRAINT platform_applications_name_check CHECK (((name ~ '^[A-Za-z0-9_.-]+$'::text) AND (length(name) <= 256))),
    CONSTRAINT platform_applications_platform_check CHECK ((platform = ANY (ARRAY['APNS'::text, 'APNS_SANDBOX'::text, 'GCM'::text, 'ADM'::text, 'WEBPUSH'::text, 'HMS'::text]))),
    CONSTRAINT platform_applications_region_check CHECK ((region ~ '^[a-z]{2}(-[a-z]+)+-[0-9]{1,2}$'::text))
);


--
-- Name: platform_applications_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.platform_applications ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.platform_applications_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: registration_requests; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.registration_requests (
    id uuid NOT NULL,
    mobile_app bigint NOT NULL,
    token_id bigint,
    request jsonb NOT NULL,
    status text DEFAULT 'Pending'::text NOT NULL,
    failure_reason text,
    callback_url text,
    callback_headers jsonb,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    processed_at timestamp with time zone,
    lease_expires_at timestamp with time zone,
    attempts integer DEFAULT 0 NOT NULL,
    CONSTRAINT registration_requests_status_check CHECK ((status = ANY (ARRAY['Pending'::text, 'Success'::text, 'Failed'::text])))
);


--
-- Name: schema_migrations; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.schema_migrations (
    version integer NOT NULL,
    name text NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL
);


--
-- Name: shard_failures; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.shard_failures (
    shard bigint NOT NULL,
    reason text NOT NULL,
    count bigint DEFAULT 0 NOT NULL
);


--
-- Name: sns_signing_keys; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.sns_signing_keys (
    id integer NOT NULL,
    private_key_sealed bytea NOT NULL,
    certificate_pem text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT sns_signing_keys_id_check CHECK ((id = 1))
);


--
-- Name: subscriptions; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.subscriptions (
    id bigint NOT NULL,
    external_id uuid NOT NULL,
    topic bigint NOT NULL,
    protocol text NOT NULL,
    endpoint bigint,
    target text,
    filter_policy jsonb,
    attributes jsonb DEFAULT '{}'::jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    pending_confirmation boolean DEFAULT false NOT NULL,
    confirmation_token text,
    CONSTRAINT subscriptions_check CHECK (((protocol = 'application'::text) = (endpoint IS NOT NULL)))
);


--
-- Name: subscriptions_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.subscriptions ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.subscriptions_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: tags; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.tags (
    account bigint NOT NULL,
    resource_arn text NOT NULL,
    key text NOT NULL,
    value text NOT NULL,
    CONSTRAINT tags_key_check CHECK (((length(key) >= 1) AND (length(key) <= 128))),
    CONSTRAINT tags_value_check CHECK ((length(value) <= 256))
);


--
-- Name: topics; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.topics (
    id bigint NOT NULL,
    account bigint NOT NULL,
    name text NOT NULL,
    attributes jsonb DEFAULT '{}'::jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    region text NOT NULL,
    CONSTRAINT topics_name_check CHECK (((name ~ '^[A-Za-z0-9_-]+$'::text) AND (length(name) <= 256))),
    CONSTRAINT topics_region_check CHECK ((region ~ '^[a-z]{2}(-[a-z]+)+-[0-9]{1,2}$'::text))
);


--
-- Name: topics_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.topics ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.topics_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: webhook_outbox; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.webhook_outbox (
    id bigint NOT NULL,
    url text NOT NULL,
    headers jsonb DEFAULT '{}'::jsonb NOT NULL,
    body text NOT NULL,
    state text DEFAULT 'pending'::text NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    last_error text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    sent_at timestamp with time zone,
    lease_expires_at timestamp with time zone,
    signing_token bigint,
    CONSTRAINT webhook_outbox_state_check CHECK ((state = ANY (ARRAY['pending'::text, 'sent'::text, 'failed'::text])))
);


--
-- Name: webhook_outbox_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.webhook_outbox ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.webhook_outbox_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: delivery_log_default; Type: TABLE ATTACH; Schema: public; Owner: -
--

ALTER TABLE ONLY public.delivery_log ATTACH PARTITION public.delivery_log_default DEFAULT;


--
-- Name: access_keys access_keys_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.access_keys
    ADD CONSTRAINT access_keys_pkey PRIMARY KEY (access_key_id);


--
-- Name: accounts accounts_account_id_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.accounts
    ADD CONSTRAINT accounts_account_id_key UNIQUE (account_id);


--
-- Name: accounts accounts_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.accounts
    ADD CONSTRAINT accounts_pkey PRIMARY KEY (id);


--
-- Name: api_keys api_keys_key_hash_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.api_keys
    ADD CONSTRAINT api_keys_key_hash_key UNIQUE (key_hash);


--
-- Name: api_keys api_keys_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.api_keys
    ADD CONSTRAINT api_keys_pkey PRIMARY KEY (id);


--
-- Name: application_delivery_counts application_delivery_counts_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.application_delivery_counts
    ADD CONSTRAINT application_delivery_counts_pkey PRIMARY KEY (application, minute);


--
-- Name: campaigns campaigns_account_external_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.campaigns
    ADD CONSTRAINT campaigns_account_external_key UNIQUE (account, external_id);


--
-- Name: campaigns campaigns_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.campaigns
    ADD CONSTRAINT campaigns_pkey PRIMARY KEY (id);


--
-- Name: delivery_retries delivery_retries_message_endpoint_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.delivery_retries
    ADD CONSTRAINT delivery_retries_message_endpoint_key UNIQUE (message, endpoint);


--
-- Name: delivery_retries delivery_retries_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.delivery_retries
    ADD CONSTRAINT delivery_retries_pkey PRIMARY KEY (id);


--
-- Name: endpoints endpoints_application_token_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.endpoints
    ADD CONSTRAINT endpoints_application_token_key UNIQUE (application, token);


--
-- Name: endpoints endpoints_external_id_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.endpoints
    ADD CONSTRAINT endpoints_external_id_key UNIQUE (external_id);


--
-- Name: endpoints endpoints_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.endpoints
    ADD CONSTRAINT endpoints_pkey PRIMARY KEY (id);


--
-- Name: events events_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.events
    ADD CONSTRAINT events_pkey PRIMARY KEY (id);


--
-- Name: fanout_shards fanout_shards_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.fanout_shards
    ADD CONSTRAINT fanout_shards_pkey PRIMARY KEY (id);


--
-- Name: frequency_history frequency_history_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.frequency_history
    ADD CONSTRAINT frequency_history_pkey PRIMARY KEY (endpoint);


--
-- Name: http_deliveries http_deliveries_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.http_deliveries
    ADD CONSTRAINT http_deliveries_pkey PRIMARY KEY (id);


--
-- Name: messages messages_external_id_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.messages
    ADD CONSTRAINT messages_external_id_key UNIQUE (external_id);


--
-- Name: messages messages_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.messages
    ADD CONSTRAINT messages_pkey PRIMARY KEY (id);


--
-- Name: mobile_app_tokens mobile_app_tokens_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.mobile_app_tokens
    ADD CONSTRAINT mobile_app_tokens_pkey PRIMARY KEY (id);


--
-- Name: mobile_app_tokens mobile_app_tokens_token_hash_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.mobile_app_tokens
    ADD CONSTRAINT mobile_app_tokens_token_hash_key UNIQUE (token_hash);


--
-- Name: mobile_apps mobile_apps_account_name_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.mobile_apps
    ADD CONSTRAINT mobile_apps_account_name_key UNIQUE (account, name);


--
-- Name: mobile_apps mobile_apps_external_id_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.mobile_apps
    ADD CONSTRAINT mobile_apps_external_id_key UNIQUE (external_id);


--
-- Name: mobile_apps mobile_apps_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.mobile_apps
    ADD CONSTRAINT mobile_apps_pkey PRIMARY KEY (id);


--
-- Name: opens opens_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.opens
    ADD CONSTRAINT opens_pkey PRIMARY KEY (message, endpoint);


--
-- Name: platform_applications platform_applications_name_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.platform_applications
    ADD CONSTRAINT platform_applications_name_key UNIQUE (account, region, platform, name);


--
-- Name: platform_applications platform_applications_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.platform_applications
    ADD CONSTRAINT platform_applications_pkey PRIMARY KEY (id);


--
-- Name: registration_requests registration_requests_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.registration_requests
    ADD CONSTRAINT registration_requests_pkey PRIMARY KEY (id);


--
-- Name: schema_migrations schema_migrations_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.schema_migrations
    ADD CONSTRAINT schema_migrations_pkey PRIMARY KEY (version);


--
-- Name: shard_failures shard_failures_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.shard_failures
    ADD CONSTRAINT shard_failures_pkey PRIMARY KEY (shard, reason);


--
-- Name: sns_signing_keys sns_signing_keys_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.sns_signing_keys
    ADD CONSTRAINT sns_signing_keys_pkey PRIMARY KEY (id);


--
-- Name: subscriptions subscriptions_external_id_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.subscriptions
    ADD CONSTRAINT subscriptions_external_id_key UNIQUE (external_id);


--
-- Name: subscriptions subscriptions_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.subscriptions
    ADD CONSTRAINT subscriptions_pkey PRIMARY KEY (id);


--
-- Name: subscriptions subscriptions_topic_endpoint_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.subscriptions
    ADD CONSTRAINT subscriptions_topic_endpoint_key UNIQUE (topic, endpoint);


--
-- Name: tags tags_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tags
    ADD CONSTRAINT tags_pkey PRIMARY KEY (resource_arn, key);


--
-- Name: topics topics_account_name_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.topics
    ADD CONSTRAINT topics_account_name_key UNIQUE (account, region, name);


--
-- Name: topics topics_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.topics
    ADD CONSTRAINT topics_pkey PRIMARY KEY (id);


--
-- Name: webhook_outbox webhook_outbox_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.webhook_outbox
    ADD CONSTRAINT webhook_outbox_pkey PRIMARY KEY (id);


--
-- Name: access_keys_account_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX access_keys_account_idx ON public.access_keys USING btree (account);


--
-- Name: api_keys_account_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX api_keys_account_idx ON public.api_keys USING btree (account);


--
-- Name: application_delivery_counts_minute_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX application_delivery_counts_minute_idx ON public.application_delivery_counts USING btree (minute);


--
-- Name: delivery_log_message_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX delivery_log_message_idx ON ONLY public.delivery_log USING btree (message);


--
-- Name: delivery_log_default_message_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX delivery_log_default_message_idx ON public.delivery_log_default USING btree (message);


--
-- Name: delivery_retries_due_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX delivery_retries_due_idx ON public.delivery_retries USING btree (not_before);


--
-- Name: delivery_retries_endpoint_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX delivery_retries_endpoint_idx ON public.delivery_retries USING btree (endpoint);


--
-- Name: delivery_retries_lease_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX delivery_retries_lease_idx ON public.delivery_retries USING btree (lease_owner) WHERE (lease_owner IS NOT NULL);


--
-- Name: endpoints_application_id_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX endpoints_application_id_idx ON public.endpoints USING btree (application, id);


--
-- Name: endpoints_application_user_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX endpoints_application_user_idx ON public.endpoints USING btree (application, user_id) WHERE (user_id IS NOT NULL);


--
-- Name: events_account_created_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX events_account_created_idx ON public.events USING btree (account, created_at);


--
-- Name: fanout_shards_claimable_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX fanout_shards_claimable_idx ON public.fanout_shards USING btree (state, lease_expires_at) WHERE (state <> 'done'::text);


--
-- Name: fanout_shards_message_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX fanout_shards_message_idx ON public.fanout_shards USING btree (message);


--
-- Name: http_deliveries_due_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX http_deliveries_due_idx ON public.http_deliveries USING btree (not_before) WHERE (state = 'pending'::text);


--
-- Name: http_deliveries_message_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX http_deliveries_message_idx ON public.http_deliveries USING btree (message) WHERE (message IS NOT NULL);


--
-- Name: http_deliveries_subscription_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX http_deliveries_subscription_idx ON public.http_deliveries USING btree (subscription);


--
-- Name: messages_campaign_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX messages_campaign_idx ON public.messages USING btree (campaign, id) WHERE (campaign IS NOT NULL);


--
-- Name: messages_direct_unclaimed_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX messages_direct_unclaimed_idx ON public.messages USING btree (id) WHERE ((NOT planned) AND (state = 'Enqueued'::text) AND (target_kind = 'endpoint'::text));


--
-- Name: messages_scheduled_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX messages_scheduled_idx ON public.messages USING btree (send_at) WHERE (state = 'Scheduled'::text);


--
-- Name: messages_topic_recent_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX messages_topic_recent_idx ON public.messages USING btree (target_id, id) WHERE (target_kind = 'topic'::text);


--
-- Name: messages_unplanned_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX messages_unplanned_idx ON public.messages USING btree (id) WHERE ((NOT planned) AND (state = 'Enqueued'::text) AND (target_kind <> 'endpoint'::text));


--
-- Name: mobile_app_tokens_app_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX mobile_app_tokens_app_idx ON public.mobile_app_tokens USING btree (mobile_app);


--
-- Name: mobile_apps_firebase_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX mobile_apps_firebase_idx ON public.mobile_apps USING btree (firebase_project_id) WHERE (firebase_project_id IS NOT NULL);


--
-- Name: registration_requests_pending_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX registration_requests_pending_idx ON public.registration_requests USING btree (created_at) WHERE (status = 'Pending'::text);


--
-- Name: subscriptions_confirmation_token_key; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX subscriptions_confirmation_token_key ON public.subscriptions USING btree (confirmation_token) WHERE (confirmation_token IS NOT NULL);


--
-- Name: subscriptions_endpoint_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX subscriptions_endpoint_idx ON public.subscriptions USING btree (endpoint) WHERE (endpoint IS NOT NULL);


--
-- Name: subscriptions_topic_http_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX subscriptions_topic_http_idx ON public.subscriptions USING btree (topic, id) WHERE (endpoint IS NULL);


--
-- Name: subscriptions_topic_id_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX subscriptions_topic_id_idx ON public.subscriptions USING btree (topic, id);


--
-- Name: subscriptions_topic_target_key; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX subscriptions_topic_target_key ON public.subscriptions USING btree (topic, protocol, target) WHERE (endpoint IS NULL);


--
-- Name: webhook_outbox_pending_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX webhook_outbox_pending_idx ON public.webhook_outbox USING btree (id) WHERE (state = 'pending'::text);


--
-- Name: delivery_log_default_message_idx; Type: INDEX ATTACH; Schema: public; Owner: -
--

ALTER INDEX public.delivery_log_message_idx ATTACH PARTITION public.delivery_log_default_message_idx;


--
-- Name: accounts accounts_delete_messages; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER accounts_delete_messages AFTER DELETE ON public.accounts REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION public.clarion_delete_referencing('messages', 'account');


--
-- Name: delivery_log delivery_log_failure_events; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER delivery_log_failure_events AFTER INSERT ON public.delivery_log REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.clarion_delivery_failures_logged();


--
-- Name: endpoints endpoints_created_events; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER endpoints_created_events AFTER INSERT ON public.endpoints REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.clarion_endpoints_inserted();


--
-- Name: endpoints endpoints_deleted_events; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER endpoints_deleted_events AFTER DELETE ON public.endpoints REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION public.clarion_endpoints_deleted();


--
-- Name: endpoints endpoints_forget_frequency_history; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER endpoints_forget_frequency_history AFTER DELETE ON public.endpoints REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION public.frequency_history_forget();


--
-- Name: endpoints endpoints_gone_retries; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER endpoints_gone_retries AFTER DELETE ON public.endpoints REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION public.clarion_retries_endpoint_gone();


--
-- Name: endpoints endpoints_updated_events; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER endpoints_updated_events AFTER UPDATE ON public.endpoints REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.clarion_endpoints_updated();


--
-- Name: messages messages_delete_shards; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER messages_delete_shards AFTER DELETE ON public.messages REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION public.clarion_delete_referencing('fanout_shards', 'message');


--
-- Name: messages messages_link_campaign; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER messages_link_campaign BEFORE INSERT ON public.messages FOR EACH ROW WHEN (((new.campaign IS NULL) AND (new.attributes ? 'Clarion.Namespace'::text))) EXECUTE FUNCTION public.clarion_link_campaign();


--
-- Name: access_keys access_keys_account_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.access_keys
    ADD CONSTRAINT access_keys_account_fkey FOREIGN KEY (account) REFERENCES public.accounts(id) ON DELETE CASCADE;


--
-- Name: api_keys api_keys_account_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.api_keys
    ADD CONSTRAINT api_keys_account_fkey FOREIGN KEY (account) REFERENCES public.accounts(id) ON DELETE CASCADE;


--
-- Name: campaigns campaigns_account_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.campaigns
    ADD CONSTRAINT campaigns_account_fkey FOREIGN KEY (account) REFERENCES public.accounts(id) ON DELETE CASCADE;


--
-- Name: delivery_retries delivery_retries_message_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.delivery_retries
    ADD CONSTRAINT delivery_retries_message_fkey FOREIGN KEY (message) REFERENCES public.messages(id) ON DELETE CASCADE;


--
-- Name: delivery_retries delivery_retries_shard_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.delivery_retries
    ADD CONSTRAINT delivery_retries_shard_fkey FOREIGN KEY (shard) REFERENCES public.fanout_shards(id) ON DELETE CASCADE;


--
-- Name: endpoints endpoints_application_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.endpoints
    ADD CONSTRAINT endpoints_application_fkey FOREIGN KEY (application) REFERENCES public.platform_applications(id) ON DELETE CASCADE;


--
-- Name: events events_account_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.events
    ADD CONSTRAINT events_account_fkey FOREIGN KEY (account) REFERENCES public.accounts(id) ON DELETE CASCADE;


--
-- Name: http_deliveries http_deliveries_message_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.http_deliveries
    ADD CONSTRAINT http_deliveries_message_fkey FOREIGN KEY (message) REFERENCES public.messages(id) ON DELETE CASCADE;


--
-- Name: http_deliveries http_deliveries_subscription_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.http_deliveries
    ADD CONSTRAINT http_deliveries_subscription_fkey FOREIGN KEY (subscription) REFERENCES public.subscriptions(id) ON DELETE CASCADE;


--
-- Name: messages messages_campaign_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.messages
    ADD CONSTRAINT messages_campaign_fkey FOREIGN KEY (campaign) REFERENCES public.campaigns(id) ON DELETE SET NULL;


--
-- Name: mobile_app_tokens mobile_app_tokens_mobile_app_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.mobile_app_tokens
    ADD CONSTRAINT mobile_app_tokens_mobile_app_fkey FOREIGN KEY (mobile_app) REFERENCES public.mobile_apps(id) ON DELETE CASCADE;


--
-- Name: mobile_apps mobile_apps_account_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.mobile_apps
    ADD CONSTRAINT mobile_apps_account_fkey FOREIGN KEY (account) REFERENCES public.accounts(id) ON DELETE CASCADE;


--
-- Name: mobile_apps mobile_apps_adm_application_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.mobile_apps
    ADD CONSTRAINT mobile_apps_adm_application_fkey FOREIGN KEY (adm_application) REFERENCES public.platform_applications(id) ON DELETE SET NULL;


--
-- Name: mobile_apps mobile_apps_apns_application_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.mobile_apps
    ADD CONSTRAINT mobile_apps_apns_application_fkey FOREIGN KEY (apns_application) REFERENCES public.platform_applications(id) ON DELETE SET NULL;


--
-- Name: mobile_apps mobile_apps_fcm_application_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.mobile_apps
    ADD CONSTRAINT mobile_apps_fcm_application_fkey FOREIGN KEY (fcm_application) REFERENCES public.platform_applications(id) ON DELETE SET NULL;


--
-- Name: mobile_apps mobile_apps_webpush_application_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.mobile_apps
    ADD CONSTRAINT mobile_apps_webpush_application_fkey FOREIGN KEY (webpush_application) REFERENCES public.platform_applications(id) ON DELETE SET NULL;


--
-- Name: opens opens_message_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.opens
    ADD CONSTRAINT opens_message_fkey FOREIGN KEY (message) REFERENCES public.messages(id) ON DELETE CASCADE;


--
-- Name: platform_applications platform_applications_account_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.platform_applications
    ADD CONSTRAINT platform_applications_account_fkey FOREIGN KEY (account) REFERENCES public.accounts(id) ON DELETE CASCADE;


--
-- Name: registration_requests registration_requests_mobile_app_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.registration_requests
    ADD CONSTRAINT registration_requests_mobile_app_fkey FOREIGN KEY (mobile_app) REFERENCES public.mobile_apps(id) ON DELETE CASCADE;


--
-- Name: registration_requests registration_requests_token_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.registration_requests
    ADD CONSTRAINT registration_requests_token_id_fkey FOREIGN KEY (token_id) REFERENCES public.mobile_app_tokens(id) ON DELETE SET NULL;


--
-- Name: shard_failures shard_failures_shard_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.shard_failures
    ADD CONSTRAINT shard_failures_shard_fkey FOREIGN KEY (shard) REFERENCES public.fanout_shards(id) ON DELETE CASCADE;


--
-- Name: subscriptions subscriptions_endpoint_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.subscriptions
    ADD CONSTRAINT subscriptions_endpoint_fkey FOREIGN KEY (endpoint) REFERENCES public.endpoints(id) ON DELETE CASCADE;


--
-- Name: subscriptions subscriptions_topic_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.subscriptions
    ADD CONSTRAINT subscriptions_topic_fkey FOREIGN KEY (topic) REFERENCES public.topics(id) ON DELETE CASCADE;


--
-- Name: tags tags_account_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tags
    ADD CONSTRAINT tags_account_fkey FOREIGN KEY (account) REFERENCES public.accounts(id) ON DELETE CASCADE;


--
-- Name: topics topics_account_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.topics
    ADD CONSTRAINT topics_account_fkey FOREIGN KEY (account) REFERENCES public.accounts(id) ON DELETE CASCADE;


--
-- PostgreSQL database dump complete
--


