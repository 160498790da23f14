-- 6: registration and webhook leases
--
-- The registration processor and the webhook sender claim rows under a lease (a processor that dies leaves
-- its rows to be claimed again when the lease runs out: processing survives a restart). A mobile app's tokens
-- are listed and revoked by app.

ALTER TABLE registration_requests ADD COLUMN lease_expires_at timestamptz,
    ADD COLUMN attempts integer NOT NULL DEFAULT 0;
ALTER TABLE webhook_outbox ADD COLUMN lease_expires_at timestamptz;
CREATE INDEX mobile_app_tokens_app_idx ON mobile_app_tokens (mobile_app);
