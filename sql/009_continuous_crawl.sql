-- Continuous crawling with adaptive revisiting (issue 10).
--
-- The URL state outlives every crawler process: each bounded crawl run starts from the URLs due
-- here and writes what it learnt back. Times are timestamptz (UTC); intervals are seconds.

-- Seeds of the continuous crawl, injected by the hourly launcher from the selection records.
CREATE TABLE continuous_seeds (
    seed_url            text PRIMARY KEY,
    record_id           integer REFERENCES selection_records (record_id) ON DELETE SET NULL,
    scope               text NOT NULL DEFAULT 'host' CHECK (scope IN ('host', 'domain', 'path')),
    template            text NOT NULL DEFAULT 'continuous',
    max_urls_per_launch integer NOT NULL DEFAULT -1,      -- -1 unlimited
    fetched_since_launch integer NOT NULL DEFAULT 0,
    last_launch         timestamptz,
    added_at            timestamptz NOT NULL DEFAULT now()
);

-- One row per (selection record, launch hour): the launcher's idempotence key.
CREATE TABLE continuous_launches (
    record_id           integer NOT NULL,
    launch_hour         timestamptz NOT NULL,
    seed_url            text NOT NULL,
    frequency           text NOT NULL,
    launched_at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (record_id, launch_hour, seed_url)
);

-- Per URL: what the last visit saw and when the next one is due.
CREATE TABLE continuous_url_state (
    url                 text PRIMARY KEY,
    host                text NOT NULL,
    seed_url            text NOT NULL,
    depth               integer NOT NULL DEFAULT 0,       -- link hops from the seed
    content_class       text,                             -- html | image | document | av | other
    mime                text,
    status              integer,                          -- last HTTP (or Heritrix negative) status
    last_fetch          timestamptz,
    last_change         timestamptz,
    digest              text,                             -- strict payload digest sha1:BASE32
    noise_digest        text,                             -- digest after the noise rules, if any
    etag                text,
    last_modified       text,
    -- the last full capture (the dedup index line points at it)
    capture_date        text,
    capture_file        text,
    capture_offset      bigint,
    capture_record_id   text,
    wait_s              double precision NOT NULL,
    next_due            timestamptz NOT NULL,
    visits              integer NOT NULL DEFAULT 0,
    changes             integer NOT NULL DEFAULT 0,
    revisits            integer NOT NULL DEFAULT 0,       -- revisit records written
    failures            integer NOT NULL DEFAULT 0,
    added_at            timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX continuous_url_state_due ON continuous_url_state (next_due);
CREATE INDEX continuous_url_state_host ON continuous_url_state (host);

-- Operator rules removing noise (clocks, session tokens, counters) before hashing.
CREATE TABLE continuous_noise_rules (
    rule_id             serial PRIMARY KEY,
    url_pattern         text NOT NULL,                    -- regex searched in the URL
    remove_pattern      text NOT NULL,                    -- regex whose matches are removed
    comment             text,
    active              boolean NOT NULL DEFAULT true,
    UNIQUE (url_pattern, remove_pattern)
);

-- Per-host overrides of the revisit policy (keys of RevisitPolicy, e.g. {"max_wait_s": 3600}).
CREATE TABLE continuous_host_policy (
    host                text PRIMARY KEY,
    overrides           jsonb NOT NULL DEFAULT '{}'::jsonb
);

-- One row per bounded crawl run (statistics for a crawl that never ends).
CREATE TABLE continuous_runs (
    run_id              text PRIMARY KEY,
    started             timestamptz NOT NULL,
    ended               timestamptz,
    due                 integer NOT NULL DEFAULT 0,
    visited             integer NOT NULL DEFAULT 0,
    changed             integer NOT NULL DEFAULT 0,
    unchanged           integer NOT NULL DEFAULT 0,
    new_urls            integer NOT NULL DEFAULT 0,
    warcs               text[] NOT NULL DEFAULT '{}',
    out_dir             text,
    status              text
);
