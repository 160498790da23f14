-- 22: local-time sends, frequency capping and quiet hours
--
-- Issue 18 (docs/architecture.md, "Local-time sends, frequency capping and quiet hours").
--
-- An endpoint's IANA time zone is the `TimeZone` entry of its attribute map (set by the native API's `time_zone`,
-- the registration API's `TimeZone` and events' `app.time_zone`): no column, so SNS's GetEndpointAttributes shows it
-- and nothing here changes `endpoints`.
--
-- A mobile app's frequency cap (at most `frequency_cap_max` campaign pushes per endpoint in any
-- `frequency_cap_window_seconds`) and quiet hours (`quiet_start_minute` to `quiet_end_minute`, minutes after local
-- midnight, in the endpoint's zone, `quiet_time_zone` for endpoints without one) apply to the deliveries of its
-- platform applications.
ALTER TABLE mobile_apps ADD COLUMN frequency_cap_max integer CHECK (frequency_cap_max BETWEEN 1 AND 1000);
ALTER TABLE mobile_apps ADD COLUMN frequency_cap_window_seconds integer CHECK (frequency_cap_window_seconds BETWEEN 60 AND 2592000);
ALTER TABLE mobile_apps ADD CONSTRAINT mobile_apps_frequency_cap_check
    CHECK ((frequency_cap_max IS NULL) = (frequency_cap_window_seconds IS NULL));
ALTER TABLE mobile_apps ADD COLUMN quiet_start_minute smallint CHECK (quiet_start_minute BETWEEN 0 AND 1439);
ALTER TABLE mobile_apps ADD COLUMN quiet_end_minute smallint CHECK (quiet_end_minute BETWEEN 0 AND 1439);
ALTER TABLE mobile_apps ADD COLUMN quiet_time_zone text;
ALTER TABLE mobile_apps ADD CONSTRAINT mobile_apps_quiet_hours_check
    CHECK ((quiet_start_minute IS NULL) = (quiet_end_minute IS NULL) AND quiet_start_minute IS DISTINCT FROM quiet_end_minute
           OR quiet_start_minute IS NULL);

-- Per shard: deliveries not sent because of the cap (`capped`, final), held by quiet hours and handed to the retry
-- queue due at the end of the quiet hours (`deferred`, informational like `retried`: their outcome is counted when
-- they are sent), and dropped by quiet hours (`quiet_skipped`, final). Old rows read 0.
ALTER TABLE fanout_shards ADD COLUMN capped bigint NOT NULL DEFAULT 0;
ALTER TABLE fanout_shards ADD COLUMN deferred bigint NOT NULL DEFAULT 0;
ALTER TABLE fanout_shards ADD COLUMN quiet_skipped bigint NOT NULL DEFAULT 0;

-- The cap's history: one row per endpoint with the (message, time) pairs of its capped-kind pushes still inside
-- its app's window. One set-based statement per page of targets (`FanOutJobs.admitCapped`) prunes
-- and appends under the row lock ON CONFLICT takes, so two nodes sending two campaigns to one endpoint at once
-- cannot both take its last slot; a message already recorded for the endpoint is admitted again (a shard resumed
-- after a crash re-reads its page). No foreign key (as `fanout_shards`, schema v9): a statement-level trigger forgets
-- the history of deleted endpoints.
CREATE TABLE frequency_history (
    endpoint bigint PRIMARY KEY,
    messages bigint[] NOT NULL,
    sent_at timestamptz[] NOT NULL
);

CREATE FUNCTION frequency_history_forget() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM frequency_history h USING gone g WHERE h.endpoint = g.id;
    RETURN NULL;
END $$;
CREATE TRIGGER endpoints_forget_frequency_history AFTER DELETE ON endpoints
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION frequency_history_forget();
