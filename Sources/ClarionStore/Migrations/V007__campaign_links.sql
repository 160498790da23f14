-- 7: campaigns: messages linked by their namespace attribute
--
-- Campaigns: a message is linked to its campaign in the statement that stores it, and campaign
-- reports find their messages by index.
--
-- The publish path (native publish, the publish batcher) writes `messages` without a campaign column; the
-- campaign travels in the reserved message attribute `Clarion.Namespace` (`PayloadNamespace`, which the
-- renderer reads too). A BEFORE INSERT trigger sets `messages.campaign` from that attribute's `campaign`
-- (an external id) within the message's own account, so there is no window in which a stored message is
-- not yet linked, and a forged attribute cannot link to another account's campaign. Messages without the
-- attribute pay one `?` test. An unreadable attribute links nothing rather than failing the publish.

CREATE INDEX messages_campaign_idx ON messages (campaign, id) WHERE campaign IS NOT NULL;

CREATE FUNCTION clarion_link_campaign() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    spec jsonb;
BEGIN
    IF NEW.campaign IS NULL AND NEW.attributes ? 'Clarion.Namespace' THEN
        BEGIN
            spec := coalesce(NEW.attributes->'Clarion.Namespace'->>'StringValue',
                             NEW.attributes->>'Clarion.Namespace')::jsonb;
        EXCEPTION WHEN others THEN
            spec := NULL;
        END;
        IF jsonb_typeof(spec) = 'object' AND spec->>'campaign' IS NOT NULL THEN
            NEW.campaign := (SELECT c.id FROM campaigns c
                             WHERE c.account = NEW.account AND c.external_id = spec->>'campaign');
        END IF;
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER messages_link_campaign BEFORE INSERT ON messages
    FOR EACH ROW EXECUTE FUNCTION clarion_link_campaign();
