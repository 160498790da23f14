-- 12: retries outlive their endpoint, so their message finishes
--
-- A retry outlives its endpoint, so its message still finishes.
--
-- `delivery_retries.endpoint` was a foreign key with `ON DELETE CASCADE`: deleting a platform application (its
-- endpoints went with it) or an endpoint while one of its deliveries waited for another attempt deleted the
-- retry row, and with it the only thing that would have finished the message. The message stayed `Processing`
-- for good (all shards done, no retry pending). So the retry stays: a
-- statement-level trigger records why its endpoint is gone (`PlatformApplicationDeleted` when the application
-- went too, else `EndpointDeleted`) and makes it due at once; the retry worker then counts the delivery failed
-- with that reason, writes a delivery-log row and finishes the message as for any last retry.
-- Without the key, a checkpoint that schedules a retry for an endpoint deleted meanwhile no longer fails on
-- the constraint: the row is written and the retry worker finds its endpoint gone (`EndpointDeleted`).

ALTER TABLE delivery_retries DROP CONSTRAINT delivery_retries_endpoint_fkey;
ALTER TABLE delivery_retries ADD COLUMN vanished text;
CREATE INDEX delivery_retries_endpoint_idx ON delivery_retries (endpoint);

CREATE FUNCTION clarion_retries_endpoint_gone() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE delivery_retries r
    SET vanished = CASE WHEN EXISTS (SELECT 1 FROM platform_applications a WHERE a.id = g.application)
                        THEN 'EndpointDeleted' ELSE 'PlatformApplicationDeleted' END,
        not_before = least(r.not_before, now())
    FROM gone g WHERE r.endpoint = g.id;
    RETURN NULL;
END $$;
CREATE TRIGGER endpoints_gone_retries AFTER DELETE ON endpoints
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION clarion_retries_endpoint_gone();
