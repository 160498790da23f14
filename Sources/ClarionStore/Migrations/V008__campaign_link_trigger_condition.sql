-- 8: campaign link trigger only for messages with a namespace
--
-- Without a condition the v7 trigger makes a PL/pgSQL call for every stored message, most of which carry no
-- namespace. A `WHEN` condition is evaluated by the executor itself, so ordinary publishes do not enter
-- PL/pgSQL, which would cost a share of every publish batch.

DROP TRIGGER messages_link_campaign ON messages;
CREATE TRIGGER messages_link_campaign BEFORE INSERT ON messages
    FOR EACH ROW WHEN (NEW.campaign IS NULL AND NEW.attributes ? 'Clarion.Namespace')
    EXECUTE FUNCTION clarion_link_campaign();
