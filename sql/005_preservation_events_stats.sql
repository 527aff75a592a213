-- harvestflow harvest database, version 005: preservation ingest events and daily statistics.
-- Why: the manual queue and the automatic retries must be visible after the fact (who, what,
-- when, why), and the daily statistics are kept in the DB as well as in the report files.

ALTER TABLE preservation_files
    ADD COLUMN s3_checksum     text,               -- as the store reports it (base64, "-N" if multipart)
    ADD COLUMN reread          boolean NOT NULL DEFAULT false,  -- fully re-read after upload
    ADD COLUMN upload_seconds  double precision,   -- upload + verification time
    ADD COLUMN local_deleted_at timestamptz;       -- local copy removed after verification

CREATE TABLE preservation_events (
    event_id    bigserial PRIMARY KEY,
    job_id      bigint NOT NULL,
    file_name   text,
    at          timestamptz NOT NULL DEFAULT now(),
    kind        text NOT NULL,        -- staged, retry, manual, released, preserved, ...
    detail      text
);
CREATE INDEX preservation_events_job_idx ON preservation_events (job_id, at);

CREATE TABLE preservation_stats (
    day      date NOT NULL,
    key      text NOT NULL,
    value    double precision NOT NULL,
    PRIMARY KEY (day, key)
);
