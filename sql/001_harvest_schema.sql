-- harvestflow harvest database, version 001.
-- Modelled on NetarchiveSuite's PostgreSQL master schema: same table roles, same integer
-- enumerations (job status, stop reason, schedule time unit), -1 = unlimited for limits.

-- ---------------------------------------------------------------------------------------------
-- Crawl profiles (the equivalent of Heritrix order files)
CREATE TABLE templates (
    template_id   serial PRIMARY KEY,
    name          text NOT NULL UNIQUE,
    description   text,
    spec          jsonb NOT NULL DEFAULT '{}'::jsonb,   -- scope, max hops, robots, politeness, extractors
    created_at    timestamptz NOT NULL DEFAULT now()
);

-- ---------------------------------------------------------------------------------------------
-- Domains, seed lists, configurations
CREATE TABLE domains (
    domain_id        serial PRIMARY KEY,
    name             text NOT NULL UNIQUE,
    comments         text,
    defaultconfig    integer,                             -- FK added below (cycle)
    crawlertraps     text[] NOT NULL DEFAULT '{}',
    alias            integer REFERENCES domains(domain_id),
    lastaliasupdate  timestamptz,
    active           boolean NOT NULL DEFAULT true,
    inactive_reason  text,
    inactive_since   timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now(),
    edition          bigint NOT NULL DEFAULT 1
);

CREATE TABLE seedlists (
    seedlist_id  serial PRIMARY KEY,
    name         text NOT NULL,
    comments     text,
    domain_id    integer NOT NULL REFERENCES domains(domain_id) ON DELETE CASCADE,
    seeds        text NOT NULL DEFAULT '',                -- one URL per line, as NetarchiveSuite
    UNIQUE (domain_id, name)
);

CREATE TABLE configurations (
    config_id       serial PRIMARY KEY,
    name            text NOT NULL,
    comments        text,
    domain_id       integer NOT NULL REFERENCES domains(domain_id) ON DELETE CASCADE,
    template_id     integer NOT NULL REFERENCES templates(template_id),
    maxobjects      bigint NOT NULL DEFAULT -1,
    maxrate         integer NOT NULL DEFAULT 100,
    overridelimits  boolean NOT NULL DEFAULT false,
    maxbytes        bigint NOT NULL DEFAULT 1000000000,
    edition         bigint NOT NULL DEFAULT 1,
    UNIQUE (domain_id, name)
);
CREATE INDEX configurations_template_idx ON configurations (template_id);

ALTER TABLE domains ADD CONSTRAINT domains_defaultconfig_fk
    FOREIGN KEY (defaultconfig) REFERENCES configurations(config_id) DEFERRABLE INITIALLY DEFERRED;

CREATE TABLE config_seedlists (
    config_id    integer NOT NULL REFERENCES configurations(config_id) ON DELETE CASCADE,
    seedlist_id  integer NOT NULL REFERENCES seedlists(seedlist_id) ON DELETE CASCADE,
    PRIMARY KEY (config_id, seedlist_id)
);

-- ---------------------------------------------------------------------------------------------
-- Schedules: timeunit 1 HOURLY, 2 DAILY, 3 WEEKLY, 4 MONTHLY, 5 MINUTE
CREATE TABLE schedules (
    schedule_id   serial PRIMARY KEY,
    name          text NOT NULL UNIQUE,
    comments      text,
    startdate     timestamptz,
    enddate       timestamptz,
    maxrepeats    integer,
    timeunit      smallint NOT NULL CHECK (timeunit BETWEEN 1 AND 5),
    numtimeunits  integer NOT NULL CHECK (numtimeunits > 0),
    anytime       boolean NOT NULL DEFAULT true,
    onminute      smallint,
    onhour        smallint,
    ondayofweek   smallint,
    ondayofmonth  smallint
);

-- Harvest channels: NetarchiveSuite's high/low priority channels (BnF: CIBLEE, LARGE)
CREATE TABLE harvestchannel (
    id          serial PRIMARY KEY,
    name        text NOT NULL UNIQUE,
    issnapshot  boolean NOT NULL,
    isdefault   boolean NOT NULL DEFAULT false,
    comments    text
);

