-- 24: a mobile app's WEBPUSH application
-- The registration API's `WebPushSubscription` (issue 19) registers a browser the way `ApnsDeviceToken` and
-- `FcmDeviceToken` register devices: it goes to the mobile app's WEBPUSH application, which is also one of the
-- applications an audience publish and the registration cleanup cover.
ALTER TABLE mobile_apps ADD COLUMN webpush_application bigint REFERENCES platform_applications(id) ON DELETE SET NULL;
