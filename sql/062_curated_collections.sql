-- harvestflow harvest database, version 062: curated access collections (W3ACT's collections).
-- Owner: access.curated.
--
-- A curated collection: a name (its pywb collection, /<name>/…), a title and a description,
-- and the targets chosen for it, each with the job whose captures it shows (any job: a
-- selective harvest's or a broad crawl's). Served as an access collection of its own and
-- usable as the collection of a guided tour's sites.
CREATE TABLE access_curated (
    name         text PRIMARY KEY
        CHECK (name ~ '^[a-z][a-z0-9-]{0,62}$' AND name <> 'all'
               AND name NOT LIKE 'harvest-%' AND name NOT LIKE 'job-%'),
    title        text NOT NULL,
    description  text NOT NULL DEFAULT '',
    created_by   text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE access_curated_captures (
    name       text NOT NULL REFERENCES access_curated (name) ON DELETE CASCADE,
    record_id  integer NOT NULL REFERENCES selection_records (record_id) ON DELETE CASCADE,
    job_id     bigint NOT NULL REFERENCES jobs (job_id) ON DELETE CASCADE,
    added_by   text NOT NULL,
    added_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (name, record_id, job_id)
);
