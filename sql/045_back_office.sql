-- harvestflow harvest database, version 045: definitions, schedules, domains and aliases edited
-- from the curator pages and the CLI (harvest.office).

-- A schedule is either NetarchiveSuite's "every N time units" (timeunit, numtimeunits, and the
-- on* fields that pin the first event: onminute 0-59, onhour 0-23, ondayofweek 1 Monday ..
-- 7 Sunday (ISO), ondayofmonth 1-31, clamped to the month's last day) or, for engineers, a cron
-- expression (five fields, UTC); never both.
ALTER TABLE schedules ADD COLUMN cron text;
ALTER TABLE schedules ALTER COLUMN timeunit DROP NOT NULL;
ALTER TABLE schedules ALTER COLUMN numtimeunits DROP NOT NULL;
ALTER TABLE schedules ADD CONSTRAINT schedules_unit_or_cron CHECK (
    (cron IS NULL AND timeunit IS NOT NULL AND numtimeunits IS NOT NULL)
    OR (cron IS NOT NULL AND timeunit IS NULL AND numtimeunits IS NULL));

-- Who made a domain an alias of another (lastaliasupdate says when; the alias expires a year
-- after it, as in NetarchiveSuite, unless renewed).
ALTER TABLE domains ADD COLUMN alias_set_by text;

-- Every version of a harvest definition made by a person (pages or CLI): who, when, what they
-- did, and the definition as it was after the change (name, state, schedule, configurations).
-- Rows are never updated nor deleted.
CREATE TABLE definition_history (
    change_id    bigserial PRIMARY KEY,
    harvest_id   integer NOT NULL REFERENCES harvestdefinitions (harvest_id) ON DELETE CASCADE,
    edition      bigint NOT NULL,
    changed_at   timestamptz NOT NULL DEFAULT now(),
    changed_by   text NOT NULL,
    action       text NOT NULL,
    definition   jsonb NOT NULL
);
CREATE INDEX definition_history_definition ON definition_history (harvest_id, change_id);
