/// Clarion's schema, as versioned migrations: the numbered files in `Migrations/` (`V<version>__<name>.sql`, each
/// starting with `-- <version>: <name>` and why), compiled into the binary. `docs/schema.sql` is the schema they
/// build, as `pg_dump` prints it; `SchemaDumpTests` fails when the two disagree (`scripts/schema-dump` rewrites it).
/// docs/architecture.md explains each table.
///
/// Shape rules (docs/architecture.md, "Schema"): internal keys are `bigint` identities (keyset ranges, shard bounds and
/// compact delivery ids are cheap); external ids are UUIDs or names inside ARNs. Every hot query is
/// keyed by application or topic, so the tables can later be distributed by those keys. Counters live
/// per shard, not per message, so a large fan-out does not serialise on one row. The delivery log is
/// partitioned by day and pruned by dropping partitions.
public enum Schema {
    /// In order. A new migration is a new file here and a new line below, never an edit of an applied one.
    public static let migrations: [Migration] = [
        Migration(version: 1, name: "accounts, applications, endpoints, topics, subscriptions",
                  sql: PackageResources.V001__accounts_applications_endpoints_topics_sql),
        Migration(version: 2, name: "messages, fan-out shards, retries, delivery accounting",
                  sql: PackageResources.V002__messages_shards_retries_sql),
        Migration(version: 3, name: "mobile apps, registration requests, webhooks, campaigns, opens",
                  sql: PackageResources.V003__mobile_apps_registrations_campaigns_sql),
        Migration(version: 4, name: "fan-out: planned targets per shard, retries remember their shard",
                  sql: PackageResources.V004__planned_targets_retry_shards_sql),
        Migration(version: 5, name: "name checks PostgreSQL can compile",
                  sql: PackageResources.V005__name_checks_sql),
        Migration(version: 6, name: "registration and webhook leases",
                  sql: PackageResources.V006__registration_webhook_leases_sql),
        Migration(version: 7, name: "campaigns: messages linked by their namespace attribute",
                  sql: PackageResources.V007__campaign_links_sql),
        Migration(version: 8, name: "campaign link trigger only for messages with a namespace",
                  sql: PackageResources.V008__campaign_link_trigger_condition_sql),
        Migration(version: 9, name: "publish intake without per-row foreign-key checks",
                  sql: PackageResources.V009__publish_intake_without_fk_checks_sql),
        Migration(version: 10, name: "direct messages get their shard when claimed",
                  sql: PackageResources.V010__direct_shards_at_claim_sql),
        Migration(version: 11, name: "event collector settings per mobile app; webhook signing key by reference",
                  sql: PackageResources.V011__event_collector_settings_webhook_signing_sql),
        Migration(version: 12, name: "retries outlive their endpoint, so their message finishes",
                  sql: PackageResources.V012__retries_outlive_endpoints_sql),
        Migration(version: 13, name: "fan-out counts subscribers a filter policy filtered out",
                  sql: PackageResources.V013__filtered_deliveries_sql),
        Migration(version: 14, name: "a message's first delivery time",
                  sql: PackageResources.V014__first_delivery_sql),
        Migration(version: 15, name: "WEBPUSH platform applications",
                  sql: PackageResources.V015__webpush_platform_sql),
        Migration(version: 16, name: "scheduled and cancelled messages",
                  sql: PackageResources.V016__scheduled_and_cancelled_messages_sql),
        Migration(version: 17, name: "HTTP/HTTPS subscriptions (confirmation, delivery queue, signing key); endpoint lifecycle events",
                  sql: PackageResources.V017__http_subscriptions_sql),
        Migration(version: 18, name: "a topic's recent messages, for the web console",
                  sql: PackageResources.V018__topic_recent_messages_index_sql),
        Migration(version: 19, name: "campaign variants: endpoints held out are counted per shard",
                  sql: PackageResources.V019__campaign_variant_holdout_sql),
        Migration(version: 20, name: "resources live in an SNS region",
                  sql: PackageResources.V020__regions_sql),
        Migration(version: 21, name: "HMS platform applications",
                  sql: PackageResources.V021__hms_platform_sql),
        Migration(version: 22, name: "local-time sends, frequency capping and quiet hours",
                  sql: PackageResources.V022__local_time_frequency_cap_quiet_hours_sql),
        Migration(version: 23, name: "exact per-application delivery counts by minute, for the console; event ARNs in their partition",
                  sql: PackageResources.V023__application_delivery_counts_sql),
        Migration(version: 24, name: "a mobile app's WEBPUSH application",
                  sql: PackageResources.V024__mobile_app_webpush_sql),
    ]
}
