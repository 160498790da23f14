-- 21: HMS platform applications
-- Huawei Push Kit (issue 19): an HMS application holds an OAuth 2.0 client (id in the principal, secret in the
-- credential, encrypted at rest like every credential) and optionally an HMSAppID attribute; its endpoints' tokens
-- are Push Kit tokens, stored as every other token. Only the platform check has to learn the new name.
ALTER TABLE platform_applications DROP CONSTRAINT platform_applications_platform_check,
    ADD CONSTRAINT platform_applications_platform_check CHECK (platform IN ('APNS', 'APNS_SANDBOX', 'GCM', 'ADM', 'WEBPUSH', 'HMS'));
