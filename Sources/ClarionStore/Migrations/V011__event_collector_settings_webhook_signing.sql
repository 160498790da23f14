-- 11: event collector settings per mobile app; webhook signing key by reference
--
-- The public event collector's settings per mobile app, and the key of a webhook's signature kept by reference
-- (issue "Hardening", findings 3 and 11).
--
-- `events_require_api_token`: every event must present one of the app's API tokens (off: the collector stays
-- public, as the mobile SDK expects). `events_require_api_token_for_user_change`: an event may move a device
-- token already bound to one `user_id` to another only with an API token; on for every app, existing ones
-- included, because the unguarded move let anyone redirect a user's pushes (docs/security.md).
--
-- `webhook_outbox.signing_token` names the API token whose sealed copy keys the `x-clarion-signature` header,
-- computed at each send attempt (the time is part of what is signed), so the key stays sealed in
-- `mobile_app_tokens` rather than copied into the outbox. No foreign key: identity values are never reused, a
-- deleted token simply no longer joins (the webhook then goes without the header), and deleting a mobile app
-- does not have to search the outbox.

ALTER TABLE mobile_apps ADD COLUMN events_require_api_token boolean NOT NULL DEFAULT false,
    ADD COLUMN events_require_api_token_for_user_change boolean NOT NULL DEFAULT true;
ALTER TABLE webhook_outbox ADD COLUMN signing_token bigint;
