-- harvestflow harvest database, version 012: one-off runs of a scheduled definition.
-- A one-off (oneoff_harvest DAG) of a definition that has a schedule is an extra run: it gets a
-- harvest number and jobs like any run, but is not one of the schedule's events, so it must not
-- count towards the schedule's maxrepeats nor move its next date.
ALTER TABLE harvest_runs ADD COLUMN oneoff boolean NOT NULL DEFAULT false;