-- ---------------------------------------------------------------------------------------------
-- Harvest definitions: selective ("partial", with a schedule) and snapshot ("full")
CREATE TABLE harvestdefinitions (
    harvest_id    serial PRIMARY KEY,
    name          text NOT NULL UNIQUE,
    comments      text,
    kind          text NOT NULL CHECK (kind IN ('partial', 'full')),
    numevents     integer NOT NULL DEFAULT 0,
    submitted     timestamptz NOT NULL DEFAULT now(),
    isactive      boolean NOT NULL DEFAULT true,
    inactive_reason text,
    edition       bigint NOT NULL DEFAULT 1,
    channel_id    integer REFERENCES harvestchannel(id),
    audience      text,
    crawlertraps  text[] NOT NULL DEFAULT '{}'
);

CREATE TABLE partialharvests (
    harvest_id   integer PRIMARY KEY REFERENCES harvestdefinitions(harvest_id) ON DELETE CASCADE,
    schedule_id  integer NOT NULL REFERENCES schedules(schedule_id),
    nextdate     timestamptz,
    frequency    text                               -- daily/weekly/monthly/semiannual/annual DAG
);

CREATE TABLE fullharvests (
    harvest_id          integer PRIMARY KEY REFERENCES harvestdefinitions(harvest_id) ON DELETE CASCADE,
    maxobjects          bigint NOT NULL DEFAULT -1,
    maxbytes            bigint NOT NULL DEFAULT -1,
    maxjobrunningtime   bigint NOT NULL DEFAULT 0,      -- seconds, 0 = unlimited
    previoushd          integer REFERENCES harvestdefinitions(harvest_id),
    isindexready        boolean NOT NULL DEFAULT false
);

CREATE TABLE harvest_configs (
    harvest_id  integer NOT NULL REFERENCES harvestdefinitions(harvest_id) ON DELETE CASCADE,
    config_id   integer NOT NULL REFERENCES configurations(config_id) ON DELETE CASCADE,
    PRIMARY KEY (harvest_id, config_id)
);

-- ---------------------------------------------------------------------------------------------
-- Jobs. status: 0 NEW, 1 SUBMITTED, 2 STARTED, 3 DONE, 4 FAILED, 5 RESUBMITTED, 6 FAILED_REJECTED
CREATE TABLE jobs (
    job_id               bigserial PRIMARY KEY,
    harvest_id           integer NOT NULL REFERENCES harvestdefinitions(harvest_id),
    harvest_num          integer NOT NULL,                -- the definition's run counter
    job_index            integer NOT NULL,                -- position within that run (idempotency)
    status               smallint NOT NULL DEFAULT 0 CHECK (status BETWEEN 0 AND 6),
    channel              text NOT NULL,
    snapshot             boolean NOT NULL DEFAULT false,
    template_name        text NOT NULL,
    template             jsonb NOT NULL,                  -- frozen at generation
    seedlist             text NOT NULL,                   -- frozen at generation, one URL per line
    crawlertraps         text[] NOT NULL DEFAULT '{}',
    forcemaxobjects      bigint NOT NULL DEFAULT -1,
    forcemaxbytes        bigint NOT NULL DEFAULT -1,
    forcemaxrunningtime  bigint NOT NULL DEFAULT 0,
    num_configs          integer NOT NULL DEFAULT 0,
    harvest_errors       text,
    harvest_error_details text,
    upload_errors        text,
    creationdate         timestamptz NOT NULL DEFAULT now(),
    submitteddate        timestamptz,
    startdate            timestamptz,
    enddate              timestamptz,
    job_dir              text,
    resubmitted_as_job   bigint REFERENCES jobs(job_id),
    continuationof       bigint REFERENCES jobs(job_id),
    edition              bigint NOT NULL DEFAULT 1,
    UNIQUE (harvest_id, harvest_num, job_index)
);
CREATE INDEX jobs_status_idx ON jobs (status);

-- Status moves only forward (NetarchiveSuite), except FAILED_REJECTED -> FAILED.
CREATE FUNCTION jobs_status_forward_only() RETURNS trigger AS $$
BEGIN
    IF NEW.status < OLD.status AND NOT (OLD.status = 6 AND NEW.status = 4) THEN
        RAISE EXCEPTION 'job %: status may not move back from % to %', OLD.job_id, OLD.status, NEW.status;
    END IF;
    RETURN NEW;
