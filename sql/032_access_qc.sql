-- harvestflow harvest database, version 032: the curators' visual QC loop.
--
-- While a curator browses a job's own replay view (the access collection job-<id>), every URL
-- the archive could not serve there (pywb's "not in the archive" answer to a page, a link or
-- an embed) is recorded against the job: one row per (job, URL), with how often and when it was
-- first and last asked for. A curator sends some or all of them to a patch harvest: a one-off
-- definition with those URLs as seeds and the job's template, whose captures join the job's
-- definition collection and the job's view. access_patches keeps which URLs went to which
-- patch definition (its jobs are the definition's jobs), who asked and the DAG run started.
-- access/missing.py owns both tables.
CREATE TABLE access_patches (
    patch_id          bigserial PRIMARY KEY,
    job_id            bigint NOT NULL REFERENCES jobs(job_id) ON DELETE CASCADE,
    origin_harvest_id integer NOT NULL REFERENCES harvestdefinitions(harvest_id),
    harvest_id        integer NOT NULL UNIQUE REFERENCES harvestdefinitions(harvest_id),
    urls              text[] NOT NULL CHECK (cardinality(urls) > 0),
    requested_by      text NOT NULL,
    requested_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    dag_run_id        text
);
CREATE INDEX access_patches_job ON access_patches (job_id);

CREATE TABLE access_missing_urls (
    job_id      bigint NOT NULL REFERENCES jobs(job_id) ON DELETE CASCADE,
    url         text NOT NULL,
    embed       boolean NOT NULL,        -- asked for as an embed (image, script, style...)
    hits        integer NOT NULL DEFAULT 1 CHECK (hits > 0),
    first_seen  timestamptz NOT NULL DEFAULT clock_timestamp(),
    last_seen   timestamptz NOT NULL DEFAULT clock_timestamp(),
    patch_id    bigint REFERENCES access_patches(patch_id) ON DELETE SET NULL,
    PRIMARY KEY (job_id, url)
);
