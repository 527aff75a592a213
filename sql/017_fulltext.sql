-- Full-text search (issue 22): extracted texts and the captures that show them.
--
-- fulltext_docs: one row per (capture year, payload digest): the text is extracted once per
--   digest and copied (never re-extracted) into each year that has a capture of it, so that a
--   year's partition is self-contained: a broad crawl's year is loaded, indexed, vacuumed (or
--   detached) without touching the other years' GIN indexes.
-- tsv: title weighted A, body D, parsed with the text configuration of the document's language
--   (french, english, else simple); queries match each configuration with its own tsquery.
-- fulltext_captures: one row per response/revisit record (file + offset), same partitioning.
-- fulltext_files: the extraction module's per-WARC checkpoint and counts (QA reads them).
CREATE TABLE IF NOT EXISTS fulltext_docs (
    year smallint NOT NULL,
    digest text NOT NULL,
    title text NOT NULL DEFAULT '',
    body text NOT NULL DEFAULT '',
    lang text NOT NULL DEFAULT '',
    cfg regconfig NOT NULL,
    outlinks integer NOT NULL DEFAULT 0,
    tsv tsvector NOT NULL,
    extracted_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (year, digest)
) PARTITION BY LIST (year);
CREATE INDEX IF NOT EXISTS fulltext_docs_tsv_idx ON fulltext_docs USING gin (tsv);
CREATE INDEX IF NOT EXISTS fulltext_docs_digest_idx ON fulltext_docs (digest);

CREATE TABLE IF NOT EXISTS fulltext_captures (
    year smallint NOT NULL,
    file_name text NOT NULL,
    file_offset bigint NOT NULL,
    url text NOT NULL,
    surt text NOT NULL,
    host text NOT NULL,
    domain text NOT NULL,
    captured_at timestamptz NOT NULL,
    status smallint,
    mime text NOT NULL DEFAULT '',
    digest text NOT NULL,
    record_type text NOT NULL,
    collection text NOT NULL DEFAULT '',
    harvest_id integer,
    job_id integer,
    PRIMARY KEY (year, file_name, file_offset)
) PARTITION BY LIST (year);
CREATE INDEX IF NOT EXISTS fulltext_captures_digest_idx ON fulltext_captures (digest);
CREATE INDEX IF NOT EXISTS fulltext_captures_file_idx ON fulltext_captures (file_name);
CREATE INDEX IF NOT EXISTS fulltext_captures_host_idx ON fulltext_captures (host);
CREATE INDEX IF NOT EXISTS fulltext_captures_domain_idx ON fulltext_captures (domain);

-- the partitions of one year, created on first use (under a lock: two workers may ask at once)
CREATE OR REPLACE FUNCTION fulltext_ensure_year(y integer) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('fulltext_ensure_year'), y);
    EXECUTE format('CREATE TABLE IF NOT EXISTS %I PARTITION OF fulltext_docs FOR VALUES IN (%s)',
                   'fulltext_docs_y' || y, y);
    EXECUTE format('CREATE TABLE IF NOT EXISTS %I PARTITION OF fulltext_captures'
                   ' FOR VALUES IN (%s)', 'fulltext_captures_y' || y, y);
END $$;

CREATE TABLE IF NOT EXISTS fulltext_files (
    file_name text PRIMARY KEY,
    status text NOT NULL DEFAULT 'running',  -- running | done
    next_offset bigint NOT NULL DEFAULT 0,   -- where a restarted extraction resumes
    extracted integer NOT NULL DEFAULT 0,    -- payloads extracted (new digests)
    duplicates integer NOT NULL DEFAULT 0,   -- captures of payloads already extracted, revisits
    skipped integer NOT NULL DEFAULT 0,      -- text captures not extracted (status, empty, size)
    failed integer NOT NULL DEFAULT 0,       -- damaged records, unreadable payloads
    errors jsonb NOT NULL DEFAULT '[]',      -- [{"offset": n, "error": "..."}]
    started_at timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz
);
CREATE INDEX IF NOT EXISTS fulltext_files_finished_idx ON fulltext_files (finished_at);
