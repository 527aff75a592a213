-- harvestflow harvest database, version 002: harvest planning.
-- Runs of a harvest definition keyed by the Airflow run's logical date (so that a re-run or a
-- backfill of the same date finds the same run number and the same jobs), per-configuration
-- attributes that override the template (max hops, robots policy, JavaScript extraction; the
-- job generator keeps configurations with different attributes in different jobs), and the
-- host -> address resolve map (demo and tests on loopback) frozen into each job.

CREATE TABLE harvest_runs (
    harvest_id    integer NOT NULL REFERENCES harvestdefinitions(harvest_id) ON DELETE CASCADE,
    logical_date  timestamptz NOT NULL,
    harvest_num   integer NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    job_count     integer,                        -- NULL until the jobs are generated
    generated_at  timestamptz,
    advanced_at   timestamptz,                    -- schedule moved on after this run
    PRIMARY KEY (harvest_id, logical_date),
    UNIQUE (harvest_id, harvest_num)
);

ALTER TABLE configurations ADD COLUMN attributes jsonb NOT NULL DEFAULT '{}'::jsonb;
ALTER TABLE harvestdefinitions ADD COLUMN resolve jsonb NOT NULL DEFAULT '{}'::jsonb;
ALTER TABLE harvestdefinitions ADD COLUMN template_name text;   -- one-off seed-list harvests
ALTER TABLE jobs ADD COLUMN resolve jsonb NOT NULL DEFAULT '{}'::jsonb;
ALTER TABLE jobs ADD COLUMN logical_date timestamptz;
ALTER TABLE jobs ADD COLUMN dedup_index text;
CREATE INDEX jobs_harvest_idx ON jobs (harvest_id, harvest_num);
CREATE INDEX harvest_configs_config_idx ON harvest_configs (config_id);
CREATE INDEX historyinfo_job_idx ON historyinfo (job_id);