END $$ LANGUAGE plpgsql;
CREATE TRIGGER jobs_status_forward_only BEFORE UPDATE OF status ON jobs
    FOR EACH ROW EXECUTE FUNCTION jobs_status_forward_only();

CREATE TABLE job_configs (
    job_id     bigint NOT NULL REFERENCES jobs(job_id) ON DELETE CASCADE,
    config_id  integer NOT NULL REFERENCES configurations(config_id),
    PRIMARY KEY (job_id, config_id)
);

CREATE TABLE job_reports (
    job_id    bigint NOT NULL REFERENCES jobs(job_id) ON DELETE CASCADE,
    name      text NOT NULL,
    content   text NOT NULL,
    PRIMARY KEY (job_id, name)
);

-- Harvest history. stopreason: 0 DOWNLOAD_COMPLETE, 1 OBJECT_LIMIT, 2 SIZE_LIMIT,
-- 3 CONFIG_SIZE_LIMIT, 4 DOWNLOAD_UNFINISHED, 5 CONFIG_OBJECT_LIMIT, 6 TIME_LIMIT
CREATE TABLE historyinfo (
    historyinfo_id  bigserial PRIMARY KEY,
    stopreason      smallint NOT NULL CHECK (stopreason BETWEEN 0 AND 6),
    objectcount     bigint NOT NULL,
    bytecount       bigint NOT NULL,
    config_id       integer NOT NULL REFERENCES configurations(config_id),
    harvest_id      integer NOT NULL REFERENCES harvestdefinitions(harvest_id),
    job_id          bigint REFERENCES jobs(job_id),
    harvest_time    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (config_id, harvest_id, job_id)
);
CREATE INDEX historyinfo_config_idx ON historyinfo (config_id, harvest_time DESC);

-- ---------------------------------------------------------------------------------------------
-- Global crawler traps
CREATE TABLE global_crawler_trap_lists (
    id           serial PRIMARY KEY,
    name         text NOT NULL UNIQUE,
    description  text,
    isactive     boolean NOT NULL DEFAULT true
);
CREATE TABLE global_crawler_trap_expressions (
    crawler_trap_list_id  integer NOT NULL REFERENCES global_crawler_trap_lists(id) ON DELETE CASCADE,
    trap_expression       text NOT NULL,
    PRIMARY KEY (crawler_trap_list_id, trap_expression)
);

-- ---------------------------------------------------------------------------------------------
-- Curators' selection records (BCWeb-like) and the UK Web Archive crawl feed
CREATE TABLE selection_records (
    record_id           serial PRIMARY KEY,
    external_id         text UNIQUE,
    collection          text NOT NULL,
    title               text,
    seed_url            text NOT NULL,
    supplementary_urls  text[] NOT NULL DEFAULT '{}',
    budget              text NOT NULL CHECK (budget IN ('small', 'medium', 'large')),
    frequency           text NOT NULL,
    depth               text NOT NULL,
    scope               text,
    ignore_robots       boolean NOT NULL DEFAULT false,
    schedules           jsonb NOT NULL DEFAULT '[]'::jsonb,
    active              boolean NOT NULL DEFAULT true,
    theme               text NOT NULL,
    keywords            text[] NOT NULL DEFAULT '{}',
    content_notes       text,
    technical_notes     text,
    creator             text,
    curator             text,
    created_at          timestamptz NOT NULL DEFAULT now(),
    created_by          text,
    modified_at         timestamptz NOT NULL DEFAULT now(),
    modified_by         text,
    validation_status   text,
    validation_detail   text,
    transferred_at      timestamptz,
    UNIQUE (collection, seed_url)
);

