-- harvestflow harvest database, version 061: access rules made by a licence, and "open".
-- Owner: access.rules (access.licences makes the licences' rules through it).
--
-- origin: NULL for a rule an operator added; 'licence:record N' for a rule a target's licence
-- annotation put in force (removed when the licence is no longer granted).
-- policy 'open': allowed as 'allow' is, and open outside the reading room too.
ALTER TABLE access_rules ADD COLUMN origin text;
ALTER TABLE access_rules DROP CONSTRAINT access_rules_policy_check;
ALTER TABLE access_rules ADD CONSTRAINT access_rules_policy_check
    CHECK (policy IN ('allow', 'block', 'exclude', 'open'));
ALTER TABLE access_rules DROP CONSTRAINT access_rules_check;
ALTER TABLE access_rules ADD CONSTRAINT access_rules_check
    CHECK (policy NOT IN ('allow', 'open') OR embargo_days IS NULL);
