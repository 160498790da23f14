-- 5: name checks PostgreSQL can compile
--
-- v1's name checks used `{1,256}`, which PostgreSQL's regular expressions refuse (a bound is at most
-- 255): every insert of a platform application or topic failed with SQLSTATE 2201B. Same rules, with the
-- length checked apart. The constraint names stay, so errors still name them.

ALTER TABLE platform_applications DROP CONSTRAINT platform_applications_name_check,
    ADD CONSTRAINT platform_applications_name_check CHECK (name ~ '^[A-Za-z0-9_.-]+$' AND length(name) <= 256);
ALTER TABLE topics DROP CONSTRAINT topics_name_check,
    ADD CONSTRAINT topics_name_check CHECK (name ~ '^[A-Za-z0-9_-]+$' AND length(name) <= 256);