-- ---------------------------------------------------------------------------------------------
-- Broad-crawl preload: sources, per-domain origins, DNS and redirect checks
CREATE TABLE preload_runs (
    run_id       text PRIMARY KEY,
    started_at   timestamptz NOT NULL DEFAULT now(),
    finished_at  timestamptz,
    report       jsonb
);
CREATE TABLE preload_sources (
    run_id        text NOT NULL REFERENCES preload_runs(run_id) ON DELETE CASCADE,
    source_name   text NOT NULL,
    kind          text NOT NULL,
    lines         bigint NOT NULL DEFAULT 0,
    valid         bigint NOT NULL DEFAULT 0,
    unique_count  bigint NOT NULL DEFAULT 0,
    new_count     bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (run_id, source_name)
);
CREATE TABLE domain_origins (
    domain       text NOT NULL,
    origin       text NOT NULL,                   -- source name, or 'redirect'
    run_id       text NOT NULL,
    first_seen   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (domain, origin, run_id)
);
CREATE TABLE dns_checks (
    run_id      text NOT NULL,
    domain      text NOT NULL,
    class       text NOT NULL CHECK (class IN ('active', 'failed', 'unknown')),
    detail      text,
    checked_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, domain)
);
CREATE TABLE redirect_checks (
    run_id         text NOT NULL,
    url            text NOT NULL,
    status         integer,
    location       text,
    target_domain  text,
    checked_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, url)
);

-- ---------------------------------------------------------------------------------------------
-- Indexing manifest: one row per WARC file going through the chain
CREATE TABLE index_manifest (
    file_name       text PRIMARY KEY,
    job_id          bigint REFERENCES jobs(job_id),
    harvest_id      integer,
    source_path     text NOT NULL,
    size            bigint,
    sha1            text,
    stage           text NOT NULL DEFAULT 'ingested',
    worker          text,
    cdx_path        text,
    final_path      text,
    backup_location text,
    quarantined     boolean NOT NULL DEFAULT false,
    error           text,
    ingested_at     timestamptz NOT NULL DEFAULT now(),
    indexed_at      timestamptz,
    transferred_at  timestamptz,
    backed_up_at    timestamptz,
    deleted_at      timestamptz
);
CREATE INDEX index_manifest_stage_idx ON index_manifest (stage);

-- ---------------------------------------------------------------------------------------------
-- Preservation (SPAR-like): packages per job, files, ARKs
CREATE SEQUENCE ark_seq;
CREATE TABLE arks (
    ark         text PRIMARY KEY,
    minted_at   timestamptz NOT NULL DEFAULT now(),
    kind        text NOT NULL,                    -- 'package' or 'file'
    ref         text NOT NULL,                    -- job id or file name
    UNIQUE (kind, ref)
);
CREATE TABLE preservation_packages (
    job_id       bigint PRIMARY KEY REFERENCES jobs(job_id),
    harvest_id   integer NOT NULL,
    ark          text UNIQUE REFERENCES arks(ark),
    bag_path     text,
    s3_prefix    text,
    status       text NOT NULL DEFAULT 'staged',  -- staged, ingesting, preserved, manual
    error        text,
    staged_at    timestamptz NOT NULL DEFAULT now(),
    started_at   timestamptz,
    finished_at  timestamptz
);
CREATE TABLE preservation_files (
    job_id       bigint NOT NULL REFERENCES preservation_packages(job_id),
    file_name    text NOT NULL,
    role         text NOT NULL CHECK (role IN ('metadata', 'data', 'manifest')),
    size         bigint NOT NULL,
    sha256       text NOT NULL,
    sha512       text,
    ark          text UNIQUE REFERENCES arks(ark),
    s3_key       text,
    status       text NOT NULL DEFAULT 'pending', -- pending, uploaded, verified, manual
    attempts     integer NOT NULL DEFAULT 0,
    error        text,
    uploaded_at  timestamptz,
    verified_at  timestamptz,
    PRIMARY KEY (job_id, file_name)
);

-- ---------------------------------------------------------------------------------------------
-- Daily QA statistics
CREATE TABLE qa_stats (
    day      date NOT NULL,
    scope    text NOT NULL,                       -- 'day', 'job:<id>', 'harvest:<id>'
    family   text NOT NULL,                       -- general, mime, status, tld, ...
    key      text NOT NULL,
    value    double precision NOT NULL,
    PRIMARY KEY (day, scope, family, key)
);
CREATE TABLE qa_reports (
    day           date PRIMARY KEY,
    generated_at  timestamptz NOT NULL DEFAULT now(),
    report_dir    text NOT NULL,
    summary       jsonb NOT NULL
);

-- ---------------------------------------------------------------------------------------------
-- Reference data
INSERT INTO harvestchannel (name, issnapshot, isdefault, comments) VALUES
    ('LARGE', true, true, 'low priority: snapshot (broad) harvests'),
    ('CIBLEE', false, true, 'high priority: selective harvests');
