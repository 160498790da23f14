-- 20: resources live in an SNS region
--
-- SNS is regional: a topic or platform application made in region R exists only in R, its ARN carries R, a list in R
-- shows only R's, and the same name may exist in two regions. Topics and platform applications get a `region`; an
-- endpoint lives in its application's region and a subscription in its topic's, so they take it from their parent.
-- Rows made before regions existed belong to the node's configured region (CLARION_REGION): the migrator sets
-- clarion.default_region for its session; a migration run without it (us-east-1 is CLARION_REGION's default) uses that.
-- The column has no default afterwards: every insert names its region.
ALTER TABLE topics ADD COLUMN region text NOT NULL
    DEFAULT coalesce(nullif(current_setting('clarion.default_region', true), ''), 'us-east-1');
ALTER TABLE topics ALTER COLUMN region DROP DEFAULT;
ALTER TABLE platform_applications ADD COLUMN region text NOT NULL
    DEFAULT coalesce(nullif(current_setting('clarion.default_region', true), ''), 'us-east-1');
ALTER TABLE platform_applications ALTER COLUMN region DROP DEFAULT;

-- The shape of an AWS region name (docs/api.md, "Regions"), checked again here so no other writer stores a malformed one.
ALTER TABLE topics ADD CONSTRAINT topics_region_check CHECK (region ~ '^[a-z]{2}(-[a-z]+)+-[0-9]{1,2}$');
ALTER TABLE platform_applications ADD CONSTRAINT platform_applications_region_check
    CHECK (region ~ '^[a-z]{2}(-[a-z]+)+-[0-9]{1,2}$');

-- Names are unique per account and region.
ALTER TABLE topics DROP CONSTRAINT topics_account_name_key;
ALTER TABLE topics ADD CONSTRAINT topics_account_name_key UNIQUE (account, region, name);
ALTER TABLE platform_applications DROP CONSTRAINT platform_applications_name_key;
ALTER TABLE platform_applications ADD CONSTRAINT platform_applications_name_key UNIQUE (account, region, platform, name);

-- Endpoint lifecycle events (V017) go to the event topic in the application's region (SetPlatformApplicationAttributes
-- accepts only a topic of the caller's region), and the event document's ARNs carry that region.
CREATE OR REPLACE FUNCTION clarion_publish_endpoint_events(pending jsonb) RETURNS void LANGUAGE plpgsql AS $$
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
