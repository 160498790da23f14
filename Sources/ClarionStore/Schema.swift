/// Clarion's schema, as versioned migrations. docs/architecture.md explains each table.
///
/// Shape rules (docs/architecture.md, "Schema"): internal keys are `bigint` identities (keyset ranges, shard bounds and
/// compact delivery ids are cheap); external ids are UUIDs or names inside ARNs. Every hot query is
/// keyed by application or topic, so the tables can later be distributed by those keys. Counters live
/// per shard, not per message, so a large fan-out does not serialise on one row. The delivery log is
/// partitioned by day and pruned by dropping partitions.
public enum Schema {
    public static let migrations: [Migration] = [
        Migration(version: 1, name: "accounts, applications, endpoints, topics, subscriptions", sql: v1),
        Migration(version: 2, name: "messages, fan-out shards, retries, delivery accounting", sql: v2),
        Migration(version: 3, name: "mobile apps, registration requests, webhooks, campaigns, opens", sql: v3),
        Migration(version: 4, name: "fan-out: planned targets per shard, retries remember their shard", sql: v4),
        Migration(version: 5, name: "name checks PostgreSQL can compile", sql: v5),
        Migration(version: 6, name: "registration and webhook leases", sql: v6),
        Migration(version: 7, name: "campaigns: messages linked by their namespace attribute", sql: v7),
        Migration(version: 8, name: "campaign link trigger only for messages with a namespace", sql: v8),
        Migration(version: 9, name: "publish intake without per-row foreign-key checks", sql: v9),
        Migration(version: 10, name: "direct messages get their shard when claimed", sql: v10),
        Migration(version: 11, name: "event collector settings per mobile app; webhook signing key by reference",
                  sql: eventCollectorSettingsAndWebhookSigning),
        Migration(version: 12, name: "retries outlive their endpoint, so their message finishes", sql: retriesOutliveEndpoints),
        Migration(version: 13, name: "fan-out shards count subscribers filtered out by their filter policy",
                  sql: filteredDeliveries),
    ]

    static let v1 = """
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
        """

    static let v2 = """
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
        """

    static let v3 = """
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
        """

    /// Fan-out accounting (ClarionStore/Jobs): a shard records how many targets its range held when it was
    /// planned (progress before the shard is worked), and a retry remembers its shard so its outcome is added
    /// to that shard's counters (no per-message hot row).
    static let v4 = """
        ALTER TABLE fanout_shards ADD COLUMN planned_targets bigint NOT NULL DEFAULT 0;
        ALTER TABLE delivery_retries ADD COLUMN shard bigint REFERENCES fanout_shards(id) ON DELETE CASCADE;
        CREATE INDEX delivery_retries_lease_idx ON delivery_retries (lease_owner) WHERE lease_owner IS NOT NULL;
        """

    /// v1's name checks used `{1,256}`, which PostgreSQL's regular expressions refuse (a bound is at most
    /// 255): every insert of a platform application or topic failed with SQLSTATE 2201B. Same rules, with the
    /// length checked apart. The constraint names stay, so errors still name them.
    static let v5 = """
        ALTER TABLE platform_applications DROP CONSTRAINT platform_applications_name_check,
            ADD CONSTRAINT platform_applications_name_check CHECK (name ~ '^[A-Za-z0-9_.-]+$' AND length(name) <= 256);
        ALTER TABLE topics DROP CONSTRAINT topics_name_check,
            ADD CONSTRAINT topics_name_check CHECK (name ~ '^[A-Za-z0-9_-]+$' AND length(name) <= 256);
        """

    /// The registration processor and the webhook sender claim rows under a lease (a processor that dies leaves
    /// its rows to be claimed again when the lease runs out: processing survives a restart). A mobile app's tokens
    /// are listed and revoked by app.
    static let v6 = """
        ALTER TABLE registration_requests ADD COLUMN lease_expires_at timestamptz,
            ADD COLUMN attempts integer NOT NULL DEFAULT 0;
        ALTER TABLE webhook_outbox ADD COLUMN lease_expires_at timestamptz;
        CREATE INDEX mobile_app_tokens_app_idx ON mobile_app_tokens (mobile_app);
        """
}
