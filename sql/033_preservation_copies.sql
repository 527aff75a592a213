-- harvestflow harvest database, version 033: the copies of each preserved file, fixity audits.
-- Why: a file is preserved in two copies on two S3 targets ([s3], [s3_replica]); each copy has
-- its own state (verified, bad), its last verification (at ingest, then by each fixity audit) and
-- its repairs, so the audit can read the oldest-verified first and a curator can see how far it
-- got. Files verified before this version have their one copy recorded as 'primary'.

CREATE TABLE preservation_copies (
    job_id       bigint NOT NULL,
    file_name    text NOT NULL,
    copy         text NOT NULL,           -- 'primary' ([s3]) or 'replica' ([s3_replica])
    status       text NOT NULL DEFAULT 'uploaded' CHECK (status IN ('uploaded', 'verified', 'bad')),
    s3_checksum  text,                    -- as the store reports it
    uploaded_at  timestamptz,
    verified_at  timestamptz,             -- last time its bytes were proven right (SHA-256)
    audited_at   timestamptz,             -- last fixity audit that read it
    repairs      integer NOT NULL DEFAULT 0,
    error        text,
    PRIMARY KEY (job_id, file_name, copy),
    FOREIGN KEY (job_id, file_name) REFERENCES preservation_files (job_id, file_name)
);
CREATE INDEX preservation_copies_verified_idx ON preservation_copies (verified_at);

INSERT INTO preservation_copies (job_id, file_name, copy, status, s3_checksum, uploaded_at,
                                 verified_at)
SELECT job_id, file_name, 'primary', 'verified', s3_checksum, uploaded_at, verified_at
  FROM preservation_files WHERE status = 'verified';

CREATE TABLE preservation_audits (
    audit_id     bigserial PRIMARY KEY,
    started_at   timestamptz NOT NULL DEFAULT now(),
    finished_at  timestamptz,
    share        double precision NOT NULL,   -- share of the files asked for
    period_days  integer NOT NULL,
    copies       text NOT NULL,               -- the copies read, e.g. 'primary,replica'
    files        integer NOT NULL DEFAULT 0,  -- files read (every copy of each)
    bytes        bigint NOT NULL DEFAULT 0,
    good         integer NOT NULL DEFAULT 0,
    repaired     integer NOT NULL DEFAULT 0,  -- files with a copy repaired (or made) from another
    failed       integer NOT NULL DEFAULT 0,  -- files bad in every copy: the manual queue
    detail       jsonb
);
