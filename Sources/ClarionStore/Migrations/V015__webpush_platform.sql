-- 15: WEBPUSH platform applications
-- Web Push (issue 19): a WEBPUSH application sends to browsers through their push services (RFC 8030), signed with
-- its VAPID key pair (RFC 8292). Its endpoints' tokens are the browsers' PushSubscription JSON, stored in the
-- canonical form WebPushSubscription.canonicalToken gives (at most ~2.3 kB, inside the 4096-character token check),
-- so the existing (application, token) uniqueness makes a repeated subscription the same endpoint. Only the
-- platform check has to learn the new name.
ALTER TABLE platform_applications DROP CONSTRAINT platform_applications_platform_check,
    ADD CONSTRAINT platform_applications_platform_check CHECK (platform IN ('APNS', 'APNS_SANDBOX', 'GCM', 'ADM', 'WEBPUSH'));
